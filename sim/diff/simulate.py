"""Play a trace, keeping what every check looked at instead of stopping at a mismatch."""

from __future__ import annotations

from pathlib import Path

from ..errors import SimError
from ..records import record
from ..trace.player import Check, TracePlayer, find_trace_file, guess_config
from .record import WriteRecorder


@record(frozen=False)
class Region:
    """A memory range a trace checks (``check_crc`` or ``dump_mem``)."""

    memory: str  # pri_mem | sec_mem
    addr: int
    size: int
    where: str  # trace file:line of the check
    name: str  # dump_mem file name, or crc_<address>.dat
    seq: int  # writes made before the check
    simulated: bytes  # the simulator's bytes when the check ran
    golden: bytes | None  # the trace's expected bytes (dump_mem), None for a CRC check
    trace_agrees: bool  # does the simulator pass this check?

    @property
    def end(self) -> int:
        return self.addr + self.size


class CheckKeeper:
    """Keeps what every check of a trace looked at, instead of stopping at a mismatch: a
    memory check as a Region, a register or interrupt check the simulator fails as a note.
    It judges the checks of a :class:`TracePlayer` and tags the writes of the memory
    operations with their trace line."""

    MEMORY_OPS = ("mem_init", "mem_load", "load_hex")

    def __init__(self, recorder: WriteRecorder):
        self.recorder = recorder
        self.regions: list[Region] = []
        self.notes: list[str] = []

    def judge(self, check: Check) -> None:
        if check.memory is None:
            if check.failure is not None:
                self.notes.append(str(check.error()))
            return
        self.regions.append(Region(check.memory.name, check.addr, check.size, check.op.where,
                                   check.name, self.recorder.seq, check.data(), check.golden,
                                   check.failure is None))

    def before_op(self, op) -> None:
        if op.cmd in self.MEMORY_OPS:
            self.recorder.where = op.where


@record(frozen=False)
class Simulation:
    trace_file: Path
    config: str
    regions: list[Region]
    writes: list  # sim.diff.record.Write
    layers: list  # (index, engine)
    notes: list  # register/interrupt checks the simulator itself fails


def simulate(path: str | Path, config: str | None = None) -> Simulation:
    """Play the trace at ``path``, recording writes and checked regions.

    Raises SimError for invalid traces; register polls and interrupt waits
    the simulator fails are kept as notes.
    """
    trace_file = find_trace_file(Path(path))
    cfg = config or guess_config(trace_file)
    if cfg is None:
        raise SimError(f"{path}: cannot tell the hardware configuration; pass --config")
    recorder = WriteRecorder()
    keeper = CheckKeeper(recorder)
    player = TracePlayer(trace_file, cfg, judge=keeper.judge, before_op=keeper.before_op)
    recorder.attach(player.machine)
    player.play()
    if not keeper.regions:
        raise SimError(f"{trace_file}: the trace checks no memory (no check_crc or dump_mem)")
    return Simulation(trace_file, cfg, keeper.regions, recorder.writes, recorder.layers(),
                      keeper.notes)
