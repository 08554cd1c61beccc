"""Parser for NVDLA's ``.cfg`` traces (nv_small test bench format).

One C-like command per line: ``reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);``,
``mem_load(pri_mem, 0x80000000, "x.dat");``, ``check_crc(id, 1, addr, size, crc);``
... ``//`` starts a comment.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import SimError
from .ops import Op, numbered_lines, parse_int

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*;?\s*$")
# the line most traces are made of, with an optional comment after it: parsed in one match
_REG_WRITE = re.compile(r"\s*reg_write\(\s*([\w.]+)\s*,\s*(\w+)\s*\)\s*;?\s*(?://.*)?$")

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


def _strip_comment(line: str) -> str:
    if '"' not in line:  # the usual line: no string to protect a "//" inside
        return line.split("//", 1)[0].strip()
    out, quoted = [], False
    i = 0
    while i < len(line):
        c = line[i]
        if c == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            break
        out.append(c)
        i += 1
    return "".join(out).strip()


def _split_args(text: str) -> list[str]:
    if '"' not in text:
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


def parse_cfg(path: str | Path) -> list[Op]:
    ops = []
    for where, raw in numbered_lines(path):
        quick = _REG_WRITE.match(raw)
        if quick:
            value = parse_int(quick.group(2), where, "register value", 32)
            ops.append(Op("reg_write", (quick.group(1), value), where))
            continue
        line = _strip_comment(raw)
        if not line or line in ("{", "}"):
            continue
        m = _CALL.match(line)
        if not m:
            raise SimError(f"not a trace command: {line[:60]!r}", where=where)
        cmd, args = m.group(1), _split_args(m.group(2))
        if cmd not in ARITY:
            raise SimError(f"unknown command {cmd!r}", where=where)
        lo, hi = ARITY[cmd]
        if not lo <= len(args) <= hi:
            raise SimError(f"{cmd} takes {lo}..{hi} arguments, got {len(args)}", where=where)
        ops.append(_convert(cmd, args, where))
    return ops


def _unquote(text: str, where: str) -> str:
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise SimError(f"expected a quoted file name, got {text!r}", where=where)
    return text[1:-1]


def _convert(cmd: str, a: list[str], where: str) -> Op:
    def num(text: str, what: str = "number") -> int:
        return parse_int(text, where, what, 32 if what in ("register value", "CRC") else 64)

    if cmd == "reg_write":
        return Op("reg_write", (a[0], num(a[1], "register value")), where)
    if cmd == "reg_read":
        return Op("reg_read", (a[0],), where)
    if cmd == "poll_reg_equal":
        return Op("poll_reg", (a[0], 0xFFFFFFFF, num(a[1], "register value")), where)
    if cmd == "intr_notify":
        # intr_notify([SOURCE_GROUP,] sync_id): without a source it waits for any interrupt
        return Op("intr_notify", (a[0], a[1]) if len(a) > 1 else ("", a[0]), where)
    if cmd == "check_nothing":  # the sync id's one check is: nothing to check
        return Op("check_nothing", (a[0],), where)
    if cmd in ("sync_notify", "sync_wait"):  # NVIDIA's multi-player ordering: one player here
        return Op("nop", (cmd, *a), where)
    if cmd == "mem_load":
        return Op("mem_load", (a[0], num(a[1], "address"), _unquote(a[2], where)), where)
    if cmd == "mem_init":
        size = _unquote(a[2], where) if a[2].startswith('"') else num(a[2], "size")
        return Op("mem_init", (a[0], num(a[1], "address"), size, a[3]), where)
    if cmd == "check_crc":
        mem = "pri_mem" if a[1] == "1" else a[1]
        return Op(
            "check_crc",
            (a[0], mem, num(a[2], "address"), num(a[3], "size"), num(a[4], "CRC")),
            where,
        )
    raise SimError(f"unknown command {cmd!r}", where=where)  # pragma: no cover
