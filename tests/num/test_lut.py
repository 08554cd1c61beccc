"""sim.num.lut: the LUT RAM both units share and the table choice both lookups use
(the SDP's on arrays, ``choose_tables``; the CDP's per value, ``lut_cdp.choose_table``)."""

import numpy as np
import pytest

from sim.num.lut import (
    HYBRID,
    KIND_HIT,
    KIND_OFLOW,
    KIND_UFLOW,
    LE_ENTRIES,
    LE_HIT,
    LO_ENTRIES,
    LO_HIT,
    OFLOW,
    UFLOW,
    LutRam,
    choose_tables,
)
from sim.num.lut_cdp import _f32, _power_of_two_bits, choose_table

WRITE, LO_TABLE = 1 << 17, 1 << 16
U, O, H = KIND_UFLOW, KIND_OFLOW, KIND_HIT


# (LE kind, LO kind, priority that decides or None, outcome)
CHOICES = [
    (U, U, "uflow", UFLOW), (O, O, "oflow", OFLOW), (H, H, "hybrid", HYBRID),
    (U, O, "hybrid", HYBRID), (O, U, "hybrid", HYBRID),
    (H, U, None, LE_HIT), (H, O, None, LE_HIT), (U, H, None, LO_HIT), (O, H, None, LO_HIT),
]


@pytest.mark.parametrize("le, lo, decider, outcome", CHOICES)
@pytest.mark.parametrize("priorities", [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)])
def test_choose_table(le, lo, decider, outcome, priorities):
    use_lo, got = choose_table(le, lo, *priorities)
    want_lo = lo == H if decider is None else bool(
        priorities[("uflow", "oflow", "hybrid").index(decider)])
    assert (bool(use_lo), got) == (want_lo, outcome)
    flows = [np.array([kind == flow]) for kind in (le, lo) for flow in (U, O)]
    use_lo, got = choose_tables(*flows, *priorities)
    assert (bool(use_lo[0]), int(got[0])) == (want_lo, outcome)


@pytest.mark.parametrize("table, size", [(0, LE_ENTRIES), (LO_TABLE, LO_ENTRIES)])
@pytest.mark.parametrize("past_end", ["ignore", "clamp"])
def test_ram_writes_advance_and_stop_at_the_last_entry(table, size, past_end):
    ram = LutRam(past_end=past_end)
    ram.configure(WRITE | table | (size - 3))
    for v in (0x8001, 2, 3, 4, 5):  # the last three land on the last entry
        ram.write(v)
    ram.configure(table | (size - 3))
    assert [ram.read() for _ in range(4)] == [0x8001, 2, 5, 5]
    t = ram.lo if table else ram.le
    assert t[size - 3] == -0x7FFF  # entries are signed 16-bit values


def test_ram_past_the_table_and_cfg_readback_follow_the_settings():
    cdp = LutRam(cfg_readback="address", past_end="ignore")
    sdp = LutRam(cfg_readback="word", past_end="clamp")
    for ram in (cdp, sdp):
        ram.configure(WRITE | 100)  # LE has 65 entries
        ram.write(7)
        ram.configure(100)
    assert (cdp.read(), sdp.read()) == (0, 7)
    assert cdp.le[-1] == 0 and sdp.le[-1] == 7
    assert (cdp.read_cfg(), sdp.read_cfg()) == (100, 100)
    sdp.configure(WRITE | LO_TABLE | 5)
    assert sdp.read_cfg() == WRITE | LO_TABLE | 5


def test_register_ports():
    ram = LutRam()
    assert ram.on_write("S_LUT_ACCESS_CFG_0", WRITE | 1) is False  # the register keeps it
    assert ram.on_write("S_LUT_ACCESS_DATA_0", 0x1234) is True
    assert ram.on_write("D_OP_ENABLE_0", 1) is False
    assert ram.on_read("S_LUT_ACCESS_CFG_0") == 2
    assert ram.on_read("D_OP_ENABLE_0") is None
    ram.on_write("S_LUT_ACCESS_CFG_0", 1)
    assert ram.on_read("S_LUT_ACCESS_DATA_0") == 0x1234
    assert ram.on_read("S_LUT_ACCESS_DATA_0") == 0  # the next entry, never written


# fp32 patterns of every kind, both signs: zeros, subnormals, normals, Inf, NaNs
FP32_PATTERNS = [sign | bits for sign in (0, 1 << 31) for bits in (
    0, 1, 0x7FFFFF, 0x800000, 0x3F800000, 0x3FFFFFFF, 0x4B000001, 0x7F7FFFFF, 0x7F800000,
    0x7F800001, 0x7FC00000, 0x7FFFFFFF)]


@pytest.mark.parametrize("bits", FP32_PATTERNS)
def test_the_cdp_lookup_reads_fp32_patterns_as_ieee_does(bits):
    """``_f32`` builds the value from the fields (no bit cast through an array)."""
    want = float(np.array([bits], np.uint32).view(np.float32)[0])
    got = _f32(bits)
    assert (np.isnan(got) and np.isnan(want)) or (got == want and
                                                     np.signbit(got) == np.signbit(want))


@pytest.mark.parametrize("exponent", [-126, -125, -1, 0, 1, 64, 127])
def test_powers_of_two_as_fp32_patterns(exponent):
    want = int(np.array([2.0 ** exponent], np.float32).view(np.uint32)[0])
    assert _power_of_two_bits(exponent) == want
