"""The 48-bit CACC accumulator against an exact reference written from the design note
of :mod:`sim.num.mac` (Python fractions: the exact sum, then the documented alignment
cut-off, normalisation and rounding), and its fp32 delivery against exact rounding.

Independent of the kernels' code: no bit tricks, values and exponents only.
"""

from fractions import Fraction

import numpy as np
import pytest

from sim.jit import njit
from sim.num.mac import (
    CACC_NAN_EXP,
    MAC_NAN_EXP,
    cacc_accumulate,
    cacc_accumulate_finite,
    cacc_to_fp32,
    mac_nan_block,
)

SCALE = 63 + 38  # value = mantissa * 2**(exponent - SCALE): bias 63, point below bit 38
TOP = 1 << 39  # the 40-bit mantissa's range is [-TOP, TOP)


def floor_log2(q: Fraction) -> int:
    """The n with 2**n <= q < 2**(n + 1), for q > 0."""
    n = q.numerator.bit_length() - q.denominator.bit_length()
    return n - 1 if Fraction(2) ** n > q else n


def normal_exponent(v: Fraction) -> int:
    """The exponent at which v's mantissa lies in [2**38, 2**39) or [-2**39, -2**38)."""
    if v > 0:
        return floor_log2(v) - 38 + SCALE
    n = floor_log2(-v)
    power = Fraction(2) ** n == -v
    return n + (0 if power else 1) - 39 + SCALE  # -v in (2**38, 2**39] units


def half_away(q: Fraction) -> int:
    return int(q + Fraction(1, 2)) if q >= 0 else -int(-q + Fraction(1, 2))


def reference_add(acc_exp, acc_man, mac_exp, mac_man):
    """The design note, step by step, on exact values."""
    if mac_man == 0:
        return acc_exp, acc_man
    if acc_exp == CACC_NAN_EXP:
        return acc_exp, acc_man
    if mac_exp == MAC_NAN_EXP:
        return CACC_NAN_EXP, mac_man * 4
    block = Fraction(mac_man) * Fraction(2) ** (mac_exp - 50)  # 2 * (fp16 bias + 10 bits)
    block_exp = normal_exponent(block)
    acc = Fraction(acc_man) * Fraction(2) ** (acc_exp - SCALE)
    acc_exp = acc_exp if acc_man else 0
    larger = max(acc_exp, block_exp)
    if larger - acc_exp > 40:  # aligned more than 40 bits right: dropped
        acc = 0
    if larger - block_exp > 40:
        block = 0
    total = acc + block
    if total == 0:
        return 0, 0
    exp = max(normal_exponent(total), larger - 39)  # a left shift is at most 39
    man = half_away(total / Fraction(2) ** (exp - SCALE))
    if man == TOP:  # rounded past the largest mantissa
        man, exp = man // 2, exp + 1
    assert -TOP <= man < TOP
    return exp & 0xFF, man


def reference_fp32(exp, man) -> int:
    """The fp32 nearest the accumulator's value, ties away from zero (normal range)."""
    if exp == CACC_NAN_EXP:
        return (int(man < 0) << 31) | (0xFF << 23) | ((man >> 29) & 0x3FF)
    if man == 0:
        return 0
    v = abs(Fraction(man) * Fraction(2) ** (exp - SCALE))
    e = floor_log2(v)
    sig = half_away(v / Fraction(2) ** (e - 23))
    if sig == 1 << 24:
        sig, e = sig // 2, e + 1
    assert 1 <= e + 127 <= 254
    return (int(man < 0) << 31) | ((e + 127) << 23) | (sig - (1 << 23))


@njit
def _steps(acc_exp, acc_man, mac_exp, mac_man, chained, out):
    """Each step by cacc_accumulate (column 0, 1), by the branch-free twin (2, 3) and the
    fp32 of the result (4); ``chained``: each step adds to the previous result."""
    e, m = acc_exp[0], acc_man[0]
    for i in range(mac_man.size):
        if not chained:
            e, m = acc_exp[i], acc_man[i]
        out[i, 2], out[i, 3] = cacc_accumulate_finite(e, m, mac_exp[i], mac_man[i])
        e, m = cacc_accumulate(e, m, mac_exp[i], mac_man[i])
        out[i, 0], out[i, 1], out[i, 4] = e, m, cacc_to_fp32(e, m)


def _sext(x, bits):
    return (np.asarray(x, np.int64) << (64 - bits)) >> (64 - bits)


def _blocks(rng, n):
    """Block exponents 0..56 (4E) and 38-bit mantissas of every magnitude, edges included."""
    mac_exp = 4 * rng.integers(0, 15, n)
    mac_man = _sext(rng.integers(0, 1 << 38, n), 38) >> rng.integers(0, 38, n)
    edges = np.array([1, -1, (1 << 37) - 1, -(1 << 37), 1 << 36, -(1 << 36), -(1 << 36) - 1])
    pick = rng.random(n) < 0.1
    mac_man[pick] = rng.choice(edges, pick.sum())
    return mac_exp, mac_man


def _normalised(rng, n, exp_of_block):
    """Normalised accumulators (and -2**38, 0) at exponents around the blocks': values
    the accumulator can hold (multiples of 2**-50, as every block is, so exponent >= 51)."""
    man = rng.integers(1 << 38, 1 << 39, n) * rng.choice([-1, 1], n)
    edges = np.array([0, (1 << 39) - 1, -(1 << 39), 1 << 38, -(1 << 38), -(1 << 38) - 1])
    pick = rng.random(n) < 0.15
    man[pick] = rng.choice(edges, pick.sum())
    exp = (exp_of_block + 49 - rng.integers(-45, 46, n)).clip(51, 120)
    return exp, man


def _check(cases, chained):
    n = cases[0].size
    out = np.zeros((n, 5), np.int64)
    _steps(*cases, chained, out)
    acc_exp, acc_man, mac_exp, mac_man = (c.tolist() for c in cases)
    e, m = acc_exp[0], acc_man[0]
    for i in range(n):
        if not chained:
            e, m = acc_exp[i], acc_man[i]
        e, m = reference_add(e, m, mac_exp[i], mac_man[i])
        got = tuple(int(v) for v in out[i])
        assert got[:2] == (e, m), (i, acc_exp[i], acc_man[i], mac_exp[i], mac_man[i], got, e, m)
        if e != CACC_NAN_EXP:
            assert got[2:4] == (e, m)
        assert got[4] == reference_fp32(e, m), (e, m, got[4])


@pytest.mark.parametrize("seed", range(4))
def test_single_adds_are_the_exact_sum_rounded(seed):
    """One add onto a normalised accumulator (or -2**38 or 0): every exponent difference
    from 45 below to 45 above the block's (the 40-bit cut-off both ways), overflow,
    cancellation down to a few bits, ties and the rounding carry."""
    rng = np.random.default_rng(100 + seed)
    n = 20_000
    mac_exp, mac_man = _blocks(rng, n)
    acc_exp, acc_man = _normalised(rng, n, mac_exp)
    near = rng.random(n) < 0.2  # a block that nearly cancels the accumulator
    mac_man[near] = -(acc_man[near] >> 3) + rng.integers(-4, 5, near.sum())
    mac_exp[near] = 4 * rng.integers(1, 15, near.sum())
    acc_exp[near] = mac_exp[near] + 49 - 1  # acc_man * 2**(acc_exp - 101) = -block * 8
    _check((acc_exp, acc_man, mac_exp, mac_man), chained=False)


@pytest.mark.parametrize("seed", range(4))
def test_chains_of_adds_are_the_exact_sums_rounded(seed):
    """Long chains from zero: every state the accumulator reaches, each step exact-then-
    rounded, and each state's fp32."""
    rng = np.random.default_rng(200 + seed)
    n = 20_000
    mac_exp, mac_man = _blocks(rng, n)
    mac_exp = np.where(rng.random(n) < 0.5, mac_exp, 4 * rng.integers(9, 12, n))
    zeros = np.zeros(n, np.int64)
    _check((zeros, zeros, mac_exp, mac_man), chained=True)


def test_arbitrary_40_bit_accumulators_follow_the_same_rule():
    """Unnormalised accumulators (never produced, but the rule covers them) at any
    exponent: the same exact-then-rounded sum, exponents wrapping in 8 bits."""
    rng = np.random.default_rng(300)
    n = 20_000
    mac_exp, mac_man = _blocks(rng, n)
    acc_man = _sext(rng.integers(0, 1 << 40, n), 40) >> rng.integers(0, 41, n)
    acc_exp = rng.integers(0, 255, n)
    out = np.zeros((n, 5), np.int64)
    _steps(acc_exp, acc_man, mac_exp, mac_man, False, out)
    for i in range(n):
        want = reference_add(int(acc_exp[i]), int(acc_man[i]), int(mac_exp[i]), int(mac_man[i]))
        assert tuple(int(v) for v in out[i, :2]) == want


def test_nans_keep_sign_and_fraction_and_the_first_stays():
    first, second = mac_nan_block(0xFE01), mac_nan_block(0x7C01)
    exp, man = cacc_accumulate(90, 1 << 38, MAC_NAN_EXP, first)
    assert (exp, man) == reference_add(90, 1 << 38, MAC_NAN_EXP, first)
    assert cacc_accumulate(exp, man, MAC_NAN_EXP, second) == (exp, man)
    assert cacc_accumulate(exp, man, 40, 12345) == (exp, man)
    assert cacc_to_fp32(exp, man) == (1 << 31) | (0xFF << 23) | 0x201


def test_fp32_rounds_ties_away_from_zero():
    """Mantissas whose 15 dropped bits are exactly one half: the magnitude rounds up."""
    for man in ((1 << 38) + (1 << 14), -(1 << 38) - (1 << 14), (1 << 39) - (1 << 14),
                -(1 << 39) + (1 << 14), -(1 << 39), -(1 << 38)):
        assert cacc_to_fp32(90, man) == reference_fp32(90, man), man
