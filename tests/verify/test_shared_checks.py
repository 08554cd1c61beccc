"""sim.diff plays a trace through the player's own checks: what a failing check says is
written once (sim/trace/player.py), whether it stops the trace (run) or is kept (diff)."""

import shutil

from sim.diff.simulate import simulate
from sim.memfiles import read_hex_dat
from sim.trace import txn
from sim.trace.ops import PollReg
from sim.trace.player import run_trace

from .conftest import EXAMPLES

BDMA = EXAMPLES / "nv_full" / "bdma_copy_lines"


def _copy(tmp_path):
    folder = tmp_path / "nv_full" / "t"
    shutil.copytree(BDMA, folder)
    return folder


def test_a_failing_register_check_reads_the_same_in_run_and_diff(tmp_path):
    folder = _copy(tmp_path)
    trace = folder / "input.txn"
    ops = txn.parse(trace.read_text(), comments=True)
    ops = [PollReg(op.reg, op.mask, 0, note=op.note) if isinstance(op, PollReg) else op
           for op in ops]
    trace.write_text(txn.format(ops))
    result = run_trace(folder)
    assert result.status == "fail" and "input.txn:" in result.message
    sim = simulate(folder)
    assert sim.notes == [result.message]
    assert [r.trace_agrees for r in sim.regions] == [True]


def test_a_failing_memory_check_is_a_region_the_trace_disagrees_with(tmp_path):
    folder = _copy(tmp_path)
    golden = bytearray(read_hex_dat(folder / "dst.dat"))
    golden[7] ^= 0x01
    text = (folder / "dst.dat").read_text().split("\n")
    first = text[0].split()
    first[7] = f"0x{golden[7]:02x}"
    text[0] = " ".join(first)
    (folder / "dst.dat").write_text("\n".join(text))
    result = run_trace(folder)
    assert result.status == "fail" and "memory differs from dst.dat at 0x80100007" \
        in result.message
    sim = simulate(folder)
    (region,) = sim.regions
    assert not region.trace_agrees and region.golden == bytes(golden)
    assert region.simulated[7] != golden[7] and sim.notes == []
