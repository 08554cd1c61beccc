"""Networks NVIDIA's compiler wrote (../shared/networks): each runs, and matches NVIDIA's C-model.

Every ``<config>/<name>/`` folder found there is a case: the loadable runs on
NVIDIA's firmware (the ``nvidia_kmd`` fixture) with the folder's input; where
the folder has ``expected.md5`` (the C-model's result), the md5 of output 0's
``.dimg`` must equal it, elsewhere the run must complete.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from sim.runtime import read_loadable, run_loadable_bytes
from sim.runtime.layers import LayerOutputs
from sim.trace.cfg import parse_cfg
from sim.trace.player import run_trace
from sim.trace.vocabulary import bench_problems

NETWORKS = Path(__file__).resolve().parents[2].parent / "shared" / "networks"


def _folders() -> list[Path]:
    if not NETWORKS.is_dir():
        return []
    return sorted(p.parent for p in NETWORKS.glob("*/*/*.nvdla"))


def _run(folder: Path, kmd: Path, layers=None, trace=None):
    (loadable,) = folder.glob("*.nvdla")
    inputs = {}
    if (folder / "input.bin").is_file():
        inputs[0] = (folder / "input.bin").read_bytes()
    return run_loadable_bytes(read_loadable(loadable), kmd, folder.parent.name, inputs,
                              trace, layers=layers)


@pytest.fixture(scope="module")
def kmd(nvidia_kmd):
    if not NETWORKS.is_dir():
        pytest.skip(f"{NETWORKS} is absent: no compiled networks")
    return nvidia_kmd


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_network_matches_the_c_model(kmd, folder):
    result = _run(folder, kmd)
    assert result.hw_layers > 0 and result.dimgs
    expected = folder / "expected.md5"
    if expected.is_file():
        assert hashlib.md5(result.dimgs[0]).hexdigest() == expected.read_text().split()[0]


def test_layer_outputs_cover_every_hardware_layer(kmd):
    """--layers: one cube (or more) per hardware layer, each readable and summarised."""
    folders = [f for f in _folders() if f.parent.name != "nv_full"]
    if not folders:
        pytest.skip("no int8 network in ../shared/networks")
    layers = LayerOutputs()
    smallest = min(folders, key=lambda f: (f / "input.bin").stat().st_size)
    result = _run(smallest, kmd, layers)
    assert sorted({o.layer for o in layers.outputs}) == list(range(result.hw_layers))
    for out in layers.outputs:
        assert out.array.size and f"layer {out.layer} " in out.summary()
        if out.precision == "int8":
            assert out.array.dtype == np.int8


def test_recorded_trace_is_in_nvidias_vocabulary_and_replays(kmd, tmp_path):
    """--trace-out of an nv_small network: what NVIDIA's trace tools accept (one check per
    interrupt, no reads), replaying green on the simulator."""
    folders = [f for f in _folders() if f.parent.name == "nv_small"]
    if not folders:
        pytest.skip("no nv_small network in ../shared/networks")
    smallest = min(folders, key=lambda f: next(f.glob("*.nvdla")).stat().st_size)
    trace = tmp_path / "trace" / "net.cfg"
    _run(smallest, kmd, trace=trace)
    ops = parse_cfg(trace)
    assert bench_problems(ops) == []
    assert sum(op.cmd == "check_crc" for op in ops) >= 1
    # a region is checked once the unit that writes it is done: never on the convolution's
    # CDMA or CACC interrupts, which come before its SDP has written anything
    for before, op in zip(ops, ops[1:], strict=False):
        if op.cmd == "check_crc":
            assert before.cmd == "intr_notify" and before.args[0].startswith(("SDP", "PDP", "CDP"))
    replay = run_trace(trace, "nv_small")
    assert replay.status == "pass", replay.message


# the command as a user runs it, its allocator tuned (sim.runtime.heap), which the
# in-process runs above never are; a line on stderr says keep_freed_memory ran
_COMMAND = """
import sys
from sim.runtime import heap
tune = heap.keep_freed_memory
heap.keep_freed_memory = lambda: print("tuned", tune(), file=sys.stderr) or True
from sim.cli import console
sys.argv[1:] = sys.argv[2:]
console()
"""


def test_the_command_tunes_its_allocator_and_gives_the_c_models_bytes(kmd, tmp_path):
    import os
    import subprocess
    import sys

    folders = [f for f in _folders() if (f / "expected.md5").is_file()]
    if not folders:
        pytest.skip("no network with expected.md5 in ../shared/networks")
    folder = min(folders, key=lambda f: next(f.glob("*.nvdla")).stat().st_size)
    (loadable,) = folder.glob("*.nvdla")
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run(
        [sys.executable, "-c", _COMMAND, "-", "loadable", str(loadable), "--firmware", str(kmd),
         "--config", folder.parent.name, "--input", str(folder / "input.bin"),
         "-o", str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "tuned" in run.stderr
    dimg = (tmp_path / "out" / "o_000000.dimg").read_bytes()
    assert hashlib.md5(dimg).hexdigest() == (folder / "expected.md5").read_text().split()[0]


def test_a_run_inside_a_program_leaves_its_allocator_alone(kmd, tmp_path, monkeypatch):
    from sim.cli import main
    from sim.runtime import heap

    def refuse():
        raise AssertionError("the allocator tuned inside a program that goes on")

    monkeypatch.setattr(heap, "keep_freed_memory", refuse)
    folder = min(_folders(), key=lambda f: next(f.glob("*.nvdla")).stat().st_size)
    (loadable,) = folder.glob("*.nvdla")
    args = ["loadable", str(loadable), "--firmware", str(kmd), "--config", folder.parent.name,
            "-o", str(tmp_path / "out")]
    if (folder / "input.bin").is_file():
        args += ["--input", str(folder / "input.bin")]
    assert main(args) == 0
