"""The firmware bridge keeps runs of log-line frames in one loop (sim.firmware.driver
Firmware._logs): every line in order, errors and listened-to levels as frame by frame."""

from __future__ import annotations

import logging
import struct
from types import SimpleNamespace

import pytest

from sim.firmware import driver
from sim.firmware.driver import HEADER, Firmware

LINES = [(0, b"Enter:dla_handle_events\n"), (1, b"info line\n"), (3, b"bad thing\n"),
         (2, b"a warning\n"), (-1, b"odd level\n"), (7, b"past error\n"), (0, b"")]


def _frames(lines) -> bytearray:
    out = bytearray()
    for level, text in lines:
        payload = struct.pack("<i", level) + text
        out += HEADER.pack(b"L", len(payload)) + payload
    return out


def _bridge() -> Firmware:
    """A Firmware object without a process: what _serve needs to take log lines."""
    fw = Firmware.__new__(Firmware)
    fw._unread_log, fw._log_lines, fw.error_lines = [], [], []
    fw._error, fw.serve_seconds, fw.recorder = None, 0.0, None
    fw.machine = SimpleNamespace(write_reg=None)  # no register write comes
    return fw


def _serve(buf, fast: bool, monkeypatch):
    fw = _bridge()
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(driver, "LOG_KIND", -1)  # never matches: frame by frame
        pos, kind, _ = fw._serve(buf, 0)
    return fw, pos, kind


@pytest.mark.parametrize("level", [None, logging.DEBUG, logging.WARNING])
def test_log_runs_keep_what_frame_by_frame_keeps(level, caplog, monkeypatch):
    buf = _frames(LINES)
    partial = buf + _frames([(0, b"cut short\n")])[:-3]  # the last frame still on its way
    results = []
    for fast in (True, False):
        with caplog.at_level(level or logging.CRITICAL, logger="sim.firmware"):
            caplog.clear()
            fw, pos, kind = _serve(partial, fast, monkeypatch)
            results.append((fw.log_lines, fw.error_lines, pos, kind,
                            [r.getMessage() for r in caplog.records]))
    assert results[0] == results[1]
    lines, errors, pos, kind, logged = results[0]
    assert lines == [text.decode().rstrip("\n") for _, text in LINES]
    assert errors == ["bad thing", "past error"]
    assert pos == len(buf) and kind is None
    if level == logging.DEBUG:
        assert len(logged) == len(LINES)


def _batched(lines) -> bytearray:
    """host.c's frames: runs of debug and info lines in one 'G' frame, others alone."""
    out, run = bytearray(), []
    for level, text in [*lines, (None, b"")]:
        if level in driver.BATCHED_LEVELS:
            run.append((level, text))
            continue
        if run:
            inner = _frames(run)
            out += HEADER.pack(b"G", len(inner)) + inner
            run = []
        if level is not None:
            out += _frames([(level, text)])
    return out


@pytest.mark.parametrize("level", [None, logging.DEBUG, logging.INFO, logging.WARNING])
def test_log_batches_keep_what_single_lines_keep(level, caplog, monkeypatch):
    """'G' frames (kept whole while no logger listens to debug and info) give the lines,
    errors and log records of the same lines frame by frame; a batch still on its way is
    left for the next read."""
    lines = [*LINES, (1, b"info after\n"), (0, b"debug after\n")]
    results = []
    for buf in (_frames(lines), _batched(lines)):
        partial = buf + _batched([(0, b"cut"), (1, b"short")])[:-2]
        with caplog.at_level(level or logging.CRITICAL, logger="sim.firmware"):
            caplog.clear()
            fw, pos, kind = _serve(partial, True, monkeypatch)
            results.append((fw.log_lines, fw.error_lines, pos == len(buf), kind,
                            [r.getMessage() for r in caplog.records]))
    assert results[0] == results[1]
    assert results[0][0] == [text.decode().rstrip("\n") for _, text in lines]
    assert results[0][2] and results[0][3] is None
