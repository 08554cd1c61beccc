"""Files the simulator writes appear whole or not at all (sim.dram's two helpers)."""

import os
import stat

import pytest

from sim.dram import write_atomically, write_folder_atomically
from sim.errors import SimError


def test_folder_is_replaced_whole(tmp_path):
    folder = tmp_path / "nv_full" / "t"
    write_folder_atomically(folder, {"input.txn": "wait\n", "a.dat": b"\x01"})
    write_folder_atomically(folder, {"input.txn": "wait\nwait\n"})
    assert sorted(p.name for p in folder.iterdir()) == ["input.txn"]
    assert (folder / "input.txn").read_text() == "wait\nwait\n"
    assert [p.name for p in folder.parent.iterdir()] == ["t"]  # no temporary left


@pytest.mark.parametrize("files", [
    {"input.txn": "new\n", "b.dat": 42},  # fails after the first file is written
    {"input.txn": "new\n", "../escape.dat": "x"},
    {"": "x"},
])
def test_failed_write_keeps_the_previous_folder(tmp_path, files):
    folder = tmp_path / "t"
    write_folder_atomically(folder, {"input.txn": "old\n"})
    with pytest.raises((SimError, TypeError, AttributeError)):
        write_folder_atomically(folder, files)
    assert (folder / "input.txn").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t"]
    assert not (tmp_path.parent / "escape.dat").exists()


def test_file_is_replaced_whole(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_atomically(path, "{}\n")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr("sim.dram.os.replace", fail)
    with pytest.raises(SimError, match="r.json: cannot write \\(disk full\\)"):
        write_atomically(path, '{"partial": ')
    assert path.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_have_the_modes_the_umask_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_atomically(tmp_path / "f.json", "{}")
        write_folder_atomically(tmp_path / "out", {"a.dimg": b"x"})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((tmp_path / "out" / "a.dimg").stat().st_mode) == 0o666 & ~umask


def test_an_unwritable_place_is_named_as_given(tmp_path):
    with pytest.raises(SimError, match=r"^/nonexistent/x\.json: cannot write \(No such file"):
        write_atomically("/nonexistent/x.json", "{}")
