"""The float32 shifted products of the fully connected layers (sim.num.fc_float) against the
integer ones (sim.num.mac: fp16_weight_operand, signed_product, sar32) lane by lane: every
fp16 weight pattern (but exponent 31's, which the integer loop keeps) against data of every
exponent (31's too) and several significands (zero, subnormal, the largest), both signs, block
exponents giving every shift 0 to 60; the flags against the carry rule
(sim.num.fc_carries.may_carry, shifts below 32)."""

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from sim.jit import njit
from sim.num.fc_carries import may_carry
from sim.num.fc_float import FLOAT_LANES, PAIR_LANES, float_data, float_lanes, float_run
from sim.num.mac import fp16_mac_operands, fp16_weight_operand, signed_product
from sim.num.mac_fc import (
    EXP31_WEIGHT,
    EXP_BIAS,
    NAN_WEIGHT,
    NEAR_SHIFT,
    _lane_exponents,
    _pack,
)
from sim.num.word32 import and32, sar32, word32

#: The largest block exponent (times four) a block can have: two exponents of 28.
MAX_BLOCK_EXP4 = 56


def _data_patterns():
    """fp16 data bits: every exponent field 0 to 31 (the CMAC takes Inf's and NaN's
    exponent as a finite one: their blocks are the caller's, the other lanes' products
    still count) with a few mantissas, both signs, and both zeros."""
    mantissas = np.array([0, 1, 0x155, 0x2AA, 0x3FF])
    e, m = np.meshgrid(np.arange(32), mantissas)
    bits = ((e << 10) | m).ravel()
    return np.unique(np.r_[bits, bits | 0x8000]).astype(np.uint16)


@njit
def _mismatches(w_bits, x_bits, x_sign, x_sig, x_exp4, x_f, shifts, tamper):
    """Over every weight vector of ``w_bits`` (whole ``FLOAT_LANES`` vectors) and every data
    value, for block exponents putting the vector's highest lane at each shift of
    ``shifts`` (at most MAX_BLOCK_EXP4 above the bias): lanes whose float value differs
    from the integer one (``tamper`` added to the float's), and lanes whose flag differs
    from the rule (returned as (values, flags, lanes compared, flagged lanes))."""
    n = FLOAT_LANES
    values = np.zeros(n, np.int32)
    lane_exp = np.zeros(n, np.uint16)
    x_lanes = np.zeros(w_bits.size, np.float32)  # read at the weights' lanes
    wrong_values, wrong_flags, compared, flagged = 0, 0, 0, 0
    for d in range(x_bits.size):
        x_lanes[:] = x_f[d]
        d_exp = np.int64(x_exp4[d]) + EXP_BIAS
        for v in range(w_bits.size // n):
            top_lane = np.int64(0)
            for j in range(n):
                _, _, e4, zero = fp16_weight_operand(word32(w_bits[v * n + j]))
                lane_exp[j] = 0 if zero else np.uint16(d_exp + e4)
                top_lane = max(top_lane, np.int64(lane_exp[j]))
            for extra in shifts:
                top = min(max(top_lane + extra, EXP_BIAS), EXP_BIAS + MAX_BLOCK_EXP4)
                mask = float_lanes(w_bits, x_lanes, lane_exp, values, v * n, 0, top)
                for j in range(n):
                    negative, sig, _, _ = fp16_weight_operand(word32(w_bits[v * n + j]))
                    negative = and32(negative + word32(x_sign[d]), 1)
                    product = signed_product(negative, sig, word32(x_sig[d]))
                    shift = word32(top - np.int64(lane_exp[j]))
                    want = np.int32(sar32(product, shift)) if shift <= NEAR_SHIFT else 0
                    wrong_values += values[j] + tamper != want
                    want_flag = may_carry(product, shift) & (shift < 32)
                    wrong_flags += ((mask >> j) & 1) != want_flag
                    flagged += want_flag
                    compared += 1
    return wrong_values, wrong_flags, compared, flagged


def _weights(part, parts):
    """A ``part`` of every fp16 pattern but exponent 31's (whole vectors of them)."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    bits = bits[(bits >> 10) & 31 != 31].astype(np.uint16)
    return np.array_split(bits.reshape(-1, FLOAT_LANES), parts)[part].ravel()


def _data():
    x = _data_patterns()
    sign, sig, exp = fp16_mac_operands(x)
    return x, sign, sig, 4 * exp, float_data(sign, sig, 4 * exp)


SHIFTS = np.arange(0, 64, 4)


@pytest.mark.parametrize("part", range(4))
def test_float_lanes_are_the_integer_products(part):
    """Every weight pattern (a quarter each), every data class, every shift 0 to 60: the
    float value of each lane is the integer ``P >> s`` (0 beyond 16), its flag the rule."""
    x, sign, sig, exp4, x_f = _data()
    wrong_values, wrong_flags, compared, flagged = _mismatches(
        _weights(part, 4), x, sign, sig, exp4, x_f, SHIFTS, 0)
    assert (wrong_values, wrong_flags) == (0, 0)
    assert compared > 10**7 and flagged > 10**5  # flagged lanes among them


def test_float_lanes_check_can_fail():
    """The comparison sees a value one off."""
    x, sign, sig, exp4, x_f = _data()
    wrong = _mismatches(_weights(0, 64), x[:20], sign[:20], sig[:20], exp4[:20], x_f[:20],
                        SHIFTS[:2], 1)[0]
    assert wrong > 0


def test_float_data_is_exact():
    """The data floats are the decoded operands' values: significand times 2**exp4, signed
    (every fp16 pattern but exponent 31's)."""
    x = np.arange(1 << 16, dtype=np.uint32)
    x = x[(x >> 10) & 31 != 31].astype(np.uint16)
    sign, sig, exp = fp16_mac_operands(x)
    got = float_data(sign, sig, 4 * exp).astype(np.float64)
    want = np.where(sign != 0, -1.0, 1.0) * sig * np.exp2(np.where(sig == 0, 0, 4 * exp))
    np.testing.assert_array_equal(got, want)
    # and they are the fp16 values themselves, times 2**25
    np.testing.assert_array_equal(got, x.view(np.float16).astype(np.float64) * 2.0**25)


@njit
def _run(w, x, exps, d_sign, d_sig, vectors, tops):
    """float_run of each block exponent of ``tops``: the sums, and the flagged lanes'
    (count, lanes, packed words rebuilt from their halves) of the last."""
    sums = np.zeros(tops.size, np.int64)
    room = vectors * FLOAT_LANES + PAIR_LANES
    lows, highs = np.zeros(room, np.uint16), np.zeros(room, np.uint16)
    flagged = np.zeros(room, np.uint16)
    n = 0
    for t in range(tops.size):
        sums[t], n = float_run(w, x, exps, d_sign, d_sig, lows, highs, flagged, 0, 0, vectors,
                               tops[t], 0)
    words = lows.astype(np.uint32) | (highs.astype(np.uint32) << 16)
    return sums, n, flagged, words


@njit
def _lanes_of(w, x, exps, d_sign, d_sig, vectors, tops):
    """float_lanes' values added up, vector by vector; the flagged lanes of the last block
    exponent and their packed words (sim.num.mac_fc._pack of the integer operands)."""
    sums = np.zeros(tops.size, np.int64)
    values = np.zeros(FLOAT_LANES, np.int32)
    flagged = np.zeros(vectors * FLOAT_LANES, np.uint16)
    words = np.zeros(vectors * FLOAT_LANES, np.uint32)
    n = 0
    for t in range(tops.size):
        n = 0
        for v in range(vectors):
            mask = float_lanes(w, x, exps, values, v * FLOAT_LANES, v * FLOAT_LANES, tops[t])
            sums[t] += values.astype(np.int64).sum()
            for j in range(FLOAT_LANES):
                if (mask >> j) & 1:
                    i = v * FLOAT_LANES + j
                    negative, sig, _, _ = fp16_weight_operand(word32(w[i]))
                    negative = and32(negative + word32(d_sign[i]), 1)
                    flagged[n] = i
                    words[n] = _pack(negative, sig, word32(d_sig[i]),
                                     word32(tops[t] - np.int64(exps[i])))
                    n += 1
    return sums, n, flagged, words


RUN_CASES = [  # (vectors, kind): whole pairs, an odd last vector, one vector, the most
    (1, "largest"), (3, "largest"), (8, "largest"), (1, "spread"), (5, "spread"),
    (8, "spread"), (7, "subnormal")]


@pytest.mark.parametrize("vectors,kind", RUN_CASES)
def test_float_run_is_its_lanes(vectors, kind):
    """float_run's sum is its lanes' (float_lanes'), and its flagged lanes, in order, are
    theirs with the packed words of their integer operands; the largest products (positive:
    sums beyond 2**31 need the wide sum), or exponents spread (every shift, many flagged
    lanes), or subnormal weights and data."""
    rng = np.random.default_rng(vectors)
    lanes = vectors * FLOAT_LANES
    if kind == "largest":  # the largest significand (0x3FF8) in half the first vector
        w = rng.integers(0x6000, 0x7000, lanes).astype(np.uint16)
        w[:FLOAT_LANES // 2] = 0x6FFF
        x_bits = np.full(lanes, 0x6FFF, np.uint16)
    elif kind == "spread":
        w = (rng.integers(0, 2, lanes) << 15 | rng.integers(0x1400, 0x6400, lanes))
        x_bits = (rng.integers(0, 2, lanes) << 15 | rng.integers(0x2000, 0x5000, lanes))
    else:
        w = rng.integers(0, 0x10000, lanes) & 0x83FF
        x_bits = rng.integers(0, 0x10000, lanes) & 0x87FF
    w, x_bits = w.astype(np.uint16), x_bits.astype(np.uint16)
    sign, sig, exp = fp16_mac_operands(x_bits)
    x = float_data(sign, sig, 4 * exp)
    w_ops = fp16_mac_operands(w)
    exps = np.where(w_ops[1] == 0, 0, 4 * exp + 4 * w_ops[2] + EXP_BIAS).astype(np.uint16)
    top = max(int(exps.max()), EXP_BIAS)
    tops = np.arange(top, min(top + 36, EXP_BIAS + MAX_BLOCK_EXP4 + 1), 4)
    d_sign, d_sig = sign.astype(np.uint8), sig.astype(np.uint16)
    sums, n, flagged, words = _run(w, x, exps, d_sign, d_sig, vectors, tops)
    want_sums, want_n, want_flagged, want_words = _lanes_of(w, x, exps, d_sign, d_sig, vectors,
                                                            tops)
    np.testing.assert_array_equal(sums, want_sums)
    assert n == want_n
    np.testing.assert_array_equal(flagged[:n], want_flagged[:n])
    np.testing.assert_array_equal(words[:n], want_words[:n])
    if kind == "largest":
        assert np.abs(want_sums).max() > 2**31
    if kind == "spread" and vectors > 1:
        assert n > 0


@pytest.mark.parametrize("special,want", [
    (None, 0), (0x7BFF, 0), (0xFBFF, 0),  # the largest finite: the float loop's
    (0x7C00, EXP31_WEIGHT), (0xFC00, EXP31_WEIGHT),  # Inf: the integer loop's
    (0x7C01, NAN_WEIGHT | EXP31_WEIGHT), (0xFE00, NAN_WEIGHT | EXP31_WEIGHT)])
@pytest.mark.parametrize("at", [0, 77, 255])
def test_pass_one_tells_nans_and_exponent_31(special, want, at):
    """Pass 1 (mac_fc._lane_exponents) says which loop a chunk takes: any weight with the
    exponent field 31 (Inf, NaN) sends it to the integer loop, a NaN is told apart."""
    rng = np.random.default_rng(at)
    w = (rng.standard_normal(256) * 0.02).astype(np.float16).view(np.uint16)
    if special is not None:
        w[at] = special
    d_exp = np.full(256, EXP_BIAS, np.uint16)
    got = _lane_exponents(d_exp, w, np.uint64(0), np.uint64(256), np.zeros(256, np.uint16))
    assert got == want


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="x86 only: the processor without F16C is named by its x86 model")
def test_float_path_without_f16c(tmp_path):
    """Compiled for a processor without F16C (x86-64's first model, no feature added), the
    conversion of the weights is built from their bits (LLVM would lower the conversion
    to a library call numba cannot link, and abort): this module's tests pass there too,
    in a process of their own with its own kernel cache."""
    env = {**os.environ, "NUMBA_CPU_NAME": "x86-64", "NUMBA_CPU_FEATURES": "",
           "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", "not without_f16c"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
