"""The player counts a check that held without making its Check unless a judge is told of
each (TracePlayer._held): the same count either way, and a judge sees every check.  A poll
reads and steps the machine as ``_advance_until`` did, written out."""

from pathlib import Path

import pytest

from sim.errors import CheckFailed
from sim.trace.player import Check, TracePlayer, find_trace_file

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


class _Reads:
    """Records every register read of a machine: (register, value) in order."""

    def __init__(self, player):
        self.seen = []
        machine = player.machine
        read = machine.read_register

        def recorded(r):
            value = read(r)
            self.seen.append((r.full_name, value))
            return value

        machine.read_register = recorded


class _AdvancingPlayer(TracePlayer):
    """A poll as _advance_until makes it: what the player's written-out loop stands for."""

    def _op_poll_reg(self, op):
        mask, want = op.mask, op.value
        r = self._register(op, op.reg)
        read = self.machine.read_register

        def matches():
            return read(r) & mask == want & mask

        if self._advance_until(matches):
            return self._held(op)
        got = read(r) & mask
        self._judge(Check(op, f"{r.full_name} reads {got:#x} (mask {mask:#x}), "
                              f"expected {want & mask:#x}"))


LUT_POLLS = """reg_write(NVDLA_SDP.S_LUT_ACCESS_CFG_0, 0x30000);
reg_write(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x5);
reg_write(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x6);
reg_write(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x7);
reg_write(NVDLA_SDP.S_LUT_ACCESS_CFG_0, 0x10000);
poll_reg_equal(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x5);
poll_reg_equal(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x6);
poll_reg_equal(NVDLA_SDP.S_LUT_ACCESS_DATA_0, 0x6);
"""


@pytest.mark.parametrize("name", ["bdma_copy_lines", "no_wait", "lut", "never"])
def test_a_poll_reads_and_steps_as_advance_until_did(tmp_path, name):
    """The same reads, in the same order (a LUT port's read steps its address), and the
    same verdict, for polls that hold at once, after the layer the poll runs, or never."""
    if name == "no_wait":  # the poll itself runs the BDMA layer
        for path in (ROOT / "bdma_copy_lines").iterdir():
            text = path.read_text()
            if path.name == "input.txn":
                text = "".join(line for line in text.splitlines(True) if line != "wait\n")
            (tmp_path / path.name).write_text(text)
        trace = tmp_path / "input.txn"
    elif name == "lut":
        trace = tmp_path / "t.cfg"
        trace.write_text(LUT_POLLS)
    elif name == "never":
        trace = tmp_path / "t.cfg"
        trace.write_text("poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x40);\n")
    else:
        trace = find_trace_file(ROOT / name)
    outcomes = []
    for cls in (TracePlayer, _AdvancingPlayer):
        player = cls(trace, "nv_full")
        reads = _Reads(player)
        try:
            player.play()
            verdict = player.checks
        except CheckFailed as exc:
            verdict = str(exc)
        outcomes.append((reads.seen, verdict, player.machine.layers_run))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0]  # the trace did poll
