"""fp32 add/multiply and fp16 <-> fp32 in the processor's IEEE arithmetic equal NVDLA's rules.

:mod:`sim.num.vector_fp` computes these in hardware float32 wherever IEEE and
NVDLA agree and by the rules elsewhere; each case compares the whole function
with the rules applied to every element, over operands crowded at the
boundaries (underflow, overflow, zeros, denormals, Inf, NaN, cancellation).
"""

import numpy as np
import pytest

from sim.num import vector_fp as fp

FP32 = fp.FP32


def fp32_patterns(rng, n: int, exponents) -> np.ndarray:
    sign = rng.integers(0, 2, n).astype(np.int64) << 31
    mant = rng.integers(0, 1 << 23, n).astype(np.int64)
    mant[rng.random(n) < 0.1] = 0
    return sign | (rng.choice(exponents, n).astype(np.int64) << 23) | mant


EDGES = [0, 1, 2, 3, 60, 61, 62, 63, 64, 65, 66, 100, 126, 127, 128, 190, 191, 192, 193, 252,
         253, 254, 255]


@pytest.mark.parametrize("seed", range(3))
def test_multiply_matches_the_rules(seed):
    rng = np.random.default_rng(seed)
    a = fp32_patterns(rng, 200_000, EDGES)
    b = fp32_patterns(rng, 200_000, EDGES)
    assert np.array_equal(fp.fp_mul(a, b, *FP32), fp.fp_mul_rules(a, b, *FP32))


@pytest.mark.parametrize("seed", range(3))
def test_add_matches_the_rules(seed):
    rng = np.random.default_rng(seed)
    a = fp32_patterns(rng, 200_000, EDGES)
    b = fp32_patterns(rng, 200_000, EDGES)
    near = rng.random(a.size) < 0.3  # near-cancellation: b close to -a
    b[near] = (a[near] ^ (1 << 31)) + rng.integers(-3, 4, near.sum())
    b &= 0xFFFFFFFF
    assert np.array_equal(fp.fp_add(a, b, *FP32), fp.fp_add_rules(a, b, *FP32))
    assert np.array_equal(fp.fp_sub(a, b, *FP32), fp.fp_add_rules(a, b ^ (1 << 31), *FP32))


def test_zero_sums_take_the_first_operands_sign():
    """x + -x and sums of signed zeros: IEEE and NVDLA differ in the sign of some."""
    values = [0, 0x00800000, 0x3F800000, 0x7F7FFFFF, 0x12345678]
    pats = np.array([v | s for v in values for s in (0, 1 << 31)], np.int64)
    a, b = np.meshgrid(pats, pats)
    a, b = a.ravel(), b.ravel()
    got = fp.fp_add(a, b, *FP32)
    assert np.array_equal(got, fp.fp_add_rules(a, b, *FP32))
    cancel = (a ^ b) == (1 << 31)
    assert np.array_equal(got[cancel], a[cancel] & (1 << 31))  # a zero with a's sign


def test_scalar_and_broadcast_operands():
    a = np.arange(0x3F800000, 0x3F800000 + 12, dtype=np.int64).reshape(3, 4)
    for b in (0x40000000, np.int64(0x7F7FFFFF), np.array([[0x00800001], [0], [0xFF800000]])):
        assert np.array_equal(fp.fp_mul(a, b, *FP32), fp.fp_mul_rules(a, b, *FP32))
        assert np.array_equal(fp.fp_add(a, b, *FP32), fp.fp_add_rules(a, b, *FP32))
    assert int(fp.fp_mul(0x3F800000, 0x40000000, *FP32)) == 0x40000000


def test_fp16_to_fp32_matches_the_rules_on_every_pattern():
    bits = np.arange(1 << 16, dtype=np.int64)
    assert np.array_equal(fp.fp16_to_fp32(bits), fp.fp_widen(bits, 5, 10, 8, 23, True))


@pytest.mark.parametrize("seed", range(2))
def test_fp32_to_fp16_matches_the_rules(seed):
    rng = np.random.default_rng(seed)
    x = fp32_patterns(rng, 300_000, list(range(95, 145)) + [0, 1, 254, 255])
    ties = rng.random(x.size) < 0.2  # exactly halfway between two fp16 values
    x[ties] = (x[ties] & ~0x1FFF) | 0x1000
    assert np.array_equal(fp.fp32_to_fp16(x), fp.fp_narrow(x, 8, 23, 5, 10, True))


def f32(x: float) -> int:
    return int(np.array(x, np.float32).view(np.uint32))


@pytest.mark.parametrize("a,b", [
    (2.0 ** -63 * (1 + 2.0 ** -12), 2.0 ** -63 * (1 - 2.0 ** -12)),  # IEEE rounds up to 2**-126
    (2.0 ** -63, 2.0 ** -63),                                         # exactly 2**-126
    (2.0 ** 64 * (2 - 2.0 ** -23), 2.0 ** 63 * (2 - 2.0 ** -23)),     # overflow
])
def test_multiply_at_the_boundaries(a, b):
    a, b = np.int64(f32(a)), np.int64(f32(b))
    assert int(fp.fp_mul(a, b, *FP32)) == int(fp.fp_mul_rules(a, b, *FP32))


def test_the_underflow_boundary_is_where_ieee_and_nvdla_part():
    """Just below 2**-126 IEEE rounds up to the smallest normal; NVDLA flushes to zero."""
    a, b = f32(2.0 ** -63 * (1 + 2.0 ** -12)), f32(2.0 ** -63 * (1 - 2.0 ** -12))
    ieee = int((np.array([a], np.uint32).view(np.float32) *
                np.array([b], np.uint32).view(np.float32)).view(np.uint32)[0])
    assert ieee == 0x00800000
    assert int(fp.fp_mul(a, b, *FP32)) == 0


@pytest.mark.parametrize("want_max", [True, False])
def test_ieee_max_and_min_are_the_rules_where_they_agree(want_max):
    """Alike operands (normal or zero), equal ones and zeros of both signs among them: the
    IEEE comparison gives fp_max's pattern wherever it says it agrees, and says so
    everywhere but at two zeros."""
    rng = np.random.default_rng(int(want_max))
    exponents = [0, 1, 2, 100, 126, 127, 128, 254]
    a = fp32_patterns(rng, 100_000, exponents)
    b = fp32_patterns(rng, 100_000, exponents)
    a[(a >> 23) & 0xFF == 0] &= 1 << 31  # zeros, not denormals: operands read alike
    b[(b >> 23) & 0xFF == 0] &= 1 << 31
    same = rng.random(a.size) < 0.1
    b[same] = a[same]
    got, agrees = fp.ieee_fp32_max(a.astype(np.uint32), b.astype(np.uint32), want_max)
    want = fp.fp_max(a, b, want_max, *FP32)
    assert np.array_equal(got[agrees], want[agrees])
    zeros = ((a | b) & 0x7FFFFFFF) == 0
    assert np.array_equal(~agrees, zeros)
