"""Trace operations: what both trace formats parse into."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SimError


@dataclass(frozen=True)
class Op:
    cmd: str  # reg_write, poll_reg, intr_notify, wait, mem_init, mem_load, check_crc, dump_mem...
    args: tuple
    where: str  # "file:line", for error messages

    def fail(self, reason: str) -> SimError:
        return SimError(f"{self.where}: {reason}")


def parse_int(text: str, where: str, what: str = "number") -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise SimError(f"{where}: {text.strip()!r} is not a valid {what}") from None
