"""Trace operations: what both trace formats parse into."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import SimError


@dataclass(frozen=True)
class Op:
    cmd: str  # reg_write, poll_reg, intr_notify, wait, mem_init, mem_load, check_crc, dump_mem...
    args: tuple
    where: str  # "file:line", for error messages

    def fail(self, reason: str) -> SimError:
        return SimError(reason, where=self.where)


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


def numbered_lines(path: str | Path) -> Iterator[tuple[str, str]]:
    """("file:line", text) for each line of a trace file."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"cannot read ({exc.strerror})", where=str(path)) from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        yield f"{path}:{lineno}", raw
