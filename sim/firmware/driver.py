"""Drive NVIDIA's KMD firmware (a compiled shared library) on a simulated NVDLA.

The firmware programs registers and reads its task's descriptors through the
callbacks of our port layer, which land here: register reads and writes go to
the :class:`~sim.machine.Machine`, descriptor reads and writes to its system
memory.  :meth:`Firmware.run_task` does what NVIDIA's Linux driver does for
one submitted task: ``dla_execute_task``, then, each time the interrupt line
rises, ``dla_isr_handler`` and ``dla_process_events`` until the firmware
reports the task complete, then ``dla_clear_task``.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import SimError
from .build import build_firmware

log = logging.getLogger("sim.firmware")
log.addHandler(logging.NullHandler())  # quiet unless the user configures logging
LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
MAX_INTERRUPTS = 1_000_000  # a task that needs more is treated as stuck

REG_READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)
REG_WRITE = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32)
MEM = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32,
                       ctypes.c_int32)
LOG = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_char_p)


class FirmwareError(SimError):
    """The firmware cannot run: it does not build, or the run cannot progress."""


class FirmwareTaskFailed(SimError):
    """The firmware reported that a task failed (exit status 1)."""

    exit_code = 1


class _Task(ctypes.Structure):
    """Our task data (see port.c): the address list as memory bases and offsets."""

    _fields_ = [("num_addresses", ctypes.c_uint32),
                ("base", ctypes.POINTER(ctypes.c_uint64)),
                ("offset", ctypes.POINTER(ctypes.c_uint64))]


class _Config(ctypes.Structure):
    """The firmware's ``struct dla_config``."""

    _fields_ = [("atom_size", ctypes.c_uint32), ("bdma_enable", ctypes.c_bool),
                ("rubik_enable", ctypes.c_bool), ("weight_compress_support", ctypes.c_bool)]


@dataclass
class TaskStats:
    hw_layers: int
    interrupts: int
    seconds: float


_LIBRARIES: dict[Path, ctypes.CDLL] = {}


def _load(path: Path) -> ctypes.CDLL:
    lib = _LIBRARIES.get(path)
    if lib is None:
        lib = ctypes.CDLL(str(path))
        lib.dla_register_driver.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        lib.dla_execute_task.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        lib.dla_isr_handler.argtypes = [ctypes.c_void_p]
        lib.dla_process_events.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
        lib.dla_clear_task.argtypes = [ctypes.c_void_p]
        lib.dla_clear_task.restype = None
        lib.nvdla_sim_set_callbacks.restype = None
        _LIBRARIES[path] = lib
    return lib


class Firmware:
    """NVIDIA's KMD firmware from ``kmd_dir``, driving ``machine``.

    ``recorder`` (a :class:`sim.trace.record.TraceRecorder`) sees every CSB
    access and interrupt wait, to write a replayable trace of the run.  The
    firmware keeps its state in globals, so one Firmware drives the library at
    a time (a new one re-registers the callbacks).
    """

    def __init__(self, machine, kmd_dir: str | Path, recorder=None):
        self.machine = machine
        self.recorder = recorder
        self.lib = _load(build_firmware(kmd_dir, machine.config.address_map))
        self._error: BaseException | None = None
        self._callbacks = (REG_READ(self._reg_read), REG_WRITE(self._reg_write),
                           MEM(self._mem), LOG(self._log))  # kept alive with the object
        self.lib.nvdla_sim_set_callbacks(*self._callbacks)
        cfg = machine.config
        self._config = _Config(cfg.atom_bytes, cfg.bdma, cfg.rubik, cfg.weight_compression)
        self._engine = ctypes.c_void_p()
        self.log_lines: list[str] = []
        self.error_lines: list[str] = []  # what the firmware reported with dla_error
        self.cpu_writes: list[tuple[int, int]] = []  # (address, size) the firmware wrote
        self._call("dla_register_driver", ctypes.byref(self._engine), None)
        self.lib.dla_clear_task(self._engine)

    # -- callbacks (C -> Python): never raise into C ---------------------------
    def _guard(self, fn, default):
        if self._error is not None:
            return default
        try:
            return fn()
        except BaseException as exc:  # re-raised once the C call returns
            self._error = exc
            return default

    def _reg_read(self, addr: int) -> int:
        def read():
            value = self.machine.read_reg(addr) & 0xFFFFFFFF
            if self.recorder is not None:
                self.recorder.reg_read(addr, value)
            return value

        return self._guard(read, 0)

    def _reg_write(self, addr: int, value: int) -> None:
        def write():
            if self.recorder is not None:
                self.recorder.reg_write(addr, value)
            self.machine.write_reg(addr, value)

        self._guard(write, None)

    def _mem(self, addr: int, buf: int, size: int, write: int) -> int:
        def access():
            mem = self.machine.pri_mem
            if write:
                self.cpu_writes.append((addr, size))
                mem.write(addr, ctypes.string_at(buf, size), "firmware data write")
            else:
                ctypes.memmove(buf, mem.read(addr, size), size)
            return 0

        return self._guard(access, -14)  # -EFAULT

    def _log(self, level: int, text: bytes) -> None:
        line = text.decode("utf-8", "replace").rstrip("\n")
        self.log_lines.append(line)
        if level >= 3 and line.strip():
            self.error_lines.append(line.strip())
        log.log(LOG_LEVELS[min(max(level, 0), 3)], "%s", line)

    def _call(self, name: str, *args) -> int:
        ret = getattr(self.lib, name)(*args)
        if self._error is not None:
            error, self._error = self._error, None
            self.lib.dla_clear_task(self._engine)
            raise error
        return ret

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
        n = len(addresses)
        pairs = [a if isinstance(a, tuple) else (int(a), 0) for a in addresses]
        bases = (ctypes.c_uint64 * max(n, 1))(*(b for b, _ in pairs))
        offsets = (ctypes.c_uint64 * max(n, 1))(*(o for _, o in pairs))
        task = _Task(n, bases, offsets)
        ret = self._call("dla_execute_task", self._engine, ctypes.byref(task),
                         ctypes.byref(self._config))
        if ret:
            self.lib.dla_clear_task(self._engine)
            raise FirmwareTaskFailed(f"firmware: dla_execute_task failed ({ret}){self._last_log()}")
        interrupts = 0
        complete = ctypes.c_uint32(0)
        while not complete.value:
            self._wait_for_interrupt()
            interrupts += 1
            if interrupts > MAX_INTERRUPTS:
                self.lib.dla_clear_task(self._engine)
                raise FirmwareError(f"firmware: task still running after {MAX_INTERRUPTS} "
                                    f"interrupts")
            if self.recorder is not None:
                self.recorder.interrupt(self.machine)
            self._call("dla_isr_handler", self._engine)
            ret = self._call("dla_process_events", self._engine, ctypes.byref(complete))
            if ret:
                self.lib.dla_clear_task(self._engine)
                raise FirmwareTaskFailed(f"firmware: task failed ({ret}){self._last_log()}")
        self.lib.dla_clear_task(self._engine)
        return TaskStats(self.machine.layers_run - layers0, interrupts,
                         time.perf_counter() - start)

    def _wait_for_interrupt(self) -> None:
        machine = self.machine
        while not machine.interrupt_pending():
            if not machine.step():
                self.lib.dla_clear_task(self._engine)
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
