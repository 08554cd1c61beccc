"""SDP Y stage and LUT: operand convertors, core, EQL, LE/LO tables in exponent and linear
modes, underflow/overflow extrapolation, priorities and the LUT counters; LUT RAM access."""

import numpy as np
import pytest

from sim.machine import Machine
from sim.program.sdp import counter, put, run_sdp

from .reference import lut, out_cvt, sat, y_core, y_cvt

LE = [100 * k + 7 for k in range(65)]
LO = [-5 * k for k in range(257)]

# Config A: LE exponent from 0 (offset 2), LO linear from 1000 (select 3)
CFG_A = dict(le_function=0, le_start=0, le_index_offset=2, lo_start=1000, lo_index_select=3,
             le_end=70000, lo_end=3048, le_slope_uflow_scale=3, le_slope_uflow_shift=1,
             lo_slope_uflow_scale=1, lo_slope_uflow_shift=2, le_slope_oflow_scale=5,
             lo_slope_oflow_scale=-7, lo_slope_oflow_shift=31)
POINTS_A = [4, 6, 1016, 2, 1, 3000, 5000, 1500, 12, 700, -40, 30000, 1001, 1008, 999, 20000]
# Config B: LE overflows early (offset -55), LO linear from 0 (select 0)
CFG_B = dict(le_function=0, le_start=0, le_index_offset=0xC9, lo_start=0, lo_index_select=0,
             le_end=600, lo_end=256, le_slope_oflow_scale=2, le_slope_oflow_shift=1,
             lo_slope_oflow_scale=-3, lo_slope_oflow_shift=0, le_slope_uflow_scale=7,
             lo_slope_uflow_scale=11)
POINTS_B = [300, 1000, 100, -5, 0, 255, 256, 511, 512, 20000, 3, 64, 65, 40, 30000, -30000]
# Config C: both tables linear
CFG_C = dict(le_function=1, le_start=-100, le_index_select=2, lo_start=-1000, lo_index_select=5,
             le_end=156, lo_end=7192, le_slope_oflow_scale=1, lo_slope_oflow_scale=1,
             le_slope_uflow_scale=1, lo_slope_uflow_scale=2)
POINTS_C = [-99, -98, 0, 155, 156, 157, 200, -100, -101, -999, -1001, 7000, 7300, 30, -500, 9]


def _signed8(v):
    return v - 256 if v >= 128 else v


@pytest.mark.parametrize("cfg,points", [(CFG_A, POINTS_A), (CFG_B, POINTS_B), (CFG_C, POINTS_C)],
                         ids=["exp+lin", "le-overflow", "linear"])
@pytest.mark.parametrize("prio", [0, 1], ids=["LE-first", "LO-first"])
def test_lut_int16(cfg, points, prio):
    cfg = {**cfg, "uflow_priority": prio, "oflow_priority": prio, "hybrid_priority": prio}
    cube = np.array(points, dtype=np.int16).reshape(16, 1, 1)
    y = dict(bypass=0, lut_bypass=0)
    out, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16", y=y, lut=cfg,
                     le=LE, lo=LO)
    ref_cfg = {**cfg, "le_index_offset": _signed8(cfg.get("le_index_offset", 0))}
    want, kinds = [], []
    for x in points:
        v, table, kind = lut(x, ref_cfg, LE, LO)
        want.append(sat(v, 16))
        kinds.append((table, kind))
    assert out.ravel().tolist() == want
    assert counter(m, "D_PERF_LUT_UFLOW_0") == sum(k == "uflow" for _, k in kinds)
    assert counter(m, "D_PERF_LUT_OFLOW_0") == sum(k == "oflow" for _, k in kinds)
    assert counter(m, "D_PERF_LUT_HYBRID_0") == sum(k == "hit" for _, k in kinds)
    from .reference import lut_index
    le_hits = sum(lut_index(x, ref_cfg["le_start"], exponent=not cfg["le_function"],
                            select=cfg.get("le_index_select", 0),
                            offset=ref_cfg["le_index_offset"])[0] == "hit" for x in points)
    lo_hits = sum(lut_index(x, cfg["lo_start"], exponent=False,
                            select=cfg.get("lo_index_select", 0), depth=257)[0] == "hit"
                  for x in points)
    assert counter(m, "D_PERF_LUT_LE_HIT_0") == le_hits
    assert counter(m, "D_PERF_LUT_LO_HIT_0") == lo_hits
    assert 0 < le_hits and 0 < lo_hits  # the case set exercises both tables


Y_CASES = [
    ("alu sum reg", dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=-1000), None),
    ("mul reg truncate", dict(bypass=0, mul_bypass=0, mul_operand=-77, truncate=3), None),
    ("prelu", dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=9, truncate=1), None),
    ("max mem cvt", dict(bypass=0, alu_bypass=0, alu_algo=0, alu_src=1, alu_cvt_bypass=0,
                         alu_cvt_offset=-3, alu_cvt_scale=5, alu_cvt_truncate=2), "alu"),
    ("min + mul mem both", dict(bypass=0, alu_bypass=0, alu_algo=1, alu_src=1, mul_bypass=0,
                                mul_src=1, mul_cvt_bypass=0, mul_cvt_offset=4,
                                mul_cvt_scale=-3, mul_cvt_truncate=1, truncate=2), "both"),
]


@pytest.mark.parametrize("name,y,mem", Y_CASES, ids=[c[0] for c in Y_CASES])
def test_y_int(name, y, mem):
    rng = np.random.default_rng(5)
    shape = (16, 2, 3)
    cube = rng.integers(-3000, 3000, size=shape).astype(np.int16)
    operands, ops = {}, {}
    if mem:
        arr = rng.integers(-300, 300, size=((2,) if mem == "both" else ()) + shape).astype(np.int16)
        operands["ew"] = dict(array=arr, use=mem, size=2, per_element=True)
        comps = arr if mem == "both" else arr[None]
        names = ("alu", "mul") if mem == "both" else (mem,)
        ops = dict(zip(names, comps, strict=True))
    out, _ = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16", y=y, operands=operands)
    full = {"alu_bypass": 1, "alu_algo": 2, "mul_bypass": 1, "prelu": 0, "truncate": 0,
            "alu_cvt_bypass": 1, "mul_cvt_bypass": 1, **y}
    want = np.zeros(shape, dtype=np.int64)
    for idx in np.ndindex(shape):
        alu, mul = full.get("alu_operand", 0), full.get("mul_operand", 0)
        if "alu" in ops:
            alu = int(ops["alu"][idx])
            if not full["alu_cvt_bypass"]:
                alu = y_cvt(alu, full["alu_cvt_offset"], full["alu_cvt_scale"],
                            full["alu_cvt_truncate"])
        if "mul" in ops:
            mul = int(ops["mul"][idx])
            if not full["mul_cvt_bypass"]:
                mul = y_cvt(mul, full["mul_cvt_offset"], full["mul_cvt_scale"],
                            full["mul_cvt_truncate"])
        v = y_core(int(cube[idx]), alu, mul, alu_bypass=full["alu_bypass"],
                   alu_algo=full["alu_algo"], mul_bypass=full["mul_bypass"],
                   prelu=full["prelu"], shift=full["truncate"])
        want[idx] = out_cvt(v, 0, 1, 0, 16)[0]
    assert np.array_equal(out.astype(np.int64), want)


@pytest.mark.parametrize("differ", [False, True])
def test_eql_mode(differ):
    """EQL compares with the EW operand: D_STATUS.STATUS_UNEQUAL, nothing is written."""
    rng = np.random.default_rng(3)
    cube = rng.integers(-100, 100, size=(16, 2, 2)).astype(np.int16)
    other = cube.copy()
    if differ:
        other[5, 1, 0] += 1
    y = dict(bypass=0, alu_bypass=0, alu_algo=3, alu_src=1)
    _, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16", y=y,
                   operands={"ew": dict(array=other, use="alu", size=2, per_element=True)},
                   go=False)
    m.write_reg("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0", 0x9000_0000)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.run()
    assert counter(m, "D_STATUS_0") == int(differ)
    assert not m.read_array(0x9000_0000, 64).any()
    assert m.interrupt_set("SDP", 0)


def test_lut_ram_access():
    """S_LUT_ACCESS_CFG/DATA: auto-incremented writes and reads, stopping at the last entry."""
    m = Machine("nv_full")
    put(m, "NVDLA_SDP.S_LUT_ACCESS_CFG_0", lut_addr=62, lut_table_id=0, lut_access_type=1)
    for v in (0x1111, 0x2222, 0x3333, 0x4444):
        put(m, "NVDLA_SDP.S_LUT_ACCESS_DATA_0", lut_data=v)
    put(m, "NVDLA_SDP.S_LUT_ACCESS_CFG_0", lut_addr=250, lut_table_id=1, lut_access_type=1)
    for v in range(10):
        put(m, "NVDLA_SDP.S_LUT_ACCESS_DATA_0", lut_data=v + 1)
    put(m, "NVDLA_SDP.S_LUT_ACCESS_CFG_0", lut_addr=61, lut_table_id=0, lut_access_type=0)
    got = [m.read_reg("NVDLA_SDP.S_LUT_ACCESS_DATA_0") for _ in range(5)]
    assert got == [0, 0x1111, 0x2222, 0x4444, 0x4444]  # entry 64 kept the last write
    put(m, "NVDLA_SDP.S_LUT_ACCESS_CFG_0", lut_addr=255, lut_table_id=1, lut_access_type=0)
    assert [m.read_reg("NVDLA_SDP.S_LUT_ACCESS_DATA_0") for _ in range(3)] == [6, 10, 10]
