"""The recorder's memory files are made on one thread kept for the process (sim.trace.record):
files in the order they were loaded, a failure raised where the file is waited for."""

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


def test_a_forked_child_starts_its_own_thread():
    """After a fork the child has no render thread: forget() lets its first file start one."""
    thread = record._RenderThread()
    assert thread.submit(sum, (1, 2)).result(timeout=10) == 3
    thread.forget()  # what os.register_at_fork calls in the child
    assert not thread._started
    assert thread.submit(sum, (3, 4)).result(timeout=10) == 7
    assert thread._started
