"""A verdict needs evidence: traces that check nothing and memory files that are not memory.

Each case edits a bundled trace the way a user's file goes wrong, then runs
``nvdla-sim run`` on it: exit status 2 and one line naming the file (and line)
and the reason, never a PASS and never zeros loaded in silence.
"""

import shutil
from pathlib import Path

import pytest

from sim.cli import main

TRACES = Path(__file__).resolve().parents[2] / "traces"
CFG = "nv_small/sdp_4x5x12_bias_relu_cvt_int8"  # a .cfg trace with a record .dat input
TXN = "nv_full/bdma_copy_lines"  # an input.txn trace with hex .dat files


def _cut_before(text: str, marker: str) -> str:
    return text[: text.index(marker)]


CASES = [
    # (trace, file to change, new content (text -> text, or bytes), config, message)
    (TXN, "input.txn", "", "nv_full", "checks nothing"),
    (TXN, "input.txn", lambda t: _cut_before(t, "wait"), "nv_full", "checks nothing"),
    (TXN, "input.txn", lambda t: _cut_before(t, "wait") + "# cut mid-comm", "nv_full",
     "checks nothing"),
    (CFG, f"{CFG.split('/')[1]}.cfg", lambda t: _cut_before(t, "intr_notify"), "nv_small",
     "checks nothing"),
    (CFG, f"{CFG.split('/')[1]}.cfg", "", "nv_small", "checks nothing"),
    (TXN, "src.dat", "hello world\n", "nv_full", "src.dat: holds no data"),
    (TXN, "src.dat", "", "nv_full", "src.dat: holds no data"),
    (TXN, "src.dat", bytes(range(256)) * 2, "nv_full", "src.dat:1: binary data"),
    (CFG, f"{CFG.split('/')[1]}_in1.dat", "", "nv_small", "_in1.dat: holds no memory records"),
    (CFG, f"{CFG.split('/')[1]}_in1.dat", "hello world\n", "nv_small",
     "_in1.dat:1: not a memory record"),
]


@pytest.mark.parametrize("trace, name, content, config, message", CASES)
def test_no_evidence_is_no_verdict(tmp_path, capsys, trace, name, content, config, message):
    folder = tmp_path / "t"
    shutil.copytree(TRACES / trace, folder)
    target = folder / name
    if callable(content):
        content = content(target.read_text())
    if isinstance(content, str):
        content = content.encode()
    target.write_bytes(content)
    assert main(["run", str(folder), "--config", config]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "internal error" not in err, err


def test_regress_counts_a_trace_without_checks_as_an_error(tmp_path, capsys):
    root = tmp_path / "root" / "nv_full"
    shutil.copytree(TRACES / TXN, root / "good")
    shutil.copytree(TRACES / TXN, root / "empty")
    (root / "empty" / "input.txn").write_text("")
    assert main(["regress", str(tmp_path / "root")]) != 0
    total = capsys.readouterr().out.splitlines()[-1].split()
    assert total[:4] == ["total", "1", "0", "1"], total  # pass, fail, error
