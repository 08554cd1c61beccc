"""The nv_full trace player's ``input.txn``: parse and format.

``load_mem ADDR SIZE FILE``, ``write_reg ADDR VALUE``, ``read_reg ADDR MASK VALUE``,
``wait``, ``dump_mem ADDR SIZE FILE``; ``#`` starts a comment.  Register
addresses are CSB word addresses ``0xffff0000 | (byte_offset >> 2)``; the ops
hold byte addresses.  :func:`format` writes ops in this syntax, and is the one
place that does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import SimError
from .ops import (
    Comment,
    DumpMem,
    LoadMem,
    Op,
    PollReg,
    RegWrite,
    Wait,
    format_text,
    numbered_lines,
    numbered_text,
    parse_int,
    poll_reg_op,
    reg_write_op,
)

ARITY = {"load_mem": 3, "write_reg": 2, "read_reg": 3, "wait": 0, "dump_mem": 3}
CSB_BASE = 0xFFFF0000  # CSB word addresses as the trace writes them


def csb_to_byte(addr: int) -> int:
    """CSB word address (as the trace writes it) to the register's byte address."""
    return (addr & 0xFFFF) << 2


def byte_to_csb(addr: int) -> int:
    """A register's byte address to its CSB word address as the trace writes it."""
    return CSB_BASE | (addr >> 2)


def _parse_lines(lines: Iterable[tuple[str, str]], comments: bool) -> list[Op]:
    ops: list[Op] = []
    for where, raw in lines:
        code, sep, comment = raw.partition("#")
        note = comment.strip() if sep else ""
        words = code.split()
        if not words:
            if comments and sep:
                ops.append(Comment(note, where=where))
            continue
        cmd, args = words[0], words[1:]
        if cmd not in ARITY:
            raise SimError(f"unknown command {cmd!r}", where=where)
        # write_reg may carry a third "misc bits" word in some benches; ignore extras
        need = ARITY[cmd]
        if len(args) < need or (cmd != "write_reg" and len(args) > need):
            raise SimError(f"{cmd} takes {need} arguments, got {len(args)}", where=where)
        if cmd == "write_reg":  # most lines: both numbers read at once when they are words
            addr, value = _word(args[0]), _word(args[1])
            if addr is not None and value is not None:
                ops.append(reg_write_op(csb_to_byte(addr), value, where, note))
                continue
        elif cmd == "read_reg":  # a poll (many in a row): its three words likewise
            addr, mask, value = _word(args[0]), _word(args[1]), _word(args[2])
            if addr is not None and mask is not None and value is not None:
                ops.append(poll_reg_op(csb_to_byte(addr), mask, value, where, note))
                continue

        def num(i, what):
            bits = 64 if what in ("memory address", "size") else 32
            return parse_int(args[i], where, what, bits)  # noqa: B023

        if cmd == "write_reg":
            ops.append(RegWrite(csb_to_byte(num(0, "address")), num(1, "value"), where=where,
                                note=note))
        elif cmd == "read_reg":
            reg = csb_to_byte(num(0, "address"))
            ops.append(PollReg(reg, num(1, "mask"), num(2, "value"), where=where, note=note))
        elif cmd == "wait":
            ops.append(Wait(where=where, note=note))
        elif cmd == "load_mem":
            ops.append(LoadMem(num(0, "memory address"), num(1, "size"), args[2], where=where,
                               note=note))
        else:
            ops.append(DumpMem(num(0, "memory address"), num(1, "size"), args[2], where=where,
                               note=note))
    return ops


def _word(text: str) -> int | None:
    """A 32-bit number as ``parse_int`` reads it, None for anything it would refuse."""
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value if 0 <= value < 1 << 32 else None


def parse_txn(path: str | Path, comments: bool = False) -> list[Op]:
    """The ops of the ``input.txn`` at ``path`` (whole-line comments too if ``comments``)."""
    return _parse_lines(numbered_lines(path), comments)


def parse(text: str, source: str = "<txn>", comments: bool = False) -> list[Op]:
    """The ops of ``input.txn`` text; errors name ``source:line``."""
    return _parse_lines(numbered_text(text, source), comments)


def _command(op: Op) -> str:
    if isinstance(op, RegWrite):
        return f"write_reg {byte_to_csb(_address(op.reg)):#010x} {op.value:#x}"
    if isinstance(op, PollReg):
        return (f"read_reg {byte_to_csb(_address(op.reg)):#010x} {op.mask:#010x} "
                f"{op.value:#010x}")
    if isinstance(op, Wait):
        return "wait"
    if isinstance(op, LoadMem):
        return f"load_mem {op.addr:#x} {op.size:#x} {op.file}"
    if isinstance(op, DumpMem):
        return f"dump_mem {op.addr:#x} {op.size:#x} {op.file}"
    raise ValueError(f"{type(op).__name__} has no input.txn syntax")


def _address(reg) -> int:
    if not isinstance(reg, int):
        raise ValueError(f"input.txn names registers by byte address, not {reg!r}")
    return reg


def format(ops: Iterable[Op]) -> str:
    """The ``input.txn`` text of ``ops``: a line each, every line ended."""
    return format_text(ops, _command, "#")
