"""Run NVIDIA's Verilator testbench on a plan and read its verdicts from what it prints.

The testbench prints a line per CSB access and memory event; the lines this
module reads (facts from ``verif/verilator/nvdla.cpp``):

* ``(T) read response from nvdla: V``, then ``(T) invalid response -- trying
  again`` when the value does not match, and ``(T) ERROR: timed out reading
  response`` after the last try;
* ``(T) waiting for interrupt...`` and ``(T) interrupt!``;
* ``AXI: dumping memory to FILE`` (the file holds the region's bytes);
* ``done at T ticks``, then ``*** PASS`` or ``*** FAIL: ...``.

T counts half clock cycles.  Each check's verdict is ours, made on the file
the bench dumped (a CRC or the golden bytes); the bench's own comparison
with the simulator's bytes only adds where the two first part.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time
from collections import deque
from dataclasses import field
from pathlib import Path

from ..errors import SimError
from ..files import write_atomically
from ..records import record
from .commands import Read, Wait, encode
from .plan import Plan

TICKS_PER_CYCLE = 2


@record(frozen=False)
class ReadFailure:
    where: str
    what: str
    got: int


@record(frozen=False)
class BenchRun:
    """What the testbench did with a plan."""

    finished: bool = False  # it reached the end of the stream and stopped by itself
    exit_code: int | None = None
    cycles: int = 0
    seconds: float = 0.0
    dumped: list[str] = field(default_factory=list)  # files written, in order
    read_failures: list[ReadFailure] = field(default_factory=list)
    waits_done: int = 0  # interrupts awaited and raised
    stopped_waiting: str = ""  # the wait it hung in ("" if none)
    tail: list[str] = field(default_factory=list)  # its last lines of output


def check_bench(bench: str | Path) -> Path:
    """The testbench binary, or a one-line error saying what is wrong with it."""
    path = Path(bench)
    if not path.exists():
        raise SimError(f"{bench}: no such testbench (build NVIDIA's VNV_nvdla, or set "
                       f"$NVDLA_RTL_BENCH)")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise SimError(f"{bench}: not an executable testbench")
    return path.resolve()


class _LogReader:
    """Follows the testbench's output line by line."""

    def __init__(self, plan: Plan, run: BenchRun, log, keep_lines: int = 200):
        self.run = run
        self.log = log
        self.reads = [c for c in plan.commands if isinstance(c, Read)]
        self.waits = [plan.waits[i] for i, c in enumerate(plan.commands) if isinstance(c, Wait)]
        self.wait_where = [c.where for c in plan.commands if isinstance(c, Wait)]
        self.next_read = 0
        self.answered: int | None = None  # value of the read response just printed
        self.refused = 0  # the last value a read did not accept
        self.waiting = False
        self.tail: deque[str] = deque(maxlen=keep_lines)

    def line(self, text: str) -> None:
        if self.log is not None:
            self.log.write(text)
        text = text.rstrip("\n")
        self.tail.append(text)
        if text.startswith("("):
            self._event(text.split(") ", 1)[-1])
        elif text.startswith("AXI: dumping memory to "):
            self.run.dumped.append(text[len("AXI: dumping memory to "):])
        elif text.startswith("done at "):
            self.run.cycles = int(text.split()[2]) // TICKS_PER_CYCLE

    def _event(self, event: str) -> None:
        if event.startswith("read response from nvdla: "):
            self.answered = int(event.rsplit(" ", 1)[1], 16)
            return
        if self.answered is not None:  # the line after a read response says how it went
            got, self.answered = self.answered, None
            if event.startswith("invalid response"):
                self.refused = got  # tried again, or given up on by the next line
                return
            self.next_read += 1  # it matched
        if event.startswith("ERROR: timed out"):
            read = self.reads[self.next_read]
            self.run.read_failures.append(ReadFailure(read.where, read.what, self.refused))
            self.next_read += 1
        elif event.startswith("waiting for interrupt"):
            self.waiting = True
        elif event.startswith("interrupt!"):
            self.waiting = False
            self.run.waits_done += 1

    def close(self) -> None:
        if self.answered is not None:  # the last read matched: nothing followed it
            self.next_read += 1
        if self.waiting and self.run.waits_done < len(self.waits):
            n = self.run.waits_done
            self.run.stopped_waiting = f"{self.waits[n]} ({self.wait_where[n]})"
        self.run.tail = list(self.tail)


def run_bench(bench: Path, plan: Plan, folder: Path, idle: float = 60.0,
              timeout: float | None = None, full_log: bool = False) -> BenchRun:
    """Write the plan as ``folder/trace.bin``, run the bench there, follow its output.

    The bench prints a line per memory beat (gigabytes for a whole network):
    ``folder/bench.log`` gets all of it with ``full_log``, else its last lines.
    The bench is stopped when it prints nothing for ``idle`` seconds while it
    waits for an interrupt (the RTL hangs), or after ``timeout`` seconds.
    """
    write_atomically(folder / "trace.bin", encode(plan.commands))
    run = BenchRun()
    start = time.monotonic()
    log = open(folder / "bench.log", "w") if full_log else None  # noqa: SIM115 - closed below
    reader = _LogReader(plan, run, log)
    # the bench's stdout is a pipe: without line buffering, the line saying it waits for an
    # interrupt could sit in its buffer while it hangs, and the hang would go unseen
    line_buffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
    try:
        proc = subprocess.Popen([*line_buffered, str(bench), "trace.bin"], cwd=folder,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    except OSError as exc:
        if log is not None:
            log.close()
        raise SimError(f"{bench}: cannot run the testbench ({exc.strerror})") from None
    try:
        _follow(proc, reader, idle, timeout, start)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        if log is not None:
            log.close()
    reader.close()
    if not full_log:
        write_atomically(folder / "bench.log", "\n".join(run.tail) + "\n")
    run.exit_code = proc.returncode
    run.finished = run.exit_code in (0, 1, 2) and not run.stopped_waiting
    run.seconds = time.monotonic() - start
    return run


def _follow(proc, reader: _LogReader, idle: float, timeout: float | None, start: float) -> None:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    pending = b""
    quiet_since = time.monotonic()
    while True:
        if not sel.select(timeout=1.0):
            now = time.monotonic()
            if (reader.waiting and now - quiet_since > idle) or \
                    (timeout is not None and now - start > timeout):
                return
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        quiet_since = time.monotonic()
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            reader.line(raw.decode("utf-8", "replace") + "\n")
        if timeout is not None and quiet_since - start > timeout:
            return
    if pending:
        reader.line(pending.decode("utf-8", "replace"))
    reader.waiting = False  # the bench ended by itself
