"""The player counts a check that held without making its Check unless a judge is told of
each (TracePlayer._held): the same count either way, and a judge sees every check."""

from pathlib import Path

import pytest

from sim.trace.player import TracePlayer, find_trace_file

ROOT = Path(__file__).resolve().parents[2] / "traces" / "nv_full"


@pytest.mark.parametrize("name", ["pdp_7x9x12_3x3s2_pad_ave_int16", "wino_int16",
                                  "bdma_copy_lines"])
def test_a_judge_sees_every_check_the_count_holds(name):
    trace = find_trace_file(ROOT / name)
    seen = []
    judged = TracePlayer(trace, "nv_full", judge=seen.append)
    judged.play()
    plain = TracePlayer(trace, "nv_full")
    plain.play()
    assert plain.checks == judged.checks == len(seen) > 1
    assert all(check.failure is None for check in seen)
    assert {check.op.cmd for check in seen} - {"check_crc", "dump_mem"}  # polls/interrupts
