"""The recorder's memory files are made on one thread kept for the process (sim.trace.record):
files in the order they were loaded, a failure raised where the file is waited for."""

import gc
import os
import subprocess
import sys
import threading

import pytest

from sim.errors import SimError
from sim.machine import Machine
from sim.trace import record
from sim.trace.record import TraceRecorder

DATA = bytes(range(1, 256)) * 4  # no zero record


def _render_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "record-dat"]


def _recorded(path, loads: int) -> TraceRecorder:
    recorder = TraceRecorder(Machine("nv_small"), path)
    recorder.begin_task("task 0")
    for i in range(loads):
        recorder.load_memory("pri_mem", 0x1000 * (i + 1), DATA[i:])
    return recorder


def test_recordings_share_one_thread_and_files_keep_their_order(tmp_path, monkeypatch):
    order = []
    real = TraceRecorder._render

    def render(self, name, data, live):
        order.append(name)
        return real(self, name, data, live)

    monkeypatch.setattr(TraceRecorder, "_render", render)
    for run in range(2):
        recorder = _recorded(tmp_path / f"t{run}" / "t.cfg", 5)
        recorder.save()
        assert order[-5:] == list(recorder.files)
        for i, name in enumerate(recorder.files):
            assert (tmp_path / f"t{run}" / name).read_bytes() == record.record_dat_bytes(
                DATA[i:], record.RECORD_BYTES)
    assert len(_render_threads()) == 1


def test_a_failed_file_fails_the_save_and_leaves_no_hidden_file(tmp_path, monkeypatch):
    """The second of three files fails to render: save raises its error, no hidden file
    is left (the one before it is in place whole, the one after it removed, the trace not
    written), and the thread goes on making the next recording's."""
    real = TraceRecorder._render

    def render(self, name, data, live):
        if name.startswith("mem_001"):
            raise SimError(f"{name}: cannot write (disk full)")
        return real(self, name, data, live)

    monkeypatch.setattr(TraceRecorder, "_render", render)
    recorder = _recorded(tmp_path / "t.cfg", 3)
    with pytest.raises(SimError, match="mem_001.*disk full"):
        recorder.save()
    assert [p.name for p in tmp_path.iterdir()] == ["mem_000_1000.dat"]
    monkeypatch.undo()
    _recorded(tmp_path / "t.cfg", 3).save()
    assert sorted(p.name for p in tmp_path.iterdir())[-1] == "t.cfg"
    assert len(list(tmp_path.glob("mem_*.dat"))) == 3 and not list(tmp_path.glob(".*"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_starts_its_own_thread():
    """A forked child has none of its parent's threads: its first file starts its own
    render thread (os.register_at_fork), and the parent's goes on."""
    assert record._RENDERER.submit(sum, (1, 2)).result(timeout=10) == 3  # the parent's
    child = os.fork()
    if child == 0:  # the child: exit status 0 only if its own thread rendered
        try:
            ok = record._RENDERER.submit(sum, (3, 4)).result(timeout=10) == 7 \
                and len(_render_threads()) == 1
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert record._RENDERER.submit(sum, (5, 6)).result(timeout=10) == 11


def test_a_recorder_dropped_without_save_leaves_no_hidden_file(tmp_path):
    recorder = _recorded(tmp_path / "t.cfg", 3)
    del recorder
    # the render thread's jobs hold the recorder until each is done: once a job queued
    # after them has run, only a reference cycle can keep it
    assert record._RENDERER.submit(sum, (1, 2)).result(timeout=10) == 3
    gc.collect()
    assert list(tmp_path.iterdir()) == []


#: A script that records a large memory and exits without saving, its file begun (or done)
#: by the render thread, a daemon: Python stops such a thread where it is as it exits.
EXIT_EARLY = """
import sys
import time
import numpy as np
from sim.machine import Machine
from sim.trace.record import TraceRecorder
recorder = TraceRecorder(Machine("nv_small"), sys.argv[1])
recorder.begin_task("task 0")
data = np.random.default_rng(0).integers(1, 256, 8 << 20, dtype=np.uint8)
data.flags.writeable = False
recorder.load_memory("pri_mem", 0x1000, data)
time.sleep(0.2)
raise SystemExit(3)
"""


def test_a_recorder_left_at_exit_leaves_no_hidden_file(tmp_path):
    done = subprocess.run([sys.executable, "-c", EXIT_EARLY, str(tmp_path / "t.cfg")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert list(tmp_path.iterdir()) == []
