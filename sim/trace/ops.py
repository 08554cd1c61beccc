"""Trace operations: what both trace formats parse into and are written from.

One immutable value class per command.  ``sim.trace.cfg`` and ``sim.trace.txn``
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
from pathlib import Path

from ..errors import SimError
from ..files import read_bytes
from ..regs import Record

ALL_BITS = 0xFFFFFFFF  # a PollReg mask comparing the whole register


class Op(Record):
    """The base of every trace operation: an immutable value.

    The classes are written out rather than made by ``dataclasses`` (building
    fourteen frozen dataclasses took a tenth of a small trace's whole run),
    with the behaviour of frozen dataclasses (:class:`sim.regs.Record`): a
    constructor taking ``args`` in order and ``where``/``note`` by keyword only,
    equality and hash over the type, ``note`` and ``args`` (never ``where``), a
    repr naming every field, and no assignment.
    """

    cmd = ""
    _fields: tuple[str, ...] = ()  # the constructor's positional arguments, in order
    _compare = ("note",)
    _shown = ("where", "note")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._compare = ("note", *cls._fields)
        cls._shown = ("where", "note", *cls._fields)

    def __init__(self, *, where: str = "", note: str = ""):
        _init(self, where, note)

    @property
    def args(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def fail(self, reason: str) -> SimError:
        return SimError(reason, where=self.where)


def _init(op: Op, where: str, note: str, **values) -> None:
    """Store an op's fields (past the frozen ``__setattr__``)."""
    fields = op.__dict__
    fields["where"], fields["note"] = where, note
    fields.update(values)


class RegWrite(Op):
    cmd = "reg_write"
    _fields = __match_args__ = ("reg", "value")

    def __init__(self, reg: str | int, value: int, *, where: str = "", note: str = ""):
        # register name (.cfg) or byte address (input.txn)
        _init(self, where, note, reg=reg, value=value)


class RegRead(Op):
    cmd = "reg_read"
    _fields = __match_args__ = ("reg",)

    def __init__(self, reg: str, *, where: str = "", note: str = ""):
        _init(self, where, note, reg=reg)


class PollReg(Op):
    """Read a register until ``value & mask == want & mask`` (poll_reg_equal, read_reg)."""

    cmd = "poll_reg"
    _fields = __match_args__ = ("reg", "mask", "value")

    def __init__(self, reg: str | int, mask: int, value: int, *, where: str = "",
                 note: str = ""):
        _init(self, where, note, reg=reg, mask=mask, value=value)


class IntrNotify(Op):
    cmd = "intr_notify"
    _fields = __match_args__ = ("source", "sync")

    def __init__(self, source: str, sync: str, *, where: str = "", note: str = ""):
        # source: SOURCE_GROUP (SDP_0, cdma_dat_1...), "" for any interrupt
        _init(self, where, note, source=source, sync=sync)


class CheckNothing(Op):
    cmd = "check_nothing"
    _fields = __match_args__ = ("sync",)

    def __init__(self, sync: str, *, where: str = "", note: str = ""):
        _init(self, where, note, sync=sync)


class CheckCrc(Op):
    cmd = "check_crc"
    _fields = __match_args__ = ("sync", "memory", "addr", "size", "crc")

    def __init__(self, sync: str, memory: str, addr: int, size: int, crc: int, *,
                 where: str = "", note: str = ""):
        # memory: pri_mem | sec_mem
        _init(self, where, note, sync=sync, memory=memory, addr=addr, size=size, crc=crc)


class MemInit(Op):
    cmd = "mem_init"
    _fields = __match_args__ = ("memory", "addr", "size", "pattern")

    def __init__(self, memory: str, addr: int, size: int | str, pattern: str, *,
                 where: str = "", note: str = ""):
        # size: a byte count, or the record file whose extent it is; pattern: ALL_ZERO, ...
        _init(self, where, note, memory=memory, addr=addr, size=size, pattern=pattern)


class MemLoad(Op):
    cmd = "mem_load"
    _fields = __match_args__ = ("memory", "addr", "file")

    def __init__(self, memory: str, addr: int, file: str, *, where: str = "", note: str = ""):
        # file: a record .dat file next to the trace
        _init(self, where, note, memory=memory, addr=addr, file=file)


class Sync(Op):
    """NVIDIA's multi-player ordering (sync_notify, sync_wait): nothing to do for one player."""

    cmd = "nop"
    _fields = __match_args__ = ("command", "operands")

    def __init__(self, command: str, operands: tuple[str, ...] = (), *, where: str = "",
                 note: str = ""):
        # command: sync_notify | sync_wait
        _init(self, where, note, command=command, operands=operands)

    @property
    def args(self) -> tuple:
        return (self.command, *self.operands)


class Wait(Op):
    cmd = "wait"


class LoadMem(Op):
    cmd = "load_hex"
    _fields = __match_args__ = ("addr", "size", "file")

    def __init__(self, addr: int, size: int, file: str, *, where: str = "", note: str = ""):
        # file: a hex-byte .dat file next to the trace
        _init(self, where, note, addr=addr, size=size, file=file)


class DumpMem(Op):
    cmd = "dump_mem"
    _fields = __match_args__ = ("addr", "size", "file")

    def __init__(self, addr: int, size: int, file: str, *, where: str = "", note: str = ""):
        # file: the expected bytes, a hex-byte .dat file next to the trace
        _init(self, where, note, addr=addr, size=size, file=file)


class Comment(Op):
    cmd = "comment"
    _fields = __match_args__ = ("text",)

    def __init__(self, text: str, *, where: str = "", note: str = ""):
        _init(self, where, note, text=text)


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
    try:  # the usual trace, ASCII without a carriage return: what read_text gives, in a
        # third of its time (no text layer; such bytes decode alike in any locale encoding
        # Python picks, and universal newlines would translate only a "\r")
        raw = read_bytes(path)
        if raw.isascii() and b"\r" not in raw:
            return raw.decode("ascii")
    except SimError:
        pass  # read_text below meets the error again, and names it
    path = path if isinstance(path, Path) else Path(path)  # Path(a Path) parses it again
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"cannot read ({exc.strerror})", where=str(path)) from None


def numbered_lines(path: str | Path) -> Iterator[tuple[str, str]]:
    """("file:line", text) for each line of a trace file."""
    return numbered_text(read_trace(path), str(path))


def reg_write_op(reg: str | int, value: int, where: str, note: str) -> RegWrite:
    """``RegWrite(reg, value, where=where, note=note)``, made for the parsers (most of a
    trace's lines are register writes): the same object, without the constructor's call
    overhead."""
    op = _new_op(RegWrite)
    fields = op.__dict__
    fields["reg"], fields["value"], fields["where"], fields["note"] = reg, value, where, note
    return op


def poll_reg_op(reg: str | int, mask: int, value: int, where: str, note: str) -> PollReg:
    """``PollReg(reg, mask, value, where=where, note=note)``, made for the parsers (polls
    come dozens to a trace) as :func:`reg_write_op` makes a RegWrite."""
    op = _new_op(PollReg)
    fields = op.__dict__
    fields["where"], fields["note"] = where, note
    fields["reg"], fields["mask"], fields["value"] = reg, mask, value
    return op


_new_op = object.__new__
