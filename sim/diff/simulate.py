"""Play a trace, keeping what every check looked at instead of stopping at a mismatch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..dram import read_hex_dat
from ..errors import CheckFailed, SimError
from ..trace.player import TracePlayer, find_trace_file, guess_config
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

    def _tolerant(self, method, op) -> None:
        try:
            method(op)
        except CheckFailed as exc:
            self.notes.append(str(exc))

    def _op_poll_reg(self, op) -> None:
        self._tolerant(super()._op_poll_reg, op)

    def _op_intr_notify(self, op) -> None:
        self._tolerant(super()._op_intr_notify, op)

    def _op_wait(self, op) -> None:
        self._tolerant(super()._op_wait, op)

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

    def _op_check_crc(self, op) -> None:
        _sync, mem_name, addr, size, want = op.args
        self.machine.run()
        mem = self._memory(op, mem_name)
        data = mem.read(addr, size)
        self.checks += 1
        self.regions.append(Region(mem.name, addr, size, op.where, f"crc_{addr:#x}.dat",
                                   self.recorder.seq, data, None, mem.crc32(addr, size) == want))

    def _op_dump_mem(self, op) -> None:
        addr, size, name = op.args
        self.machine.run()
        mem = self._txn_memory(addr)
        data = mem.read(addr, size)
        golden = read_hex_dat(self._file(op, name))
        if len(golden) < size:
            raise op.fail(f"{name} holds {len(golden)} bytes, dump_mem asks {size}")
        self.checks += 1
        self.regions.append(Region(mem.name, addr, size, op.where, name, self.recorder.seq, data,
                                   golden[:size], golden[:size] == data))


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
