"""Play a trace, keeping what every check looked at instead of stopping at a mismatch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SimError
from ..trace.player import Check, TracePlayer, find_trace_file, guess_config
from .record import WriteRecorder


@dataclass
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


class RecordingPlayer(TracePlayer):
    """A trace player that records writes and keeps every checked region."""

    def __init__(self, trace_file: Path, config: str):
        super().__init__(trace_file, config)
        self.recorder = WriteRecorder().attach(self.machine)
        self.regions: list[Region] = []
        self.notes: list[str] = []  # register/interrupt checks the simulator fails

    def _judge(self, check: Check) -> None:
        """Keep what the check looked at instead of stopping at a mismatch: a memory check
        as a Region, a register or interrupt check the simulator fails as a note."""
        self.checks += 1
        if check.memory is None:
            if check.failure is not None:
                self.notes.append(str(check.error()))
            return
        self.regions.append(Region(check.memory.name, check.addr, check.size, check.op.where,
                                   check.name, self.recorder.seq, check.data(), check.golden,
                                   check.failure is None))

    def _at(self, op):
        self.recorder.where = op.where

    def _op_mem_init(self, op) -> None:
        self._at(op)
        super()._op_mem_init(op)

    def _op_mem_load(self, op) -> None:
        self._at(op)
        super()._op_mem_load(op)

    def _op_load_hex(self, op) -> None:
        self._at(op)
        super()._op_load_hex(op)


@dataclass
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
    player = RecordingPlayer(trace_file, cfg)
    player.play()
    if not player.regions:
        raise SimError(f"{trace_file}: the trace checks no memory (no check_crc or dump_mem)")
    return Simulation(trace_file, cfg, player.regions, player.recorder.writes,
                      player.recorder.layers(), player.notes)
