"""CDP LUT: RAM access through the registers, index corner cases, priorities."""

import numpy as np
import pytest

from sim.cdp.config import lut_params
from sim.jit import njit
from sim.machine import Machine
from sim.num.lut import HYBRID, LE_HIT, LO_HIT, OFLOW, UFLOW, lookup_int
from sim.num.lut_cdp import lookup_int_one

from .reference import lookup_table
from .test_lrn import reference_lut, registers

CFG = "NVDLA_CDP.S_LUT_ACCESS_CFG_0"
DATA = "NVDLA_CDP.S_LUT_ACCESS_DATA_0"
WRITE, READ = 1 << 17, 0
LE_ID, LO_ID = 0, 1 << 16


@pytest.mark.parametrize("table,size", [(LE_ID, 65), (LO_ID, 257)])
def test_lut_ram_write_then_read_back(table, size):
    m = Machine("nv_full")
    m.write_reg(CFG, WRITE | table)
    values = [(i * 37 + 5) & 0xFFFF for i in range(size + 5)]
    for v in values:
        m.write_reg(DATA, v)
    # the address stops at the last entry: extra writes land there
    assert m.read_reg(CFG) == size - 1
    m.write_reg(CFG, READ | table)
    got = [m.read_reg(DATA) for _ in range(size)]
    assert got == values[: size - 1] + [values[-1]]


def test_lut_ram_tables_are_separate_and_start_address_honoured():
    m = Machine("nv_small")
    m.write_reg(CFG, WRITE | LO_ID | 10)
    m.write_reg(DATA, 0x1234)
    m.write_reg(DATA, 0xFEDC)
    m.write_reg(CFG, READ | LE_ID | 10)
    assert m.read_reg(DATA) == 0  # LE untouched
    m.write_reg(CFG, READ | LO_ID | 10)
    assert [m.read_reg(DATA), m.read_reg(DATA)] == [0x1234, 0xFEDC]
    assert m.read_reg(CFG) == 12


def test_lut_ram_ignores_data_writes_in_read_mode():
    m = Machine("nv_full")
    m.write_reg(CFG, READ | LE_ID)
    m.write_reg(DATA, 0x55)
    m.write_reg(CFG, READ | LE_ID)
    assert m.read_reg(DATA) == 0


def _tables():
    le = np.arange(65, dtype=np.int64) * 100 - 3000
    lo = np.arange(257, dtype=np.int64) * -7 + 900
    return le, lo


LINEAR = dict(lut_le_start_low=1000, lut_le_end_low=1000 + (64 << 4), lut_le_index_select=4,
              lut_lo_start_low=500, lut_lo_end_low=500 + (256 << 2), lut_lo_index_select=2,
              lut_le_slope_uflow_scale=3, lut_le_slope_oflow_scale=0xfffe,
              lut_lo_slope_uflow_scale=5, lut_lo_slope_uflow_shift=1,
              lut_lo_slope_oflow_scale=9, lut_lo_slope_oflow_shift=0x1f)  # shift -1
EXPONENT = dict(LINEAR, lut_le_function=0, lut_le_index_offset=3)


@pytest.mark.parametrize("regs", [LINEAR, EXPONENT], ids=["linear", "exponent"])
@pytest.mark.parametrize("x", [
    -10, 499, 500, 501, 999, 1000, 1001, 1007, 1008, 1009, 1000 + 8, 1000 + 9, 1000 + 15,
    1000 + 16, 1500, 1000 + (64 << 4) - 1, 1000 + (64 << 4), 1000 + (64 << 4) + 123,
    500 + (256 << 2) - 1, 500 + (256 << 2), 1 << 20, 1 << 30, (1 << 36) + 7,
])
def test_lookup_corner_cases(regs, x):
    blk = registers(**regs)
    le, lo = _tables()
    value, which = lookup_int(x, le, lo, lut_params(blk, "int16"))
    assert _lookup_one(np.array([x]), le, lo, lut_params(blk, "int16")) == ([value], [which])
    ref = reference_lut(blk, le, lo, 7)
    le_v, le_k = lookup_table(ref.le, x)
    lo_v, lo_k = lookup_table(ref.lo, x)
    kinds = {("under", "under"): UFLOW, ("over", "over"): OFLOW}
    if (le_k, lo_k) in kinds:
        want = kinds[(le_k, lo_k)]
    elif (le_k == "hit") != (lo_k == "hit"):
        want = LE_HIT if le_k == "hit" else LO_HIT
    else:
        want = HYBRID
    assert which == want
    assert value == (lo_v if want == LO_HIT else le_v)


@pytest.mark.parametrize("priority,field,x", [
    ("lut_uflow_priority", UFLOW, 0),
    ("lut_oflow_priority", OFLOW, 1 << 25),
    ("lut_hybrid_priority", HYBRID, 1200),
])
def test_priorities_choose_the_table(priority, field, x):
    le, lo = _tables()
    for choose_lo in (0, 1):
        blk = registers(**dict(LINEAR, **{priority: choose_lo}))
        value, which = lookup_int(x, le, lo, lut_params(blk, "int16"))
        ref = reference_lut(blk, le, lo, 7)
        assert which == field
        table = ref.lo if choose_lo else ref.le
        assert value == lookup_table(table, x)[0]


def test_index_select_sign_follows_the_precision():
    """The C-model reads LUT_*_INDEX_SELECT as 6-bit (int8), 7-bit (int16), 8-bit (fp16)."""
    blk = registers(lut_le_index_select=0x30, lut_lo_index_select=0x50)
    assert lut_params(blk, "int8")[9:11].tolist() == [-16, 16]
    assert lut_params(blk, "int16")[9:11].tolist() == [48, -48]
    assert lut_params(blk, "fp16")[9:11].tolist() == [48, 80]


@njit
def _lookup_each(x, le, lo, p, values, outcomes):
    for i in range(x.size):
        values[i], outcomes[i] = lookup_int_one(x[i], le, lo, p)


def _lookup_one(x, le, lo, p):
    values, outcomes = np.zeros(x.size, np.int64), np.zeros(x.size, np.int64)
    _lookup_each(x, le, lo, p, values, outcomes)
    return values.tolist(), outcomes.tolist()


@pytest.mark.parametrize("seed", range(8))
def test_scalar_lookup_matches_the_array_lookup(seed):
    """lookup_int_one (the fused LRN kernel's) against lookup_int over random settings."""
    rng = np.random.default_rng(seed)
    precision = ("int8", "int16")[seed % 2]
    fields = dict(
        lut_le_function=int(rng.integers(0, 2)), lut_le_index_offset=int(rng.integers(0, 256)),
        lut_le_index_select=int(rng.integers(0, 128)),
        lut_lo_index_select=int(rng.integers(0, 128)),
        lut_uflow_priority=int(rng.integers(0, 2)), lut_oflow_priority=int(rng.integers(0, 2)),
        lut_hybrid_priority=int(rng.integers(0, 2)))
    for stem in ("le_start", "le_end", "lo_start", "lo_end"):
        fields[f"lut_{stem}_low"] = int(rng.integers(0, 1 << 20))
        fields[f"lut_{stem}_high"] = int(rng.choice([0, 0, 0x3F]))
    for t in ("le", "lo"):
        for side in ("uflow", "oflow"):
            fields[f"lut_{t}_slope_{side}_scale"] = int(rng.integers(0, 1 << 16))
            fields[f"lut_{t}_slope_{side}_shift"] = int(rng.integers(0, 32))
    p = lut_params(registers(**fields), precision)
    le, lo = rng.integers(-32768, 32768, 65), rng.integers(-32768, 32768, 257)
    x = np.concatenate([rng.integers(0, 1 << 22, 3000), rng.integers(-(1 << 34), 1 << 34, 1000)])
    values, outcomes = lookup_int(x, le, lo, p)
    assert _lookup_one(x, le, lo, p) == (values.tolist(), outcomes.tolist())
