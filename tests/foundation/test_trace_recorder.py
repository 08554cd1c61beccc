"""The trace recorder writes its memory files while the network runs, but they appear
(and the trace) only when it saves; a failed save leaves nothing half-written."""

import numpy as np
import pytest

from sim.dma.feature import pack_feature
from sim.errors import SimError
from sim.machine import Machine
from sim.memfiles import format_record_dat
from sim.program.sdp import start_sdp_add
from sim.trace import cfg
from sim.trace.record import TraceRecorder

DATA = bytes(range(256)) * 8  # no zero records: one file holding every record


def _recorder(path):
    recorder = TraceRecorder(Machine("nv_small"), path)
    recorder.begin_task("task 0")
    recorder.load_memory("pri_mem", 0x1000, DATA)
    recorder.load_memory("pri_mem", 0x8000, DATA[::-1])
    return recorder


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("folder_exists", [True, False])
def test_memory_files_appear_whole_at_save(tmp_path, folder_exists):
    folder = tmp_path / "trace" if not folder_exists else tmp_path
    recorder = _recorder(folder / "t.cfg")
    for rendering in recorder.files.values():
        rendering.result()  # rendered and written hidden (a new folder made for them)
    hidden = _names(folder)
    assert len(hidden) == 2 and all(name.startswith(".mem_") for name in hidden)
    recorder.save()
    files = [name for name in _names(folder) if name.endswith(".dat")]
    assert _names(folder) == sorted([*files, "t.cfg"])
    assert [(folder / name).read_text() for name in files] == [
        format_record_dat(DATA, 32), format_record_dat(DATA[::-1], 32)]
    assert all(f'mem_load(pri_mem, {addr}, "{name}");' in (folder / "t.cfg").read_text()
               for addr, name in zip(("0x1000", "0x8000"), files, strict=True))


def test_a_failed_save_leaves_no_hidden_file(tmp_path, monkeypatch):
    recorder = _recorder(tmp_path / "t.cfg")

    def fail(hidden, path):
        raise SimError(f"{path}: cannot write (disk full)")

    monkeypatch.setattr("sim.trace.record.publish", fail)
    with pytest.raises(SimError, match="disk full"):
        recorder.save()
    assert _names(tmp_path) == [name for name in _names(tmp_path) if not name.startswith(".")]


def test_binary_memory_files_hold_the_bytes(tmp_path):
    """memory_format "bin": each memory is one raw file, read back by the player's reader."""
    from sim.memfiles import read_record_file

    recorder = TraceRecorder(Machine("nv_small"), tmp_path / "t.cfg", "bin")
    recorder.load_memory("pri_mem", 0x1000, bytes(64) + DATA)  # zeros too: no mem_init
    recorder.save()
    (name,) = [n for n in _names(tmp_path) if n != "t.cfg"]
    assert name.endswith(".bin") and "mem_init" not in (tmp_path / "t.cfg").read_text()
    loaded = read_record_file(tmp_path / name)
    assert loaded.runs == [(0, bytes(64) + DATA)] and loaded.extent == 64 + len(DATA)


def test_an_empty_binary_memory_file_is_an_error(tmp_path):
    from sim.memfiles import read_record_file

    (tmp_path / "m.bin").write_bytes(b"")
    with pytest.raises(SimError, match=r"m\.bin: holds no bytes to load"):
        read_record_file(tmp_path / "m.bin")


def test_a_binary_memory_file_past_the_access_limit_is_refused_unread(tmp_path):
    """A load may not pass the per-access limit: the file's size says so before a byte of
    it is read (a sparse file here, so the test costs no disk)."""
    from sim.limits import DEFAULT_LIMITS
    from sim.memfiles import read_record_file

    path = tmp_path / "m.bin"
    with open(path, "wb") as f:
        f.truncate(DEFAULT_LIMITS.access + 1)
    with pytest.raises(SimError, match=r"m\.bin.*exceed the simulator's limit"):
        read_record_file(path)


def test_loaded_bytes_are_kept_only_when_nobody_can_change_them(tmp_path):
    """load_memory keeps bytes and read-only arrays owning their memory (the runner's
    copies) as they are, and copies anything else (a view of a memory's pages, a
    writeable array), so a file rendered while the run goes on holds the bytes loaded."""
    import numpy as np

    recorder = TraceRecorder(Machine("nv_small"), tmp_path / "t.cfg")
    recorder.begin_task("task 0")
    kept = np.frombuffer(DATA, np.uint8).copy()
    kept.flags.writeable = False
    writeable = np.frombuffer(DATA, np.uint8).copy()
    view = kept[:]
    recorder.load_memory("pri_mem", 0x1000, kept)
    recorder.load_memory("pri_mem", 0x8000, writeable)
    recorder.load_memory("pri_mem", 0x10000, view)
    writeable[:] = 0  # changed after its load: the file holds what was loaded
    recorder.save()
    for name in recorder.files:
        assert (tmp_path / name).read_text() == format_record_dat(DATA, 32)


def test_register_names_looked_up_once_record_what_each_lookup_would():
    """reg_write and reg_read keep each address's name (or that it records nothing): a
    register written or read again records exactly what a fresh lookup gives."""
    from sim.trace.ops import ALL_BITS, PollReg, RegWrite
    from sim.trace.record import STATUS_REGISTER

    machine = Machine("nv_small")
    regfile = machine.regfile
    names = ["NVDLA_CDMA.D_DATAIN_FORMAT_0", STATUS_REGISTER, "NVDLA_CDMA.S_STATUS_0",
             "NVDLA_SDP.D_OP_ENABLE_0"]
    addrs = [regfile.address_of(regfile.register(name)) for name in names]
    recorder = TraceRecorder(machine)
    expected = []
    for value in (0x11, 0x1_0000_0022):  # each address twice: a lookup, then the kept name
        for addr in addrs:
            recorder.reg_write(addr, value)
            recorder.reg_read(addr, value + 1)
            reg = regfile.register_at(addr)
            if reg.full_name != STATUS_REGISTER:
                expected.append(RegWrite(reg.full_name, value & 0xFFFFFFFF))
            if reg.software_owned:
                expected.append(PollReg(reg.full_name, ALL_BITS, (value + 1) & 0xFFFFFFFF))
    recorded = [op for op in recorder.ops if isinstance(op, (RegWrite, PollReg))]
    assert recorded == expected
    assert {type(op) for op in recorded} == {RegWrite, PollReg}  # both kinds were exercised
    with pytest.raises(SimError, match="no register"):
        recorder.reg_write(0x3, 1)  # no register there: an error, every time
    with pytest.raises(SimError, match="no register"):
        recorder.reg_write(0x3, 1)


def test_a_read_only_array_of_wider_elements_is_recorded_by_its_bytes(tmp_path):
    """Only uint8 arrays are kept as they are (their length is their size in bytes): a
    read-only uint16 array owning its memory is recorded by its bytes, all of them (its
    first half zero: taken by its length, the region would look all zero)."""
    import numpy as np

    from sim.trace.ops import MemInit, MemLoad

    data = bytes(len(DATA) // 2) + DATA[: len(DATA) // 2]
    recorder = TraceRecorder(Machine("nv_small"), tmp_path / "t.cfg")
    recorder.begin_task("task 0")
    wide = np.frombuffer(data, np.uint16).copy()
    wide.flags.writeable = False
    recorder.load_memory("pri_mem", 0x1000, wide)
    fills = [op for op in recorder.ops if isinstance(op, MemInit)]
    assert [fill.size for fill in fills] == [len(data)]  # zeroed first: half its records are 0
    assert any(isinstance(op, MemLoad) for op in recorder.ops)
    recorder.save()


def test_regions_outnumbering_the_last_interrupts_share_the_last_one(tmp_path):
    """A task whose last interrupt is the first after which two regions hold their final
    bytes (NVIDIA's compiler reusing a memory, say): both are checked on it, with their
    own CRCs, rather than the recording failing (NVIDIA's RTL bench wants one check per
    sync id, which such a task cannot have)."""
    m = Machine("nv_small")
    recorder = TraceRecorder(m, tmp_path / "t.cfg")
    recorder.begin_task("task 0")
    cube = np.arange(-64, 64, dtype=np.int64).astype(np.int8).reshape(8, 4, 4)
    data, lay = pack_feature(cube, precision="int8", atom_bytes=8)
    m.load(0x1000, data)
    start_sdp_add(m, cube.shape, (0x1000, lay), (0x2000, lay), 1)
    assert m.run() == 1
    recorder.interrupt(m)  # the task's one interrupt: SDP done
    half = len(data) // 2
    for addr in (0x2000, 0x2000 + half):  # two regions, both final only after it
        recorder.check_crc("pri_mem", addr, half)
    checks = [op for op in cfg.parse(recorder.text()) if op.cmd == "check_crc"]
    assert [op.args[0] for op in checks] == ["sync_id_0", "sync_id_0"]
    assert [op.args[4] for op in checks] == [m.memory("pri_mem").crc32(a, half)
                                                     for a in (0x2000, 0x2000 + half)]
