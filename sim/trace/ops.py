"""Trace operations: what both trace formats parse into and are written from.

One frozen dataclass per command.  ``sim.trace.cfg`` and ``sim.trace.txn``
parse NVIDIA's two syntaxes into them and format them back (``format(ops)``);
every writer of trace text (``gen``, the firmware recorder, the example tools)
builds these objects and calls a formatter, and the player, the RTL planner
and the vocabulary check read them.

Each op also answers the generic interface the player dispatches on: ``cmd``
(the name of the ``_op_<cmd>`` handler), ``args`` (its fields as a tuple, in
the order below), ``where`` ("file:line", for error messages) and ``fail``.
``where`` is not part of an op's value (two ops read from different lines are
equal); ``note`` is the comment written after the command on its line.

===============  ==================  =========================================
class            ``cmd``             ``args``
===============  ==================  =========================================
RegWrite         reg_write           (reg, value): a register name (.cfg) or
                                     its byte address (input.txn)
RegRead          reg_read            (reg,)
PollReg          poll_reg            (reg, mask, value)
IntrNotify       intr_notify         (source, sync): source "" waits for any
CheckNothing     check_nothing       (sync,)
CheckCrc         check_crc           (sync, memory, addr, size, crc)
MemInit          mem_init            (memory, addr, size, pattern): size a
                                     byte count or a record file's name
MemLoad          mem_load            (memory, addr, file)
Sync             nop                 (command, *operands): sync_notify/wait
Wait             wait                ()
LoadMem          load_hex            (addr, size, file)
DumpMem          dump_mem            (addr, size, file)
Comment          comment             (text,): a whole-line comment
===============  ==================  =========================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from ..errors import SimError

ALL_BITS = 0xFFFFFFFF  # a PollReg mask comparing the whole register

_ARG_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Op:
    """The base of every trace operation."""

    cmd: ClassVar[str] = ""
    where: str = field(default="", compare=False, kw_only=True)  # "file:line"
    note: str = field(default="", kw_only=True)  # the comment after the command

    @property
    def args(self) -> tuple:
        names = _ARG_NAMES.get(type(self))
        if names is None:
            names = tuple(f.name for f in fields(self) if f.name not in ("where", "note"))
            _ARG_NAMES[type(self)] = names
        return tuple(getattr(self, name) for name in names)

    def fail(self, reason: str) -> SimError:
        return SimError(reason, where=self.where)


@dataclass(frozen=True)
class RegWrite(Op):
    cmd: ClassVar[str] = "reg_write"
    reg: str | int  # register name (.cfg) or byte address (input.txn)
    value: int


@dataclass(frozen=True)
class RegRead(Op):
    cmd: ClassVar[str] = "reg_read"
    reg: str


@dataclass(frozen=True)
class PollReg(Op):
    """Read a register until ``value & mask == want & mask`` (poll_reg_equal, read_reg)."""

    cmd: ClassVar[str] = "poll_reg"
    reg: str | int
    mask: int
    value: int


@dataclass(frozen=True)
class IntrNotify(Op):
    cmd: ClassVar[str] = "intr_notify"
    source: str  # SOURCE_GROUP (SDP_0, cdma_dat_1...), "" for any interrupt
    sync: str


@dataclass(frozen=True)
class CheckNothing(Op):
    cmd: ClassVar[str] = "check_nothing"
    sync: str


@dataclass(frozen=True)
class CheckCrc(Op):
    cmd: ClassVar[str] = "check_crc"
    sync: str
    memory: str  # pri_mem | sec_mem
    addr: int
    size: int
    crc: int


@dataclass(frozen=True)
class MemInit(Op):
    cmd: ClassVar[str] = "mem_init"
    memory: str
    addr: int
    size: int | str  # a byte count, or the record file whose extent it is
    pattern: str  # ALL_ZERO, ...


@dataclass(frozen=True)
class MemLoad(Op):
    cmd: ClassVar[str] = "mem_load"
    memory: str
    addr: int
    file: str  # a record .dat file next to the trace


@dataclass(frozen=True)
class Sync(Op):
    """NVIDIA's multi-player ordering (sync_notify, sync_wait): nothing to do for one player."""

    cmd: ClassVar[str] = "nop"
    command: str  # sync_notify | sync_wait
    operands: tuple[str, ...] = ()

    @property
    def args(self) -> tuple:
        return (self.command, *self.operands)


@dataclass(frozen=True)
class Wait(Op):
    cmd: ClassVar[str] = "wait"


@dataclass(frozen=True)
class LoadMem(Op):
    cmd: ClassVar[str] = "load_hex"
    addr: int
    size: int
    file: str  # a hex-byte .dat file next to the trace


@dataclass(frozen=True)
class DumpMem(Op):
    cmd: ClassVar[str] = "dump_mem"
    addr: int
    size: int
    file: str  # the expected bytes, a hex-byte .dat file next to the trace


@dataclass(frozen=True)
class Comment(Op):
    cmd: ClassVar[str] = "comment"
    text: str


def format_text(ops: Iterable[Op], command: Callable[[Op], str], mark: str) -> str:
    """Trace text, a line per op, every line ended: ``command(op)`` writes an op's command;
    ``mark`` starts a comment (a whole-line :class:`Comment`, an op's ``note``)."""
    lines = []
    for op in ops:
        if isinstance(op, Comment):
            lines.append(f"{mark} {op.text}\n")
        elif op.note:
            lines.append(f"{command(op)} {mark} {op.note}\n")
        else:
            lines.append(command(op) + "\n")
    return "".join(lines)


def parse_int(text: str, where: str, what: str = "number", bits: int = 64) -> int:
    """A non-negative C-style integer (``0x..``, decimal) that fits ``bits`` bits."""
    text = text.strip()
    try:
        value = int(text, 0)
    except ValueError:
        raise SimError(f"{text[:40]!r} is not a valid {what}", where=where) from None
    if value < 0 or value >> bits:
        raise SimError(f"{what} {text[:40]} does not fit in {bits} unsigned bits", where=where)
    return value


def numbered_text(text: str, source: str) -> Iterator[tuple[str, str]]:
    """("source:line", text) for each line of a trace's text."""
    for lineno, raw in enumerate(text.splitlines(), 1):
        yield f"{source}:{lineno}", raw


def read_trace(path: str | Path) -> str:
    """The text of a trace file (undecodable bytes replaced); SimError naming it if unreadable."""
    path = Path(path)
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"cannot read ({exc.strerror})", where=str(path)) from None


def numbered_lines(path: str | Path) -> Iterator[tuple[str, str]]:
    """("file:line", text) for each line of a trace file."""
    return numbered_text(read_trace(path), str(path))


def reg_write_op(reg: str | int, value: int, where: str, note: str) -> RegWrite:
    """``RegWrite(reg, value, where=where, note=note)``, made for the parsers (most of a
    trace's lines are register writes): the same object, without the frozen dataclass's
    guarded ``__init__``, which costs twice the rest of parsing the line."""
    op = _new_op(RegWrite)
    fields = op.__dict__
    fields["reg"], fields["value"], fields["where"], fields["note"] = reg, value, where, note
    return op


_new_op = object.__new__
