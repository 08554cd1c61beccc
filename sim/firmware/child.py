"""The firmware's own process: loads the KMD library and relays its OS calls to the simulator.

Run by :class:`sim.firmware.driver.Firmware` as ``python -I -S child.py LIBRARY
FD_IN FD_OUT`` with two pipes; it imports nothing of the simulator, so a
firmware that crashes, exits or spins takes down only this process, and the
simulator reports it.  Protocol (frames: a kind byte, the payload's length as
a little-endian u32, the payload):

- simulator -> firmware: ``C`` a call (entry point and its arguments),
  ``R`` the answer to a request the firmware is waiting on;
- firmware -> simulator: ``W`` register write, ``M`` memory write, ``L`` log
  line (buffered, in order), ``r`` register read, ``m`` memory read (each
  flushes the buffer and waits for ``R``), ``X`` the call's return values.
"""

import ctypes
import os
import struct
import sys

HEADER = struct.Struct("<cI")
REG_READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32)
REG_WRITE = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32)
MEM = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32,
                       ctypes.c_int32)
LOG = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_char_p)
FLUSH_AT = 1 << 16  # bytes of buffered frames sent at once


class _Task(ctypes.Structure):
    """Task data for port.c: the address list as memory bases and offsets."""

    _fields_ = [("num_addresses", ctypes.c_uint32),
                ("base", ctypes.POINTER(ctypes.c_uint64)),
                ("offset", ctypes.POINTER(ctypes.c_uint64))]


class _Config(ctypes.Structure):
    """The firmware's configuration record (atom size and the optional units)."""

    _fields_ = [("atom_size", ctypes.c_uint32), ("bdma_enable", ctypes.c_bool),
                ("rubik_enable", ctypes.c_bool), ("weight_compress_support", ctypes.c_bool)]


class Relay:
    def __init__(self, fd_in: int, fd_out: int):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.pending = bytearray()

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        self.pending += HEADER.pack(kind, len(payload)) + payload
        if len(self.pending) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        view = memoryview(bytes(self.pending))
        self.pending.clear()
        while view:
            view = view[os.write(self.fd_out, view):]

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = os.read(self.fd_in, n - len(out))
            if not chunk:
                sys.exit(0)  # the simulator went away
            out += chunk
        return bytes(out)

    def receive(self) -> tuple[bytes, bytes]:
        kind, size = HEADER.unpack(self._read(HEADER.size))
        return kind, self._read(size)

    def ask(self, kind: bytes, payload: bytes) -> bytes:
        self.send(kind, payload)
        self.flush()
        answer, data = self.receive()
        if answer != b"R":
            sys.exit(f"firmware process: expected an answer, got {answer!r}")
        return data


def main() -> None:
    library, fd_in, fd_out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    relay = Relay(fd_in, fd_out)
    lib = ctypes.CDLL(library)

    def reg_read(addr):
        return struct.unpack("<I", relay.ask(b"r", struct.pack("<I", addr)))[0]

    def reg_write(addr, value):
        relay.send(b"W", struct.pack("<II", addr, value))

    def mem(addr, buf, size, write):
        if write:
            relay.send(b"M", struct.pack("<Q", addr) + ctypes.string_at(buf, size))
            return 0
        data = relay.ask(b"m", struct.pack("<QI", addr, size))
        (status,) = struct.unpack_from("<i", data)
        if status == 0:
            ctypes.memmove(buf, data[4:], size)
        return status

    def log(level, text):
        relay.send(b"L", struct.pack("<i", level) + (text or b""))

    callbacks = (REG_READ(reg_read), REG_WRITE(reg_write), MEM(mem), LOG(log))
    lib.nvdla_sim_set_callbacks.restype = None
    lib.nvdla_sim_set_callbacks(*callbacks)
    lib.dla_register_driver.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.dla_execute_task.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.dla_isr_handler.argtypes = [ctypes.c_void_p]
    lib.dla_process_events.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
    lib.dla_clear_task.argtypes = [ctypes.c_void_p]
    lib.dla_clear_task.restype = None
    engine = ctypes.c_void_p()
    keep = []  # the running task's structures stay alive until the next one
    while True:
        kind, payload = relay.receive()
        if kind != b"C":
            sys.exit(f"firmware process: expected a call, got {kind!r}")
        name, _, args = payload.partition(b"\0")
        complete = ctypes.c_uint32(0)
        if name == b"dla_register_driver":
            ret = lib.dla_register_driver(ctypes.byref(engine), None)
        elif name == b"dla_execute_task":
            n, atom, bdma, rubik, wc = struct.unpack_from("<IIBBB", args)
            pairs = struct.unpack_from(f"<{2 * n}Q", args, 11)
            bases = (ctypes.c_uint64 * max(n, 1))(*pairs[0::2])
            offsets = (ctypes.c_uint64 * max(n, 1))(*pairs[1::2])
            keep = [bases, offsets, _Task(n, bases, offsets), _Config(atom, bdma, rubik, wc)]
            ret = lib.dla_execute_task(engine, ctypes.byref(keep[2]), ctypes.byref(keep[3]))
        elif name == b"interrupt":  # the driver's handler, then its event work, in one call
            lib.dla_isr_handler(engine)
            ret = lib.dla_process_events(engine, ctypes.byref(complete))
        elif name == b"dla_clear_task":
            lib.dla_clear_task(engine)
            ret = 0
        else:
            sys.exit(f"firmware process: unknown call {name!r}")
        relay.send(b"X", struct.pack("<iI", ret, complete.value))
        relay.flush()


if __name__ == "__main__":
    main()
