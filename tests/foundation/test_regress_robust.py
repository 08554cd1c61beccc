"""Regression robustness: --timeout, crashed workers, Ctrl-C leaving valid JSON/JUnit."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sim.cli import main
from sim.pool import WorkerPool

REPO = Path(__file__).resolve().parents[2]

# A BDMA trace: copies 64 bytes (fast) or, with many line/surface repeats, runs for seconds.
BDMA_TXN = """\
load_mem 0x80000000 0x40 src.dat
write_reg 0xffff1000 0x80000000
write_reg 0xffff1002 0x80001000
write_reg 0xffff1004 0x1
write_reg 0xffff1005 0x3
write_reg 0xffff1006 {lines:#x}
write_reg 0xffff1007 0x0
write_reg 0xffff1008 0x0
write_reg 0xffff1009 {surfaces:#x}
write_reg 0xffff100a 0x0
write_reg 0xffff100b 0x0
write_reg 0xffff100c 0x1
write_reg 0xffff100d 0x1
wait
"""


# nvdla-sim as a terminal starts it, Ctrl-C raising KeyboardInterrupt: a test runner started
# in the background (a shell's `cmd &`) ignores SIGINT, its children inherit that, and
# Python then leaves it ignored (as a user's background job should)
CLI_WITH_CTRL_C = [sys.executable, "-c", "import runpy, signal; "
                   "signal.signal(signal.SIGINT, signal.default_int_handler); "
                   "runpy.run_module('sim.cli', run_name='__main__', alter_sys=True)"]


def make_tree(root: Path, fast: int, slow: int) -> Path:
    """``fast`` quick traces (named first) and ``slow`` ones that run for many seconds."""
    for i in range(fast + slow):
        is_slow = i >= fast
        folder = root / "nv_full" / (f"{'b_slow' if is_slow else 'a_fast'}_{i}")
        folder.mkdir(parents=True)
        text = BDMA_TXN.format(lines=0xFFF if is_slow else 0, surfaces=0x3FF if is_slow else 0)
        (folder / "input.txn").write_text(text)
        (folder / "src.dat").write_text(" ".join(f"0x{b:02x}" for b in range(64)) + "\n")
    return root


def test_timeout_reports_an_error_and_the_regress_goes_on(tmp_path, capsys):
    root = make_tree(tmp_path / "root", fast=2, slow=1)
    code = main(["regress", str(root), "--timeout", "3", "--json", str(tmp_path / "r.json"),
                 "--junit", str(tmp_path / "r.xml")])
    assert code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (doc["passed"], doc["errors"], doc["complete"]) == (2, 1, True)
    slow = [t for t in doc["traces"] if t["status"] == "error"]
    assert slow[0]["name"] == "nv_full/b_slow_2" and "timed out" in slow[0]["message"]
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert suite.get("tests") == "3" and suite.get("errors") == "1"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_dying_worker_is_reported_and_replaced(jobs):
    pool = WorkerPool(os._exit, lambda item: (f"t{item}", "nv_full"), jobs=jobs)
    results = dict(pool.results([3, 4, 5]))
    assert sorted(results) == [0, 1, 2]
    for index, code in enumerate([3, 4, 5]):
        r = results[index]
        assert r.status == "error" and f"exit code {code}" in r.message, r.message


def test_pool_timeout_kills_only_the_slow_item():
    pool = WorkerPool(time.sleep, lambda item: (f"t{item}", "nv_full"), jobs=1, timeout=1.5)
    results = dict(pool.results([60, 0]))
    assert results[0].status == "error" and "timed out" in results[0].message
    assert results[1] is None  # time.sleep(0) ran in the replacement worker


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_leaves_valid_json_and_junit(tmp_path, jobs):
    root = make_tree(tmp_path / "root", fast=2, slow=2)
    out_json, out_xml = tmp_path / "r.json", tmp_path / "r.xml"
    proc = subprocess.Popen(
        [*CLI_WITH_CTRL_C, "regress", str(root), "-j", jobs,
         "--json", str(out_json), "--junit", str(out_xml)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the progress lines (stderr, one per finished trace) say when both fast traces are
    # done; the slow ones run for many seconds (a fixed sleep was too short under load)
    seen = []
    while not any(line.startswith("[2/") for line in seen):
        seen.append(proc.stderr.readline())
        if not seen[-1]:
            proc.kill()
            pytest.fail(f"regress ended before both fast traces were reported: {seen}")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    doc = json.loads(out_json.read_text())  # the second result was saved on the way out
    assert doc["complete"] is False and doc["passed"] == 2
    assert {t["name"] for t in doc["traces"]} >= {"nv_full/a_fast_0", "nv_full/a_fast_1"}
    suite = ET.parse(out_xml).getroot()
    assert int(suite.get("tests")) == len(doc["traces"])


def test_timeout_must_be_positive(tmp_path, capsys):
    root = make_tree(tmp_path / "root", fast=1, slow=0)
    assert main(["regress", str(root), "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_ctrl_c_during_run_keeps_the_finished_traces(tmp_path):
    root = make_tree(tmp_path / "root", fast=2, slow=1)
    out_json = tmp_path / "r.json"
    proc = subprocess.Popen(
        [*CLI_WITH_CTRL_C, "run", str(root), "--json", str(out_json)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [proc.stdout.readline(), proc.stdout.readline()]  # the two fast traces
    assert all(line.startswith("PASS") for line in lines), lines
    time.sleep(1)  # the slow trace is running
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    doc = json.loads(out_json.read_text())
    assert doc["complete"] is False and doc["passed"] == 2 and len(doc["traces"]) == 2


BUNDLED = Path(__file__).resolve().parents[2] / "traces"


@pytest.mark.parametrize("layout, passed, errors", [
    # folder (under ROOT) -> bundled trace copied there
    ({"nv_full/a": "nv_full/bdma_copy_lines", "typo/b": "nv_full/bdma_copy_lines"}, 1, 1),
    ({"nv_full/group/deep/a": "nv_full/bdma_copy_lines"}, 1, 0),  # nested: found
    ({"nv_full/a": "nv_full/bdma_copy_lines", "gen/x/empty": None}, 1, 1),  # unreadable trace
])
def test_odd_folders_are_rows_and_the_regression_goes_on(tmp_path, capsys, layout, passed,
                                                        errors):
    root = tmp_path / "root"
    for folder, source in layout.items():
        if source is None:
            (root / folder).mkdir(parents=True)
            (root / folder / "input.txn").write_bytes(b"\xff\xfe\x00garbage")
        else:
            shutil.copytree(BUNDLED / source, root / folder)
    out_json, out_xml = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["regress", str(root), "--json", str(out_json), "--junit", str(out_xml)])
    assert code == (1 if errors else 0)
    doc = json.loads(out_json.read_text())
    assert (doc["passed"], doc["errors"], doc["complete"]) == (passed, errors, True)
    cases = ET.parse(out_xml).getroot().iter("testcase")
    assert len(list(cases)) == len(layout)
    assert "internal error" not in capsys.readouterr().out
