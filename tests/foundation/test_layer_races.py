"""Two layers the hardware may run at once, one writing bytes the other reads or writes.

A layer runs from its D_OP_ENABLE until software has seen its done interrupt;
a layer enabled before then may run beside it (sim.races).  Such a pair stops
with an error naming both; the same pair with the wait in between, or with
bytes that do not meet, runs as before.
"""

import numpy as np
import pytest

from sim.dma.feature import pack_feature
from sim.errors import MemoryFault
from sim.machine import Machine
from sim.program.conv import program
from sim.program.pdp import Pooling, program_pdp, program_pdp_rdma
from sim.program.registers import set_reg
from sim.program.sdp import program_sdp_output, start_sdp_add

SHAPE = (8, 4, 8)  # C, H, W of the SDP's cube: nv_small atoms of 8 bytes, 256 bytes
CUBE_BYTES = 8 * 4 * 8
POOLED_BYTES = 8 * 2 * 4
A, B, C, D = 0x8010_0000, 0x8020_0000, 0x8030_0000, 0x8040_0000
CONV = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CACC", "NVDLA_SDP")


def _layout(shape):
    c, h, w = shape
    return pack_feature(np.zeros(shape, np.int8), precision="int8", atom_bytes=8,
                        line_stride=w * 8, surface_stride=w * 8 * h)[1]


def _start_sdp(m, src: int, dst: int) -> None:
    """SDP (group 0): src + 3 -> dst, enabled."""
    lay = _layout(SHAPE)
    start_sdp_add(m, SHAPE, (src, lay), (dst, lay), 3)


def _start_pool(m, src: int, dst: int, enable=("NVDLA_PDP_RDMA", "NVDLA_PDP")) -> None:
    """PDP (group 0): 2x2/2 max pooling of the SDP's cube shape, src -> dst; the units
    ``enable`` enabled."""
    pool = Pooling("max", (2, 2), (2, 2), (0, 0, 0, 0), 0)
    program_pdp(m, SHAPE, "int8", pool, (dst, _layout((8, 2, 4))), src=(src, _layout(SHAPE)))
    program_pdp_rdma(m, SHAPE, "int8", pool, (src, _layout(SHAPE)))
    for unit in enable:
        m.write_reg(f"{unit}.D_OP_ENABLE_0", 1)


def _sdp_then_pool(sdp: tuple, pool: tuple, wait: str | None, report=None) -> Machine:
    """The SDP layer, then the pooling layer: enabled at once (``wait`` None), or once the
    SDP's done interrupt was cleared (``clear``) or waited for by a poll (``poll``); races
    reported to ``report`` (as a loadable's run does) rather than raised, if given."""
    m = Machine("nv_small")
    m.races.report = report
    rng = np.random.default_rng(3)
    for addr in (A, B, C, D):
        m.load(addr, rng.integers(-100, 100, CUBE_BYTES).astype(np.int8).tobytes())
    _start_sdp(m, *sdp)
    if wait is not None:
        while m.step():
            pass
        assert m.layers_run == 1
        if wait == "clear":
            m.clear_interrupt("SDP", 0)
        else:
            m.completions_seen()
    _start_pool(m, *pool)
    m.run()
    return m


def _runs_or_races(m: Machine, layers: int, race: str | None) -> None:
    """Run ``m`` dry: ``layers`` more layers run, or (``race``, a pattern) a race stops it."""
    if race is None:
        assert m.run() == layers
        return
    with pytest.raises(MemoryFault, match=race):
        m.run()


# (SDP src, dst), (pooling src, dst): what meets what
RAW = (A, B), (B, C)  # the pooling reads the SDP's output
WAR = (A, B), (C, A)  # the pooling writes the SDP's input
WAW = (A, B), (C, B)  # both write the same bytes
NEIGHBOURS = (A, B), (B + CUBE_BYTES, C)  # the pooling reads right after the SDP's output
APART = (A, B), (C, D)


@pytest.mark.parametrize("pair, wait, race", [
    (RAW, None, r"reads pri_mem bytes 0x80200000\.\.0x8020003f \(NVDLA_PDP_RDMA\) that "
                 r"hardware layer 0 .* writes"),
    (RAW, "clear", None),
    (RAW, "poll", None),
    (WAR, None, r"writes pri_mem bytes 0x80100000\.\.0x8010001f .* reads"),
    (WAR, "clear", None),
    (WAW, None, r"writes pri_mem bytes 0x80200000\.\.0x8020001f .* writes"),
    (WAW, "clear", None),
    (NEIGHBOURS, None, None),
    (APART, None, None),
])
def test_layers_of_two_units_at_once(pair, wait, race):
    if race is None:
        m = _sdp_then_pool(*pair, wait)
        assert m.layers_run == 2
        same = _sdp_then_pool(*pair, "clear")  # the sequential answer, the wait in between
        assert m.read_memory(pair[1][1], POOLED_BYTES) == same.read_memory(pair[1][1],
                                                                           POOLED_BYTES)
        return
    with pytest.raises(MemoryFault, match=race) as error:
        _sdp_then_pool(*pair, wait)
    text = str(error.value)
    assert "hardware layer 1 (PDP: PDP,PDP_RDMA group 0)" in text
    assert "hardware layer 0 (SDP: SDP,SDP_RDMA group 0)" in text
    assert text.endswith("the result would depend on timing")


@pytest.mark.parametrize("pair", [RAW, WAR, WAW])
def test_a_reported_race_runs_on_with_the_sequential_answer(pair):
    """A compiled network's run (sim.runtime.runner) takes each race as a warning: the
    layers run to the end, one after the other, and the race is told once."""
    told = []
    m = _sdp_then_pool(*pair, None, told.append)
    assert m.layers_run == 2
    assert len(told) == 1 and told[0].endswith("the result would depend on timing")
    same = _sdp_then_pool(*pair, "clear")
    for addr in (pair[0][1], pair[1][1]):
        assert m.read_memory(addr, POOLED_BYTES) == same.read_memory(addr, POOLED_BYTES)


def test_an_interrupt_cleared_before_it_was_raised_is_not_seen():
    """Clearing a bit that is not set tells software nothing about the layer."""
    m = Machine("nv_small")
    _start_sdp(m, *RAW[0])
    m.clear_interrupt("SDP", 0)  # nothing raised yet
    _start_pool(m, *RAW[1])
    with pytest.raises(MemoryFault, match="would depend on timing"):
        m.run()


def test_the_status_register_write_one_to_clear_is_seen():
    m = Machine("nv_small")
    _start_sdp(m, *RAW[0])
    while m.step():
        pass
    m.write_reg("NVDLA_GLB.S_INTR_STATUS_0", m.interrupt_status())  # as the KMD's handler
    _start_pool(m, *RAW[1])
    assert m.run() == 1


def _conv(m, x_addr: int, wt_addr: int, out_addr: int, group: int, seed: int) -> None:
    """A 3x3 int8 convolution of a 8x6x6 cube at x_addr to 8x4x4 at out_addr, programmed
    into register group ``group`` and enabled."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-20, 20, (8, 6, 6), dtype=np.int64).astype(np.int8)
    w = rng.integers(-3, 4, (8, 8, 3, 3), dtype=np.int64).astype(np.int8)
    for unit in CONV:
        set_reg(m, unit, "S_POINTER_0", producer=group)
    program(m, x, w, precision="int8", in_addr=x_addr, wt_addr=wt_addr)
    program_sdp_output(m, out_addr, (8, 4, 4), "int8")
    for unit in CONV:
        m.write_reg(f"{unit}.D_OP_ENABLE_0", 1)


@pytest.mark.parametrize("second, seen, race", [
    # the second convolution's CDMA reads the first one's output (its SDP still writing)
    ((B, C), (), r"hardware layer 1 \(CONV: .* group 1\) reads pri_mem bytes 0x80200000"),
    ((B, C), ("CDMA_DAT", "CDMA_WT", "CACC"), "reads pri_mem bytes 0x80200000"),
    ((B, C), ("CDMA_DAT", "CDMA_WT", "CACC", "SDP"), None),
    # its SDP writes the first one's input: the CDMA fetched that before the second layer
    ((C, A), (), None),
    # both SDPs write the same bytes: the SDP runs its groups one after the other
    ((C, B), (), None),
    ((C, D), (), None),
])
def test_consecutive_convolutions_pipeline(second, seen, race):
    m = Machine("nv_small")
    _conv(m, A, 0x8050_0000, B, 0, seed=1)
    if seen:
        while m.step():  # the layer, then its done interrupts one by one (run() would
            pass  # count as waiting for them all)
        assert m.layers_run == 1
        for source in seen:
            m.clear_interrupt(source, 0)
    _conv(m, *second[:1], 0x8060_0000, second[1], 1, seed=2)
    if race is None:
        m.run()
        assert m.layers_run == 2
        return
    with pytest.raises(MemoryFault, match=race):
        m.run()


@pytest.mark.parametrize("count", [3, 40])  # compared one by one; as arrays
def test_the_first_race_is_found_exactly_when_some_pair_of_windows_meets(count):
    """Windows with and without lines, at random: a race is found exactly when a pair of
    them really moves a byte in common, and the bytes named are moved by both."""
    from sim.dram import LayerAccess
    from sim.races import _first_race

    class Unordered:
        def races(self, a, b):
            return True

    rng = np.random.default_rng(17)
    outcomes = set()
    for _ in range(60):
        def accesses(n):
            out = []
            for _ in range(n):
                addr = 0x8000_0000 + int(rng.integers(0, 1 << 14))
                if rng.random() < 0.5:
                    out.append(LayerAccess(addr, int(rng.integers(1, 300)), "x"))
                else:  # lines of 16 bytes every 64
                    lines = int(rng.integers(1, 6))
                    out.append(LayerAccess(addr, 64 * (lines - 1) + 16, "x",
                                           (np.arange(lines) * 64, 16)))
            return out
        early, late = accesses(count), accesses(count)
        want = any(a.intersects(b) for a in early for b in late)
        hit = _first_race(early, late, Unordered())
        assert (hit is not None) == want
        outcomes.add(want)
        if hit is not None:
            a, b, lo, hi = hit
            assert lo < hi
            for access in (a, b):
                starts, ends = access.intervals(lo)
                assert np.any((starts <= 0) & (ends >= hi - lo))  # one line holds them all
    assert outcomes == {True, False} or count > 3  # both met at a few windows each


@pytest.mark.parametrize("how, race", [("step", True), ("run", False)])
def test_running_the_machine_dry_waits_for_every_layer(how, race):
    """Machine.run() returns once nothing can run: its caller has waited for every layer
    (stepping it leaves the interrupts unseen)."""
    m = Machine("nv_small")
    _start_sdp(m, *RAW[0])
    if how == "run":
        m.run()
    else:
        while m.step():
            pass
    _start_pool(m, *RAW[1])
    _runs_or_races(m, 1, "would depend on timing" if race else None)


def _writes(start, *args, txn: bool = False) -> list[str]:
    """The trace lines of the register writes ``start(machine, *args)`` makes (in the
    ``input.txn`` syntax if ``txn``, else the ``.cfg`` one)."""
    from sim.trace.txn import byte_to_csb

    lines = []

    class Recorder:
        def wrote_register(self, register, value):
            if txn:
                csb = byte_to_csb(m.regfile.address_of(register))
                lines.append(f"write_reg {csb:#010x} {value:#x}")
            else:
                lines.append(f"reg_write({register.full_name}, {value:#x});")

    m = Machine("nv_small")
    m.register_listeners.add(Recorder())
    start(m, *args)
    return lines


@pytest.mark.parametrize("wait, verdict", [
    ("", "error"),  # the pooling enabled while the SDP layer may still run
    ("intr_notify(SDP_0, sync_id_0);", "pass"),
    ("poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x1);", "pass"),
    # a poll that held before the layer ran (the player runs layers when a line waits)
    ("poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x0);", "error"),
])
def test_a_trace_waits_for_the_layer_before(tmp_path, wait, verdict):
    from sim.trace.player import run_trace

    cfg = [*_writes(_start_sdp, *RAW[0]), wait, *_writes(_start_pool, *RAW[1]),
           "intr_notify(PDP_0, sync_id_1);"]
    folder = tmp_path / "nv_small" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text("\n".join(cfg) + "\n")
    result = run_trace(folder, "nv_small")
    assert result.status.value == verdict, result.message
    if verdict == "error":
        assert "would depend on timing" in result.message
        assert "hardware layer 0 (SDP" in result.message


def _in_group(start, units: tuple, group: int):
    """``start`` programmed into register group ``group`` of ``units``."""
    def programmed(m, *args):
        for unit in units:
            set_reg(m, unit, "S_POINTER_0", producer=group)
        start(m, *args)
    return programmed


_SDP_UNITS = ("NVDLA_SDP", "NVDLA_SDP_RDMA")
E = 0x8050_0000
_OTHER_WAITS = {
    # SDP runs its groups in turn: its group 1's end seen tells that group 0 ended too
    "a later group's interrupt": [*_writes(_in_group(_start_sdp, _SDP_UNITS, 0), A, B),
                                  *_writes(_in_group(_start_sdp, _SDP_UNITS, 1), C, D),
                                  "intr_notify(SDP_1, sync_id_0);"],
    # a unit reads idle from the op-done that raises its interrupts on
    "a poll of the unit's idle status": [*_writes(_conv, A, 0x8060_0000, B, 0, 1),
                                         "poll_reg_equal(NVDLA_SDP.S_STATUS_0, 0x0);"],
    # an enable written back to 0 before the layer was programmed counts for nothing
    "an enable taken back": ["reg_write(NVDLA_PDP_RDMA.D_OP_ENABLE_0, 0x1);",
                             "reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x1);",
                             "reg_write(NVDLA_PDP_RDMA.D_OP_ENABLE_0, 0x0);",
                             "reg_write(NVDLA_PDP.D_OP_ENABLE_0, 0x0);",
                             *_writes(_start_sdp, A, B), "intr_notify(SDP_0, sync_id_0);"],
}


@pytest.mark.parametrize("case", sorted(_OTHER_WAITS))
def test_a_trace_that_waits_otherwise_is_not_racing(tmp_path, case):
    """Each writes B, waits its way, then a pooling reads B (found by review: each was
    reported as a race)."""
    from sim.trace.player import run_trace

    cfg = [*_OTHER_WAITS[case], *_writes(_start_pool, B, E), "intr_notify(PDP_0, sync_id_1);"]
    folder = tmp_path / "nv_small" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text("\n".join(cfg) + "\n")
    result = run_trace(folder, "nv_small")
    assert result.status.value == "pass", result.message


@pytest.mark.parametrize("wait", [False, True])
def test_the_sdp_rdma_reads_at_its_enable(wait):
    """The SDP_RDMA's operand is taken when its layer is enabled (as NVIDIA's C-model
    takes it; the KMD enables a ResNet's shortcut addition while the pooling writing its
    operand runs): not a race, and the answer is the one after the pooling."""
    def pool_then_sdp(wait_between: bool) -> Machine:
        m = Machine("nv_small")
        m.load(A, np.random.default_rng(4).integers(-100, 100, CUBE_BYTES).astype(
            np.int8).tobytes())
        _start_pool(m, A, B)
        if wait_between:
            m.run()
        _start_sdp(m, B, C)
        m.run()
        assert m.layers_run == 2
        return m

    m = pool_then_sdp(wait)
    assert m.read_memory(C, POOLED_BYTES) == pool_then_sdp(True).read_memory(C, POOLED_BYTES)


@pytest.mark.parametrize("poll", [
    # the CACC idle: the convolution's SDP may still write its output
    "poll_reg_equal(NVDLA_CACC.S_STATUS_0, 0x0);",
    # only the CDMA's data-done interrupt raised and waited for
    "poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x10000);",
])
def test_a_poll_of_an_upstream_unit_does_not_wait_for_the_sdp(tmp_path, poll):
    """A poll that held says only what it read: the layers whose done interrupts were
    raised ended, and, for a unit's idle status, that unit's; the convolution's SDP,
    still to raise its interrupt, may still be writing what the pooling reads."""
    from sim.trace.player import run_trace

    cfg = [*_writes(_conv, A, 0x8060_0000, B, 0, 1), poll, *_writes(_start_pool, B, E),
           "intr_notify(PDP_0, sync_id_1);"]
    folder = tmp_path / "nv_small" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text("\n".join(cfg) + "\n")
    result = run_trace(folder, "nv_small")
    assert result.status.value == "error", result.message
    assert "hardware layer 0 (CONV" in result.message


def _play(tmp_path, lines: list[str], name: str = "t.cfg"):
    """Play the trace ``lines`` (a ``.cfg``, or an ``input.txn`` by ``name``) on nv_small."""
    from sim.trace.player import run_trace

    folder = tmp_path / "nv_small" / "t"
    folder.mkdir(parents=True)
    (folder / name).write_text("\n".join(lines) + "\n")
    return run_trace(folder, "nv_small")


@pytest.mark.parametrize("wait, verdict", [(False, "error"), (True, "pass")])
def test_a_txn_wait_line_sees_the_layer_before(tmp_path, wait, verdict):
    """``wait`` (input.txn) waits for an interrupt: the SDP's layer raised its, so the
    pooling enabled after it does not race it (killed: no completions_seen in _op_wait)."""
    lines = [*_writes(_start_sdp, *RAW[0], txn=True), *(["wait"] if wait else []),
             *_writes(_start_pool, *RAW[1], txn=True), "wait"]
    result = _play(tmp_path, lines, "input.txn")
    assert result.status.value == verdict, result.message
    if verdict == "error":
        assert "would depend on timing" in result.message


@pytest.mark.parametrize("pool, kinds", [
    ((B, B), "RAW and WAW"),  # the pooling reads and writes the SDP's output
    ((B, A), "RAW and WAR"),  # it reads the SDP's output and writes its input
])
def test_a_pair_racing_in_several_ways_is_told_once(pool, kinds):
    """Report mode warns once a pair of layers, however many ways they race (killed: no
    return after a reported race in RaceWatch._check)."""
    told = []
    m = _sdp_then_pool(RAW[0], pool, None, told.append)
    assert m.layers_run == 2
    assert len(told) == 1, (kinds, told)
    assert "hardware layer 1 (PDP" in told[0] and "hardware layer 0 (SDP" in told[0]


@pytest.mark.parametrize("masked, race", [(False, False), (True, True)])
def test_a_masked_done_bit_is_not_seen_by_clearing_the_unmasked(masked, race):
    """Machine.clear_interrupts clears what a handler saw: a masked bit stays set and
    unseen, so the SDP's layer may still run (killed: clear_interrupts seeing masked
    bits)."""
    m = Machine("nv_small")
    _start_sdp(m, *RAW[0])
    while m.step():
        pass
    sdp_bit = m.interrupt_status()
    assert sdp_bit and m.interrupt_set("SDP", 0)
    m.write_reg("NVDLA_GLB.S_INTR_MASK_0", sdp_bit if masked else 0)
    m.clear_interrupts()
    assert m.interrupt_set("SDP", 0) == masked
    _start_pool(m, *RAW[1])
    _runs_or_races(m, 1, "hardware layer 0 \\(SDP" if race else None)


@pytest.mark.parametrize("late_enable, race", [
    # the pooling's RDMA enabled at once, its PDP (which writes B) once the SDP's end was
    # seen: the PDP writes after the latest of its upstream units' starts
    (("NVDLA_PDP",), False),
    ((), True),  # both enabled at once
])
def test_an_access_waits_for_the_latest_start_upstream(late_enable, race):
    """The SDP writes B; a pooling of C writes B too (killed: Flight.start_of taking the
    earliest start of the units upstream instead of the latest)."""
    m = Machine("nv_small")
    _start_sdp(m, A, B)
    early = tuple(u for u in ("NVDLA_PDP_RDMA", "NVDLA_PDP") if u not in late_enable)
    _start_pool(m, C, B, enable=early)
    assert m.step() and m.layers_run == 1  # the SDP: the pooling waits for its PDP enable
    m.clear_interrupt("SDP", 0)
    for unit in late_enable:
        m.write_reg(f"{unit}.D_OP_ENABLE_0", 1)
    if race:
        with pytest.raises(MemoryFault, match=r"writes pri_mem bytes 0x80200000.* writes"):
            m.run()
    else:
        m.run()
        assert m.layers_run == 2


@pytest.mark.parametrize("pool_first, race", [(True, True), (False, False)])
def test_a_layer_armed_before_an_end_was_seen_keeps_that_layer(pool_first, race):
    """SDP group 0 writes B, SDP group 1 writes elsewhere, a pooling reads B.  The
    pooling enabled before the group 0's end was seen races it, though group 1 ran in
    between, after that end was seen (killed: _forget dropping the layers seen by the
    current clock instead of by the oldest enable still pending)."""
    m = Machine("nv_small")
    _in_group(_start_sdp, _SDP_UNITS, 0)(m, A, B)
    _in_group(_start_sdp, _SDP_UNITS, 1)(m, C, D)
    if pool_first:
        _start_pool(m, B, E)
    assert m.step() and m.layers_run == 1  # SDP group 0
    m.clear_interrupt("SDP", 0)
    if not pool_first:
        _start_pool(m, B, E)
    _runs_or_races(m, 2, "hardware layer 2 \\(PDP.*hardware layer 0 " if race else None)


@pytest.mark.parametrize("group_1_writes, group_0_after_end, race", [
    (B, True, False),  # the pooling's output: group 1 runs after group 0, enabled after
    (A, True, False),  # its end was seen; the pooling's input, likewise
    (B, False, True),  # group 0 enabled while the pooling may run: so may group 1
])
def test_a_unit_starts_a_group_no_sooner_than_the_group_before(group_1_writes,
                                                               group_0_after_end, race):
    """SDP group 1 enabled while a pooling of A to B may run, group 0 once its end was
    seen: group 1 runs after group 0, so after the pooling (killed: no started.update in
    RaceWatch.layer_ran)."""
    m = Machine("nv_small")
    _start_pool(m, A, B)
    _in_group(_start_sdp, _SDP_UNITS, 1)(m, C, group_1_writes)
    if not group_0_after_end:
        _in_group(_start_sdp, _SDP_UNITS, 0)(m, E, D)
    assert m.step() and m.layers_run == 1  # the pooling: the SDP's group 1 waits for 0
    m.clear_interrupt("PDP", 0)
    if group_0_after_end:
        _in_group(_start_sdp, _SDP_UNITS, 0)(m, E, D)
    _runs_or_races(m, 2, "hardware layer 2 \\(SDP.*hardware layer 0 " if race else None)


def test_a_task_the_firmware_reported_complete_has_ended():
    """Firmware.run_task returning: every layer of the task ended, its done interrupts
    seen, cleared or not (killed: no completions_seen at the task's end).  The firmware's
    process is stood in for by a task that runs the SDP's layer and clears nothing."""
    from sim.firmware.driver import Firmware

    class TaskRunsTheSdp(Firmware):
        def __init__(self, machine):  # no process: run_task's own steps only
            self.machine, self._proc = machine, None

        def _run(self, args):
            while self.machine.step():
                pass
            return 0

        def _call(self, name, args=b""):
            return 0, 0

        def close(self):
            pass

    m = Machine("nv_small")
    _start_sdp(m, *RAW[0])
    assert TaskRunsTheSdp(m).run_task([0]).hw_layers == 1
    assert m.interrupt_set("SDP", 0)  # raised, never cleared
    _start_pool(m, *RAW[1])
    assert m.run() == 1


# -- the race watch alone, on made-up layers -----------------------------------------------

def _flight(number, groups, accesses=(), bits=()):
    """A layer that ran: ``groups`` unit -> group, ``accesses`` (memory, reads, writes),
    ``bits`` [done bit, unit, raised, clock seen or None]."""
    from sim.races import Flight

    flight = Flight(number, "TEST", groups, {unit: 0 for unit in groups}, list(accesses))
    flight.bits = [list(bit) for bit in bits]
    return flight


# (the units whose done interrupts were seen and when, the access's unit, the clock it
# retired at: the earliest done seen of its own unit or of one downstream, any if unnamed)
RETIRED_CASES = [
    ((("NVDLA_SDP", 5), ("NVDLA_PDP", 2)), "NVDLA_CDMA", 2),  # both downstream of the CDMA
    ((("NVDLA_SDP", 5), ("NVDLA_PDP", 2)), "NVDLA_SDP", 2),  # on the fly: the PDP ends last
    ((("NVDLA_SDP", 2), ("NVDLA_PDP", 5)), "NVDLA_PDP", 5),  # the SDP is upstream of it
    ((("NVDLA_SDP", 2), ("NVDLA_PDP", None)), "NVDLA_PDP", None),  # its own done not seen
    ((("NVDLA_SDP", 7), ("NVDLA_CDP", 4)), None, 4),  # unnamed: the first done seen
    ((("NVDLA_SDP", 3),), "NVDLA_CDP", None),  # no done of a unit its data reach
]


@pytest.mark.parametrize(("seen", "unit", "retired"), RETIRED_CASES)
def test_an_access_retires_at_the_first_done_seen_downstream(seen, unit, retired):
    bits = [(1 << i, u, at is not None, at) for i, (u, at) in enumerate(seen)]
    flight = _flight(0, dict.fromkeys((u for u, _ in seen), 0), bits=bits)
    assert flight.retired_at(unit) == retired


def test_a_watch_keeps_the_latest_layers_while_a_unit_stays_armed():
    """A unit armed and never done holds every later layer in flight: the watch keeps the
    MAX_FLIGHTS latest (an older one forgotten: a race with it missed, never one made up)."""
    from sim.races import MAX_FLIGHTS, RaceWatch

    watch = RaceWatch()
    watch.armed("NVDLA_CDP", 0)  # enabled before all of them, never completed
    extra = 5
    for number in range(MAX_FLIGHTS + extra):
        watch.layer_ran(number, "SDP", {"NVDLA_SDP": number % 2}, [])
    assert [f.number for f in watch.flights] == list(range(extra, MAX_FLIGHTS + extra))


@pytest.mark.parametrize(("early_what", "late_what", "race"), [
    ("NVDLA_PDP.D_DST_BASE_ADDR", "NVDLA_PDP_RDMA.D_SRC_BASE_ADDR", True),  # RDMA upstream
    ("", "NVDLA_PDP_RDMA.D_SRC_BASE_ADDR", False),  # unnamed: taken as ordered
    ("NVDLA_PDP.D_DST_BASE_ADDR", "", False),
])
def test_layers_sharing_a_unit_race_only_where_named_units_leave_them_unordered(
        early_what, late_what, race):
    """Two poolings (the PDP's groups 0 and 1): the late one's PDP_RDMA read is upstream of
    the PDP the early one writes from, so nothing orders them; an access no unit names is
    taken as ordered."""
    from sim.dram import LayerAccess
    from sim.races import RaceWatch

    watch = RaceWatch()
    writes = [LayerAccess(A, 64, early_what)]
    watch.flights = [_flight(0, {"NVDLA_PDP": 0}, [("dram", [], writes)],
                             bits=[(1, "NVDLA_PDP", True, None)])]
    accesses = [("dram", [LayerAccess(A + 32, 64, late_what)], [])]
    late = {"NVDLA_PDP": 1, "NVDLA_PDP_RDMA": 1}
    if race:
        with pytest.raises(MemoryFault, match=r"hardware layer 1 .* reads dram bytes "
                                              r"0x80100020\.\.0x8010003f"):
            watch.layer_ran(1, "PDP", late, accesses)
    else:
        watch.layer_ran(1, "PDP", late, accesses)
