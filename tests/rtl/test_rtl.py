"""``nvdla-sim rtl``: the testbench's command stream, the plan of a trace, the verdicts.

Without NVIDIA's Verilated bench the runner is exercised with a stand-in that
speaks the same stream and prints the same lines (``fake_bench.py``); with
``$NVDLA_RTL_BENCH`` naming a built ``VNV_nvdla`` the same traces run on the RTL.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
from pathlib import Path

import pytest

from sim.cli import main
from sim.diff.simulate import simulate
from sim.gen import generate
from sim.rtl.commands import Dump, Load, Read, Wait, Write, encode
from sim.rtl.plan import plan_trace

HERE = Path(__file__).resolve().parent
SPECS = HERE.parents[1] / "examples" / "specs"
GLB_MASK, GLB_STATUS = 0x1004, 0x100C  # nv_small (master map) byte addresses

# (command, the bytes NVIDIA's bench reads for it), written out from its loader's layout
ENCODINGS = [
    (Wait("t:1"), b"\x01"),
    (Write(0x9038, 1, "t:1"), b"\x02" + (0x9038 >> 2).to_bytes(4, "little") + b"\x01\0\0\0"),
    (Read(0x100C, 0x10, 0x10, "t:1"),
     b"\x03" + (0x403).to_bytes(4, "little") + b"\x10\0\0\0" + b"\x10\0\0\0"),
    (Load(0x80000000, b"ab", "t:1"), b"\x05" + b"\0\0\0\x80" + b"\x02\0\0\0" + b"ab"),
    (Dump(0x80000010, b"xyz", "d.bin", "t:1"),
     b"\x04" + b"\x10\0\0\x80" + b"\x03\0\0\0" + b"xyz" + b"\x05\0\0\0" + b"d.bin"),
]


@pytest.mark.parametrize("command, expected", ENCODINGS)
def test_each_command_encodes_as_the_bench_reads_it(command, expected):
    assert encode([command]) == expected + b"\xff"


def test_a_value_wider_than_the_bench_is_refused():
    with pytest.raises(Exception, match="t:7: value 0x100000000 does not fit"):
        encode([Write(0x9038, 1 << 32, "t:7")])


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """gen's nv_small traces: one SDP layer, and convolution -> SDP -> PDP."""
    root = tmp_path_factory.mktemp("rtl") / "nv_small"
    out = {}
    for spec in ("sdp_int8", "network_3_layers"):
        generate(SPECS / f"{spec}.toml", root / spec, config="nv_small", fmt="both")
        out[spec] = root / spec
    return out


def _cfg(folder: Path) -> Path:
    (cfg,) = folder.glob("*.cfg")
    return cfg


def _plan(trace: Path):
    return plan_trace(trace, "nv_small", simulate(trace, "nv_small").regions)


@pytest.mark.parametrize("fmt", ["cfg", "txn"])
def test_each_interrupt_wait_masks_the_others_and_clears_its_bit(traces, fmt):
    folder = traces["network_3_layers"]
    trace = _cfg(folder) if fmt == "cfg" else folder / "input.txn"
    plan = _plan(trace)
    waits = [i for i, c in enumerate(plan.commands) if isinstance(c, Wait)]
    assert len(waits) == 6  # conv: CDMA data, weights, CACC, SDP; then SDP; then PDP
    for i in waits:
        unmask, back1, back2 = plan.commands[i - 3 : i]
        check, clear, restore = plan.commands[i + 1 : i + 4]
        bit = check.mask
        assert bin(bit).count("1") == 1 and check.value == bit and check.byte_addr == GLB_STATUS
        assert (unmask.byte_addr, unmask.value & bit) == (GLB_MASK, 0)
        assert unmask.value | bit == 0x3F03FF  # every other done bit masked
        assert back1 == back2 and (back1.byte_addr, back1.value) == (GLB_MASK, unmask.value)
        assert (clear.byte_addr, clear.value) == (GLB_STATUS, bit)
        assert restore.byte_addr == GLB_MASK
    # a layer's registers reach the bench only after the interrupt before them in the trace
    first_pdp_write = next(i for i, c in enumerate(plan.commands)
                           if isinstance(c, Write) and 0xB000 <= c.byte_addr < 0xC000)
    assert first_pdp_write > waits[4]


def test_checks_dump_their_region_with_the_simulators_bytes(traces):
    trace = _cfg(traces["network_3_layers"])
    sim = simulate(trace, "nv_small")
    plan = plan_trace(trace, "nv_small", sim.regions)
    dumps = [c for c in plan.commands if isinstance(c, Dump)]
    assert [(d.addr, d.expected) for d in dumps] == [(r.addr, r.simulated) for r in sim.regions]
    assert [c.file for c in plan.checks] == [d.file for d in dumps]
    assert all(c.passes(r.simulated) for c, r in zip(plan.checks, sim.regions, strict=True))


def test_binary_memory_files_load_on_the_bench_as_record_files_do(traces, tmp_path):
    """A trace recorded with --trace-memory bin loads its raw .bin memories on the RTL bench
    exactly as the same memories in record .dat text."""
    import re
    import shutil

    from sim.memfiles import read_record_file

    folder = tmp_path / "bin"
    shutil.copytree(traces["network_3_layers"], folder)
    cfg = _cfg(folder)
    text = cfg.read_text()
    for name in sorted(set(re.findall(r'mem_load\([^,]+, [^,]+, "([^"]+)"\)', text))):
        runs = read_record_file(folder / name).runs
        assert len(runs) == 1 and runs[0][0] == 0  # gen's files: one run from the address
        (folder / name).with_suffix(".bin").write_bytes(runs[0][1])
        text = text.replace(f'"{name}"', f'"{Path(name).with_suffix(".bin")}"')
        (folder / name).unlink()
    assert '.bin")' in text and '.dat")' not in text  # every memory now a .bin file
    cfg.write_text(text)
    loads = [[(c.addr, c.data) for c in _plan(trace).commands if isinstance(c, Load)]
             for trace in (_cfg(traces["network_3_layers"]), cfg)]
    assert loads[0] and loads[0] == loads[1]


@pytest.mark.parametrize("line, reason", [
    ("mem_init(pri_mem, 0x1000, 0x40, ALL_ZERO);", "outside the testbench's DBB memory"),
    ("mem_init(sec_mem, 0x80000000, 0x40, ALL_ZERO);", "sec_mem is not on the testbench"),
])
def test_memory_the_bench_lacks_is_refused_with_its_line(tmp_path, line, reason):
    trace = tmp_path / "nv_small" / "t" / "t.cfg"
    trace.parent.mkdir(parents=True)
    trace.write_text(f"{line}\ncheck_crc(sync_id_0, 1, 0x80000000, 0x40, 0x0);\n")
    with pytest.raises(Exception, match=f"t.cfg:1: .*{reason}"):
        plan_trace(trace, "nv_small", [])


# -- the runner, with the stand-in bench ------------------------------------------------
@pytest.fixture
def fake_bench(tmp_path, monkeypatch):
    script = tmp_path / "VNV_fake"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_bench.py'} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)

    def use(mode: str, **env):
        monkeypatch.setenv("FAKE_BENCH_MODE", mode)
        for k, v in env.items():
            monkeypatch.setenv(k, str(v))
        return str(script)

    return use


def test_a_passing_run_reports_each_check(traces, fake_bench, tmp_path, capsys):
    keep = tmp_path / "keep"
    assert main(["rtl", str(_cfg(traces["network_3_layers"])), "--bench", fake_bench("pass"),
                 "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    assert out.count("  pass ") == 3 and "6 interrupts awaited" in out and out.endswith("PASS\n")
    assert (keep / "trace.bin").is_file() and (keep / "bench.log").is_file()
    assert len(list(keep.glob("check*.bin"))) == 3


def test_a_corrupted_region_fails_and_names_layer_and_element(traces, fake_bench, capsys):
    trace = _cfg(traces["sdp_int8"])
    region = simulate(trace, "nv_small").regions[0]
    offset = 8 * 3 + 5  # nv_small atoms are 8 bytes: w3, c5 of the first surface
    code = main(["rtl", str(trace), "--bench", fake_bench("corrupt", FAKE_BENCH_BYTE=offset)])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "CRC 0x" in out
    assert "layer 0 SDP" in out
    assert f"n0 s0 h0 w3 c5 @{region.addr + offset:#x}" in out
    assert "kept in" in out  # the evidence is not deleted
    kept = Path(out.split("kept in ")[1].split()[0])
    assert (kept / "trace.bin").is_file()


def test_a_register_read_that_differs_exits_2_naming_its_line(traces, fake_bench, capsys):
    trace = _cfg(traces["sdp_int8"])
    assert main(["rtl", str(trace), "--bench", fake_bench("badread")]) == 2
    out = capsys.readouterr().out
    assert f"FAIL        {trace}:" in out and "register read: the interrupt mask" in out


def test_a_hang_names_the_interrupt_never_raised(traces, fake_bench, capsys):
    trace = _cfg(traces["network_3_layers"])
    assert main(["rtl", str(trace), "--bench", fake_bench("hang"), "--idle", "1"]) == 1
    out = capsys.readouterr().out
    assert "HANG        the RTL never raised CDMA_WT_0" in out
    assert "not reached" in out
    assert "tmc2slcg_disable_clock_gating" in out  # the known cause of CDMA hangs is named


@pytest.mark.parametrize("bench, message", [
    (None, "no testbench: pass --bench VNV_nvdla or set $NVDLA_RTL_BENCH"),
    ("missing", "no such testbench"),
    ("plain", "not an executable testbench"),
    ("folder", "not an executable testbench"),
])
def test_a_bench_that_cannot_run_is_one_line_exit_2(traces, tmp_path, monkeypatch, capsys,
                                                     bench, message):
    monkeypatch.delenv("NVDLA_RTL_BENCH", raising=False)
    (tmp_path / "plain").write_text("not a program")
    (tmp_path / "folder").mkdir()
    args = ["rtl", str(_cfg(traces["sdp_int8"]))]
    if bench is not None:
        args += ["--bench", str(tmp_path / bench)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_keep_refuses_a_folder_with_files(traces, fake_bench, tmp_path, capsys):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    assert main(["rtl", str(_cfg(traces["sdp_int8"])), "--bench", fake_bench("pass"),
                 "--keep", str(keep)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (keep / "notes.txt").read_text() == "mine"


# -- on NVIDIA's RTL -------------------------------------------------------------------
@pytest.fixture
def rtl_bench() -> str:
    bench = os.environ.get("NVDLA_RTL_BENCH")
    if not bench or not os.access(bench, os.X_OK):
        pytest.skip("no Verilated NVDLA testbench: set $NVDLA_RTL_BENCH to a built VNV_nvdla")
    return bench


@pytest.mark.parametrize("spec", ["sdp_int8", "network_3_layers"])
@pytest.mark.parametrize("fmt", ["cfg", "txn"])
def test_gen_traces_pass_on_the_rtl(traces, rtl_bench, capsys, spec, fmt):
    trace = _cfg(traces[spec]) if fmt == "cfg" else traces[spec] / "input.txn"
    assert main(["rtl", str(trace), "--bench", rtl_bench]) == 0, capsys.readouterr().out


def test_a_device_computing_from_other_input_is_localised_on_the_rtl(traces, rtl_bench,
                                                                     monkeypatch, capsys):
    """Fault injection: the bench's copy of the input gets one byte changed, so the RTL
    computes another output; the verdict fails and names the layer and elements."""
    import sim.rtl.verdict as verdict

    real = verdict.plan_trace

    def corrupt_first_load(*args):
        plan = real(*args)
        i = next(i for i, c in enumerate(plan.commands) if isinstance(c, Load) and any(c.data))
        load = plan.commands[i]
        data = bytearray(load.data)
        data[0] ^= 0x7F
        plan.commands[i] = Load(load.addr, bytes(data), load.where)
        return plan

    monkeypatch.setattr(verdict, "plan_trace", corrupt_first_load)
    assert main(["rtl", str(_cfg(traces["sdp_int8"])), "--bench", rtl_bench]) == 1
    out = capsys.readouterr().out
    assert "CRC 0x" in out and "layer 0 SDP" in out and "n0 s0 h0 w0 c0" in out


def test_stream_header_is_little_endian_32_bit():
    """The loader reads host-order 32-bit fields; the benches run on little-endian hosts."""
    assert struct.pack("<I", 1) == encode([Write(4, 1, "t")])[5:9]


VOCABULARY = [
    ("reg_read(NVDLA_GLB.S_INTR_STATUS_0);", "reg_read is not in NVIDIA's trace vocabulary"),
    ("intr_notify(SDP_0, sync_id_0);\ncheck_crc(sync_id_1, 1, 0x80000000, 0x8, 0x0);",
     "sync_id_1 is checked but no intr_notify before defines it"),
    ("intr_notify(SDP_0, sync_id_0);", "sync_id_0 has 0 checks"),
    ("intr_notify(SDP_0, sync_id_0);\ncheck_nothing(sync_id_0);\ncheck_nothing(sync_id_0);",
     "sync_id_0 has 2 checks"),
    ("intr_notify(sync_id_0);\ncheck_nothing(sync_id_0);", "intr_notify names no interrupt"),
    ("sync_wait(SDP_0, sync_id_0);", "sync_wait is not in NVIDIA's trace vocabulary"),
]


@pytest.mark.parametrize("text, problem", VOCABULARY)
def test_constructs_nvidias_tools_refuse_are_named(tmp_path, text, problem):
    from sim.trace.cfg import parse_cfg
    from sim.trace.vocabulary import bench_problems

    trace = tmp_path / "t.cfg"
    trace.write_text(text + "\n")
    assert any(problem in p for p in bench_problems(parse_cfg(trace)))


def test_a_recorded_network_passes_on_the_rtl(rtl_bench, nvidia_kmd, tmp_path, capsys):
    """NVIDIA's firmware runs the nv_small LeNet on the simulator; its --trace-out runs on
    the RTL to the same output.  The bench must drive tmc2slcg_disable_clock_gating to 1
    (README, 'Run it on your RTL'): with clock gating on, NVIDIA's CDMA hangs this network."""
    lenet = HERE.parents[2] / "shared" / "networks" / "nv_small" / "lenet"
    if not lenet.is_dir():
        pytest.skip(f"{lenet} is absent")
    trace = tmp_path / "trace" / "lenet.cfg"
    assert main(["loadable", str(lenet / "lenet.nvdla"), "--config", "nv_small", "--firmware",
                 str(nvidia_kmd), "--input", str(lenet / "input.bin"), "-o", str(tmp_path / "o"),
                 "--trace-out", str(trace)]) == 0
    code = main(["rtl", str(trace), "--bench", rtl_bench, "--idle", "30"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "18 interrupts awaited" in out
