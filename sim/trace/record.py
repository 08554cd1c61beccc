"""Record a run driven by software (NVIDIA's firmware) as a replayable ``.cfg`` trace.

The trace is written in the vocabulary of NVIDIA's own trace benches, so
that the same file runs on ``nvdla-sim run``, NVIDIA's C-model and an RTL
testbench (``nvdla-sim rtl``):

* every CSB write the firmware makes is a ``reg_write``, except its
  write-one-to-clear acknowledgements of ``GLB.S_INTR_STATUS``: each
  interrupt its handler served is an ``intr_notify`` instead (the bench waits
  for that done bit, then clears it, as the firmware did), so a replay waits
  where the firmware waited and reprograms a register group only after the
  hardware released it;
* a CSB read becomes ``poll_reg_equal`` when its value cannot depend on
  timing (a register only software changes); reads of status, pointer and
  counter registers are left out: on RTL their value depends on how far the
  hardware got, and the ``intr_notify`` waits already order the replay;
* the memories the runtime filled before each task are ``mem_load`` of
  record ``.dat`` files written beside the trace;
* each region a task's layers wrote is checked by ``check_crc`` on the first
  interrupt after which the region held its final bytes; every other sync id
  gets ``check_nothing`` (the bench wants exactly one check per sync id); only
  regions left over when a task ends with fewer interrupts than final regions
  share the last interrupt's sync id.
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from ..errors import SimError
from ..files import publish, write_atomically, write_hidden
from ..memfiles import live_records, record_dat_bytes, record_dat_text
from ..records import record
from . import cfg
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
    RegWrite,
)

RAM_NAMES = {0: "sec_mem", 1: "pri_mem", "sec_mem": "sec_mem", "pri_mem": "pri_mem"}
RECORD_BYTES = 32  # bytes per .dat record line
# a loaded region at least this part of whose records are zero is zero-filled first
# (mem_init) and its file holds only the other records: less text to render and write
SPARSE_ZEROS = 0.25
STATUS_REGISTER = "NVDLA_GLB.S_INTR_STATUS_0"
MEMORY_FORMATS = ("dat", "bin")


@record(frozen=False)
class _Notify:
    sync: int
    line: int  # index of its intr_notify in the trace's ops
    layer_writes: dict  # memory name -> Memory.layer_writes of the layers complete by then


@record(frozen=False)
class _Check:
    ram: str
    addr: int
    size: int
    crc: int
    final_write: int  # Memory.last_layer_write of the region when the task ended


class _RenderThread:
    """The thread that makes the memory files while networks run: one for the process,
    started at its first file and kept.  A thread started per recording made the run's
    own thread wait until the new one was scheduled: 3-4 ms on a busy machine, a third
    of a small network's run."""

    def __init__(self):
        try:  # queue's own SimpleQueue without the rest of queue
            from _queue import SimpleQueue
        except ImportError:
            from queue import SimpleQueue

        self._jobs = SimpleQueue()
        self._lock = threading.Lock()
        self._started = False

    def submit(self, fn, *args) -> Future:
        """``fn(*args)`` run on the thread after the calls submitted before it."""
        future = Future()
        self._jobs.put((future, fn, args))
        with self._lock:
            if not self._started:
                threading.Thread(target=self._serve, name="record-dat", daemon=True).start()
                self._started = True
        return future

    def _serve(self) -> None:
        while True:
            future, fn, args = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - raised by the future's result()
                future.set_exception(exc)
            del future, fn, args  # no file's data kept while the thread waits

    def forget(self) -> None:
        """A forked child has none of its parent's threads: its first file starts one."""
        self._jobs = type(self._jobs)()
        self._lock = threading.Lock()
        self._started = False


_RENDERER = _RenderThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RENDERER.forget)


def _discard_unpublished(files: dict[str, Future]) -> None:
    """Remove the hidden files of ``files`` (name -> rendering) and forget them: renders
    not started are cancelled, the others waited for (a file cut short would stay)."""
    for rendering in files.values():
        if rendering.cancel() or rendering.exception() is not None:
            continue
        made = rendering.result()
        if isinstance(made, Path):
            made.unlink(missing_ok=True)
    files.clear()


def _kept_as_is(data) -> bool:
    """A memory's bytes the recorder may keep without a copy: a read-only, one-dimensional
    uint8 array owning its memory (its length is its size in bytes; no one can change it)."""
    return (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1
            and data.flags.owndata and not data.flags.writeable)


class TraceRecorder:
    """``path``: where :meth:`save` will write the trace.  Given, each memory file is made
    and written in its folder (made with the first file, if need be) under a hidden name
    while the network runs (writing 70 MB of text took as long as a small network's run;
    kept in memory instead, AlexNet's 760 MB of text took 3-6 times the run), and only
    :meth:`save` puts them in place; else they are kept in memory until then.
    ``memory_format``: the
    memories loaded as record ``.dat`` text, which NVIDIA's C-model and RTL benches read,
    or as ``.bin`` files of their raw bytes, which only ``nvdla-sim`` reads (``run``, and
    ``rtl``, which feeds NVIDIA's RTL bench commands of its own making; no text to
    render: a quarter of the size, written about as fast as the memory is copied)."""

    def __init__(self, machine, path: str | Path | None = None, memory_format: str = "dat"):
        if memory_format not in MEMORY_FORMATS:
            raise ValueError(f"memory format {memory_format!r}: one of {MEMORY_FORMATS}")
        self.machine = machine
        self.memory_format = memory_format
        self.path = Path(path) if path is not None else None
        self._stream = self.path is not None
        self.ops: list[Op] = [
            Comment(f"recorded by nvdla-sim (config {machine.config.name})"),
            Comment("reads of registers the hardware updates are left out: the intr_notify "
                    "waits order the replay"),
        ]
        # memory file name -> a future of its content or of the hidden file holding it:
        # made in a thread while the network runs
        self.files: dict[str, Future] = {}
        # the files not yet put in place by save: a recorder dropped without it (a script
        # that stops early) removes their hidden files, at the latest as Python exits (the
        # render thread, a daemon, would be stopped mid-file and leave it there)
        self._unpublished: dict[str, Future] = {}
        if self._stream:
            weakref.finalize(self, _discard_unpublished, self._unpublished)
        self._notifies: list[_Notify] = []
        self._task_start = 0  # index into _notifies of the running task's first interrupt
        self._checks: dict[int, _Check] = {}  # sync id -> its check_crc
        self._extra_checks: dict[int, list[_Check]] = {}  # sync id -> checks past the one
        self._status = machine.regfile.register(STATUS_REGISTER)
        # register address -> the name its reg_write (poll_reg_equal) records, None for none:
        # a network's 15k writes each looked their register up again
        self._write_names: dict[int, str | None] = {}
        self._read_names: dict[int, str | None] = {}
        # memory name -> Memory.layer_writes of the layers whose last interrupt was served
        self._released = {mem.name: mem.layer_writes for mem in machine.memories()}
        for mem in machine.memories():
            mem.log_layer_writes()

    def comment(self, text: str) -> None:
        self.ops.append(Comment(text))

    def begin_task(self, text: str) -> None:
        """A new task starts: its checks go on its own interrupts."""
        self.comment(text)
        self._task_start = len(self._notifies)

    def reg_write(self, addr: int, value: int) -> None:
        name = self._write_names.get(addr, "")
        if name == "":
            reg = self.machine.regfile.register_at(addr)
            # acknowledging an interrupt: intr_notify stands for it
            name = self._write_names[addr] = None if reg is self._status else reg.full_name
        if name is not None:
            self.ops.append(RegWrite(name, value & 0xFFFFFFFF))

    def reg_read(self, addr: int, value: int) -> None:
        name = self._read_names.get(addr, "")
        if name == "":
            reg = self.machine.regfile.register_at(addr)
            name = self._read_names[addr] = reg.full_name if reg.software_owned else None
        if name is not None:
            self.ops.append(PollReg(name, ALL_BITS, value & 0xFFFFFFFF))

    def interrupt(self, machine) -> None:
        """The firmware's handler is about to serve the pending interrupts: wait for each."""
        status = machine.interrupt_status()
        if not machine.layer_finishing():  # every layer that ran has raised its last interrupt
            self._released = {mem.name: mem.layer_writes for mem in machine.memories()}
        writes = dict(self._released)
        for source, group, _lsb in machine.done_interrupts(status):
            sync = len(self._notifies)
            self._notifies.append(_Notify(sync, len(self.ops), writes))
            self.ops.append(IntrNotify(f"{source}_{group}", f"sync_id_{sync}"))

    def load_memory(self, ram, addr: int, data: bytes | np.ndarray) -> None:
        """``data``: bytes, or a read-only uint8 array owning its memory (no view of a
        memory's pages), kept as it is: the memory files are made from it while the run
        goes on.  Any other buffer is copied."""
        if not isinstance(data, bytes) and not _kept_as_is(data):
            data = bytes(data)
        if self.memory_format == "bin":
            self._add_file(ram, addr, data, live=None)
            return
        full = len(data) // RECORD_BYTES * RECORD_BYTES
        rows = np.frombuffer(data, np.uint8, full).reshape(-1, RECORD_BYTES)
        live = live_records(rows)
        count = int(np.count_nonzero(live))
        sparse = count <= (1 - SPARSE_ZEROS) * len(rows)
        if sparse:
            self.ops.append(MemInit(RAM_NAMES[ram], addr, len(data), "ALL_ZERO"))
            if count == 0 and full == len(data):
                return  # all zero: nothing to load after the fill
        self._add_file(ram, addr, data, live if sparse else None)

    def _add_file(self, ram, addr: int, data: bytes | np.ndarray,
                  live: np.ndarray | None) -> None:
        """``live``: the records to load (live_records of ``data``'s whole ones) when the
        file holds only those (its memory zero-filled first), else None."""
        name = f"mem_{len(self.files):03d}_{addr:x}.{self.memory_format}"
        if self._stream and not self.files:  # the folder for the hidden files (save makes
            self.path.parent.mkdir(parents=True, exist_ok=True)  # it too)
        self.files[name] = self._unpublished[name] = _RENDERER.submit(
            self._render, name, data, live)
        self.ops.append(MemLoad(RAM_NAMES[ram], addr, name))

    def check_crc(self, ram, addr: int, size: int) -> None:
        """Check a region the running task wrote, on the first of the task's interrupts
        after which it held its final bytes (each sync id carries one check)."""
        ram = RAM_NAMES[ram]
        mem = self.machine.memory(ram)
        check = _Check(ram, addr, size, mem.crc32(addr, size), mem.last_layer_write(addr, size))
        free = [n for n in self._notifies[self._task_start:]
                if n.sync not in self._checks and n.layer_writes[ram] >= check.final_write]
        if free:
            self._checks[free[0].sync] = check
            return
        # more regions hold their final bytes only after the task's last interrupts than
        # there are such interrupts (NVIDIA's compiler reuses the input's memory, say): the
        # region is checked on the last of them beside that one's check (NVIDIA's RTL bench
        # wants one check per sync id; the C-model's and ours take several)
        last = [n for n in self._notifies[self._task_start:]
                if n.layer_writes[ram] >= check.final_write]
        if not last:
            raise SimError(f"trace recording: {ram} {addr:#x}+{size:#x} changed, but the task "
                           f"raised no interrupt after its last write to it")
        self._extra_checks.setdefault(last[-1].sync, []).append(check)

    def trace(self) -> list[Op]:
        """The trace's ops: each intr_notify followed by its one check."""
        after = {n.line: n.sync for n in self._notifies}
        out: list[Op] = []
        for i, op in enumerate(self.ops):
            out.append(op)
            sync = after.get(i)
            if sync is None:
                continue
            check = self._checks.get(sync)
            if check is None:
                out.append(CheckNothing(f"sync_id_{sync}"))
                continue
            for c in (check, *self._extra_checks.get(sync, ())):
                out.append(CheckCrc(f"sync_id_{sync}", c.ram, c.addr, c.size, c.crc))
        return out

    def text(self) -> str:
        """The trace as ``.cfg`` text."""
        return cfg.format(self.trace())

    def _render(self, name: str, data: bytes | np.ndarray,
                live: np.ndarray | None) -> bytes | Path:
        """The file's content, or (streaming) the hidden file it was written to a chunk of
        text at a time as it was rendered: never whole in memory."""
        sparse = live is not None
        if self.memory_format == "bin":
            if self._stream:
                return write_hidden(self.path.parent / name, data, memoryview(data).nbytes)
            return data
        if self._stream:
            size, chunks = record_dat_text(data, RECORD_BYTES, sparse, live=live)
            return write_hidden(self.path.parent / name, chunks, size)
        return record_dat_bytes(data, RECORD_BYTES, sparse)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the trace and its memory files (each file whole or not at all) to
        ``path``, by default the one the recorder was made with."""
        path = Path(path) if path is not None else self.path
        if self._stream and path.parent.resolve() != self.path.parent.resolve():
            raise ValueError(f"{path}: the memory files are written beside {self.path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        pending = self._unpublished
        try:
            for name, rendering in list(pending.items()):
                made = rendering.result()
                if isinstance(made, Path):
                    publish(made, path.parent / name)
                else:
                    write_atomically(path.parent / name, made)
                del pending[name]
        finally:  # a failure: no hidden file stays behind
            _discard_unpublished(pending)
        write_atomically(path, self.text())
        return path
