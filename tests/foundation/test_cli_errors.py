"""Bad input to every command: one line naming what is wrong, exit 2, never an internal error.

Each case: the files it needs (written into a fresh folder), the command line,
the exit status and a pattern the one-line error must hold.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from sim.cli import main

REPO = Path(__file__).resolve().parents[2]
SDP_TRACE = REPO / "traces/nv_small/sdp_4x5x12_bias_relu_cvt_int8"
SPEC = REPO / "examples/specs/sdp_int8.toml"


def _spec_with(line: str) -> str:
    return f'config = "nv_small"\n{line}\n[[layer]]\nunit = "sdp"\ninput = [8, 4, 4]\n'


CASES = [
    # (id, files {name: text | array}, argv ({d}: the folder), exit, pattern)
    ("spec seed text", {"s.toml": _spec_with('seed = "abc"')}, ["gen", "{d}/s.toml", "-o",
     "{d}/out"], 2, r"s\.toml: seed = 'abc': a seed is a whole number >= 0"),
    ("spec seed negative", {"s.toml": _spec_with("seed = -1")}, ["gen", "{d}/s.toml", "-o",
     "{d}/out"], 2, r"seed = -1"),
    ("gen --seed -5", {}, ["gen", str(SPEC), "-o", "{d}/out", "--seed", "-5"], 2,
     r"--seed: -5 is below 0"),
    ("layout empty array", {"e.npy": np.zeros((0,), np.int8)},
     ["layout", "pack", "feature", "{d}/e.npy", "{d}/x.bin"], 2, r"feature shape \(0,\)"),
    ("layout int16 on nv_small", {"i.npy": np.zeros((8, 2, 2), np.int16)},
     ["layout", "pack", "feature", "{d}/i.npy", "{d}/x.bin", "--config", "nv_small"], 2,
     r"i\.npy: nv_small does not support int16"),
    ("regress bad scheduler", {}, ["regress", str(REPO / "traces"), "--scheduler",
     "notanaddress"], 2, r"--scheduler notanaddress: not a scheduler address"),
    ("regress -j 0", {}, ["regress", str(REPO / "traces"), "-j", "0"], 2, r"0 is below 1"),
    ("regress -j -3", {}, ["regress", str(REPO / "traces"), "-j", "-3"], 2, r"-3 is below 1"),
    ("run --dump-dir a file", {"f.txt": "x"}, ["run", str(SDP_TRACE), "--dump-dir",
     "{d}/f.txt"], 2, r"--dump-dir .*f\.txt: exists and is not a folder"),
    ("run --dump-dir uncreatable", {"f.txt": "x"}, ["run", str(SDP_TRACE), "--dump-dir",
     "{d}/f.txt/sub"], 2, r"--dump-dir .*cannot create the folder"),
    ("run --dump-dir holding files", {"full/mine.dat": "x"}, ["run", str(SDP_TRACE),
     "--dump-dir", "{d}/full"], 2, r"--dump-dir .*full: the folder holds files"),
    ("run error printed once", {"input.txn": ""}, ["run", "{d}", "--config", "nv_full"], 2,
     r"checks nothing"),
]


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


@pytest.mark.parametrize("files, argv, code, pattern", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_is_one_line(tmp_path, capsys, files, argv, code, pattern):
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, np.ndarray):
            np.save(tmp_path / name, content)
        else:
            (tmp_path / name).write_text(content)
    assert _exit_code([a.replace("{d}", str(tmp_path)) for a in argv]) == code
    out, err = capsys.readouterr()
    # argparse prints its usage first; the error itself is one line, the last
    lines = [ln for ln in err.splitlines() if ln.startswith("nvdla-sim")]
    assert len(lines) == 1 and re.search(pattern, lines[0]), err
    assert "internal error" not in err and not re.search(pattern, out)


@pytest.mark.parametrize("argv, note", [
    (["fp16_add", "0x7c00", "0x5800"], "IEEE 754 gives 0x7c00 (inf); NVDLA differs: an all-ones"),
    (["fp16_mul", "0x7bff", "0x7bff"], "overflow gives the largest finite value"),
    (["fp16_add", "0x0001", "0x0001"], "exponent-0 patterns are not IEEE denormals"),
    (["fp16_add", "0x3c00", "0x3c00"], None),  # IEEE and NVDLA agree: no note
    (["fp32_to_fp16", "0x3f800000"], None),
])
def test_fp_says_why_it_departs_from_ieee(capsys, argv, note):
    assert main(["fp", *argv]) == 0
    out = capsys.readouterr().out
    if note is None:
        assert "note:" not in out
    else:
        assert "\nnote: IEEE 754 gives " in out and note in out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert re.fullmatch(r"nvdla-sim \S+\n", capsys.readouterr().out)


def test_scheduler_without_the_cluster_extra_is_one_line(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    assert _exit_code(["regress", str(REPO / "traces"), "--scheduler",
                       "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "nvdla-sim: error: --scheduler needs Dask distributed: pip install " \
                  "'nvdla-sim[cluster]'"


def test_a_folder_with_both_formats_says_which_ran(tmp_path, capsys):
    folder = tmp_path / "nv_small" / "both"
    assert main(["gen", str(SPEC), "-o", str(folder), "--format", "both"]) == 0
    capsys.readouterr()
    assert main(["run", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "(ran input.txn; both.cfg not run)" in out
    # regress hands the player the folder's names its walk listed: the same note
    report = tmp_path / "report.json"
    assert main(["regress", str(tmp_path), "--json", str(report)]) == 0
    (trace,) = json.loads(report.read_text())["traces"]
    assert trace["message"].endswith("(ran input.txn; both.cfg not run)")


def test_a_closed_pipe_ends_quietly():
    import subprocess
    import sys

    run = subprocess.run(f"{sys.executable} -m sim.cli regress {REPO / 'traces'} | head -1",
                         shell=True, capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0 and "Error" not in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("argv,code,stream,text", [
    (["fp", "--help"], 0, "stdout", "usage: nvdla-sim fp"),
    (["--version"], 0, "stdout", "nvdla-sim "),
    (["nosuch"], 2, "stderr", "unknown command 'nosuch'"),
    (["loadable"], 2, "stderr", "the following arguments are required"),  # argparse's exit
])
def test_python_m_exits_with_the_commands_code_and_output(argv, code, stream, text):
    """``python -m sim.cli`` ends its process without the interpreter's teardown: the
    command's exit status and everything it printed still come out (through pipes,
    block-buffered: PYTHONUNBUFFERED would hide a lost buffer)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    run = subprocess.run([sys.executable, "-m", "sim.cli", *argv], capture_output=True,
                         text=True, cwd=REPO, env=env)
    assert run.returncode == code
    assert text in getattr(run, stream)
