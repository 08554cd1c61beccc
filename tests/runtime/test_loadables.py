"""NVIDIA's KMD regression loadables end to end: output md5 against the golden lead.md5.

Each runs NVIDIA's firmware (the ``nvidia_kmd`` fixture: $NVDLA_KMD or
~/nvdla-sw/kmd, built with the C compiler) on the simulator; each run's
--trace-out must replay green.
"""

import hashlib
import shutil
from pathlib import Path

import pytest

from sim.cli import main
from sim.errors import NotImplementedFeature
from sim.firmware import Firmware, FirmwareError
from sim.machine import Machine
from sim.runtime import read_loadable, run_loadable, run_loadable_bytes
from sim.trace import run_trace

TESTS = ["BDMA/BDMA_L0_0", "CONV/CONV_D_L0_0", "SDP/SDP_X1_L0_0", "CDP/CDP_L0_0",
         "PDP/PDP_L0_0", "RBK/RBK_L0_0", "NN/NN_L0_0"]
REPLAYED = set(TESTS)  # every run's --trace-out must replay green


@pytest.fixture(scope="module")
def sw(shared_dir):
    root = shared_dir / "nvdla-sw"
    if not root.is_dir():
        pytest.skip(f"{root} is absent: NVIDIA's loadables are not available")
    return root


@pytest.fixture(scope="module")
def kmd(nvidia_kmd):
    return nvidia_kmd


def _golden(sw: Path, name: str) -> str:
    (lead,) = sw.glob(f"regression/golden/{name}_*/dla/lead.md5")
    return lead.read_text().split()[0]


@pytest.mark.parametrize("test", TESTS)
def test_loadable_matches_golden_md5(sw, kmd, test, tmp_path):
    name = test.split("/")[1]
    loadable = read_loadable(sw / "regression/flatbufs/kmd" / f"{test}_fbuf")
    trace = tmp_path / "trace" / "run.cfg" if test in REPLAYED else None
    try:
        result = run_loadable_bytes(loadable, kmd, "nv_full", recorder_path=trace)
    except NotImplementedFeature as exc:
        pytest.skip(f"{name} needs a unit the simulator does not model yet: {exc}")
    assert hashlib.md5(result.dimgs[0]).hexdigest() == _golden(sw, name)
    if trace is not None:
        replay = run_trace(trace.parent, "nv_full")
        assert replay.status == "pass", replay.message
        assert replay.checks > 0


def test_cli_writes_dimg_and_summary(sw, kmd, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["loadable", str(sw / "regression/flatbufs/kmd/BDMA/BDMA_L0_0_fbuf"),
                 "--firmware", str(kmd), "-o", str(out)])
    assert code == 0
    data = (out / "o_000000.dimg").read_bytes()
    assert hashlib.md5(data).hexdigest() == _golden(sw, "BDMA_L0_0")
    assert ("BDMA_L0_0_fbuf: 1 task, 1 hardware layer, 0 MACs, 1 output in"
            in capsys.readouterr().out)


def test_python_api_returns_output_buffers(sw, kmd):
    outs = run_loadable(sw / "regression/flatbufs/kmd/PDP/PDP_L0_0_fbuf", firmware=kmd)
    assert len(outs) == 1 and outs[0].size == 2048 and outs[0].any()


@pytest.mark.parametrize("argv_tail, message", [
    (["--config", "nv_tiny"], "nv_tiny"),
    (["--firmware", "/nonexistent"], "not a KMD folder"),
    (["--config", "nv_small"], "needs the BDMA, which nv_small lacks"),
])
def test_cli_bad_input_is_one_line(sw, kmd, tmp_path, capsys, argv_tail, message):
    argv = ["loadable", str(sw / "regression/flatbufs/kmd/BDMA/BDMA_L0_0_fbuf"),
            "--firmware", str(kmd), "-o", str(tmp_path / "o"), *argv_tail]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_firmware_compile_error_is_one_line(sw, kmd, tmp_path, capsys):
    broken = tmp_path / "kmd"
    shutil.copytree(kmd, broken)
    (broken / "firmware" / "broken.c").write_text("int this is not C;\n")
    argv = ["loadable", str(sw / "regression/flatbufs/kmd/BDMA/BDMA_L0_0_fbuf"),
            "--firmware", str(broken), "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "does not compile" in err and "broken.c" in err and "\n" not in err



def test_mnist_with_an_image_replays(sw, kmd, tmp_path):
    """A digit image goes in as NVIDIA's runtime converts it; the recorded run replays green."""
    out, trace = tmp_path / "out", tmp_path / "trace" / "run.cfg"
    loadable = sw / "regression/flatbufs/kmd/NN/NN_L0_0_fbuf"
    assert main(["loadable", str(loadable), "--firmware", str(kmd), "--image",
                 str(sw / "regression/images/digits/seven.pgm"), "--trace-out", str(trace),
                 "-o", str(out)]) == 0
    with_image = (out / "o_000000.dimg").read_bytes()
    assert hashlib.md5(with_image).hexdigest() != _golden(sw, "NN_L0_0")  # the image mattered
    replay = run_trace(trace.parent, "nv_full")
    assert replay.status == "pass", replay.message


def test_a_trace_with_binary_memories_replays_and_loads_them(sw, kmd, tmp_path, capsys):
    """--trace-memory bin: the memories are raw .bin files the replay loads (a changed byte
    in them changes the replay's verdict), no record text."""
    out, trace = tmp_path / "out", tmp_path / "trace" / "run.cfg"
    loadable = sw / "regression/flatbufs/kmd/NN/NN_L0_0_fbuf"
    assert main(["loadable", str(loadable), "--firmware", str(kmd), "--image",
                 str(sw / "regression/images/digits/seven.pgm"), "--trace-out", str(trace),
                 "--trace-memory", "bin", "-o", str(out)]) == 0
    files = sorted(p.name for p in trace.parent.iterdir() if p.name != "run.cfg")
    assert files and all(name.endswith(".bin") for name in files)
    assert all(f'"{name}"' in trace.read_text() for name in files)
    replay = run_trace(trace.parent, "nv_full")
    assert replay.status == "pass", replay.message
    largest = max(trace.parent.glob("*.bin"), key=lambda p: p.stat().st_size)
    data = bytearray(largest.read_bytes())
    data[len(data) // 2] ^= 0x5A  # a weight or an input byte: the network's output changes
    largest.write_bytes(bytes(data))
    assert run_trace(trace.parent, "nv_full").status == "fail"


def test_trace_memory_needs_trace_out(sw, kmd, tmp_path, capsys):
    argv = ["loadable", str(sw / "regression/flatbufs/kmd/BDMA/BDMA_L0_0_fbuf"),
            "--firmware", str(kmd), "--trace-memory", "bin", "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "--trace-memory" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_progress_lines_per_task(sw, kmd, tmp_path, capsys):
    """Not a terminal: one plain progress line per task on stderr (sim.progress)."""
    code = main(["loadable", str(sw / "regression/flatbufs/kmd/BDMA/BDMA_L0_0_fbuf"),
                 "--firmware", str(kmd), "-o", str(tmp_path / "out")])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("loadable [1/1] DLA task ")


def test_nvidia_firmware_task_that_never_interrupts_stops_with_an_error(kmd):
    m = Machine("nv_full")
    m.load(0x80000000, bytes(4096))  # an all-zero network descriptor: no operation to run
    with pytest.raises(FirmwareError, match="stalled"):
        Firmware(m, kmd).run_task([0x80000000] * 6)
