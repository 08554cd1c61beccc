"""PDP datapath (sim.pdp.pooling) against the independent references."""

import zlib

import numpy as np
import pytest

from sim.pdp import pooling
from sim.pdp.pooling import AVERAGE, FP16, INT8, INT16, MAX, MIN, PoolConfig, pool_split

from .reference import fp17, out_size, pool_float, pool_int

METHOD = {"avg": AVERAGE, "max": MAX, "min": MIN}


def run(x, prec, method, k, s, pads, pad_values=(0,) * 7, recip=(0x10000, 0x10000)):
    kw, kh = k
    C, H, W = x.shape
    cfg = PoolConfig(precision=prec, method=METHOD[method], kernel_width=kw, kernel_height=kh,
                     stride_width=s[0], stride_height=s[1], pad_top=pads[2], pad_bottom=pads[3],
                     pad_values=tuple(pad_values), recip_width=recip[0], recip_height=recip[1])
    wout = out_size(W, kw, s[0], pads[0], pads[1])
    out = np.zeros((C, out_size(H, kh, s[1], pads[2], pads[3]), wout), dtype=np.int64)
    pool_split(x.astype(np.int64), out, 0, wout, cfg, pads[0])
    return out


def pad_registers(value, bits=19):
    return [(n * value) & ((1 << bits) - 1) for n in range(1, 8)]


INT_CASES = [
    # precision, method, kernel (w, h), stride (w, h), pads (l, r, t, b), pad value
    (INT8, "max", (3, 3), (2, 2), (1, 1, 1, 1), 0),
    (INT8, "min", (2, 4), (1, 3), (0, 1, 2, 0), 0),
    (INT8, "avg", (3, 3), (1, 1), (0, 0, 0, 0), 0),
    (INT8, "avg", (3, 2), (2, 1), (2, 1, 1, 1), -5),
    (INT8, "avg", (8, 8), (8, 8), (7, 7, 7, 7), 9),
    (INT8, "avg", (1, 7), (1, 2), (0, 0, 6, 3), -128),
    (INT16, "max", (5, 1), (3, 1), (2, 2, 0, 0), 0),
    (INT16, "avg", (4, 3), (2, 3), (3, 1, 2, 2), -1234),
    (INT16, "avg", (2, 2), (2, 2), (1, 1, 1, 1), 32767),
]


@pytest.mark.parametrize("prec, method, k, s, pads, value", INT_CASES)
def test_integer_pooling_matches_reference(prec, method, k, s, pads, value):
    # a seed stable across runs (hash() of a str is salted per process)
    rng = np.random.default_rng(zlib.crc32(repr((prec, method, k, s, pads)).encode()))
    lo, hi = (-128, 128) if prec == INT8 else (-32768, 32768)
    x = rng.integers(lo, hi, size=(5, 9, 11))
    recip = (round(65536 / k[0]), round(65536 / k[1]))
    got = run(x, prec, method, k, s, pads, pad_registers(value), recip)
    want = pool_int(x, k, s, pads, method, value, recip, bits=8 if prec == INT8 else 16)
    assert np.array_equal(got, want)


def test_int8_average_out_of_range_does_not_saturate():
    """A sum scaled past int8 range is cut, not saturated: as NVIDIA's RTL cuts
    it (a non-negative result keeps its low 7 bits), not as the C-model's wrap
    (-4); see test_int8_average_rtl.py."""
    x = np.full((1, 2, 2), 127)
    got = run(x, INT8, "avg", (2, 2), (2, 2), (0, 0, 0, 0), recip=(0x10000, 0x10000))
    assert got[0, 0, 0] == 508 & 0x7F


def as_fp16_bits(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16).astype(np.int64)


def from_fp16_bits(bits):
    return np.asarray(bits, dtype=np.int64).astype(np.uint16).view(np.float16)


FP_CASES = [
    ("max", (3, 3), (2, 2), (1, 1, 1, 1), 0.0),
    ("min", (4, 2), (3, 1), (2, 0, 0, 1), 0.0),
    ("avg", (2, 2), (2, 2), (0, 0, 0, 0), 0.0),
    ("avg", (2, 2), (1, 1), (1, 1, 1, 1), 2.0),
    ("avg", (4, 4), (2, 3), (3, 2, 1, 3), -1.5),
    ("avg", (1, 8), (1, 4), (0, 0, 5, 2), 0.5),
]


@pytest.mark.parametrize("method, k, s, pads, value", FP_CASES)
def test_fp16_pooling_matches_exact_reference(method, k, s, pads, value):
    """Small integers and power-of-two kernels make every fp17 step exact."""
    rng = np.random.default_rng(len(FP_CASES) + k[0] * 8 + k[1])
    x = rng.integers(-16, 17, size=(4, 9, 10)).astype(np.float64)
    x[x == 0] = 0.5  # no signed zeros
    pv = [fp17(n * value) for n in range(1, 8)]
    recip = (fp17(1 / k[0]), fp17(1 / k[1])) if method == "avg" else (0, 0)
    got = run(as_fp16_bits(x), FP16, method, k, s, pads, pv, recip)
    want = pool_float(x, k, s, pads, method, value).astype(np.float16)
    assert np.array_equal(from_fp16_bits(got), want)


def test_fp16_inf_kept_by_max_and_min_saturated_by_average():
    x = np.full((3, 2, 2), 1.0)
    x[0, 0, 0] = np.inf
    x[1, 1, 1] = -np.inf
    bits = as_fp16_bits(x)
    mx = run(bits, FP16, "max", (2, 2), (2, 2), (0, 0, 0, 0))[:, 0, 0]
    mn = run(bits, FP16, "min", (2, 2), (2, 2), (0, 0, 0, 0))[:, 0, 0]
    avg = run(bits, FP16, "avg", (2, 2), (2, 2), (0, 0, 0, 0),
              recip=(fp17(0.5), fp17(0.5)))[:, 0, 0]
    assert list(mx) == [0x7C00, 0x3C00, 0x3C00]
    assert list(mn) == [0x3C00, 0xFC00, 0x3C00]
    # Inf enters the sum as the largest fp17 (+/-4292870144); the scaled
    # result overflows fp16 and saturates to +/-65504.
    assert list(avg) == [0x7BFF, 0xFBFF, 0x3C00]


def test_fp16_nan_propagates():
    x = np.full((2, 2, 2), 3.0)
    bits = as_fp16_bits(x)
    bits[0, 1, 0] = 0x7E01
    for method in ("max", "min", "avg"):
        out = run(bits, FP16, method, (2, 2), (2, 2), (0, 0, 0, 0),
                  recip=(fp17(0.5), fp17(0.5)))[:, 0, 0]
        assert (out[0] & 0x7C00) == 0x7C00 and (out[0] & 0x3FF) != 0, method
        assert out[1] == 0x4200, method


@pytest.mark.parametrize("pattern", [0x0001, 0x03FF, 0x8200, 0x0155])
def test_fp16_denormals_exact(pattern):
    bits = np.full((1, 2, 2), pattern, dtype=np.int64)
    for method in ("max", "min", "avg"):
        out = run(bits, FP16, method, (2, 2), (2, 2), (0, 0, 0, 0),
                  recip=(fp17(0.5), fp17(0.5)))
        assert out[0, 0, 0] == pattern, method
    bits[0, 0, 1] = pattern ^ 0x8000  # opposite sign
    mx = run(bits, FP16, "max", (2, 2), (2, 2), (0, 0, 0, 0))[0, 0, 0]
    assert from_fp16_bits(mx) == max(from_fp16_bits([pattern, pattern ^ 0x8000]))


@pytest.mark.parametrize("kw, padded_rows_count", [(4, True), (8, False)])
def test_fp16_average_padded_rows_scale_by_kernel_width(kw, padded_rows_count):
    """Padded rows add kernel_width * PADDING_VALUE_n, except for width 8, where
    the C-model's fp17 kernel-width table yields 0 (it reads past its end)."""
    x = np.full((1, 1, kw), 1.0)
    pv = [fp17(n * 2.0) for n in range(1, 8)]
    got = run(as_fp16_bits(x), FP16, "avg", (kw, 2), (kw, 1), (0, 0, 1, 0), pv,
              recip=(fp17(1 / kw), fp17(0.5)))
    total = kw * 1.0 + (kw * 2.0 if padded_rows_count else 0.0)
    assert from_fp16_bits(got)[0, 0, 0] == np.float16(total / (2 * kw))


@pytest.mark.parametrize("k", range(1, 9))
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_pad_counts_are_the_windows_padding_at_its_last_real_element(k, n):
    """Every window with a real element (start -k+1 .. n-1), enumerated position by
    position: its padded positions, counted on both sides, join once at its last real
    element, on the low side if it starts in the low padding; the fp16 kernel's element
    form and the integer pooling's array form agree with that."""
    from sim.pdp.pooling import _pad_counts, _pad_counts_array

    for start in range(-k + 1, n):
        window = range(start, start + k)
        real = [p for p in window if 0 <= p < n]
        padded = k - len(real)
        for ki, i in enumerate(window):
            want = (0, 0)
            if i == real[-1] and padded:
                want = (padded, 0) if start < 0 else (0, padded)
            if 0 <= i < n:
                assert _pad_counts(i, ki, k, n) == want, (start, i)
            lows, highs = _pad_counts_array(np.array([i]), ki, k, n)
            assert (int(lows[0]), int(highs[0])) == want, (start, i)


EXTREME_CASES = [  # precision, method, kernel (w, h), stride (w, h), pads (l, r, t, b)
    (INT8, "max", (3, 3), (2, 2), (1, 1, 1, 1)),
    (INT8, "min", (2, 4), (1, 3), (0, 1, 2, 0)),
    (INT8, "max", (8, 8), (8, 8), (7, 7, 7, 7)),  # windows of one real element
    (INT8, "max", (3, 2), (5, 1), (0, 4, 1, 1)),  # stride past the kernel: elements skipped
    (INT16, "min", (5, 1), (3, 1), (2, 2, 0, 0)),
    (INT16, "max", (1, 1), (1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("prec, method, k, s, pads", EXTREME_CASES)
def test_max_min_in_the_element_dtype_match_the_int64_pass(prec, method, k, s, pads):
    """Max/min pooling of int8/int16 elements stays in their dtype (padding as the dtype's
    extreme): the same values as the int64 pass, -128/-32768 and 127/32767 included."""
    rng = np.random.default_rng(zlib.crc32(repr((prec, method, k, s, pads)).encode()))
    dtype = np.int8 if prec == INT8 else np.int16
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, size=(4, 10, 13)).astype(dtype)
    x[0] = info.min
    x[1] = info.max
    kw, kh = k
    cfg = PoolConfig(precision=prec, method=METHOD[method], kernel_width=kw, kernel_height=kh,
                     stride_width=s[0], stride_height=s[1], pad_top=pads[2], pad_bottom=pads[3],
                     pad_values=(0,) * 7, recip_width=0x10000, recip_height=0x10000)
    wout = out_size(13, kw, s[0], pads[0], pads[1])
    hout = out_size(10, kh, s[1], pads[2], pads[3])
    assert pooling._extreme_int(x, cfg, pads[0], wout, hout) is not None  # the narrow path
    narrow = np.zeros((4, hout, wout), dtype=np.int64)
    pool_split(x, narrow, 0, wout, cfg, pads[0])
    assert np.array_equal(narrow, run(x, prec, method, k, s, pads))
    assert np.array_equal(narrow, pool_int(x.astype(np.int64), k, s, pads, method, 0,
                                           (0x10000, 0x10000), bits=8 if prec == INT8 else 16))


def test_max_with_a_window_of_padding_only_takes_the_int64_pass():
    """A window past the input (padding only) gets the int64 pass's fill, not the dtype's
    minimum: the narrow path declines it."""
    x = np.full((1, 2, 2), 5, np.int8)
    cfg = PoolConfig(precision=INT8, method=MAX, kernel_width=2, kernel_height=1,
                     stride_width=2, stride_height=1, pad_top=0, pad_bottom=0,
                     pad_values=(0,) * 7, recip_width=0x10000, recip_height=0x10000)
    assert pooling._extreme_int(x, cfg, 0, 2, 2) is None
    narrow = np.zeros((1, 2, 2), dtype=np.int64)
    pool_split(x, narrow, 0, 2, cfg, 0)
    wide = np.zeros((1, 2, 2), dtype=np.int64)
    pool_split(x.astype(np.int64), wide, 0, 2, cfg, 0)
    assert np.array_equal(narrow, wide)
