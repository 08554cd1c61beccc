"""The firmware bridge serves runs of register-write and cached-read frames in one loop
(sim.firmware.driver Firmware._posted): the same register accesses, trace, learnt reads,
errors and stopping place as frame by frame."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from sim.errors import FirmwareError
from sim.firmware import driver
from sim.firmware.driver import HEADER, PAIR, Firmware

VALUES = {0x10: 1, 0x14: 0xFFFFFFFF, 0x18: 7}  # what the machine's registers read


class Machine:
    """Registers as a dict; every access logged in order."""

    def __init__(self):
        self.log, self.values = [], dict(VALUES)
        self.regfile = SimpleNamespace(register_at=lambda addr: SimpleNamespace(unit="U",
                                                                                name="R"))
        self.engines = []

    def write_reg(self, addr, value):
        if addr == 0xBAD:
            raise FirmwareError("no such register")
        self.log.append(("write", addr, value))
        self.values[addr] = value

    def read_reg(self, addr):
        self.log.append(("read", addr))
        return self.values.get(addr, 0)


class Recorder:
    def __init__(self):
        self.log = []

    def reg_write(self, addr, value):
        self.log.append(("W", addr, value))

    def reg_read(self, addr, value):
        self.log.append(("R", addr, value))


def _frame(kind: bytes, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def _write(addr, value):
    return _frame(b"W", PAIR.pack(addr, value))


def _cached(addr, value):
    return _frame(b"c", PAIR.pack(addr, value))


def _serve(buf: bytes, fast: bool, monkeypatch, recorded: bool = True):
    fw = Firmware.__new__(Firmware)
    fw._unread_log, fw._log_lines, fw.error_lines = [], [], []
    fw._error, fw.serve_seconds = None, 0.0
    fw.recorder = Recorder() if recorded else None
    fw._pure, fw._follow, fw._valid = {}, {}, ["interrupt"]
    fw.kmd_dir, fw.machine = "kmd", Machine()
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(driver, "POSTED_KINDS", b"")  # never matches: frame by frame
        pos, kind, reply = fw._serve(bytearray(buf), 0)
    return (pos, kind, reply, fw.machine.log, fw.recorder and fw.recorder.log, fw._follow,
            None if fw._error is None else str(fw._error))


RUN = [_write(0x10, 5), _cached(0x10, 5), _cached(0x14, 0xFFFFFFFF), _write(0x18, 2),
       _cached(0x18, 2), _write(0x1C, 3)]
RETURN = _frame(b"X", struct.pack("<iI", 0, 1))


@pytest.mark.parametrize("stream, error", [
    (RUN + [RETURN], None),
    (RUN + [_frame(b"L", struct.pack("<i", 0) + b"line"), *RUN, RETURN], None),
    # a stale snapshot, a failed write: an error, and what follows is not served
    (RUN + [_cached(0x10, 9), *RUN, RETURN], "register 0x10 read 0x9 from a stale snapshot"),
    (RUN + [_write(0xBAD, 1), *RUN, RETURN], "no such register"),
    (RUN + [_frame(b"W", PAIR.pack(0x10, 1) + b"\0"), *RUN, RETURN], None),  # odd, but served
    (RUN + [_write(0x20, 1)[:-3]], None),  # the last frame still on its way
], ids=["run", "log between", "stale", "failed write", "odd size", "partial"])
def test_posted_runs_serve_what_frame_by_frame_serves(stream, error, monkeypatch):
    buf = b"".join(stream)
    fast, slow = _serve(buf, True, monkeypatch), _serve(buf, False, monkeypatch)
    assert fast == slow
    # with no recorder (writes go straight to the machine): the same, the trace aside
    unrecorded = _serve(buf, True, monkeypatch, recorded=False)
    assert unrecorded[4] is None and unrecorded[:4] + unrecorded[5:] == fast[:4] + fast[5:]
    pos, kind, _, accesses, trace, follow, raised = fast
    assert ("write", 0x1C, 3) in accesses and ("R", 0x14, 0xFFFFFFFF) in trace
    assert follow == {"interrupt": {0x10: None, 0x14: None, 0x18: None}}
    assert accesses.count(("write", 0x1C, 3)) == (1 if error or len(stream) < 8 else 2)
    if stream[-1] is RETURN:
        assert (pos, kind) == (len(buf), b"X")
    else:
        assert (pos, kind) == (len(buf) - len(stream[-1]), None)
    assert raised is None if error is None else error in raised


def test_a_run_longer_than_one_look_is_served_whole(monkeypatch):
    runs = len(RUN) * 100 // driver.POSTED_RUN + 1  # several looks
    buf = b"".join(RUN * 100 + [RETURN])
    fast, slow = _serve(buf, True, monkeypatch), _serve(buf, False, monkeypatch)
    assert fast == slow and runs > 1
    pos, kind, _, accesses, _, _, raised = fast
    assert (pos, kind, raised) == (len(buf), b"X", None)
    assert accesses.count(("write", 0x1C, 3)) == 100
