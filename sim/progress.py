"""Progress of long runs: a bar on a terminal, plain lines in logs and CI.

On a TTY one line is redrawn (``[#####-----] 5/10 pass 4 fail 1``); anywhere
else every step prints a line of its own (``[5/10] fail nv_small/x``), so a
log shows what ran without control characters.
"""

from __future__ import annotations

import sys

WIDTH = 30


class Progress:
    def __init__(self, total: int, out=None, label: str = ""):
        self.total = max(total, 0)
        self.out = out or sys.stderr
        self.label = label
        self.done = 0
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._drawn = False

    def step(self, item: str = "", summary: str = "") -> None:
        """One more step finished: ``item`` names it, ``summary`` the totals so far."""
        self.done += 1
        label = f"{self.label} " if self.label else ""
        if self.tty:
            filled = WIDTH * self.done // max(self.total, 1)
            bar = "#" * filled + "-" * (WIDTH - filled)
            self.out.write(f"\r{label}[{bar}] {self.done}/{self.total} {summary}".rstrip() + " ")
            self._drawn = True
        else:
            text = f"{label}[{self.done}/{self.total}] {item}"
            self.out.write(text.rstrip() + "\n")
        self.out.flush()

    def close(self) -> None:
        """End the bar's line (nothing to do for plain lines)."""
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
