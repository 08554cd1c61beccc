"""Parser for the nv_full trace player's ``input.txn``.

``load_mem ADDR SIZE FILE``, ``write_reg ADDR VALUE``, ``read_reg ADDR MASK VALUE``,
``wait``, ``dump_mem ADDR SIZE FILE``; ``#`` starts a comment.  Register
addresses are CSB word addresses ``0xffff0000 | (byte_offset >> 2)``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SimError
from .ops import Op, numbered_lines, parse_int

ARITY = {"load_mem": 3, "write_reg": 2, "read_reg": 3, "wait": 0, "dump_mem": 3}


def csb_to_byte(addr: int) -> int:
    """CSB word address (as the trace writes it) to the register's byte address."""
    return (addr & 0xFFFF) << 2


def parse_txn(path: str | Path) -> list[Op]:
    ops = []
    for where, raw in numbered_lines(path):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        cmd, args = words[0], words[1:]
        if cmd not in ARITY:
            raise SimError(f"unknown command {cmd!r}", where=where)
        # write_reg may carry a third "misc bits" word in some benches; ignore extras
        need = ARITY[cmd]
        if len(args) < need or (cmd != "write_reg" and len(args) > need):
            raise SimError(f"{cmd} takes {need} arguments, got {len(args)}", where=where)

        def num(i, what):
            bits = 64 if what in ("memory address", "size") else 32
            return parse_int(args[i], where, what, bits)  # noqa: B023

        if cmd == "write_reg":
            ops.append(Op("reg_write", (csb_to_byte(num(0, "address")), num(1, "value")), where))
        elif cmd == "read_reg":
            reg = csb_to_byte(num(0, "address"))
            ops.append(Op("poll_reg", (reg, num(1, "mask"), num(2, "value")), where))
        elif cmd == "wait":
            ops.append(Op("wait", (), where))
        elif cmd == "load_mem":
            ops.append(Op("load_hex", (num(0, "memory address"), num(1, "size"), args[2]), where))
        else:
            ops.append(Op("dump_mem", (num(0, "memory address"), num(1, "size"), args[2]), where))
    return ops
