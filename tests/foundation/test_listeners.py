"""Listeners (issue #27): any number listen to a machine's layers and its memories' writes,
each added and removed on its own; a unit sees the machine only through its context."""

import numpy as np
import pytest

from sim.chains import SDP, SDP_RDMA
from sim.diff.record import WriteRecorder
from sim.dma import write_feature
from sim.errors import ConfigurationError
from sim.listeners import LayerListener, Listeners, MemoryListener, memory_listeners
from sim.machine import LayerContext, Machine
from sim.program.sdp import DST, run_sdp
from sim.runtime.layers import LayerOutputs
from sim.sdp.engine import SdpEngine, SdpState

CUBE = np.arange(16 * 2 * 3, dtype=np.int8).reshape(16, 2, 3) - 40


def programmed_sdp():
    _, m = run_sdp("nv_full", CUBE, in_prec="int8", out_prec="int8", go=False)
    return m


def launch(m):
    m.write_reg(f"{SDP_RDMA}.D_OP_ENABLE_0", 1)
    m.write_reg(f"{SDP}.D_OP_ENABLE_0", 1)
    assert m.run() == 1


class Log:
    """A layer and memory listener that logs what it is told."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def layer_begin(self, index, engine, ctx):
        self.log.append((self.name, "begin", index, engine.name))

    def layer_end(self):
        self.log.append((self.name, "end"))

    def wrote(self, memory, addr, size):
        self.log.append((self.name, "wrote", memory.name, addr))

    def wrote_feature(self, memory, addr, layout, precision, what):
        self.log.append((self.name, "feature", addr, precision, what))


def test_recorders_and_layer_outputs_listen_at_once():
    """--layers and a diff recorder (and a second recorder) all hear the same layer."""
    m = programmed_sdp()
    first, layers, second = WriteRecorder().attach(m), LayerOutputs().attach(m), WriteRecorder()
    second.attach(m)
    launch(m)
    for recorder in (first, second, layers.recorder):
        (write,) = recorder.writes
        assert (write.layer, write.engine, write.unit, write.addr) == (0, "SDP", "SDP", DST)
        assert write.precision == "int8" and write.channels == 16
    (out,) = layers.outputs
    assert out.name == "layer000_SDP.npy" and out.array.shape == (16, 2, 3)
    np.testing.assert_array_equal(out.array, CUBE)  # identity SDP


def test_a_detached_listener_hears_nothing_more():
    m = programmed_sdp()
    kept, gone = WriteRecorder().attach(m), WriteRecorder().attach(m)
    gone.detach(m)
    launch(m)
    assert len(kept.writes) == 1 and gone.writes == []
    m.load(0x100, b"\1" * 32)
    assert [w.layer for w in kept.writes] == [0, None] and gone.writes == []


def test_listeners_are_told_in_order_each_once():
    m = programmed_sdp()
    log = []
    a, b = Log("a", log), Log("b", log)
    for listener in (a, b, a):
        m.listeners.add(listener)
        m.memory_listeners().add(listener)
    launch(m)
    assert log == [("a", "begin", 0, "SDP"), ("b", "begin", 0, "SDP"),
                   ("a", "wrote", "pri_mem", DST), ("b", "wrote", "pri_mem", DST),
                   ("a", "feature", DST, "int8", f"{SDP}.D_DST_BASE_ADDR"),
                   ("b", "feature", DST, "int8", f"{SDP}.D_DST_BASE_ADDR"),
                   ("a", "end"), ("b", "end")]
    m.listeners.remove(a)
    with pytest.raises(ValueError):
        m.listeners.remove(a)
    assert a not in m.listeners and b in m.listeners and len(m.listeners) == 1


def test_listener_types_follow_the_protocols():
    assert isinstance(WriteRecorder(), LayerListener)
    assert isinstance(WriteRecorder(), MemoryListener)
    assert isinstance(LayerOutputs(), LayerListener)
    assert isinstance(Log("x", []), MemoryListener)
    assert not isinstance(object(), LayerListener)


def test_a_listener_may_remove_itself_while_told():
    items: Listeners = Listeners()
    told = []

    class Once:
        def __call__(self):
            told.append(self)
            items.remove(self)

    one, two = items.add(Once()), items.add(Once())
    for listener in items:
        listener()
    assert told == [one, two] and len(items) == 0


def test_memory_listeners_keep_one_list_per_memory():
    m = Machine("nv_full")
    assert memory_listeners(m.pri_mem) is m.memory_listeners("pri_mem")
    assert memory_listeners(m.sec_mem) is not memory_listeners(m.pri_mem)


def test_feature_writes_to_a_memory_nobody_listens_to_tell_nobody():
    m = Machine("nv_full")
    write_feature(m.pri_mem, 0, np.zeros((8, 1, 1), np.int8), "int8", 32, 32, 32)
    assert m.pri_mem.read(0, 32) == bytes(32)


def test_a_context_serves_registers_memories_and_unit_state_not_the_machine():
    m = programmed_sdp()
    ctx = LayerContext(m, {SDP: 0, SDP_RDMA: 0})
    assert not hasattr(ctx, "machine")
    (engine,) = (e for e in m.engines if isinstance(e, SdpEngine))
    state = ctx.state(SDP)
    assert isinstance(state, SdpState)
    assert state.lut is engine.lut and state.fetch is engine.fetch
    assert ctx.memory(1) is m.pri_mem
    assert ctx.regs(SDP_RDMA, 1) is not None and not ctx.armed(SDP_RDMA, 0)
    m.write_reg(f"{SDP_RDMA}.D_OP_ENABLE_0", 1)
    assert ctx.armed(SDP_RDMA, 0)
    with pytest.raises(ConfigurationError, match="keeps no state for NVDLA_PDP"):
        ctx.state("NVDLA_PDP")


def test_register_listeners_hear_every_csb_write_in_order():
    """gen records its trace this way: each listener gets the register and the value."""
    from sim.listeners import RegisterListener

    class Heard:
        def __init__(self):
            self.writes = []

        def wrote_register(self, register, value):
            self.writes.append((register.full_name, value))

    m = Machine("nv_small")
    first, second = Heard(), Heard()
    assert isinstance(first, RegisterListener)
    m.register_listeners.add(first)
    m.register_listeners.add(second)
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 7)
    m.register_listeners.remove(second)
    m.write_reg(m.regfile.address_of(m.regfile.register("NVDLA_GLB.S_INTR_MASK_0")), 3)
    assert first.writes == [("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 7), ("NVDLA_GLB.S_INTR_MASK_0", 3)]
    assert second.writes == [("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 7)]
