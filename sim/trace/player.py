"""Replay a trace on a Machine and check its expectations.

The player lets the machine advance only as far as the trace needs: a
register poll, an interrupt wait or a memory check runs pending layers until
it is satisfied or nothing more can run (then the check fails; the player
never hangs).
"""

from __future__ import annotations

import os
import re
import time
from enum import Enum
from pathlib import Path

from ..configs import CONFIGS
from ..dram import DEFAULT_LIMITS, Memory, MemoryLimits
from ..errors import CheckFailed, NotImplementedFeature, ReportedError, SimError
from ..machine import Machine
from ..memfiles import (
    RecordFile,
    memory_file_name,
    read_hex_dat,
    read_record_file,
    write_memory_file,
)
from ..records import record
from .cfg import bare_where, parse_bare, parse_cfg
from .ops import (
    CheckCrc,
    DumpMem,
    IntrNotify,
    LoadMem,
    MemInit,
    MemLoad,
    Op,
    PollReg,
    RegRead,
    RegWrite,
    Wait,
)
from .txn import parse_txn

# The nv_full trace player routes memory by address: 0x5xxxxxxx is CV-SRAM.
TXN_SECONDARY_WINDOW = 0x50000000
TXN_WINDOW_MASK = 0xF0000000


class TraceStatus(str, Enum):
    """A trace's verdict; each value is the string the JSON and text reports print."""

    PASS = "pass"  # every check held
    FAIL = "fail"  # a check did not hold (CheckFailed)
    ERROR = "error"  # the trace could not run to a verdict (SimError, or a simulator bug)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@record(frozen=False)
class TraceResult:
    name: str
    config: str
    status: TraceStatus
    message: str = ""
    seconds: float = 0.0
    checks: int = 0
    not_implemented: bool = False  # an ERROR because the simulator lacks a feature

    def __post_init__(self):
        self.status = TraceStatus(self.status)

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "config": self.config,
            "status": self.status.value,
            "message": self.message,
            "seconds": round(self.seconds, 3),
        }


def find_trace_file(path: Path, names: list[str] | None = None) -> Path:
    """The trace file of a trace folder (``input.txn`` or the one ``*.cfg``).  ``names``:
    the names of the folder's entries, when the caller has listed it (regress's walk)."""
    if names is None:
        try:
            names = os.listdir(path)  # a folder (the usual case): its names in one call
        except OSError:
            names = None  # a file, nothing, or a folder we may not list
            if path.is_file():
                return path
            if not path.is_dir():
                raise SimError(f"{path}: no such trace file or folder") from None
    if names is None or "input.txn" in names:
        txn = path / "input.txn"
        if txn.is_file():
            return txn
    if names is None:
        cfgs = sorted(path.glob("*.cfg"))
    else:  # names, made a path only when one is the answer
        cfgs = [name for name in names if name.endswith(".cfg")]
        if len(cfgs) == 1:
            return path / cfgs[0]
    if len(cfgs) == 1:
        return cfgs[0]
    if not cfgs:
        raise SimError(f"{path}: no input.txn or .cfg trace in this folder")
    raise SimError(f"{path}: several .cfg files; name one")


_HEADER_CONFIG = re.compile(r"\(config (\w+)[,)]")


def guess_config(trace_file: Path) -> str | None:
    """The configuration named by the folder layout ``<config>/<test>/``, else by the
    trace's own header (``// ... (config nv_small, ...)``, as gen and recordings write)."""
    for parent in trace_file.parents:
        if parent.name in CONFIGS:
            return parent.name
    try:
        with open(trace_file, errors="replace") as f:
            head = [f.readline() for _ in range(3)]
    except OSError:
        return None
    for line in head:
        found = _HEADER_CONFIG.search(line) if line.lstrip().startswith(("//", "#")) else None
        if found and found.group(1) in CONFIGS:
            return found.group(1)
    return None


IDLE = "waiting for an interrupt, but the machine is idle"


@record(frozen=False)
class Check:
    """What one check of a trace looked at, and why it did not hold (None: it held).

    The player computes each check's result as this value; :meth:`TracePlayer._judge`
    decides what a failure does (stop the trace, or, in ``sim.diff``, be kept)."""

    op: Op
    failure: str | None = None  # the CheckFailed reason
    memory: Memory | None = None  # a memory check's region: memory, addr, size
    addr: int = 0
    size: int = 0
    name: str = ""  # dump_mem's expected file, or crc_<address>.dat
    golden: bytes | None = None  # the expected bytes (dump_mem), None for a CRC
    actual: bytes | None = None  # the bytes read, when the check read them

    def data(self) -> bytes:
        """The region's bytes as the check saw them (read now if it did not read them)."""
        if self.actual is None:
            self.actual = self.memory.read(self.addr, self.size)
        return self.actual

    def error(self) -> CheckFailed:
        return CheckFailed(self.failure, where=self.op.where)


class TracePlayer:
    def __init__(self, trace_file: Path, config: str, dump_dir: Path | None = None,
                 limits: MemoryLimits = DEFAULT_LIMITS, dump_format: str = "dat",
                 word_bytes: int = 1, judge=None, before_op=None):
        """``judge(check)``: who decides each check (default: a failed check stops the
        trace); ``before_op(op)``: told of each operation before it runs."""
        self.judge = judge
        self.before_op = before_op
        self.trace_file = trace_file
        self.folder = trace_file.parent
        # what str(self.folder / name) starts with for a plain file name (_file): the
        # trace's own path without its name
        self._folder_prefix = str(trace_file)[:len(str(trace_file)) - len(trace_file.name)]
        self.machine = Machine(config, limits)
        self.dump_dir = dump_dir
        self.dump_format = dump_format  # sim.dram.MEMORY_FILE_FORMATS
        self.word_bytes = word_bytes
        self.checks = 0
        self._parsed: dict[str, RecordFile] = {}  # by the file's path as text

    # -- helpers --------------------------------------------------------------
    def _file(self, op: Op, name: str) -> Path | str:
        """The memory file ``name`` next to the trace.  A plain file name (the usual one)
        is joined as text, as pathlib would join it: a trace loads each of its files
        once, and pathlib's parse and stat cost more than reading a small file."""
        if name and name != "." and "/" not in name:
            path = self._folder_prefix + name
            if os.path.isfile(path):
                return path
        path = self.folder / name
        if not path.is_file():  # pathlib's own answer (and errors) when it is not one
            raise op.fail(f"memory file {name!r} not found next to the trace")
        return path

    def _memory(self, op: Op, name: str):
        return self.machine.memory(name)  # play() locates an error at op.where

    def _txn_memory(self, addr: int):
        if addr & TXN_WINDOW_MASK == TXN_SECONDARY_WINDOW and self.machine.sec_mem is not None:
            return self.machine.sec_mem
        return self.machine.pri_mem

    def _register(self, op: Op, reg):
        return self.machine._reg(reg)  # play() locates an error at op.where

    def _advance_until(self, condition) -> bool:
        """Run layers one at a time until ``condition()`` holds or nothing can run."""
        while not condition():
            if not self.machine.step():
                return condition()
        return True

    def _dump(self, name: str, addr: int, data: bytes) -> None:
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            write_memory_file(self.dump_dir / memory_file_name(name, self.dump_format), addr,
                              data, self.dump_format, self.word_bytes)

    # -- execution ------------------------------------------------------------
    def play(self) -> None:
        handlers: dict[str, object] = {}  # op.cmd -> its _op_<cmd> method
        before_op = self.before_op
        # most of a trace is register writes: they go to the machine without a handler's
        # call, unless the handler is not this class's own (a subclass's, a test's patch);
        # then a .cfg's plain ones are not even made into ops (parse_bare), unless someone
        # is told of each op
        write_reg = None
        if getattr(self._op_reg_write, "__func__", None) is TracePlayer._op_reg_write:
            write_reg = self.machine.write_reg
        if self.trace_file.suffix == ".txn":
            ops = parse_txn(self.trace_file)
        elif write_reg is not None and before_op is None:
            ops = parse_bare(self.trace_file)
        else:
            ops = parse_cfg(self.trace_file)
        for op in ops:
            if type(op) is tuple:  # a BareWrite: (register, value, line)
                try:
                    write_reg(op[0], op[1])
                except NotImplementedFeature:
                    raise
                except ReportedError as exc:
                    exc.locate(bare_where(self.trace_file, op))
                    raise
                continue
            if before_op is not None:
                before_op(op)
            cmd = op.cmd
            try:
                if cmd == "reg_write" and write_reg is not None:
                    write_reg(op.reg, op.value)
                    continue
                handler = handlers.get(cmd)
                if handler is None:
                    handler = handlers[cmd] = getattr(self, f"_op_{cmd}")
                handler(op)
            except NotImplementedFeature:  # about the simulator, not about this trace line
                raise
            except ReportedError as exc:  # SimError or CheckFailed, its class unchanged
                exc.locate(op.where)
                raise
        self.machine.run()

    def _op_nop(self, op: Op) -> None:
        pass

    _op_check_nothing = _op_nop
    _op_comment = _op_nop

    def _judge(self, check: Check) -> None:
        """Count a check; a check that did not hold stops the trace, unless a ``judge``
        decides (``sim.diff`` plays on, keeping what each check looked at)."""
        self.checks += 1
        if self.judge is not None:
            self.judge(check)
        elif check.failure is not None:
            raise check.error()

    def _held(self, op: Op) -> None:
        """:meth:`_judge` of a check that held: counted, and shown to a ``judge`` if there is
        one (none needs the Check made: most of a trace's checks are polls that held)."""
        if self.judge is None:
            self.checks += 1
        else:
            self._judge(Check(op))

    def _op_reg_write(self, op: RegWrite) -> None:
        self.machine.write_reg(op.reg, op.value)  # by name (.cfg) or byte address (.txn)

    def _op_reg_read(self, op: RegRead) -> None:
        self.machine.read_reg(self._register(op, op.reg).full_name)

    def _op_poll_reg(self, op: PollReg) -> None:
        mask, want = op.mask, op.value
        want &= mask
        r = self._register(op, op.reg)
        read = self.machine.read_register
        # _advance_until's reads and steps, in its order, written out (most polls hold at
        # the first read): a read may change state (a LUT port steps its address)
        got = read(r) & mask
        while got != want:
            if not self.machine.step():
                got = read(r) & mask
                break
            got = read(r) & mask
        if got == want:
            # the bench waited: what had ended, it knows; a unit's status read idle says
            # its layers ended, their done interrupts not raised yet included
            idle = frozenset((r.unit,)) if r.name == "S_STATUS_0" else frozenset()
            self.machine.completions_seen(idle)
            return self._held(op)
        got = read(r) & mask  # what it reads now, for the message
        self._judge(Check(op, f"{r.full_name} reads {got:#x} (mask {mask:#x}), "
                              f"expected {want:#x}"))

    def _interrupt(self, op: Op, text: str) -> tuple[str, int]:
        """``SDP_0``, ``cdma_dat_0`` ... -> (source as S_INTR_STATUS_0 names it, group).

        NVIDIA's trace parser upper-cases the source, so any letter case names it.
        """
        name, _, group = text.strip().upper().rpartition("_")
        sources = self.machine.interrupt_sources()
        if not name or group not in ("0", "1"):
            raise op.fail(f"bad interrupt name {text!r} (expected SOURCE_GROUP, e.g. SDP_0)")
        if name not in sources:
            raise op.fail(f"unknown interrupt source {text!r} (known: "
                          f"{', '.join(s + '_0/1' for s in sources)})")
        return name, int(group)

    def _op_intr_notify(self, op: IntrNotify) -> None:
        source = op.source
        if not source:  # single shot: any interrupt, then clear what was raised
            if not self._advance_until(self.machine.interrupt_pending):
                return self._judge(Check(op, IDLE))
            self.machine.clear_interrupts()
            return self._held(op)
        name, g = self._interrupt(op, source)
        if not self._advance_until(lambda: self.machine.interrupt_set(name, g)):
            return self._judge(Check(op, f"interrupt {source} never raised (machine idle)"))
        self.machine.clear_interrupt(name, g)  # as the bench's handler does
        self._held(op)

    def _op_wait(self, op: Wait) -> None:
        held = self._advance_until(self.machine.interrupt_pending)
        self.machine.completions_seen(frozenset())
        self._judge(Check(op, None if held else IDLE))

    def _op_mem_init(self, op: MemInit) -> None:
        mem = self._memory(op, op.memory)
        size = op.size
        if isinstance(size, str):
            size = self._records(op, size).extent
        mem.fill(op.addr, size, op.pattern)

    def _op_mem_load(self, op: MemLoad) -> None:
        mem = self._memory(op, op.memory)
        mem.write_runs(op.addr, self._records(op, op.file).runs)

    def _records(self, op: Op, name: str) -> RecordFile:
        """A record file's runs and extent, parsed once per trace (mem_init sizes by the file
        that mem_load then loads)."""
        path = self._file(op, name)
        key = str(path)
        if key not in self._parsed:
            self._parsed[key] = read_record_file(path)
        return self._parsed[key]

    def _op_load_hex(self, op: LoadMem) -> None:
        addr, size = op.addr, op.size
        mem = self._txn_memory(addr)
        mem.check(addr, size, access="load_mem")
        data = read_hex_dat(self._file(op, op.file))
        if len(data) < size:
            data = data + bytes(size - len(data))  # the bench loads what the file holds
        mem.write(addr, data[:size])

    def _op_check_crc(self, op: CheckCrc) -> None:
        addr, size = op.addr, op.size
        self.machine.run()
        mem = self._memory(op, op.memory)
        got = mem.crc32(addr, size)
        check = Check(op, None, mem, addr, size, f"crc_{addr:#x}.dat")
        if got != op.crc:
            check.failure = (f"CRC of {op.memory} {addr:#x}+{size:#x} is {got:#010x}, "
                             f"expected {op.crc:#010x}")
        if self.dump_dir is not None:
            self._dump(check.name, addr, check.data())
        self._judge(check)

    def _op_dump_mem(self, op: DumpMem) -> None:
        addr, size, name = op.addr, op.size, op.file
        self.machine.run()
        mem = self._txn_memory(addr)
        got = mem.read(addr, size)
        self._dump(name, addr, got)
        expected = read_hex_dat(self._file(op, name))
        if len(expected) < size:
            raise op.fail(f"{name} holds {len(expected)} bytes, dump_mem asks {size}")
        check = Check(op, None, mem, addr, size, name, expected[:size], got)
        if got != check.golden:
            first = next(i for i in range(size) if got[i] != expected[i])
            check.failure = (f"memory differs from {name} at {addr + first:#x}: "
                             f"expected {expected[first]:#04x}, got {got[first]:#04x}")
        self._judge(check)


def run_trace(
    path: str | Path, config: str | None = None, dump_dir: Path | None = None,
    name: str | None = None, dump_format: str = "dat", word_bytes: int = 1,
    names: list[str] | None = None,
) -> TraceResult:
    """Run one trace; never raises for trace problems (they become the result).

    ``names``: the names of the trace folder's entries, when the caller has listed it
    (regress's walk): the folder is not listed again, so the trace file is chosen from the
    folder as it was when listed (a file added or removed since then is not seen)."""
    start = time.perf_counter()
    path = path if isinstance(path, Path) else Path(path)  # Path(a Path) parses it again
    display = name or path.name
    cfg_name = config or "?"
    try:
        trace_file = find_trace_file(path, names)
        guessed = config or guess_config(trace_file)
        if guessed is None:
            raise SimError(f"{path}: cannot tell the hardware configuration (no folder above it "
                           f"is named after one and its header names none); pass --config")
        cfg_name = guessed
        player = TracePlayer(trace_file, cfg_name, dump_dir, dump_format=dump_format,
                             word_bytes=word_bytes)
        player.play()
        if not player.checks:  # a verdict needs evidence: a trace that checks nothing fails
            raise SimError(f"{trace_file}: the trace checks nothing (no memory check, register "
                           f"poll or interrupt wait): no verdict")
        others = []  # a folder with both formats (gen --format both) runs input.txn
        if trace_file.name == "input.txn" and (names is not None or path.is_dir()):
            listed = [p.name for p in path.glob("*.cfg")] if names is None else names
            others = sorted(n for n in listed if n.endswith(".cfg"))  # as the glob names them
        note = f" (ran input.txn; {', '.join(others)} not run)" if others else ""
        return TraceResult(display, cfg_name, TraceStatus.PASS, f"{player.checks} checks{note}",
                           time.perf_counter() - start, player.checks)
    except CheckFailed as exc:
        return TraceResult(display, cfg_name, TraceStatus.FAIL, str(exc),
                           time.perf_counter() - start)
    except SimError as exc:
        return TraceResult(display, cfg_name, TraceStatus.ERROR, str(exc),
                           time.perf_counter() - start,
                           not_implemented=isinstance(exc, NotImplementedFeature))
    except Exception as exc:  # a simulator bug: report it as this trace's result
        return TraceResult(display, cfg_name, TraceStatus.ERROR,
                           f"internal error: {type(exc).__name__}: {exc}",
                           time.perf_counter() - start)
