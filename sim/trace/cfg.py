"""NVDLA's ``.cfg`` traces (nv_small test bench format): parse and format.

One C-like command per line: ``reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);``,
``mem_load(pri_mem, 0x80000000, "x.dat");``, ``check_crc(id, 1, addr, size, crc);``
... ``//`` starts a comment.  :func:`parse_cfg` / :func:`parse` read a trace
into ops (``sim.trace.ops``); :func:`format` writes ops in this syntax, and is
the one place that does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import SimError
from .ops import (
    ALL_BITS,
    CheckCrc,
    CheckNothing,
    Comment,
    IntrNotify,
    MemInit,
    MemLoad,
    Op,
    PollReg,
    RegRead,
    RegWrite,
    Sync,
    format_text,
    parse_int,
    poll_reg_op,
    read_trace,
    reg_write_op,
)

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*;?\s*$")
# the line most traces are made of, with an optional comment after it: parsed in one match
_REG_WRITE = re.compile(r"\s*reg_write\(\s*([\w.]+)\s*,\s*(\w+)\s*\)\s*;?\s*(?://(.*))?$")

PRI_MEM_NUMBER = "1"  # check_crc's memory: NVIDIA's traces write pri_mem as 1

# command -> (minimum, maximum) argument count
ARITY = {
    "mem_init": (4, 4),
    "mem_load": (3, 3),
    "reg_write": (2, 2),
    "reg_read": (1, 2),
    "poll_reg_equal": (2, 2),
    "intr_notify": (1, 2),
    "sync_notify": (1, 3),
    "sync_wait": (1, 3),
    "check_crc": (5, 5),
    "check_nothing": (1, 1),
}


# -- parsing -----------------------------------------------------------------------------


def _split_comment(line: str) -> tuple[str, str | None]:
    """(the command part, stripped; the comment after ``//`` or None)."""
    if '"' not in line or "//" not in line:  # no string to protect a "//" inside
        code, sep, comment = line.partition("//")
        return code.strip(), comment if sep else None
    quoted = False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i].strip(), line[i + 2:]
    return line.strip(), None


def _split_args(text: str) -> list[str]:
    if '"' not in text or not any("," in quoted for quoted in text.split('"')[1::2]):
        return [arg.strip() for arg in text.split(",")] if text else []
    args, cur, quoted = [], [], False
    for c in text:
        if c == '"':
            quoted = not quoted
            cur.append(c)
        elif c == "," and not quoted:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if cur or args:
        args.append("".join(cur).strip())
    return args


# every line of a text, in order: the usual line (a plain reg_write or poll_reg_equal, as
# gen and NVIDIA's tools write them) as (command, name, value, ""), any other line as
# ("", "", "", line); one findall splits and matches a whole trace (possessive: a name or
# value never gives back a character, which spares the matcher a fifth of its time)
_LINES = re.compile(r"^(?:(reg_write|poll_reg_equal)\(([A-Za-z_][\w.]*+), (\w++)\);$|(.*)$)",
                    re.M | re.A)
# any other command as gen writes it: "<command>(<arg>, <arg>, ...);", the arguments words
# but for a last quoted file name (mem_load's) of word characters, dots and dashes: its
# arguments are split at ", " as _split_args would split them (no spaces, quoted commas)
_CANONICAL_CALL = re.compile(r'([a-z_]+)\(((?:\w+, )*(?:\w+|"[\w.\-]*"))\);', re.A)
# line breaks str.splitlines honours besides "\n": a text holding one is split by it
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _numbered_lines(text: str) -> list[tuple[str, str, str, str]]:
    """A tuple per line as ``text.splitlines()`` numbers them (:data:`_LINES`; maybe one
    empty tuple past the end)."""
    if text.isascii() and not any(c in text for c in _OTHER_BREAKS):
        return _LINES.findall(text)
    return [("", "", "", line) for line in text.splitlines()]


def _register_value(text: str, where: str) -> int:
    """A line's register value (a ``\\w+`` token): what ``parse_int`` gives or raises."""
    try:
        value = int(text, 0)
        if not value >> 32:
            return value
    except ValueError:
        pass
    return parse_int(text, where, "register value", 32)  # raises: not a number, too wide


def _parse_text(text: str, source: str, comments: bool, bare: bool = False) -> list:
    """The ops of a trace's text; with ``bare``, each plain reg_write line (no spaces, no
    note: most of a trace) as a :data:`BareWrite` tuple instead of a RegWrite."""
    ops: list = []
    append = ops.append
    quick_match = _REG_WRITE.match
    canonical_call = _CANONICAL_CALL.fullmatch
    for lineno, (cmd, reg, text_value, raw) in enumerate(_numbered_lines(text), 1):
        if cmd:  # name and value are what _REG_WRITE's groups would be
            try:  # _register_value's common case inline: no "file:line" made for it
                value = int(text_value, 0)
            except ValueError:
                value = -1
            if value < 0 or value >> 32:
                value = _register_value(text_value, f"{source}:{lineno}")
            if cmd == "reg_write":
                append((reg, value, lineno) if bare
                       else reg_write_op(reg, value, f"{source}:{lineno}", ""))
            else:
                append(poll_reg_op(reg, ALL_BITS, value, f"{source}:{lineno}", ""))
            continue
        if not raw or (raw[:2] == "//" and not comments):  # nothing to do (_parse_line's)
            continue
        call = canonical_call(raw)
        if call is not None:  # what _parse_line makes of it, without splitting it by hand
            cmd, args = call.group(1), call.group(2).split(", ")
            arity = ARITY.get(cmd)
            if arity is not None and arity[0] <= len(args) <= arity[1]:
                append(_convert(cmd, args, f"{source}:{lineno}", ""))
                continue
        quick = quick_match(raw)
        if quick is not None:  # a reg_write with spaces or a note, parsed as _convert would
            reg, text_value, note = quick.groups()
            where = f"{source}:{lineno}"
            append(reg_write_op(reg, _register_value(text_value, where), where,
                                note.strip() if note else ""))
            continue
        op = _parse_line(f"{source}:{lineno}", raw, comments)
        if op is not None:
            append(op)
    return ops


def _parse_line(where: str, raw: str, comments: bool) -> Op | None:
    """The op of a line other than a plain reg_write (None: nothing to do)."""
    line, comment = _split_comment(raw)
    note = (comment or "").strip()
    if not line or line in ("{", "}"):
        if comments and not line and comment is not None:
            return Comment(note, where=where)
        return None
    m = _CALL.match(line)
    if not m:
        raise SimError(f"not a trace command: {line[:60]!r}", where=where)
    cmd, args = m.group(1), _split_args(m.group(2))
    if cmd not in ARITY:
        raise SimError(f"unknown command {cmd!r}", where=where)
    lo, hi = ARITY[cmd]
    if not lo <= len(args) <= hi:
        raise SimError(f"{cmd} takes {lo}..{hi} arguments, got {len(args)}", where=where)
    return _convert(cmd, args, where, note)


def parse_cfg(path: str | Path, comments: bool = False) -> list[Op]:
    """The ops of the ``.cfg`` trace at ``path`` (whole-line comments too if ``comments``)."""
    return _parse_text(read_trace(path), str(path), comments)


# A plain reg_write line as parse_bare gives it: (register name, value, line number).
BareWrite = tuple[str, int, int]


def parse_bare(path: str | Path) -> list[Op | BareWrite]:
    """:func:`parse_cfg`'s ops, but each plain ``reg_write(NAME, VALUE);`` line as a
    :data:`BareWrite` tuple: the trace player writes those straight to the machine (most
    of a small trace's lines; an op object each cost more than the write itself) and
    names ``<path>:<line>`` (:func:`bare_where`) only when one fails."""
    return _parse_text(read_trace(path), str(path), False, bare=True)


def bare_where(path: str | Path, write: BareWrite) -> str:
    """The ``where`` the RegWrite of a :data:`BareWrite` of the trace at ``path`` has."""
    return f"{path}:{write[2]}"


def parse(text: str, source: str = "<cfg>", comments: bool = False) -> list[Op]:
    """The ops of ``.cfg`` trace text; errors name ``source:line``."""
    return _parse_text(text, source, comments)


def _unquote(text: str, where: str) -> str:
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise SimError(f"expected a quoted file name, got {text!r}", where=where)
    return text[1:-1]


def _convert(cmd: str, a: list[str], where: str, note: str) -> Op:
    def num(text: str, what: str = "number") -> int:
        return parse_int(text, where, what, 32 if what in ("register value", "CRC") else 64)

    if cmd == "reg_write":
        return RegWrite(a[0], num(a[1], "register value"), where=where, note=note)
    if cmd == "reg_read":
        return RegRead(a[0], where=where, note=note)
    if cmd == "poll_reg_equal":
        return PollReg(a[0], ALL_BITS, num(a[1], "register value"), where=where, note=note)
    if cmd == "intr_notify":
        # intr_notify([SOURCE_GROUP,] sync_id): without a source it waits for any interrupt
        source, sync = (a[0], a[1]) if len(a) > 1 else ("", a[0])
        return IntrNotify(source, sync, where=where, note=note)
    if cmd == "check_nothing":  # the sync id's one check is: nothing to check
        return CheckNothing(a[0], where=where, note=note)
    if cmd in ("sync_notify", "sync_wait"):  # NVIDIA's multi-player ordering: one player here
        return Sync(cmd, tuple(a), where=where, note=note)
    if cmd == "mem_load":
        return MemLoad(a[0], num(a[1], "address"), _unquote(a[2], where), where=where,
                       note=note)
    if cmd == "mem_init":
        size = _unquote(a[2], where) if a[2].startswith('"') else num(a[2], "size")
        return MemInit(a[0], num(a[1], "address"), size, a[3], where=where, note=note)
    if cmd == "check_crc":
        mem = "pri_mem" if a[1] == PRI_MEM_NUMBER else a[1]
        return CheckCrc(a[0], mem, num(a[2], "address"), num(a[3], "size"), num(a[4], "CRC"),
                        where=where, note=note)
    raise SimError(f"unknown command {cmd!r}", where=where)  # pragma: no cover


# -- formatting ----------------------------------------------------------------------------


def _command(op: Op) -> str:
    if isinstance(op, RegWrite):
        return f"reg_write({op.reg}, {op.value:#x});"
    if isinstance(op, PollReg):
        if op.mask != ALL_BITS:
            raise ValueError(f"a .cfg poll_reg_equal compares all bits, not mask {op.mask:#x}")
        return f"poll_reg_equal({op.reg}, {op.value:#x});"
    if isinstance(op, RegRead):
        return f"reg_read({op.reg});"
    if isinstance(op, IntrNotify):
        return (f"intr_notify({op.source}, {op.sync});" if op.source
                else f"intr_notify({op.sync});")
    if isinstance(op, CheckNothing):
        return f"check_nothing({op.sync});"
    if isinstance(op, CheckCrc):
        mem = PRI_MEM_NUMBER if op.memory == "pri_mem" else op.memory
        return f"check_crc({op.sync}, {mem}, {op.addr:#x}, {op.size:#x}, {op.crc:#010x});"
    if isinstance(op, MemInit):
        size = f'"{op.size}"' if isinstance(op.size, str) else f"{op.size:#x}"
        return f"mem_init({op.memory}, {op.addr:#x}, {size}, {op.pattern});"
    if isinstance(op, MemLoad):
        return f'mem_load({op.memory}, {op.addr:#x}, "{op.file}");'
    if isinstance(op, Sync):
        return f"{op.command}({', '.join(op.operands)});"
    raise ValueError(f"{type(op).__name__} has no .cfg syntax")


def format(ops: Iterable[Op]) -> str:
    """The ``.cfg`` text of ``ops``: a line each, every line ended."""
    return format_text(ops, _command, "//")
