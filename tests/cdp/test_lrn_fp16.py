"""fp16 LRN: the fused kernel (sim.cdp.lrn._normalize_fp_fused, the prepared lookup of
sim.num.lut_cdp) against the plain path (whole-array steps, lookup_fp), bit for bit and
counter for counter."""

import numpy as np
import pytest

from sim.cdp import lrn
from sim.cdp.config import lut_params
from sim.cdp.lrn import LrnSettings
from sim.jit import cores, njit
from sim.num.lut_cdp import lookup_fp, lookup_fp_prepared, prepare_fp

from .test_lrn import registers

F32 = {v: int(np.float32(v).view(np.uint32)) for v in (0.0, 0.5, 1.0, 3.0, 64.0, 1e4, 1e6)}
SPECIAL16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFD01, 0x0001, 0x83FF, 0x7BFF, 0xFBFF,
             0x0400, 0x3C00]


def fp16_cube(rng, rows, pixels, specials: float, huge: float) -> np.ndarray:
    """Random fp16 patterns: ordinary values of every scale, some huge (near 65504), some
    of SPECIAL16 (NaN, +-Inf, +-0, subnormals, extremes)."""
    values = rng.standard_normal((rows, pixels)) * 2.0 ** rng.integers(-14, 8, (rows, pixels))
    bits = values.astype(np.float16).view(np.uint16).copy()
    big = rng.random((rows, pixels)) < huge
    bits[big] = (rng.integers(0x7800, 0x7C00, big.sum()) | (rng.integers(0, 2, big.sum()) << 15))
    odd = rng.random((rows, pixels)) < specials
    bits[odd] = rng.choice(SPECIAL16, odd.sum())
    return bits


def random_tables(rng, specials: bool):
    le = np.float16(rng.standard_normal(65) * 4).view(np.uint16).astype(np.int64)
    lo = np.float16(rng.standard_normal(257) * 100).view(np.uint16).astype(np.int64)
    if specials:
        le[rng.integers(0, 65, 3)] = [0x7C00, 0xFE00, 0x0001]
        lo[rng.integers(0, 257, 3)] = [0xFC00, 0x7BFF, 0x8000]
    return le, lo


def slope(value: float) -> int:
    return int(np.float16(value).view(np.uint16))


LUTS = {  # LUT register fields (fp32 start/end patterns, fp16 slopes)
    "exponent": dict(lut_le_function=0, lut_le_start_low=F32[0.0], lut_le_end_low=F32[1e6],
                     lut_lo_start_low=F32[0.0], lut_lo_end_low=F32[1.0],
                     lut_lo_index_select=0x80,  # -128: everything overflows LO
                     lut_le_slope_uflow_scale=slope(-0.25), lut_le_slope_oflow_scale=slope(3.0)),
    "exponent-offset": dict(lut_le_function=0, lut_le_index_offset=0xF8,  # -8
                            lut_le_start_low=F32[0.5], lut_lo_start_low=F32[0.0],
                            lut_lo_end_low=F32[64.0], lut_lo_index_select=0xFE,  # -2
                            lut_uflow_priority=1, lut_hybrid_priority=1,
                            lut_le_slope_uflow_scale=slope(1000.0),
                            lut_lo_slope_oflow_scale=slope(-0.5)),
    "exponent-high": dict(lut_le_function=0, lut_le_index_offset=0x14,  # 20: most underflow
                          lut_le_start_low=F32[1.0], lut_lo_start_low=F32[3.0],
                          lut_lo_end_low=F32[1e4], lut_lo_index_select=5,
                          lut_oflow_priority=1, lut_le_slope_uflow_scale=slope(60000.0),
                          lut_lo_slope_uflow_scale=slope(0.001)),
    "linear": dict(lut_le_function=1, lut_le_start_low=F32[0.5], lut_le_end_low=F32[64.0],
                   lut_le_index_select=0x00, lut_lo_start_low=F32[0.0],
                   lut_lo_end_low=F32[1e4], lut_lo_index_select=6,
                   lut_hybrid_priority=1, lut_le_slope_oflow_scale=slope(-2.0),
                   lut_lo_slope_oflow_scale=slope(0.125), lut_lo_slope_uflow_scale=slope(7.0)),
    "linear-fine": dict(lut_le_function=1, lut_le_start_low=F32[0.0], lut_le_end_low=F32[1.0],
                        lut_le_index_select=0xFA,  # -6
                        lut_lo_start_low=F32[0.5], lut_lo_end_low=F32[3.0],
                        lut_lo_index_select=0xF8, lut_uflow_priority=1, lut_oflow_priority=1,
                        lut_le_slope_uflow_scale=slope(0.5), lut_le_slope_oflow_scale=0x7C00,
                        lut_lo_slope_oflow_scale=0xFE00),  # Inf and NaN slopes
}

# window, (channels, padded rows), pixels, sqsum bypass, mul bypass, nan to zero, LUT,
# specials share, huge share, threads
CASES = [
    (3, (16, 16), 150, False, False, False, "exponent", 0.02, 0.01, 1),
    (5, (13, 16), 200, False, False, False, "exponent", 0.05, 0.05, 2),
    (7, (9, 16), 70, False, False, True, "exponent-offset", 0.1, 0.02, 1),
    (9, (32, 32), 130, False, False, False, "exponent-high", 0.02, 0.2, 2),
    (5, (1, 16), 64, False, False, False, "linear", 0.05, 0.01, 1),
    (9, (7, 16), 300, False, False, True, "linear-fine", 0.05, 0.05, 2),
    (3, (16, 16), 90, True, False, False, "linear", 0.1, 0.05, 1),
    (5, (20, 32), 129, False, True, False, "exponent-offset", 0.1, 0.05, 2),
    (7, (16, 16), 65, True, True, True, "linear-fine", 0.1, 0.1, 1),
    (3, (5, 16), 257, True, True, False, "exponent", 0.2, 0.1, 2),
]


@pytest.mark.parametrize("case", CASES, ids=[f"w{c[0]}-{c[6]}-{i}" for i, c in enumerate(CASES)])
def test_fused_fp16_matches_plain_path(case, monkeypatch):
    window, (channels, rows), pixels, sq_bp, mul_bp, nan0, name, specials, huge, threads = case
    rng = np.random.default_rng(window * 101 + rows + pixels)
    x = fp16_cube(rng, rows, pixels, specials, huge)
    le, lo = random_tables(rng, specials=threads == 2)
    params = lut_params(registers(**LUTS[name]), "fp16")
    settings = LrnSettings("fp16", window, sq_bp, mul_bp, nan0)
    # 2 threads: pixel slices of a few blocks each; 1: one slice
    monkeypatch.setattr(lrn, "FP_CHUNK", 40 if threads == 2 else 1 << 30)
    calls = []
    real = lrn._lrn_fp_pixels
    monkeypatch.setattr(lrn, "_lrn_fp_pixels", lambda *a: calls.append(a[-1]) or real(*a))
    got, got_counters = lrn.normalize(x, channels, settings, le, lo, params)
    assert len(calls) == (1 if threads == 1 else min(2, cores())), calls
    want, want_counters = lrn._normalize_plain(x, channels, settings, le, lo, params)
    np.testing.assert_array_equal(got.astype(np.int64), want)
    assert got_counters == want_counters
    lut_counts = [v for k, v in want_counters.items() if "LUT" in k]
    assert sum(lut_counts) == x.size


def test_cases_reach_every_counter():
    """The cases above are worth comparing: between them every LUT outcome, NaN/Inf
    input and NaN output counter is nonzero."""
    seen = {}
    for window, (channels, rows), pixels, sq_bp, mul_bp, nan0, name, specials, huge, threads \
            in CASES:
        rng = np.random.default_rng(window * 101 + rows + pixels)
        x = fp16_cube(rng, rows, pixels, specials, huge)
        le, lo = random_tables(rng, specials=threads == 2)
        _, counters = lrn.normalize(x, channels, LrnSettings("fp16", window, sq_bp, mul_bp, nan0),
                                    le, lo, lut_params(registers(**LUTS[name]), "fp16"))
        for k, v in counters.items():
            seen[k] = seen.get(k, 0) + v
    assert all(v > 0 for k, v in seen.items() if k != "D_OUT_SATURATION_0"), seen


@njit
def _both_lookups(xs, le, lo, p, consts, bases, steps, out):
    for i in range(xs.size):
        v, w = lookup_fp(xs[i], le, lo, p)
        pv, pw = lookup_fp_prepared(xs[i], consts, bases, steps)
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = v, w, pv, pw


@pytest.mark.parametrize("name", sorted(LUTS))
def test_prepared_lookup_matches_lookup_fp(name):
    """Every fp32 square sum, specials included (NaN, +-Inf, +-0, denormals, negatives)."""
    rng = np.random.default_rng(len(name))
    xs = np.concatenate([
        rng.integers(0, 1 << 32, 20000),
        np.float32(rng.random(20000) * 2.0 ** rng.integers(-30, 40, 20000)).view(np.uint32),
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x007FFFFF,
         F32[0.5], F32[1.0], F32[64.0], F32[1e4]],
    ]).astype(np.int64)
    le, lo = random_tables(rng, specials=True)
    p = lut_params(registers(**LUTS[name]), "fp16")
    out = np.zeros((xs.size, 4), np.int64)
    _both_lookups(xs, le, lo, p, *prepare_fp(le, lo, p), out)
    np.testing.assert_array_equal(out[:, 2:], out[:, :2])
    assert len(np.unique(out[:, 1])) >= 2
