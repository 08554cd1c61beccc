"""Integer LRN (sim.cdp.lrn.normalize) against the plain-Python reference."""

from types import SimpleNamespace

import numpy as np
import pytest

from sim.cdp import lrn
from sim.cdp.config import lut_params
from sim.cdp.lrn import LrnSettings, normalize

from .reference import Lut, Table, lrn_pixel, sext


def registers(**fields):
    """A stand-in for a decoded NVDLA_CDP block: LUT register fields by name."""
    base = dict(
        lut_le_function=1, lut_uflow_priority=0, lut_oflow_priority=0, lut_hybrid_priority=0,
        lut_le_start_low=0, lut_le_start_high=0, lut_le_end_low=0, lut_le_end_high=0,
        lut_lo_start_low=0, lut_lo_start_high=0, lut_lo_end_low=0, lut_lo_end_high=0,
        lut_le_index_offset=0, lut_le_index_select=0, lut_lo_index_select=0,
        lut_le_slope_uflow_scale=0, lut_le_slope_oflow_scale=0, lut_lo_slope_uflow_scale=0,
        lut_lo_slope_oflow_scale=0, lut_le_slope_uflow_shift=0, lut_le_slope_oflow_shift=0,
        lut_lo_slope_uflow_shift=0, lut_lo_slope_oflow_shift=0,
    )
    base.update(fields)
    return SimpleNamespace(**base)


def reference_lut(blk, le, lo, select_bits):
    def value38(stem):
        return sext((getattr(blk, f"lut_{stem}_high") << 32) | getattr(blk, f"lut_{stem}_low"), 38)

    le_t = Table(list(le), value38("le_start"), value38("le_end"),
                 sext(blk.lut_le_index_select, select_bits), blk.lut_le_function == 0,
                 sext(blk.lut_le_index_offset, 8), sext(blk.lut_le_slope_uflow_scale, 16),
                 sext(blk.lut_le_slope_uflow_shift, 5), sext(blk.lut_le_slope_oflow_scale, 16),
                 sext(blk.lut_le_slope_oflow_shift, 5))
    lo_t = Table(list(lo), value38("lo_start"), value38("lo_end"),
                 sext(blk.lut_lo_index_select, select_bits), False, 0,
                 sext(blk.lut_lo_slope_uflow_scale, 16), sext(blk.lut_lo_slope_uflow_shift, 5),
                 sext(blk.lut_lo_slope_oflow_scale, 16), sext(blk.lut_lo_slope_oflow_shift, 5))
    return Lut(le_t, lo_t, bool(blk.lut_uflow_priority), bool(blk.lut_oflow_priority),
               bool(blk.lut_hybrid_priority))


def run_both(x, channels, settings, blk, le, lo):
    bits = 8 if settings.precision == "int8" else 16
    out, counters = normalize(x, channels, settings, le, lo, lut_params(blk, settings.precision))
    ref = reference_lut(blk, le, lo, 6 if bits == 8 else 7)
    expect = np.zeros_like(out)
    saturated = 0
    for px in range(x.shape[1]):
        col, sat = lrn_pixel([int(v) for v in x[:, px]], channels, x.shape[0], bits,
                             settings.window, ref, settings.datin, settings.datout,
                             settings.sqsum_bypass, settings.mul_bypass)
        expect[:, px] = col
        saturated += sat
    want = {"D_PERF_LUT_UFLOW_0": ref.counts["uflow"], "D_PERF_LUT_OFLOW_0": ref.counts["oflow"],
            "D_PERF_LUT_HYBRID_0": ref.counts["hybrid"],
            "D_PERF_LUT_LE_HIT_0": ref.counts["le_hit"],
            "D_PERF_LUT_LO_HIT_0": ref.counts["lo_hit"], "D_OUT_SATURATION_0": saturated}
    return out, expect, {k: counters[k] for k in want}, want


def random_tables(rng):
    le = rng.integers(-3000, 3000, 65)
    lo = rng.integers(-3000, 3000, 257)
    return le.astype(np.int64), lo.astype(np.int64)


CASES = [
    # precision, window, channels (of padded), datin, datout, LUT registers, bypasses
    ("int8", 3, (13, 16), (0, 1, 0), (0, 1, 8), dict(lut_le_index_select=6,
                                                   lut_lo_index_select=4, lut_le_end_low=4096,
                                                   lut_lo_end_low=4096), (False, False)),
    ("int8", 5, (16, 16), (0x80, 3, 1), (5, 7, 10), dict(lut_le_function=0,
                                                       lut_le_index_offset=2,
                                                       lut_lo_index_select=8,
                                                       lut_lo_start_low=100,
                                                       lut_lo_end_low=100 + (256 << 8),
                                                       lut_le_slope_uflow_scale=0xfff0,
                                                       lut_le_slope_uflow_shift=3),
     (False, False)),
    ("int8", 7, (9, 16), (3, 2, 0), (0, 1, 12), dict(lut_le_index_select=0x3c,  # -4
                                                   lut_lo_index_select=9,
                                                   lut_le_start_low=10, lut_le_end_low=26,
                                                   lut_lo_end_low=256 << 9,
                                                   lut_le_slope_oflow_scale=7,
                                                   lut_le_slope_oflow_shift=0x1e,  # -2
                                                   lut_hybrid_priority=1), (False, False)),
    ("int8", 9, (32, 32), (0, 1, 0), (0, 1, 14), dict(lut_le_index_select=12,
                                                    lut_lo_index_select=10,
                                                    lut_le_start_high=0x3f,
                                                    lut_le_start_low=0xfffff000,  # negative
                                                    lut_lo_end_low=256 << 10,
                                                    lut_uflow_priority=1,
                                                    lut_oflow_priority=1), (False, False)),
    ("int16", 3, (5, 16), (0, 1, 6), (0, 1, 14), dict(lut_le_index_select=20,
                                                    lut_lo_index_select=18,
                                                    lut_le_end_low=64 << 20,
                                                    lut_lo_end_low=256 << 18), (False, False)),
    ("int16", 5, (16, 16), (0x7fff, 1, 7), (100, 3, 12), dict(lut_le_function=0,
                                                            lut_le_index_offset=0xfe,  # -2
                                                            lut_lo_index_select=16,
                                                            lut_lo_end_low=256 << 16,
                                                            lut_lo_slope_oflow_scale=0x8000,
                                                            lut_lo_slope_oflow_shift=15),
     (False, False)),
    ("int16", 7, (20, 32), (0, 1, 8), (0, 1, 10), dict(lut_le_index_select=14,
                                                     lut_lo_index_select=12), (False, False)),
    ("int16", 9, (16, 16), (0, 1, 8), (0, 1, 8), dict(lut_le_index_select=16,
                                                     lut_lo_index_select=14,
                                                     lut_le_end_low=64 << 16), (False, False)),
    ("int8", 3, (8, 8), (0, 1, 0), (0, 1, 0), dict(lut_le_index_select=1,
                                                 lut_lo_index_select=0), (True, False)),
    ("int8", 5, (16, 16), (0, 1, 0), (0, 1, 0), dict(lut_le_index_select=10,
                                                   lut_lo_index_select=8), (False, True)),
    ("int16", 3, (16, 16), (0, 1, 4), (0, 1, 0), dict(lut_le_index_select=2,
                                                    lut_lo_index_select=3), (True, True)),
]


def take_path(monkeypatch, name):
    """Integer layers run in numpy when small (unless numba is loaded), in the fused kernel
    when large, which looks every reachable square sum up once (the memo) when the layer
    is large beside them."""
    monkeypatch.setattr(lrn, "_fused", lambda _x: name != "numpy")
    monkeypatch.setattr(lrn, "MEMO_SHARE", 0 if name == "memo" else 1 << 62)


@pytest.fixture(params=["numpy", "kernel", "memo"])
def path(request, monkeypatch):
    take_path(monkeypatch, request.param)
    return request.param


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-w{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_normalize_matches_reference(case, path):
    precision, window, (channels, padded), datin, datout, lut_regs, (sq_bp, mul_bp) = case
    rng = np.random.default_rng(window * 31 + channels)
    lo_v, hi_v = (-128, 128) if precision == "int8" else (-32768, 32768)
    x = rng.integers(lo_v, hi_v, (padded, 12)).astype(np.int64)
    le, lo = random_tables(rng)
    settings = LrnSettings(precision, window, sq_bp, mul_bp, False, datin, datout)
    out, expect, got, want = run_both(x, channels, settings, registers(**lut_regs), le, lo)
    np.testing.assert_array_equal(out, expect)
    assert got == want


def test_padding_channels_do_not_depend_on_memory(path):
    """Channels beyond the cube enter as the input offset, whatever memory holds."""
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (16, 6)).astype(np.int64)
    y = x.copy()
    y[10:] = rng.integers(-128, 128, (6, 6))
    settings = LrnSettings("int8", 9, datin=(0x17, 2, 1), datout=(0, 1, 6))
    regs = registers(lut_le_index_select=5, lut_lo_index_select=3)
    le, lo = random_tables(rng)
    a, _ = normalize(x, 10, settings, le, lo, lut_params(regs, "int8"))
    b, _ = normalize(y, 10, settings, le, lo, lut_params(regs, "int8"))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("precision,sq_bp,mul_bp", [("int8", False, False),
                                                    ("int8", True, False),
                                                    ("int16", True, True)])
def test_wide_layers_agree_on_every_path(precision, sq_bp, mul_bp, monkeypatch):
    """Rows wider than one packed outcome tally (OUTCOME_RUN pixels), every LUT outcome:
    the kernel, with and without the memo, gives numpy's outputs and counters."""
    rng = np.random.default_rng(5)
    top = 128 if precision == "int8" else 32768
    x = rng.integers(-top, top, (16, lrn.OUTCOME_RUN + 900)).astype(np.int64)
    x[:, :50] = 0  # sums of 0: underflow
    regs = registers(lut_le_index_select=6 if precision == "int8" else 14,
                     lut_lo_index_select=4 if precision == "int8" else 12,
                     lut_le_start_low=50, lut_le_end_low=50 + (64 << 6),
                     lut_lo_start_low=20, lut_lo_end_low=20 + (256 << 4),
                     lut_le_slope_oflow_scale=3, lut_lo_slope_uflow_scale=5,
                     lut_hybrid_priority=1)
    le, lo = random_tables(rng)
    settings = LrnSettings(precision, 5, sq_bp, mul_bp, datin=(0, 1, 0), datout=(0, 1, 9))
    results = {}
    for name in ("numpy", "kernel", "memo"):
        take_path(monkeypatch, name)
        results[name] = normalize(x, 14, settings, le, lo, lut_params(regs, precision))
    out, counters = results["numpy"]
    assert sum(v > 0 for k, v in counters.items() if "LUT" in k) >= 3, counters
    for name in ("kernel", "memo"):
        np.testing.assert_array_equal(results[name][0], out, err_msg=name)
        assert results[name][1] == counters, name


def test_small_integer_layers_take_the_kernel_only_once_numba_is_loaded(monkeypatch):
    """A small layer must not bring numba in (half a second: more than a small trace);
    with numba loaded by another kernel, it takes the kernel, cheaper than numpy's path."""
    from sim import jit

    small, large = np.zeros((8, 4)), np.zeros((1 << 10, 1 << 6))
    monkeypatch.setattr(jit, "_numba", None)
    assert not lrn._fused(small) and lrn._fused(large)
    monkeypatch.setattr(jit, "_numba", object())
    assert lrn._fused(small) and lrn._fused(large)
