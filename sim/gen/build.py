"""Build a trace from a spec: program each layer on a recorded Machine and run it.

The :class:`GenMachine` (a machine and a listener of it) records, in order,
the memory it is given, every register write, the interrupts each layer
raises and what the layer wrote (its output region, the counters it set).
Layers run one after another (each waits for its interrupts), so the
simulator's results become the trace's expectations and a later layer may
read an earlier one's output.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ..errors import SimError, SpecError
from ..machine import Machine
from ..program.bdma import launch_bdma
from ..program.registers import set_reg
from ..records import record
from . import units
from .events import (
    Event,
    InterruptRaised,
    LayerBegins,
    LayerChecked,
    Loaded,
    OutputReserved,
    RegisterWritten,
)
from .legality import obeys_rules
from .memory import Allocator, Output
from .spec import LayerSpec, Spec

COUNTER_WORDS = ("NAN", "INF", "SATURATION", "LUT_")


@record(frozen=False)
class LayerRecord:
    spec: LayerSpec
    output: Output
    interrupts: list = field(default_factory=list)  # (source, group)
    counters: list = field(default_factory=list)  # (register full name, value)
    expected: bytes = b""


class GenMachine:
    """What a spec's layer builders program: a :class:`Machine`, and the trace it makes.

    It listens to its machine (sim.listeners: register writes, layer start and end)
    and keeps, in order, every event a trace of the spec needs (:attr:`ops`).  The
    builders program it as firmware programs NVDLA: :meth:`write_reg`/:meth:`set`,
    :meth:`load` of their own input data, :meth:`select_group` and :meth:`launch`.
    """

    def __init__(self, config):
        self.machine = Machine(config)
        self.config = config
        self.regfile = self.machine.regfile
        self.ops: list[Event] = []  # what a trace of the spec needs, in order
        self.chained: set[tuple[str, int]] = set()  # inputs already in memory (chaining)
        self.last_counters: dict = {}  # (unit, register) -> value, of the last layer
        self._ctx = None
        self.machine.listeners.add(self)
        self.machine.register_listeners.add(self)

    # layer listener (sim.listeners.LayerListener): keep the counters of the last layer
    def layer_begin(self, index, engine, ctx) -> None:
        self._ctx = ctx

    def layer_end(self) -> None:
        self.last_counters.update(self._ctx.counters)
        self._ctx = None

    # register listener (sim.listeners.RegisterListener): every write goes in the trace
    def wrote_register(self, register, value: int) -> None:
        self.ops.append(RegisterWritten(register, int(value) & 0xFFFFFFFF))

    # -- what the builders program ------------------------------------------------------
    def memory(self, ram, what: str = ""):
        return self.machine.memory(ram, what)

    def write_reg(self, name, value: int) -> None:
        self.machine.write_reg(name, value)

    def set(self, unit: str, reg: str, **fields) -> None:
        set_reg(self, unit, reg, **fields)

    def load(self, addr: int, data, ram=1) -> None:
        """Put a layer's own input in memory; the trace loads it too.  An input chained
        from an earlier layer's output is in memory already: neither happens."""
        memory = self.memory(ram).name
        if (memory, addr) in self.chained:
            return
        raw = data if isinstance(data, bytes) else np.asarray(data, dtype=np.uint8).tobytes()
        self.ops.append(Loaded(memory, addr, raw))
        self.machine.load(addr, raw, ram)

    def select_group(self, units) -> None:
        """Point each unit's producer at the group that runs next (as firmware does)."""
        rf = self.regfile
        for unit in units:
            if unit in rf.producer and rf.producer[unit] != rf.consumer[unit]:
                self.set(unit, "S_POINTER_0", producer=rf.consumer[unit])

    def launch(self, units) -> list:
        """Set OP_EN of ``units`` in order, run the layer; returns its interrupts."""
        self.last_counters = {}
        m = self.machine
        for unit in units:
            if unit == "NVDLA_BDMA":  # BDMA: queued operations run when their group launches
                launch_bdma(self)
            else:
                self.set(unit, "D_OP_ENABLE_0", op_en=1)
        raised = []
        while True:
            before = m.interrupt_status()
            if not m.step():
                break
            for source, group, lsb in m.done_interrupts(m.interrupt_status() & ~before):
                raised.append((source, group))
                self.ops.append(InterruptRaised(source, group, lsb))
                m.clear_interrupt(source, group)
        if not raised:
            raise SimError("the layer raised no interrupt (not launched)")
        return raised


def build(spec: Spec, progress=None) -> tuple[GenMachine, list[LayerRecord]]:
    """Program and run every layer of ``spec``; returns the machine and the layer records."""
    m = GenMachine(spec.config)
    alloc = Allocator()
    rng = np.random.default_rng(spec.seed)
    records: list[LayerRecord] = []
    outputs: dict[str, LayerRecord] = {}
    for layer in spec.layers:
        m.ops.append(LayerBegins(f"layer {layer.index} ({layer.name}): {layer.unit} "
                                 f"{layer.precision}"))
        builder = getattr(units, f"build_{layer.unit}")
        try:
            output, enable = builder(m, layer, alloc, rng, outputs)
            obeys_rules(m, layer, enable)
            m.ops.append(OutputReserved(output))
            interrupts = m.launch(enable)
        except SpecError:  # names the layer and its key already
            raise
        except SimError as exc:
            exc.locate(f"layer {layer.index} ({layer.name}): the simulator rejects this layer")
            raise
        record = LayerRecord(layer, output, interrupts)
        record.expected = m.memory(output.memory).read(output.addr, output.size)
        for (unit, reg), value in sorted(m.last_counters.items()):
            if any(word in reg for word in COUNTER_WORDS) and "STALL" not in reg:
                record.counters.append((f"{unit}.{reg}", value & 0xFFFFFFFF))
        m.ops.append(LayerChecked(record))
        records.append(record)
        outputs[layer.name] = record
        if progress is not None:
            progress.step(f"layer {layer.index} {layer.name} ({layer.unit})")
    return m, records
