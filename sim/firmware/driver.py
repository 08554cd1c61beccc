"""Drive a KMD firmware (a compiled shared library) on a simulated NVDLA, in its own process.

The firmware programs registers and reads its task's descriptors through the
callbacks of our port layer; they reach this process over a pipe
(:mod:`.child` runs the library): register reads and writes go to the
:class:`~sim.machine.Machine`, descriptor reads and writes to its system
memory.  :meth:`Firmware.run_task` does what NVIDIA's Linux driver does for
one submitted task: ``dla_execute_task``, then, each time the interrupt line
rises, ``dla_isr_handler`` and ``dla_process_events`` until the firmware
reports the task complete, then ``dla_clear_task``.

The firmware is the user's code, often a fork being debugged: a crash (a
signal), an exit, or a hang (no request within ``timeout`` seconds) ends its
process only, and becomes a :class:`FirmwareCrashed` naming the folder and
the entry point it was in.  Writes need no answer, so they travel in batches;
only reads wait for one.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import FirmwareCrashed, FirmwareError, FirmwareTaskFailed
from .build import build_firmware

log = logging.getLogger("sim.firmware")
log.addHandler(logging.NullHandler())  # quiet unless the user configures logging
LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
MAX_INTERRUPTS = 1_000_000  # a task that needs more is treated as stuck
DEFAULT_TIMEOUT = 60.0  # seconds the firmware may run without a request before it is hung
HEADER = struct.Struct("<cI")  # the frames of .child: kind, payload length
CHILD = Path(__file__).with_name("child.py")
EFAULT = -14
CALLS = {"interrupt": "dla_isr_handler/dla_process_events"}  # what a call of .child runs


@dataclass
class TaskStats:
    hw_layers: int
    interrupts: int
    seconds: float


class Firmware:
    """The KMD firmware of ``kmd_dir``, driving ``machine`` from a process of its own.

    ``recorder`` (a :class:`sim.trace.record.TraceRecorder`) sees every CSB
    access and interrupt wait, to write a replayable trace of the run.  Close
    it (or use it as a context manager) to end the firmware's process.
    """

    def __init__(self, machine, kmd_dir: str | Path, recorder=None,
                 timeout: float = DEFAULT_TIMEOUT):
        self.machine = machine
        self.recorder = recorder
        self.kmd_dir = Path(kmd_dir)
        self.timeout = timeout
        library = build_firmware(kmd_dir, machine.config.address_map)
        self._error: BaseException | None = None
        self.log_lines: list[str] = []
        self.error_lines: list[str] = []  # what the firmware reported with dla_error
        self.cpu_writes: list[tuple[int, int]] = []  # (address, size) the firmware wrote
        self._buffer = bytearray()
        self.call_seconds = 0.0  # in the firmware's calls: its code, the pipe, our answers
        self.serve_seconds = 0.0  # of which answering its requests (the simulator's work)
        from_parent, to_child = os.pipe()  # (read end, write end)
        from_child, to_parent = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(CHILD), str(library), str(from_parent),
             str(to_parent)],
            pass_fds=(from_parent, to_parent), stdin=subprocess.DEVNULL, stdout=2,
            stderr=None)
        os.close(from_parent)
        os.close(to_parent)
        self._out, self._in = to_child, from_child
        self._fds = (to_child, from_child)
        # registering needs no answer yet: the process starts while the caller goes on
        self._unanswered: list[str] = []
        for name in ("dla_register_driver", "dla_clear_task"):
            self._send(b"C", name.encode() + b"\0", name)
            self._unanswered.append(name)

    # -- the firmware's process ------------------------------------------------------
    def close(self) -> None:
        """End the firmware's process (it keeps nothing worth a clean exit: it is killed,
        which needs no waiting) and close the pipes."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = ()

    def __enter__(self) -> Firmware:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_proc", None) is not None or getattr(self, "_fds", ()):
            self.close()

    def _died(self, doing: str) -> FirmwareCrashed:
        """The error for a firmware process that stopped answering while ``doing``."""
        proc = self._proc
        try:
            code = proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            how = f"hung: no request for {self.timeout:g} s, killed"
        else:
            if code < 0:
                how = f"crashed ({signal.Signals(-code).name})"
            else:
                how = f"exited with status {code}"
        self._proc = None
        self.close()
        return FirmwareCrashed(f"firmware {self.kmd_dir}: {how} in {doing}{self._last_log()}")

    def _send(self, kind: bytes, payload: bytes, doing: str) -> None:
        data = memoryview(HEADER.pack(kind, len(payload)) + payload)
        try:
            while data:
                data = data[os.write(self._out, data):]
        except OSError:
            raise self._died(doing) from None

    def _read(self, n: int, doing: str) -> bytes:
        while len(self._buffer) < n:
            ready, _, _ = select.select([self._in], [], [], self.timeout)
            chunk = os.read(self._in, 1 << 20) if ready else b""
            if not chunk:
                raise self._died(doing)
            self._buffer += chunk
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def _call(self, name: str, args: bytes = b"") -> tuple[int, int]:
        """Run entry point ``name`` in the firmware, serving its requests until it returns."""
        if self._proc is None:
            raise FirmwareError(f"firmware {self.kmd_dir}: its process has ended")
        start = time.perf_counter()
        try:
            while self._unanswered:  # calls sent earlier without waiting
                earlier = self._unanswered[0]
                ret, _ = self._returned(earlier)
                self._unanswered.pop(0)
                if ret:
                    raise FirmwareError(f"firmware {self.kmd_dir}: {earlier} failed ({ret})"
                                        f"{self._last_log()}")
            doing = CALLS.get(name, name)
            self._send(b"C", name.encode() + b"\0" + args, doing)
            return self._returned(doing)
        finally:
            self.call_seconds += time.perf_counter() - start

    def _returned(self, name: str) -> tuple[int, int]:
        """Serve the firmware's requests until call ``name`` returns; its return values."""
        while True:
            kind, size = HEADER.unpack(self._read(HEADER.size, name))
            payload = self._read(size, name)
            if kind == b"X":
                ret, complete = struct.unpack("<iI", payload)
                if self._error is not None:
                    error, self._error = self._error, None
                    raise error
                return ret, complete
            answer = self._serve(kind, payload)
            if answer is not None:
                self._send(b"R", answer, name)

    def _serve(self, kind: bytes, payload: bytes) -> bytes | None:
        """One request of the firmware; an error is kept and raised when the call returns."""
        start = time.perf_counter()
        try:
            if self._error is None:
                return self._handle(kind, payload)
        except Exception as exc:  # noqa: BLE001 - re-raised once the firmware's call returns
            self._error = exc
        finally:
            self.serve_seconds += time.perf_counter() - start
        return {b"r": bytes(4), b"m": struct.pack("<i", EFAULT)}.get(kind)

    def _handle(self, kind: bytes, payload: bytes) -> bytes | None:
        machine, recorder = self.machine, self.recorder
        if kind == b"W":
            addr, value = struct.unpack("<II", payload)
            if recorder is not None:
                recorder.reg_write(addr, value)
            machine.write_reg(addr, value)
        elif kind == b"r":
            (addr,) = struct.unpack("<I", payload)
            value = machine.read_reg(addr) & 0xFFFFFFFF
            if recorder is not None:
                recorder.reg_read(addr, value)
            return struct.pack("<I", value)
        elif kind == b"M":
            (addr,) = struct.unpack_from("<Q", payload)
            self.cpu_writes.append((addr, len(payload) - 8))
            machine.pri_mem.write(addr, payload[8:], "firmware data write")
        elif kind == b"m":
            addr, size = struct.unpack("<QI", payload)
            return struct.pack("<i", 0) + machine.pri_mem.read(addr, size)
        elif kind == b"L":
            (level,) = struct.unpack_from("<i", payload)
            self._log(level, payload[4:])
        else:
            raise FirmwareError(f"firmware {self.kmd_dir}: unknown request {kind!r}")
        return None

    def _log(self, level: int, text: bytes) -> None:
        line = text.decode("utf-8", "replace").rstrip("\n")
        self.log_lines.append(line)
        if level >= 3 and line.strip():
            self.error_lines.append(line.strip())
        log.log(LOG_LEVELS[min(max(level, 0), 3)], "%s", line)

    # -- one task -------------------------------------------------------------
    def run_task(self, addresses: Sequence[int | tuple[int, int]]) -> TaskStats:
        """Run one DLA task whose address list is ``addresses`` (index 0: network descriptor).

        Each entry is an absolute byte address, or (memory base, offset): the
        firmware reads descriptors at ``base + offset it asks for`` and the
        hardware at ``base + offset``.  Raises FirmwareTaskFailed when the
        firmware reports a failure, FirmwareError when the run cannot progress.
        """
        start, layers0 = time.perf_counter(), self.machine.layers_run
        self.cpu_writes, self.error_lines = [], []
        pairs = [a if isinstance(a, tuple) else (int(a), 0) for a in addresses]
        cfg = self.machine.config
        args = struct.pack("<IIBBB", len(pairs), cfg.atom_bytes, cfg.bdma, cfg.rubik,
                           cfg.weight_compression)
        args += b"".join(struct.pack("<QQ", base, offset) for base, offset in pairs)
        try:
            interrupts = self._run(args)
        except FirmwareCrashed:
            raise
        except BaseException:
            if self._proc is not None:
                self._call("dla_clear_task")
            raise
        self._call("dla_clear_task")
        return TaskStats(self.machine.layers_run - layers0, interrupts,
                         time.perf_counter() - start)

    def _run(self, args: bytes) -> int:
        """Execute the task and serve its interrupts; returns how many it took."""
        ret, _ = self._call("dla_execute_task", args)
        if ret:
            raise FirmwareTaskFailed(f"firmware: dla_execute_task failed ({ret}){self._last_log()}")
        interrupts, complete = 0, 0
        while not complete:
            self._wait_for_interrupt()
            interrupts += 1
            if interrupts > MAX_INTERRUPTS:
                raise FirmwareError(f"firmware: task still running after {MAX_INTERRUPTS} "
                                    f"interrupts")
            if self.recorder is not None:
                self.recorder.interrupt(self.machine)
            ret, complete = self._call("interrupt")  # dla_isr_handler, dla_process_events
            if ret:
                raise FirmwareTaskFailed(f"firmware: task failed ({ret}){self._last_log()}")
        return interrupts

    def _wait_for_interrupt(self) -> None:
        machine = self.machine
        while not machine.interrupt_pending():
            if not machine.step():
                if self.error_lines:  # it reported an error, then stopped programming
                    raise FirmwareTaskFailed(f"firmware: task failed (it reported an error and "
                                             f"armed nothing more){self._last_log()}")
                raise FirmwareError(f"firmware task stalled: no interrupt pending and no layer "
                                    f"can run ({_waiting(machine)}){self._last_log()}")

    def _last_log(self) -> str:
        """The firmware's own words on the failure: its last error, else its last line."""
        said = self.error_lines or [ln.strip() for ln in self.log_lines if ln.strip()]
        return f"; firmware said: {said[-1]}" if said else ""


def _waiting(machine) -> str:
    armed = [unit for unit, groups in machine.regfile.armed.items() if any(groups)]
    if armed:
        return "blocks armed but waiting for the rest of their chain: " + ", ".join(armed)
    return "no block armed"
