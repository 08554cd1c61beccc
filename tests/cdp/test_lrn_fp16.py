"""fp16 LRN: the fused kernel (sim.cdp.lrn._normalize_fp_fused, the prepared lookup of
sim.num.lut_cdp) against the plain path (whole-array steps, lookup_fp), bit for bit and
counter for counter."""

import numpy as np
import pytest

from sim.cdp import lrn
from sim.cdp.config import lut_params
from sim.cdp.lrn import LrnSettings
from sim.jit import cores, njit
from sim.num.fpcore import fp_mul
from sim.num.lut import LO_ENTRIES
from sim.num.lut_cdp import (
    UNKNOWN_SIGN,
    UNKNOWN_VALUE,
    entry_fp,
    flat_values_fp,
    lookup_fp,
    lookup_fp_prepared,
    place_fp,
    prepare_fp,
    zero_signs_fp,
)
from sim.num.widths import FP17_EXP, FP17_FRAC

from .test_lrn import registers

F32 = {v: int(np.float32(v).view(np.uint32)) for v in (0.0, 0.5, 1.0, 3.0, 64.0, 1e4, 1e6)}
SPECIAL16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFD01, 0x0001, 0x83FF, 0x7BFF, 0xFBFF,
             0x0400, 0x3C00]


def fp16_cube(rng, rows, pixels, specials: float, huge: float, zeros: float = 0.0) -> np.ndarray:
    """Random fp16 patterns: ordinary values of every scale, some huge (near 65504), some
    of SPECIAL16 (NaN, +-Inf, +-0, subnormals, extremes), a share ``zeros`` of +-0 (ReLU
    outputs: the centres whose product the fused kernel takes from the value's sign)."""
    values = rng.standard_normal((rows, pixels)) * 2.0 ** rng.integers(-14, 8, (rows, pixels))
    bits = values.astype(np.float16).view(np.uint16).copy()
    big = rng.random((rows, pixels)) < huge
    bits[big] = (rng.integers(0x7800, 0x7C00, big.sum()) | (rng.integers(0, 2, big.sum()) << 15))
    odd = rng.random((rows, pixels)) < specials
    bits[odd] = rng.choice(SPECIAL16, odd.sum())
    zero = rng.random((rows, pixels)) < zeros
    bits[zero] = rng.integers(0, 2, zero.sum()) << 15
    return bits


def random_tables(rng, specials: bool, flat: bool = False):
    """LE and LO tables of random fp16 entries; ``specials``: a few NaN, +-Inf, extreme
    and subnormal ones; ``flat``: runs of equal entries (zero steps), +-0 entries and
    steps across zero, as the zero-centre signs (lut_cdp.zero_signs_fp) tell apart."""
    le = np.float16(rng.standard_normal(65) * 4).view(np.uint16).astype(np.int64)
    lo = np.float16(rng.standard_normal(257) * 100).view(np.uint16).astype(np.int64)
    if flat:
        for table in (le, lo):
            for at in rng.integers(0, table.size - 4, table.size // 8):
                table[at:at + rng.integers(2, 5)] = table[at]
            table[rng.integers(0, table.size, 4)] = [0x0000, 0x8000, 0x0000, 0x8000]
            table[0], table[-1] = rng.choice([0x0000, 0x8000, 0x3C00, 0xBC00], 2)
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
    "exponent-flat": dict(lut_le_function=0, lut_le_start_low=F32[0.0],  # AlexNet's shape:
                          lut_le_end_low=F32[64.0], lut_lo_start_low=1,  # zero slopes
                          lut_lo_end_low=1, lut_lo_index_select=0x80,
                          lut_le_slope_oflow_scale=0x8000),  # -0
    "linear-flat": dict(lut_le_function=1, lut_le_start_low=F32[0.5], lut_le_end_low=F32[64.0],
                        # a NaN start whose low bits survive in fp17 (0x7FC00000 would
                        # narrow to the Inf pattern, and 0 * Inf is 0)
                        lut_le_index_select=0x00, lut_lo_start_low=0x7FC00001,
                        lut_lo_end_low=F32[1e4], lut_lo_index_select=6, lut_uflow_priority=1,
                        lut_oflow_priority=1, lut_le_slope_uflow_scale=0x8000,
                        lut_lo_slope_uflow_scale=0x8000),
}

# window, (channels, padded rows), pixels, sqsum bypass, mul bypass, nan to zero, LUT,
# specials share, huge share, threads, zeros share, flat tables
CASES = [
    (3, (16, 16), 150, False, False, False, "exponent", 0.02, 0.01, 1, 0.0, False),
    (5, (13, 16), 200, False, False, False, "exponent", 0.05, 0.05, 2, 0.0, False),
    (7, (9, 16), 70, False, False, True, "exponent-offset", 0.1, 0.02, 1, 0.0, False),
    (9, (32, 32), 130, False, False, False, "exponent-high", 0.02, 0.2, 2, 0.0, False),
    (5, (1, 16), 64, False, False, False, "linear", 0.05, 0.01, 1, 0.0, False),
    (9, (7, 16), 300, False, False, True, "linear-fine", 0.05, 0.05, 2, 0.0, False),
    (3, (16, 16), 90, True, False, False, "linear", 0.1, 0.05, 1, 0.0, False),
    (5, (20, 32), 129, False, True, False, "exponent-offset", 0.1, 0.05, 2, 0.0, False),
    (7, (16, 16), 65, True, True, True, "linear-fine", 0.1, 0.1, 1, 0.0, False),
    (3, (5, 16), 257, True, True, False, "exponent", 0.2, 0.1, 2, 0.0, False),
    # +-0 centres (half the elements, as after a ReLU), tables and slopes that make the
    # value's sign known, unknown, NaN or Inf
    (5, (16, 16), 200, False, False, False, "exponent-flat", 0.02, 0.01, 1, 0.5, True),
    (5, (13, 16), 150, False, False, True, "exponent-flat", 0.1, 0.05, 2, 0.5, True),
    (3, (16, 16), 130, False, False, False, "linear-flat", 0.05, 0.05, 2, 0.6, True),
    (7, (9, 16), 100, False, False, False, "linear", 0.05, 0.05, 2, 0.5, True),
    (9, (16, 16), 70, False, False, False, "exponent-offset", 0.05, 0.1, 1, 0.5, True),
    (5, (16, 16), 90, False, False, False, "exponent-high", 0.05, 0.1, 2, 0.5, False),
    (3, (16, 16), 90, True, False, False, "linear-fine", 0.05, 0.05, 2, 0.5, True),
    (5, (16, 16), 90, False, True, False, "exponent-flat", 0.05, 0.05, 2, 0.5, True),
]


@pytest.mark.parametrize("case", CASES, ids=[f"w{c[0]}-{c[6]}-{i}" for i, c in enumerate(CASES)])
def test_fused_fp16_matches_plain_path(case, monkeypatch):
    (window, (channels, rows), pixels, sq_bp, mul_bp, nan0, name, specials, huge, threads,
     zeros, flat) = case
    rng = np.random.default_rng(window * 101 + rows + pixels)
    x = fp16_cube(rng, rows, pixels, specials, huge, zeros)
    le, lo = random_tables(rng, specials=threads == 2, flat=flat)
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
    for (window, (channels, rows), pixels, sq_bp, mul_bp, nan0, name, specials, huge, threads,
         zeros, flat) in CASES:
        rng = np.random.default_rng(window * 101 + rows + pixels)
        x = fp16_cube(rng, rows, pixels, specials, huge, zeros)
        le, lo = random_tables(rng, specials=threads == 2, flat=flat)
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


@njit
def _zero_products(xs, consts, bases, steps, signs, flat, out):
    """Per sum: the sign zero_signs_fp claims (or UNKNOWN_SIGN; also for a NaN sum off the
    table's entries, as the kernel asks), fp_mul of +0 and -0 by the real value, the value
    flat_values_fp claims (or UNKNOWN_VALUE, likewise) and the real value."""
    for i in range(xs.size):
        value, _ = lookup_fp_prepared(xs[i], consts, bases, steps)
        use_lo, _, kind, index, _, _ = place_fp(xs[i], consts)
        at = entry_fp(use_lo, kind, index)
        sign = signs[use_lo, at if kind == 2 else LO_ENTRIES + kind]
        claimed = flat[use_lo, kind] if kind != 2 else UNKNOWN_VALUE
        if kind != 2 and (xs[i] & 0x7FFFFFFF) > 0x7F800000:
            sign, claimed = UNKNOWN_SIGN, UNKNOWN_VALUE
        out[i, 0] = sign
        out[i, 3], out[i, 4] = claimed, value
        out[i, 1] = fp_mul(0, value, FP17_EXP, FP17_FRAC)
        out[i, 2] = fp_mul(1 << 16, value, FP17_EXP, FP17_FRAC)


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("name", sorted(LUTS))
def test_zero_centre_signs_are_the_products(name, flat):
    _check_shortcuts(name, flat)


def _check_shortcuts(name: str, flat: bool) -> int:
    """Wherever zero_signs_fp knows the LUT value's sign, +-0 times the value is that
    signed zero, and wherever flat_values_fp knows the value it is the value (the fused
    kernel's shortcuts), over every kind of fp32 square sum."""
    rng = np.random.default_rng(len(name) + 7 * flat)
    xs = np.concatenate([
        rng.integers(0, 1 << 32, 20000),
        np.float32(rng.random(40000) * 2.0 ** rng.integers(-30, 40, 40000)).view(np.uint32),
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x007FFFFF],
    ]).astype(np.int64)
    le, lo = random_tables(rng, specials=True, flat=flat)
    prepared = prepare_fp(le, lo, lut_params(registers(**LUTS[name]), "fp16"))
    signs = zero_signs_fp(prepared)
    out = np.zeros((xs.size, 5), np.int64)
    _zero_products(xs, *prepared, signs, flat_values_fp(prepared), out)
    known = out[:, 0] != UNKNOWN_SIGN
    np.testing.assert_array_equal(out[known, 1], out[known, 0] << 16)
    np.testing.assert_array_equal(out[known, 2], (out[known, 0] ^ 1) << 16)
    assert known.sum() > xs.size // 20  # the shortcut is taken
    level = out[:, 3] != UNKNOWN_VALUE
    np.testing.assert_array_equal(out[level, 3], out[level, 4])
    return int(level.sum())  # sums with a flat value


def test_flat_values_are_taken():
    """The LUTs with zero slopes make flat_values_fp's shortcut matter (linear-flat's LO
    start is a NaN, so only its LE table is flat)."""
    taken = {(name, flat): _check_shortcuts(name, flat) for name in
             ("exponent-flat", "linear-flat", "linear-fine") for flat in (False, True)}
    assert all(taken[name, False] + taken[name, True] > 1000 for name, _ in taken), taken


def test_zero_signs_refuse_what_they_cannot_know():
    """NaN, Inf and zero entries, steps across zero larger than their base, and non-zero,
    NaN or Inf slopes leave the sign unknown; equal entries and zero slopes do not."""
    nan, inf, one, two, zero, minus_zero = 0x7E00, 0x7C00, 0x3C00, 0x4000, 0x0000, 0x8000
    minus_two, minus_one = 0xC000, 0xBC00
    le = np.full(65, one, np.int64)
    le[1:9] = [nan, inf, zero, minus_zero, two, minus_two, minus_one, one]
    lo = np.full(257, minus_two, np.int64)
    p = lut_params(registers(lut_le_function=1, lut_le_slope_uflow_scale=0x8000,
                             lut_le_slope_oflow_scale=0x3C00, lut_lo_slope_uflow_scale=0x7C00,
                             lut_lo_slope_oflow_scale=0x7E00), "fp16")
    prepared = prepare_fp(le, lo, p)
    signs = zero_signs_fp(prepared)
    u = UNKNOWN_SIGN
    assert UNKNOWN_VALUE == u  # (the layout below)
    np.testing.assert_array_equal(flat_values_fp(prepared), [[prepared[1][0, 0], u], [u, u]])
    # entry 0 -> 1 steps to NaN; 1 NaN; 2 Inf; 3, 4 zeros; 5: 2 -> -2 crosses zero; 6: -2 ->
    # -1, a smaller step back; 7: -1 -> 1 crosses; 8, 9: ones
    np.testing.assert_array_equal(signs[0, :10], [u, u, u, u, u, u, 1, u, 0, 0])
    assert (signs[1, :256] == 1).all() and signs[1, 256] == u
    np.testing.assert_array_equal(signs[:, LO_ENTRIES:], [[0, u], [u, u]])
