"""Files the simulator writes appear whole or not at all (sim.files)."""

import os
import stat
from pathlib import Path

import pytest

from sim.errors import SimError
from sim.files import write_atomically, write_folder_atomically


def test_folder_is_replaced_whole(tmp_path):
    folder = tmp_path / "nv_full" / "t"
    write_folder_atomically(folder, {"input.txn": "wait\n", "a.dat": b"\x01"})
    write_folder_atomically(folder, {"input.txn": "wait\nwait\n"})
    assert sorted(p.name for p in folder.iterdir()) == ["input.txn"]
    assert (folder / "input.txn").read_text() == "wait\nwait\n"
    assert [p.name for p in folder.parent.iterdir()] == ["t"]  # no temporary left


def _keeps_the_previous_folder(tmp_path, folder):
    assert (folder / "input.txn").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temporary left
    assert not (tmp_path.parent / "escape.dat").exists()


@pytest.mark.parametrize("files, error, message", [
    ({"input.txn": "new\n", "../escape.dat": "x"}, SimError,
     r"/t: '\.\./escape\.dat' is not a plain file name"),
    ({"": "x"}, SimError, r"/t: '' is not a plain file name"),
    ({"input.txn": "new\n", "b.dat": 42}, TypeError,
     r"/t: the content of b\.dat is int, not str or bytes"),
])
def test_a_refused_folder_keeps_the_previous_one(tmp_path, files, error, message):
    folder = tmp_path / "t"
    write_folder_atomically(folder, {"input.txn": "old\n"})
    with pytest.raises(error, match=message) as caught:
        write_folder_atomically(folder, files)
    assert type(caught.value) is error
    _keeps_the_previous_folder(tmp_path, folder)


def test_a_write_failing_after_the_first_file_keeps_the_previous_folder(tmp_path, monkeypatch):
    folder = tmp_path / "t"
    write_folder_atomically(folder, {"input.txn": "old\n"})
    written = []
    real_write = Path.write_bytes

    def write_bytes(path, data):
        if written:
            raise OSError(28, "No space left on device")
        written.append(path.name)
        return real_write(path, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_folder_atomically(folder, {"input.txn": "new\n", "b.dat": b"\x01"})
    assert type(caught.value) is OSError and written == ["input.txn"]
    monkeypatch.undo()
    _keeps_the_previous_folder(tmp_path, folder)


def test_file_is_replaced_whole(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_atomically(path, "{}\n")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr("sim.files.os.replace", fail)
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


def test_a_file_of_parts_is_their_concatenation(tmp_path):
    """A rendered memory file is written as a list of buffers, never joined in memory, or
    from an iterator of them, each written before the next is made (the renderer's
    chunks share one buffer), never whole in memory."""
    import numpy as np

    from sim.memfiles import format_record_dat, record_dat_chunks, record_dat_parts

    data = bytes(range(256)) * 70  # offsets gain hex digits mid-file
    write_atomically(tmp_path / "m.dat", record_dat_parts(data, 32))
    assert (tmp_path / "m.dat").read_text() == format_record_dat(data, 32)
    chunks = record_dat_chunks(data, 32, lines=5)
    write_atomically(tmp_path / "c.dat", chunks)
    assert next(chunks, None) is None  # all of them written
    assert (tmp_path / "c.dat").read_text() == format_record_dat(data, 32)
    write_atomically(tmp_path / "s.bin", [b"ab", np.frombuffer(b"cd", np.uint8), b""])
    assert (tmp_path / "s.bin").read_bytes() == b"abcd"


def test_a_hidden_file_appears_only_when_published(tmp_path):
    """write_hidden writes now under a hidden name; publish puts it in place whole."""
    from sim.files import publish, write_hidden

    path = tmp_path / "m.dat"
    path.write_text("the previous file\n")
    hidden = write_hidden(path, [b"new ", b"text\n"])
    assert hidden.parent == tmp_path and hidden.name.startswith(".m.dat.")
    assert path.read_text() == "the previous file\n"
    publish(hidden, path)
    assert path.read_text() == "new text\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.dat"]


def test_a_failed_publish_leaves_neither_file_nor_hidden_one(tmp_path, monkeypatch):
    from sim.files import publish, write_hidden

    hidden = write_hidden(tmp_path / "m.dat", "text")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr("sim.files.os.replace", fail)
    with pytest.raises(SimError, match="m.dat: cannot write \\(disk full\\)"):
        publish(hidden, tmp_path / "m.dat")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("told", ["exact", "more", "less", "none"])
def test_a_file_of_known_size_is_its_parts_whatever_size_it_was_told(tmp_path, monkeypatch,
                                                                      told):
    """A size given reserves the file's blocks first (a file large enough: the limit
    lowered here); the file is its parts all the same, a size larger than what was
    written cut back, a smaller one outgrown."""
    from sim import files

    monkeypatch.setattr(files, "RESERVED_SIZE", 4)
    reserved = []
    real = files._reserve
    monkeypatch.setattr(files, "_reserve", lambda fd, size: reserved.append(size) or real(
        fd, size))
    parts = [b"0123456789", b"abcdef", b"x" * 1000]
    whole = b"".join(parts)
    size = {"exact": len(whole), "more": len(whole) + 4096, "less": 12, "none": None}[told]
    hidden = files.write_hidden(tmp_path / "m.dat", iter(parts), size)
    assert hidden.read_bytes() == whole
    assert reserved == ([] if size is None else [size])


@pytest.mark.parametrize("refusal", ["no call", "refused"])
def test_a_reservation_refused_writes_as_usual(tmp_path, monkeypatch, refusal):
    """A system without fallocate, or a file system (or full disk) refusing it: the file is
    written as usual, whole."""
    from sim import files

    calls = []

    def refuse(fd, mode, offset, size):
        calls.append(size)
        return -1

    monkeypatch.setattr(files, "_fallocate", lambda: None if refusal == "no call" else refuse)
    parts = [b"a" * (2 << 20), b"b"]
    hidden = files.write_hidden(tmp_path / "m.dat", iter(parts), (2 << 20) + 7)
    assert hidden.read_bytes() == b"".join(parts)
    assert calls == ([] if refusal == "no call" else [(2 << 20) + 7])


def test_a_reserved_file_has_its_blocks_before_it_is_written(tmp_path):
    """Where the file system reserves blocks (here, if it does): the hidden file has its
    size and blocks before its first part is written."""
    import os

    from sim import files

    seen = []

    def parts():
        stat = os.stat(next(tmp_path.glob(".m.dat.*")))
        seen.append((stat.st_size, stat.st_blocks * 512))
        yield b"x" * (3 << 20)

    hidden = files.write_hidden(tmp_path / "m.dat", parts(), 3 << 20)
    assert hidden.read_bytes() == b"x" * (3 << 20)
    fd = os.open(tmp_path / "probe", os.O_CREAT | os.O_WRONLY)
    try:
        reserves = files._reserve(fd, 1 << 20)
    finally:
        os.close(fd)
    if not reserves:
        pytest.skip("this file system does not reserve blocks")
    assert seen[0][0] == 3 << 20 and seen[0][1] >= 3 << 20
