"""Drive a KMD firmware (compiled into a program of its own) on a simulated NVDLA.

The firmware programs registers and reads its task's descriptors through the
callbacks of our port layer; they reach this process over a pipe
(:file:`host.c`, the firmware program's main, relays them): register reads
and writes go to the :class:`~sim.machine.Machine`, descriptor reads and
writes to its system memory.  :meth:`Firmware.run_task` does what NVIDIA's Linux driver does for
one submitted task: ``dla_execute_task``, then, each time the interrupt line
rises, ``dla_isr_handler`` and ``dla_process_events`` until the firmware
reports the task complete, then ``dla_clear_task``.

The firmware is the user's code, often a fork being debugged: a crash (a
signal), an exit, or a hang (no request within ``timeout`` seconds) ends its
process only, and becomes a :class:`FirmwareCrashed` naming the folder and
the entry point it was in.  Writes need no answer, so they travel in batches;
only reads wait for one, and fewer do: each answer (and each call) carries
the values of the status registers the firmware has read so far, with what a
register write does to each (it applies its own writes to them), and each
descriptor read the bytes after it, which it keeps across calls until memory
written between calls cuts them short (the machine steps only between calls,
so neither can go stale unseen; :file:`host.c` describes the frames).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import FirmwareCrashed, FirmwareError, FirmwareTaskFailed, SimError
from ..logs import DEBUG, ERROR, INFO, WARNING, LazyLogger
from ..records import record
from ..regfile import POINTER
from .build import build_firmware

log = LazyLogger("sim.firmware")  # quiet unless the user configures logging
LOG_LEVELS = (DEBUG, INFO, WARNING, ERROR)
MAX_INTERRUPTS = 1_000_000  # a task that needs more is treated as stuck
DEFAULT_TIMEOUT = 60.0  # seconds the firmware may run without a request before it is hung
HEADER = struct.Struct("<cI")  # the frames of host.c: kind, payload length
PAIR = struct.Struct("<II")  # register write, cached read: address, value; segment cut
ENTRY = struct.Struct("<IIIIII")  # snapshot entry: address, value, and what a write does
ENTRY_WORDS = len(ENTRY.format.lstrip("<"))  # an entry's words: the value is the second
WRITE = struct.Struct("<cIII")  # a register write's whole frame: kind, 8, address, value
POSTED_KINDS = b"Wc"  # frames of that shape: register writes, reads answered from a snapshot
POSTED_RUN = 256  # such frames looked at at once (a 64 KiB buffer holds 5000)
LOG_FRAME = struct.Struct("<cIi")  # a log line's frame: kind, length, level, then the text
LOG_KIND = ord("L")
BATCH_KIND = ord("G")  # debug and info log lines, as 'L' frames in one frame
BATCHED_LEVELS = frozenset((0, 1))
ADDR = struct.Struct("<I")  # register read: address (its answer: the value)
LEVEL = struct.Struct("<i")  # log line: level, then the text
MEM_WRITE = struct.Struct("<Q")  # memory write: address, then the bytes
MEM_READ = struct.Struct("<QI")  # memory read: address, size
RETURN = struct.Struct("<iI")  # a call's return value and its completion flag
# the requests (frames the firmware waits on) and what one that failed is answered (its
# error is raised once the call returns)
FAILED_ANSWERS = {b"r": bytes(4), b"m": struct.pack("<i", -14)}  # requests: 0; -EFAULT
READ_AHEAD = 16384  # bytes sent past a memory read for the firmware's next descriptor reads
MAX_SEGMENTS = 64  # memory segments the firmware keeps (host.c): a full table is forgotten
ANY_WRITE = 0xFFFFFFFF  # a snapshot entry's dep: every register write forgets it
CALLS = {"interrupt": "dla_isr_handler/dla_process_events"}  # what a call of host.c runs


@record(frozen=False)
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
        program = build_firmware(kmd_dir, machine.config.address_map)
        self._error: BaseException | None = None
        self._log_lines: list[str] = []
        self._unread_log: list[bytes] = []  # lines not decoded yet: most are never read
        self.error_lines: list[str] = []  # what the firmware reported with dla_error
        self.cpu_writes: list[tuple[int, int]] = []  # (address, size) the firmware wrote
        self._buffer = bytearray()
        # the snapshots of status registers sent along with calls and reads (see _snapshot)
        self._follow: dict[object, dict[int, None]] = {}  # what it read after each before
        self._valid: list[object] = []  # snapshots sent in this call: they learn its reads
        self._pure: dict[int, bool] = {}  # register address -> reading it changes nothing
        self._write_rules: dict[int, tuple] = {}  # register address -> its snapshot rules
        self._snapshot_plans: dict[object, tuple] = {}  # before -> _snapshot_plan's
        self._held = HeldSegments(machine.pri_mem)  # the memory the firmware keeps
        self.call_seconds = 0.0  # in the firmware's calls: its code, the pipe, our answers
        self.serve_seconds = 0.0  # of which answering its requests (the simulator's work)
        from_parent, to_child = os.pipe()  # (read end, write end)
        from_child, to_parent = os.pipe()
        self._proc = subprocess.Popen(
            [str(program), str(from_parent), str(to_parent)],
            pass_fds=(from_parent, to_parent), stdin=subprocess.DEVNULL, stdout=2,
            stderr=None)
        os.close(from_parent)
        os.close(to_parent)
        self._out, self._in = to_child, from_child
        self._fds = (to_child, from_child)
        # registering needs no answer yet: the process starts while the caller goes on
        self._unanswered: list[str] = []
        for name in ("dla_register_driver", "dla_clear_task"):
            self._send(name, (b"C", name.encode() + b"\0"))
            self._unanswered.append(name)

    # -- the firmware's process ------------------------------------------------------
    def close(self) -> None:
        """End the firmware's process (it keeps nothing worth a clean exit: it is killed,
        which needs no waiting) and close the pipes."""
        proc, self._proc = self._proc, None
        held = getattr(self, "_held", None)
        if held is not None:
            held.close()
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

    def _send(self, doing: str, *frames: tuple[bytes, bytes]) -> None:
        """Send ``(kind, payload)`` frames to the firmware's process in one write."""
        data = memoryview(b"".join([HEADER.pack(kind, len(payload)) + payload
                                    for kind, payload in frames]))
        try:
            while data:
                data = data[os.write(self._out, data):]
        except OSError:
            raise self._died(doing) from None

    def _fill(self, doing: str) -> None:
        """Append what the firmware sent to the buffer, waiting up to ``timeout`` for it."""
        ready, _, _ = select.select([self._in], [], [], self.timeout)
        chunk = os.read(self._in, 1 << 20) if ready else b""
        if not chunk:
            raise self._died(doing)
        self._buffer += chunk

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
            # the status words it is likely to read first travel with the call, and what
            # memory written since the last call took from the segments it keeps
            self._valid[:] = [name]
            frames = [(b"S", self._snapshot(name)), (b"C", name.encode() + b"\0" + args)]
            cuts = self._held.cuts()
            if cuts:
                frames.insert(0, (b"T", cuts))
            self._send(doing, *frames)
            return self._returned(doing)
        finally:
            self.call_seconds += time.perf_counter() - start

    def _returned(self, name: str) -> tuple[int, int]:
        """Serve the firmware's requests until call ``name`` returns; its return values."""
        buf = self._buffer
        pos = 0
        try:
            while True:
                pos, kind, reply = self._serve(buf, pos)
                if kind is None:  # the rest of a frame is still on its way
                    del buf[:pos]
                    pos = 0
                    self._fill(name)
                elif kind == b"X":
                    if self._error is not None:
                        error, self._error = self._error, None
                        raise error
                    return RETURN.unpack(reply)
                else:
                    self._send(name, (b"R", reply))
        finally:
            del buf[:pos]

    def _serve(self, buf: bytearray, pos: int) -> tuple[int, bytes | None, bytes | None]:
        """Serve the frames in ``buf`` from ``pos`` up to a request or the call's return.

        Everything the firmware sent at once (its posted writes and logs, then
        a request or the call's return) is served in one go.  Returns where it
        stopped, the kind of the frame it stopped at (None: at an incomplete
        frame) and the answer to it (the return values for ``X``).  An error is
        kept and raised when the call returns; what follows it is answered
        without effect.
        """
        clock = time.perf_counter
        n = len(buf)
        quiet = None  # the log levels nobody listens to, looked up at the first log line
        while n - pos >= HEADER.size:
            if buf[pos] in POSTED_KINDS and self._error is None:  # most of what it sends
                after = self._posted(buf, pos, n)
                if after != pos:
                    pos = after
                    continue  # else an incomplete frame: as any other
            if buf[pos] in (LOG_KIND, BATCH_KIND) and self._error is None:  # the next most
                if quiet is None:
                    quiet = frozenset(level for level in range(3)
                                      if not log.isEnabledFor(LOG_LEVELS[level]))
                after = (self._logs if buf[pos] == LOG_KIND else self._batch)(buf, pos, n, quiet)
                if after != pos:
                    pos = after
                    continue
            kind, size = HEADER.unpack_from(buf, pos)
            start = pos + HEADER.size
            end = start + size
            if end > n:
                break
            pos = end
            if kind == b"X":
                return pos, kind, bytes(buf[start:end])
            answer = None
            if self._error is None:
                t0 = clock()
                try:
                    if kind == b"W":
                        self._register_write(*PAIR.unpack_from(buf, start))
                    elif kind == b"L":  # the next most
                        self._log(LEVEL.unpack_from(buf, start)[0], buf[start + 4:end])
                    else:
                        answer = self._handle(kind, buf, start, end)
                except Exception as exc:  # noqa: BLE001 - raised once the firmware's call returns
                    self._error = exc
                self.serve_seconds += clock() - t0
            if kind in FAILED_ANSWERS:
                return pos, kind, FAILED_ANSWERS[kind] if answer is None else answer
        return pos, None, None

    def _posted(self, buf: bytearray, pos: int, n: int) -> int:
        """Serve the run of whole register-write and cached-read frames from ``pos`` (the
        firmware posts hundreds at once, its status reads among them); returns where the
        run ends."""
        frames = _posted_run(buf, pos, n)
        if not frames:
            return pos
        write, cached = self._register_write, self._cached_read
        if self.recorder is None:  # nothing to record: the machine's own write, a call less
            write = self.machine.write_reg
        step, pair = WRITE.size, PAIR.size  # looked up once: thousands of frames a task
        t0 = time.perf_counter()
        try:
            for kind, size, addr, value in WRITE.iter_unpack(frames):
                if size != pair:
                    break  # not a frame of host.c's: the frame-by-frame path says so
                pos += step
                if kind == b"W":
                    write(addr, value)
                else:  # b"c"
                    cached(addr, value)
        except Exception as exc:  # noqa: BLE001 - raised once the firmware's call returns
            self._error = exc
        self.serve_seconds += time.perf_counter() - t0
        return pos

    def _logs(self, buf: bytearray, pos: int, n: int, quiet: frozenset) -> int:
        """Keep the run of whole log-line frames from ``pos`` (the firmware's debug lines
        come in thousands); returns where the run ends.  A line of a ``quiet`` level (no
        logger listens, and it is no error) is only kept, as :meth:`_log` would keep it."""
        unread, unpack, head = self._unread_log, LOG_FRAME.unpack_from, LOG_FRAME.size
        t0 = time.perf_counter()
        try:
            while n - pos >= head and buf[pos] == LOG_KIND:
                _, size, level = unpack(buf, pos)
                end = pos + HEADER.size + size
                if end > n or size < LEVEL.size:
                    break  # incomplete, or not a line of host.c's: the frame-by-frame path
                if level in quiet:
                    unread.append(buf[pos + head:end])
                else:
                    self._log(level, buf[pos + head:end])
                pos = end
        except Exception as exc:  # noqa: BLE001 - raised once the firmware's call returns
            self._error = exc
        self.serve_seconds += time.perf_counter() - t0
        return pos

    def _batch(self, buf: bytearray, pos: int, n: int, quiet: frozenset) -> int:
        """Keep a whole 'G' frame at ``pos`` (debug and info log lines) unread, or take
        its lines one by one when a logger listens to their levels; returns where it ends
        (``pos`` while it is incomplete)."""
        _, size = HEADER.unpack_from(buf, pos)
        start, end = pos + HEADER.size, pos + HEADER.size + size
        if end > n:
            return pos
        if BATCHED_LEVELS <= quiet:
            self._unread_log.append(_LogBatch(buf[start:end]))
        elif self._logs(buf, start, end, quiet) != end:
            self._error = FirmwareError(f"firmware {self.kmd_dir}: a malformed log batch")
        return end

    def _register_write(self, addr: int, value: int) -> None:
        """A register write the firmware made ('W'), recorded then done."""
        if self.recorder is not None:
            self.recorder.reg_write(addr, value)
        self.machine.write_reg(addr, value)

    def _cached_read(self, addr: int, value: int) -> None:
        """A read the firmware answered from our last snapshot ('c'): the register must still
        hold that value (else the snapshot's premise broke)."""
        if self.machine.read_reg(addr) & 0xFFFFFFFF != value:
            raise _stale(addr, value)
        self._learn(addr)
        if self.recorder is not None:
            self.recorder.reg_read(addr, value)

    def _handle(self, kind: bytes, buf: bytearray, start: int, end: int) -> bytes | None:
        """A frame other than a register write or a log line (:meth:`_serve` takes those)."""
        machine, recorder = self.machine, self.recorder
        if kind == b"c":
            self._cached_read(*PAIR.unpack_from(buf, start))
        elif kind == b"r":
            (addr,) = ADDR.unpack_from(buf, start)
            value = machine.read_reg(addr) & 0xFFFFFFFF
            if recorder is not None:
                recorder.reg_read(addr, value)
            self._learn(addr)
            self._valid.append(addr)
            # what it reads next is likely another status word: send their values along
            return ADDR.pack(value) + self._snapshot(addr)
        elif kind == b"M":
            (addr,) = MEM_WRITE.unpack_from(buf, start)
            self.cpu_writes.append((addr, end - start - MEM_WRITE.size))
            with self._held.own_write():  # its process applied it to what it keeps
                machine.pri_mem.write(addr, bytes(buf[start + MEM_WRITE.size:end]),
                                      "firmware data write")
        elif kind == b"m":
            addr, size = MEM_READ.unpack_from(buf, start)
            data = self._read_ahead(addr, size)
            self._held.add(addr, len(data))
            return bytes(4) + data
        else:
            raise FirmwareError(f"firmware {self.kmd_dir}: unknown request {kind!r}")
        return None

    def _learn(self, addr: int) -> None:
        """The firmware read register ``addr``: the snapshots still valid learn it."""
        pure = self._pure.get(addr)
        if pure is None:
            # reading changes nothing unless an engine computes the register's reads
            # itself (a LUT port, a BDMA status)
            reg = self.machine.regfile.register_at(addr)
            pure = self._pure[addr] = not any(
                f"{reg.unit}.{reg.name}" in engine.computed_reads()
                for engine in self.machine.engines)
        if pure:
            for before in self._valid:
                self._follow.setdefault(before, {})[addr] = None

    def _snapshot(self, before) -> bytes:
        """Entries (:data:`ENTRY`) of the status registers the firmware read, in earlier
        calls, after ``before`` (a call's name, or the register it just read).

        Registers change only by a CSB write or by the machine stepping, and the
        machine never steps during a call: the firmware answers reads of these
        from the snapshot, applying its register writes by each entry's rules
        (:func:`write_rules`).  Only registers whose reads change nothing are learnt,
        and every read it answers itself is checked here (``c``).
        """
        follow = self._follow.get(before)
        if not follow:
            return b""
        plan = self._snapshot_plans.get(before)
        if plan is None or plan[0] != len(follow):  # it learnt a read since: anew
            plan = self._snapshot_plans[before] = self._snapshot_plan(follow)
        _, registers, entries, frame = plan
        read = self.machine.read_register
        entries[1::ENTRY_WORDS] = [read(reg) & 0xFFFFFFFF for reg in registers]
        return frame.pack(*entries)

    def _snapshot_plan(self, follow: dict[int, None]) -> tuple:
        """What :meth:`_snapshot` sends for the registers ``follow`` (a snapshot is sent
        with every call and read answer): (how many, their registers, the entries as one
        flat list whose values it fills in, the struct of them all)."""
        rules, machine = self._write_rules, self.machine
        entries = []
        for addr in follow:
            rule = rules.get(addr) or rules.setdefault(addr, write_rules(machine, addr))
            entries += [addr, 0, *rule]
        registers = [machine.regfile.register_at(addr) for addr in follow]
        frame = struct.Struct("<" + ENTRY.format.lstrip("<") * len(follow))
        return len(follow), registers, entries, frame

    def _read_ahead(self, addr: int, size: int) -> bytes:
        """``size`` bytes at ``addr`` and the bytes after them, which the firmware's next
        descriptor reads likely want (all of which it may read at once).

        Memory changes only by the firmware's own writes (which its process
        applies to what it holds) or by a layer, and no layer runs during a
        call: the firmware keeps these bytes until the call returns.
        """
        mem = self.machine.pri_mem
        more = min(READ_AHEAD, mem.limit - addr - size)
        if more > 0:
            try:
                return mem.read(addr, size + more)
            except SimError:  # not as one access: only what it asked for (or its error)
                pass
        return mem.read(addr, size)

    @property
    def log_lines(self) -> list[str]:
        """Every line the firmware logged, in order."""
        if self._unread_log:
            self._log_lines += [_line(text) for entry in self._unread_log
                                for text in (entry.lines() if isinstance(entry, _LogBatch)
                                             else (entry,))]
            self._unread_log.clear()
        return self._log_lines

    def _log(self, level: int, text: bytes) -> None:
        self._unread_log.append(text)
        py_level = LOG_LEVELS[min(max(level, 0), 3)]
        if level >= 3 or log.isEnabledFor(py_level):
            line = _line(text)
            if level >= 3 and line.strip():
                self.error_lines.append(line.strip())
            log.log(py_level, "%s", line)

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
        self.machine.completions_seen()  # the task is complete: every layer of it ended
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


def write_rules(machine, addr: int) -> tuple[int, int, int, int]:
    """(writable bits, write-1-to-clear bits, dep, own write stores) of a register the
    firmware's process answers reads of (a snapshot entry, host.c ``S``): what the register
    file does on a CSB write (:meth:`RegisterFile.write_plan`) as it shows in its reads.

    Its own write stores by the masks, unless the register has write-only bits (a
    trigger, such as S_INTR_SET) or is a pointer whose PRODUCER field is not at bit 0.
    One other register's write may change its reads (``dep``, :meth:`Machine.read_depends`:
    a group's S_POINTER, a unit's D_OP_ENABLE, S_INTR_SET), never ``addr`` itself.
    """
    rf, amap = machine.regfile, machine.config.address_map
    reg = rf.register_at(addr)
    unit, _, kind, writable, w1c, _, producer = rf.write_plan(reg)
    stores = not reg.mask(amap, ("wo",))
    if kind == POINTER:
        writable, stores = producer[0], stores and producer[1] == 0
    other = machine.read_depends(reg)
    dep = addr
    if other is not None:
        try:
            dep = rf.address_of(rf.register(f"{unit}.{other}"))
        except SimError:  # no such register here: any write may change it
            dep = ANY_WRITE
    return writable, w1c, dep, int(stores)


class HeldSegments:
    """The memory segments the firmware's process keeps across calls (host.c ``m``), as
    (address, valid bytes) in its order, and what memory written since cut from them.

    It listens to the memory: a write other than the firmware's own (which its process
    applies to what it keeps) cuts each segment it meets short, at the write's first
    byte; :meth:`cuts` gives the ``T`` frame's payload before the next call.
    """

    def __init__(self, memory):
        self.memory = memory
        self.segments: list[list[int]] = []  # [address, valid bytes]
        self._cut: dict[int, int] = {}  # index -> valid bytes, not yet sent
        self._own = False
        memory.listeners.add(self)

    def close(self) -> None:
        if self in self.memory.listeners:
            self.memory.listeners.remove(self)

    def add(self, addr: int, size: int) -> None:
        """The firmware keeps the bytes of a read it was answered (a full table first
        forgets every segment, as host.c does)."""
        if len(self.segments) == MAX_SEGMENTS:
            self.segments.clear()
            self._cut.clear()
        self.segments.append([addr, size])

    @contextlib.contextmanager
    def own_write(self):
        """Memory writes inside are the firmware's own."""
        self._own = True
        try:
            yield
        finally:
            self._own = False

    def wrote(self, memory, addr: int, size: int) -> None:
        if self._own or not size:
            return
        end = addr + size
        for index, segment in enumerate(self.segments):
            start, length = segment
            if addr < start + length and start < end:
                segment[1] = max(0, addr - start)
                self._cut[index] = segment[1]

    def wrote_feature(self, memory, addr: int, layout, precision: str, what: str) -> None:
        pass

    def cuts(self) -> bytes:
        """The ``T`` payload: (index, valid bytes) of each segment cut since the last."""
        if not self._cut:
            return b""
        payload = b"".join(PAIR.pack(i, n) for i, n in sorted(self._cut.items()))
        self._cut.clear()
        return payload


class _LogBatch(bytes):
    """The 'L' frames of a 'G' frame, kept as they came until the lines are read."""

    def lines(self) -> list[bytes]:
        out, pos, head = [], 0, LOG_FRAME.size
        while pos + head <= len(self):
            _, size, _ = LOG_FRAME.unpack_from(self, pos)
            out.append(self[pos + head: pos + HEADER.size + size])
            pos += HEADER.size + size
        return out


def _posted_run(buf: bytearray, pos: int, n: int) -> bytes:
    """The frames from ``pos`` up to the first whose kind is not a posted one (``W``, ``c``),
    whole ones only, at most :data:`POSTED_RUN` of them (what follows is looked at by the
    next call, not by every one): what :meth:`Firmware._posted` serves (their kinds are
    every 13th byte)."""
    end = min(n, pos + POSTED_RUN * WRITE.size)
    kinds = buf[pos : end - WRITE.size + 1 : WRITE.size]
    count = len(kinds) - len(kinds.lstrip(POSTED_KINDS))
    return bytes(buf[pos : pos + count * WRITE.size])


def _stale(addr: int, value: int) -> FirmwareError:
    return FirmwareError(f"firmware bridge: register {addr:#x} read {value:#x} from a stale "
                         f"snapshot (a register changed without a write)")


def _line(text: bytes) -> str:
    return text.decode("utf-8", "replace").rstrip("\n")


def _waiting(machine) -> str:
    armed = [unit for unit, groups in machine.regfile.armed.items() if any(groups)]
    if armed:
        return "blocks armed but waiting for the rest of their chain: " + ", ".join(armed)
    return "no block armed"
