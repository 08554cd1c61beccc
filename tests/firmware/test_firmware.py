"""The firmware bridge, exercised by our own test firmware (minikmd) and by NVIDIA's KMD.

minikmd (``tests/firmware/minikmd``) reads a descriptor of register writes,
programs a BDMA copy and an SDP layer through ``dla_reg_write`` and waits for
each unit's done interrupt through the ISR/event path; these tests cover what
the bridge must never lose: building and caching, every callback, completion
by interrupt, firmware-reported failures, stalls and compile errors.
"""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from sim.cli import main
from sim.configs import get_config
from sim.dma.feature import pack_feature, read_feature
from sim.engine import Engine
from sim.firmware import Firmware, FirmwareCrashed, FirmwareError, FirmwareTaskFailed
from sim.firmware.build import FirmwareBuildError, build_firmware
from sim.firmware.driver import MAX_SEGMENTS, PAIR, HeldSegments, write_rules
from sim.machine import Machine
from sim.program.bdma import launch_bdma, program_bdma_copy
from sim.program.registers import write_fields
from sim.program.sdp import program_sdp_core, program_sdp_input, program_x
from sim.trace import run_trace
from sim.trace.cfg import parse_cfg
from sim.trace.vocabulary import bench_problems

from .minikmd_task import (
    MINIKMD,
    UNIT_BDMA,
    UNIT_SDP,
    Program,
    descriptor_status,
    tiny_loadable,
)

DESC, SRC, MID, DST = 0x8000_0000, 0x8001_0000, 0x8002_0000, 0x8003_0000
CUBE = (32, 2, 4)  # C, H, W of the int8 cube: one 32-channel surface, 256 bytes
CUBE_BYTES = 256
BIAS = 100

needs_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")),
                              reason="no C compiler: the test firmware cannot be built")
pytestmark = needs_cc


class Spy:
    """A recorder that counts what the bridge reports: register reads, writes, interrupts."""

    def __init__(self):
        self.reads: list[int] = []
        self.writes: list[tuple[int, int]] = []
        self.interrupts = 0

    def reg_read(self, addr, value):
        self.reads.append(addr)

    def reg_write(self, addr, value):
        self.writes.append((addr, value))

    def interrupt(self, machine):
        self.interrupts += 1


def _layout(config: str):
    return _input(config)[2]


def bdma_op(p: Program, src_index: int, dst_index: int) -> None:
    p.op(UNIT_BDMA)
    p.point("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", src_index)
    p.point("NVDLA_BDMA.CFG_SRC_ADDR_HIGH_0", src_index, half=1)
    p.point("NVDLA_BDMA.CFG_DST_ADDR_LOW_0", dst_index)
    p.point("NVDLA_BDMA.CFG_DST_ADDR_HIGH_0", dst_index, half=1)
    program_bdma_copy(p, 0, 0, line_bytes=CUBE_BYTES)
    launch_bdma(p)


def sdp_op(p: Program, config: str, src_index: int, dst_index: int, *, rdma: bool = True) -> None:
    """SDP layer: int8 cube + BIAS through the X1 ALU, saturated to int8."""
    p.op(UNIT_SDP)
    p.point("NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0", src_index)
    p.point("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0", dst_index)
    lay = _layout(config)
    program_sdp_input(p, CUBE, (0, lay), "int8", "int8")
    program_sdp_core(p, CUBE, "int8", "int8", dst=(0, lay))
    program_x(p, "bs", {"bypass": 0, "alu_bypass": 0, "alu_algo": 2, "alu_operand": BIAS})
    program_x(p, "bn", None)
    write_fields(p, "NVDLA_SDP.D_DP_EW_CFG_0", ew_bypass=1, ew_alu_bypass=1, ew_mul_bypass=1,
                 ew_lut_bypass=1)
    p.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    if rdma:
        p.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)


def _input(config: str):
    """(the int8 test cube, its memory image, its layout) for ``config``'s atom size."""
    rng = np.random.default_rng(23)
    cube = rng.integers(-128, 128, CUBE, dtype=np.int64).astype(np.int8)
    data, layout = pack_feature(cube, precision="int8",
                                atom_bytes=get_config(config).atom_bytes)
    return cube, bytes(data), layout


def _run(config: str, program: Program, spy=None, descriptor: bytes | None = None):
    m = Machine(config)
    cube, data, _ = _input(config)
    m.load(DESC, descriptor if descriptor is not None else program.descriptor())
    m.load(SRC, data)
    fw = Firmware(m, MINIKMD, spy)
    stats = fw.run_task([DESC, SRC, MID, DST])
    return m, fw, stats, cube


def test_build_is_cached_per_register_map_and_per_source(tmp_path):
    first = build_firmware(MINIKMD, "nvdlav1")
    assert build_firmware(MINIKMD, "nvdlav1") == first  # the same digest: no rebuild
    assert build_firmware(MINIKMD, "master") != first  # DLA_2_CONFIG: another library
    edited = tmp_path / "kmd"
    shutil.copytree(MINIKMD, edited)
    source = edited / "firmware" / "minikmd.c"
    source.write_text(source.read_text() + "\n/* edited */\n")
    rebuilt = build_firmware(edited, "nvdlav1")
    assert rebuilt != first and rebuilt.is_file()


def test_digest_is_remembered_across_processes(tmp_path, monkeypatch):
    """A later process takes the digest of unchanged sources from the cache (no hashing);
    an edited source, or a remembered file of another key, is hashed again."""
    from sim.firmware import build

    monkeypatch.setenv("NVDLA_SIM_CACHE", str(tmp_path / "cache"))
    kmd = tmp_path / "kmd"
    shutil.copytree(MINIKMD, kmd)
    monkeypatch.setattr(build, "_DIGESTS", {})
    first = build._digest(kmd, ())
    hashed = []
    real = build._hash_sources
    monkeypatch.setattr(build, "_hash_sources", lambda *a: hashed.append(a) or real(*a))
    monkeypatch.setattr(build, "_DIGESTS", {})  # a new process
    assert build._digest(kmd, ()) == first and not hashed
    for path in (build.cache_root() / "digests").iterdir():  # another key's
        key, digest = path.read_text().rsplit("\n", 1)
        path.write_text(key.replace("minikmd", "otherkmd") + "\n" + digest)
    monkeypatch.setattr(build, "_DIGESTS", {})
    assert build._digest(kmd, ()) == first and len(hashed) == 1
    source = kmd / "firmware" / "minikmd.c"
    source.write_text(source.read_text() + "\n/* edited */\n")
    monkeypatch.setattr(build, "_DIGESTS", {})
    assert build._digest(kmd, ()) != first and len(hashed) == 2


def test_not_a_kmd_folder(tmp_path):
    with pytest.raises(FirmwareBuildError, match="not a KMD folder"):
        build_firmware(tmp_path, "nvdlav1")


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_sdp_task_completes_by_interrupt(config, caplog):
    """Every callback: register read/write, task memory read/write, DMA addresses, logging."""
    p = Program(config)
    sdp_op(p, config, 1, 3)
    spy = Spy()
    with caplog.at_level(logging.INFO, logger="sim.firmware"):
        m, fw, stats, cube = _run(config, p, spy)
    lay = _layout(config)
    got = read_feature(m.memory(1), DST, CUBE, "int8", m.config.atom_bytes, lay.line_stride,
                       lay.surface_stride)
    want = np.clip(cube.astype(np.int64) + BIAS, -128, 127)
    np.testing.assert_array_equal(got, want)
    assert stats.hw_layers == 1 and stats.interrupts == spy.interrupts >= 1
    status = m.regfile.address_of(m.regfile.register("NVDLA_GLB.S_INTR_STATUS_0"))
    assert status in spy.reads  # the ISR read the status register ...
    assert (status, 1) in spy.writes  # ... and cleared the SDP's done bit
    assert descriptor_status(m.read_memory(DESC, 16)) == (1, 1)  # written back by the firmware
    assert fw.cpu_writes and fw.cpu_writes[-1][0] == DESC + 8
    assert "minikmd: op 0: unit 2" in caplog.text


class ValueSpy(Spy):
    """A recorder that keeps the value of each register read it is told of."""

    def __init__(self):
        super().__init__()
        self.read_values: list[tuple[int, int]] = []

    def reg_read(self, addr, value):
        super().reg_read(addr, value)
        self.read_values.append((addr, value))


def test_reads_answered_in_the_firmware_process_reach_the_recorder():
    """The status word travels with each call (the firmware read it in an earlier one) and
    with each answer: every read is still recorded, with the value it had then, and the
    firmware's clearing write (write-1-to-clear) changes what it reads next from there
    (minikmd fails if a cleared bit reads set; the bridge, if a value read there is not
    the register's)."""
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    sdp_op(p, "nv_full", 2, 3)
    bdma_op(p, 3, 2)
    spy = ValueSpy()
    m, fw, stats, cube = _run("nv_full", p, spy)
    status = m.regfile.address_of(m.regfile.register("NVDLA_GLB.S_INTR_STATUS_0"))
    reads = [value for addr, value in spy.read_values if addr == status]
    bdma, sdp = 1 << 6, 1 << 0  # group 0 done bits (minikmd.c)
    # each handler reads the status, clears what it saw, and reads it again
    assert reads == [bdma, 0, sdp, 0, bdma, 0] and stats.interrupts == 3
    assert [w for w in spy.writes if w[0] == status] == [(status, v) for v in reads[::2]]
    assert descriptor_status(m.read_memory(DESC, 16)) == (1, 3)


def test_descriptor_ending_at_the_top_of_the_address_space():
    """Nothing past the last byte to send along with the firmware's reads: still served."""
    p = Program("nv_small")
    sdp_op(p, "nv_small", 1, 3)
    descriptor = p.descriptor()
    m = Machine("nv_small")
    top = m.pri_mem.limit - len(descriptor)
    cube, data, _ = _input("nv_small")
    m.load(top, descriptor)
    m.load(SRC, data)
    stats = Firmware(m, MINIKMD).run_task([top, SRC, MID, DST])
    assert stats.hw_layers == 1
    assert descriptor_status(m.read_memory(top, 16)) == (1, 1)


def test_bdma_then_sdp_resolves_addresses_by_index():
    p = Program("nv_full")
    bdma_op(p, 1, 2)  # SRC -> MID
    sdp_op(p, "nv_full", 2, 3)  # MID + BIAS -> DST
    m, fw, stats, cube = _run("nv_full", p)
    assert m.read_memory(MID, CUBE_BYTES) == m.read_memory(SRC, CUBE_BYTES)
    assert stats.hw_layers == 2
    assert descriptor_status(m.read_memory(DESC, 16)) == (1, 2)


@pytest.mark.parametrize("case, config, message", [
    ("magic", "nv_full", "not a minikmd task"),
    ("unit", "nv_full", "op 0: unknown unit 9"),
    ("second unit", "nv_full", "op 1: unknown unit 9"),
    ("no bdma", "nv_small", "op 0: this NVDLA has no BDMA"),
    ("index", "nv_full", "op 0: no address-list entry 7"),
])
def test_firmware_reported_failure(case, config, message):
    p = Program(config)
    if case == "magic":
        sdp_op(p, config, 1, 3)
        descriptor = p.descriptor(magic=0x12345678)
    else:
        if case == "second unit":
            sdp_op(p, config, 1, 3)
        p.op(9 if "unit" in case else UNIT_BDMA)
        if case == "index":
            p.point("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", 7)
            p.write_reg("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", 0)
        descriptor = p.descriptor()
    with pytest.raises(FirmwareTaskFailed, match=f"firmware said: minikmd: {message}"):
        _run(config, p, descriptor=descriptor)


def test_logged_error_then_nothing_armed_is_a_task_failure():
    """A firmware that says why it rejects an op, returns success and arms nothing."""
    p = Program("nv_full")
    p.op(0)
    with pytest.raises(FirmwareTaskFailed, match="armed nothing more.*unit 0 programs nothing"):
        _run("nv_full", p)


def test_messages_cite_the_folder_that_was_run(tmp_path):
    """Identical sources in two folders: each run's messages name its own folder."""
    copy = tmp_path / "my-kmd"
    shutil.copytree(MINIKMD, copy)
    p = Program("nv_full")
    p.op(9)
    for folder in (MINIKMD, copy):
        m = Machine("nv_full")
        m.load(DESC, p.descriptor())
        with pytest.raises(FirmwareTaskFailed) as info:
            Firmware(m, folder).run_task([DESC, SRC, MID, DST])
        assert f"{folder.resolve()}/firmware/minikmd.c" in str(info.value)


@pytest.mark.parametrize("rdma, armed", [(False, "blocks armed but waiting"),
                                         (None, "no block armed")])
def test_stalled_task_names_what_is_armed(rdma, armed):
    p = Program("nv_full")
    if rdma is None:
        p.op(UNIT_SDP)
        p.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 3)  # programmed, never enabled
    else:
        sdp_op(p, "nv_full", 1, 3, rdma=rdma)
    with pytest.raises(FirmwareError, match=f"stalled.*{armed}") as info:
        _run("nv_full", p)
    if rdma is False:
        assert "NVDLA_SDP" in str(info.value)


# -- the same firmware through `nvdla-sim loadable` -----------------------------------
def _loadable(tmp_path, program: Program, **kw) -> str:
    path = tmp_path / "task.nvdla"
    path.write_bytes(tiny_loadable(program.descriptor(**kw), CUBE_BYTES))
    return str(path)


def test_cli_runs_a_loadable_and_its_trace_replays(tmp_path):
    from sim.runtime.dimg import unpack_dimg

    p = Program("nv_full")
    bdma_op(p, 1, 2)  # input tensor -> output tensor
    cube, data, _ = _input("nv_full")
    (tmp_path / "in.bin").write_bytes(data)
    trace = tmp_path / "trace" / "run.cfg"
    out = tmp_path / "out"
    assert main(["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD), "--input",
                 str(tmp_path / "in.bin"), "--trace-out", str(trace), "-o", str(out)]) == 0
    meta, elements = unpack_dimg((out / "o_000000.dimg").read_bytes())
    assert (meta.channels, meta.height, meta.width) == (32, 1, CUBE_BYTES // 32)
    # .dimg elements in (channel, line, pixel) order; the buffer is one 32-channel surface
    want = np.frombuffer(data, np.int8).reshape(-1, 32).T.reshape(-1)
    np.testing.assert_array_equal(np.frombuffer(elements, np.int8), want)
    replay = run_trace(trace.parent, "nv_full")
    assert replay.status == "pass" and replay.checks > 0, replay.message
    # NVIDIA's trace tools would take it: no reads, no acknowledgement writes, one check per
    # interrupt, the copy's destination checked on the BDMA interrupt that finished it
    ops = parse_cfg(trace)
    assert bench_problems(ops) == []
    cmds = [op.cmd for op in ops]
    assert "reg_read" not in cmds
    assert not any(op.cmd == "reg_write" and "S_INTR_STATUS" in op.args[0] for op in ops)
    notify = cmds.index("intr_notify")
    assert ops[notify].args[0] == "BDMA_0" and cmds[notify + 1] == "check_crc"


@pytest.mark.parametrize("case, code, message", [
    ("failure", 1, "firmware said: minikmd: not a minikmd task"),
    ("stall", 2, "stalled"),
    ("compile", 2, "firmware does not compile"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, case, code, message):
    p = Program("nv_full")
    kmd = MINIKMD
    if case == "stall":
        p.op(UNIT_BDMA)
        p.write_reg("NVDLA_BDMA.CFG_LINE_0", 0)  # no launch: nothing ever interrupts
    else:
        bdma_op(p, 1, 2)
    if case == "compile":
        kmd = tmp_path / "kmd"
        shutil.copytree(MINIKMD, kmd)
        (kmd / "firmware" / "broken.c").write_text("int this is not C;\n")
    loadable = _loadable(tmp_path, p, **({"magic": 1} if case == "failure" else {}))
    assert main(["loadable", loadable, "--firmware", str(kmd), "-o",
                 str(tmp_path / "out")]) == code
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    if case == "compile":
        assert "broken.c" in err


def test_cli_layers_writes_each_layer_output(tmp_path, capsys):
    """--layers: the SDP layer's cube as .npy (its values computed independently) + summary."""
    p = Program("nv_full")
    sdp_op(p, "nv_full", 1, 2)  # input tensor + BIAS -> output tensor
    cube, data, _ = _input("nv_full")
    (tmp_path / "in.bin").write_bytes(data)
    layers = tmp_path / "layers"
    assert main(["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD), "--input",
                 str(tmp_path / "in.bin"), "--layers", str(layers), "-o",
                 str(tmp_path / "out")]) == 0
    got = np.load(layers / "layer000_SDP.npy")
    np.testing.assert_array_equal(got, np.clip(cube.astype(np.int64) + BIAS, -128, 127))
    summary = (layers / "layers.txt").read_text().splitlines()
    assert summary == [f"layer 0 SDP/SDP 32x2x4 int8 min {got.min()} max {got.max()} NaN 0 "
                       f"-> layer000_SDP.npy"]
    assert summary[0].split(" ->")[0] in capsys.readouterr().out


@pytest.mark.parametrize("existing", ["file", "folder with a file"])
def test_cli_never_replaces_what_the_user_has(tmp_path, capsys, existing):
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    out = tmp_path / "out"
    if existing == "file":
        out.write_text("mine")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    assert main(["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD), "-o",
                 str(out)]) == 2
    assert "name a new or empty folder" in capsys.readouterr().err
    kept = out if existing == "file" else out / "notes.txt"
    assert kept.read_text() == "mine"


@pytest.mark.parametrize("content, extra, message", [
    (b"", [], "0 bytes, but input tensor 0 ('data', 1x32x1x8) is a 256-byte buffer"),
    (bytes(255), [], "255 bytes, but input tensor 0"),
    (b"DIMG" + bytes(252), [], "a .dimg file holds packed elements"),
    (bytes(256), ["--normalize", "0"], "--normalize: 0 is below 1"),
])
def test_cli_refuses_an_input_that_is_not_the_tensor(tmp_path, capsys, content, extra, message):
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    (tmp_path / "in.bin").write_bytes(content)
    argv = ["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD), "--input",
            str(tmp_path / "in.bin"), "-o", str(tmp_path / "out"), *extra]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fault, how", [(0xF0, "crashed (SIGSEGV)"),
                                        (0xF2, "exited with status 3"),
                                        (0xF1, "hung: no request for 1 s, killed")])
def test_a_crashing_firmware_does_not_take_the_simulator_down(fault, how):
    """The second op misbehaves: the first op's work stays, the error names folder and call."""
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    p.op(fault)
    m = Machine("nv_full")
    m.load(DESC, p.descriptor())
    m.load(SRC, bytes(range(256)))
    fw = Firmware(m, MINIKMD, timeout=1.0)
    with pytest.raises(FirmwareCrashed) as info:
        fw.run_task([DESC, SRC, MID, DST])
    assert str(info.value).startswith(
        f"firmware {MINIKMD}: {how} in dla_isr_handler/dla_process_events")
    assert m.read_memory(MID, CUBE_BYTES) == bytes(range(256))  # the copy before it ran
    with pytest.raises(FirmwareError, match="its process has ended"):
        fw.run_task([DESC, SRC, MID, DST])


def test_cli_crash_is_exit_1_with_the_trace_so_far(tmp_path, capsys):
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    p.op(0xF0)
    trace = tmp_path / "trace" / "run.cfg"
    assert main(["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD),
                 "--trace-out", str(trace), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("nvdla-sim: error: firmware") and "SIGSEGV" in err[-1]
    recorded = trace.read_text()
    assert "NVDLA_BDMA.CFG_LAUNCH0_0" in recorded and "the run stopped here" in recorded
    assert not (tmp_path / "out").exists()


def test_cli_force_replaces_the_output_folder(tmp_path):
    p = Program("nv_full")
    bdma_op(p, 1, 2)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("stale")
    assert main(["loadable", _loadable(tmp_path, p), "--firmware", str(MINIKMD), "-o",
                 str(out), "--force"]) == 0
    assert sorted(f.name for f in out.iterdir()) == ["o_000000.dimg"]


def test_memory_the_hardware_writes_between_calls_is_read_again():
    """The firmware keeps the descriptor bytes it read across calls; a layer writing into
    them cuts them short, and the next call reads the new bytes.  Here the first op (a
    BDMA copy) writes the second op over a stale one the firmware has already fetched
    with its first read: kept as it was, the task fails on the stale op's unknown unit."""
    new = Program("nv_full")
    new.op(UNIT_BDMA)
    new.point("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", 1)
    new.point("NVDLA_BDMA.CFG_DST_ADDR_LOW_0", 3)
    program_bdma_copy(new, 0, 0, line_bytes=32)
    launch_bdma(new)
    op1 = new.descriptor()[16:]
    op1 += bytes(-len(op1) % 32)  # the copy moves whole 32-byte lines

    def descriptor(padding: int) -> bytes:
        p = Program("nv_full")
        p.op(UNIT_BDMA)
        p.point("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", 1)
        p.point("NVDLA_BDMA.CFG_DST_ADDR_LOW_0", 2)
        for _ in range(padding):  # rewritten below: they move the next op to a whole line
            p.write_reg("NVDLA_BDMA.CFG_SRC_LINE_0", 0)
        program_bdma_copy(p, 0, 0, line_bytes=len(op1))
        launch_bdma(p)
        p.op(9)  # the stale op: an unknown unit
        return p.descriptor()

    desc = next(d for d in map(descriptor, range(8)) if (len(d) - 4) % 32 == 0)
    stale = len(desc) - 4  # the stale op's offset: the copy's destination
    m = Machine("nv_full")
    m.load(DESC, desc)
    m.load(SRC, op1 + bytes(range(32)))
    fw = Firmware(m, MINIKMD)
    stats = fw.run_task([DESC, SRC, DESC + stale, MID])
    assert stats.hw_layers == 2
    assert descriptor_status(m.read_memory(DESC, 16)) == (1, 2)
    assert m.read_memory(MID, 32) == m.read_memory(SRC, 32)
    fw.close()


@pytest.mark.parametrize("writes, cuts", [
    ([(0x1100, 16)], {0: 0x100}),  # inside the first segment: cut at the write
    ([(0x0F00, 0x200)], {0: 0}),  # over its first byte: nothing left
    ([(0x2000, 16)], {}),  # between the segments
    ([(0x1000 + 0x400, 8), (0x3000 + 0x10, 1)], {0: 0x400, 1: 0x10}),
])
def test_held_segments_are_cut_by_writes_other_than_the_firmwares(writes, cuts):
    m = Machine("nv_full")
    held = HeldSegments(m.pri_mem)
    held.add(0x1000, 0x800)
    held.add(0x3000, 0x100)
    with held.own_write():
        m.pri_mem.write(0x1000, bytes(0x800))  # the firmware's own: its process has it
    for addr, size in writes:
        m.pri_mem.write(addr, bytes(size))
    payload = held.cuts()
    assert dict(PAIR.iter_unpack(payload)) == cuts
    assert held.cuts() == b""  # sent once
    held.close()
    m.pri_mem.write(0x3000, bytes(4))
    assert held.cuts() == b""  # no longer listening


def test_a_full_table_of_segments_is_forgotten_at_once():
    m = Machine("nv_full")
    held = HeldSegments(m.pri_mem)
    for i in range(MAX_SEGMENTS):
        held.add(0x10000 * i, 16)
    m.pri_mem.write(0x10000 * 5, bytes(4))
    held.add(0x900000, 16)  # host.c forgets every segment, then keeps this one
    assert held.segments == [[0x900000, 16]] and held.cuts() == b""
    held.close()


def _snapshot_write(entries: dict, addr: int, value: int) -> None:
    """host.c's snapshot_write: a register write applied to the snapshot's entries."""
    for reg, (read, writable, w1c, dep, stores) in list(entries.items()):
        if reg == addr:
            if not stores:
                del entries[reg]
                continue
            read = (read & ~writable & ~w1c) | (value & writable) | (read & w1c & ~value)
            entries[reg] = (read & 0xFFFFFFFF, writable, w1c, dep, stores)
        elif dep in (addr, 0xFFFFFFFF):
            del entries[reg]


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_snapshot_rules_predict_every_read(config):
    """What a snapshot entry says a write does (write_rules, applied as host.c does) is
    what the machine reads after it, for the registers the bridge learns (those of units
    without read hooks) under writes of pointers, OP_ENs, interrupt set/clear/mask and
    plain registers, in both groups."""
    m = Machine(config)
    rf = m.regfile
    hooked = {unit for engine in m.engines for unit in engine.units
              if type(engine).on_read is not Engine.on_read}
    names = [r for r in ("NVDLA_GLB.S_INTR_MASK_0", "NVDLA_GLB.S_INTR_STATUS_0",
                         "NVDLA_GLB.S_INTR_SET_0", "NVDLA_CACC.S_POINTER_0",
                         "NVDLA_CACC.S_STATUS_0", "NVDLA_CACC.D_OP_ENABLE_0",
                         "NVDLA_CACC.D_MISC_CFG_0", "NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0",
                         "NVDLA_CDMA.S_POINTER_0", "NVDLA_CDMA.D_OP_ENABLE_0",
                         "NVDLA_CDMA.D_BANK_0", "NVDLA_CDMA.S_STATUS_0")]
    regs = [rf.register(n) for n in names]
    assert not {r.unit for r in regs} & hooked
    addrs = [rf.address_of(r) for r in regs]
    rng = np.random.default_rng(5)
    checked = 0
    for step in range(400):
        entries = {a: (m.read_reg(a) & 0xFFFFFFFF, *write_rules(m, a)) for a in addrs}
        for _ in range(4):
            addr = addrs[int(rng.integers(len(addrs)))]
            value = int(rng.integers(0, 1 << 32)) if rng.random() < 0.5 else \
                int(rng.integers(0, 4)) * int(rng.choice([1, 1 << 16, 0xFFFFFFFF]))
            _snapshot_write(entries, addr, value)
            m.write_reg(addr, value & 0xFFFFFFFF)
            for reg, entry in entries.items():
                assert entry[0] == m.read_reg(reg) & 0xFFFFFFFF, (hex(reg), hex(addr), step)
                checked += 1
    assert checked > 1000
