"""fp16 multiply-accumulate of the convolution pipeline (CMAC + CACC), bit-exact.

Element kernels for numba; the convolution units loop over lanes, blocks and
outputs in the CSC's order and call them.  The arithmetic
follows NVIDIA's C-model of the CMAC (``calculation_fp16``) and CACC:

CMAC, per block (one atomic operation: up to ``mac_atomic_c`` lanes):

* NaN: the weights of the block are scanned first, then the data, in lane
  order; the first NaN found becomes the block result (its sign and 10
  fraction bits, :func:`mac_nan_block`).  A NaN is never skipped by the zero
  masks.
* Lanes whose data or weight is +0 or -0 contribute nothing.
* Every other lane splits each fp16 exponent ``e`` into ``4*(e>>2) + (e&3)``
  (:func:`fp16_mac_operands`): the significand (implicit bit unless e == 0;
  e == 0 counts as e == 1) is shifted left by ``e&3`` (0..3 bits, 14-bit
  result) and ``(ed>>2)+(ew>>2)`` is the lane's exponent.  Inf (e == 31,
  fraction 0) is an ordinary number 2**16.
* The block exponent ``E`` is the largest lane exponent; each lane's 28-bit
  product is computed by a radix-4 Booth multiplier with a carry-save tree
  whose two outputs are shifted right by ``4*(E - lane)`` *separately*
  before they are added with a sign-compensation constant -- so a shifted
  product may differ from the exact floor by one unit
  (:mod:`sim.num.booth`).  Lanes shifted by 32 or more give 0.
* The block result (:func:`fp16_block_dots`) is the exact integer sum of the
  lane products with the 6-bit exponent ``4*E``: value ``sum * 2**(4E - 50)``.

CACC keeps one 48-bit float per output (:func:`cacc_accumulate`): an 8-bit
exponent (bias 63) and a 40-bit two's-complement mantissa normalised so that
bit 38 differs from the sign bit.  Each block is normalised and added with
alignment by right shift (bits shifted out are kept for rounding only when the
shift is at most 40), renormalised, and rounded to 40 bits -- half up for
positive sums, half down (away from zero) for negative ones.  A NaN block makes
the accumulator NaN; the first NaN stays.  At the end the 48-bit value is
rounded to fp32 (:func:`cacc_to_fp32`; guard bit only: round half away from
zero).

Integer layers: CACC delivers ``saturate_int32(round_half_away(acc /
2**CLIP_TRUNCATE))`` (:func:`cacc_round_int32`).
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit
from sim.num.booth import booth_lane, booth_lane_planned, booth_plans
from sim.num.rounding import sign_extend
from sim.num.vector_int import shift_right_round
from sim.num.word32 import add32, and32, leading_zeros64, sar32, shl32, word32

M40 = (1 << 40) - 1
MAC_NAN_EXP = 63  # block exponent of a NaN block
CACC_NAN_EXP = 255  # accumulator exponent of NaN
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
ZERO_LANE_EXP = -64  # a zero operand's exponent: its lanes sit >= 32 bits below any block


@njit
def cacc_accumulate(acc_exp, acc_man, mac_exp, mac_man):
    """Add a CMAC block (6-bit exponent, 38-bit signed mantissa) to the 48-bit accumulator.

    ``acc_man`` and ``mac_man`` are signed values.  Returns (exponent, mantissa).
    A block exponent of ``MAC_NAN_EXP`` is a NaN block (:func:`mac_nan_block`).
    """
    if mac_man == 0:
        return acc_exp, acc_man
    if acc_exp == CACC_NAN_EXP:
        return acc_exp, sign_extend(acc_man & ~((1 << 29) - 1), 40)
    if mac_exp == MAC_NAN_EXP:
        return CACC_NAN_EXP, sign_extend(((mac_man >> 27) & 0x7FF) << 29, 40)
    # normalise the block so that bit 36 differs from the sign (bit 37)
    sign = (mac_man >> 37) & 1
    shift0 = leading_zeros64((mac_man ^ -sign) & ((1 << 37) - 1)) - 27  # bits 36.. == sign
    mac_ext = sign_extend(mac_man << shift0, 38) << 2
    mac_e = (mac_exp - shift0 + 49) & 0xFF
    if acc_man == 0:
        acc_exp = 0
    acc_ext = acc_man
    out_bits = 0  # bits shifted out of the smaller operand, left-aligned in 40 bits
    bigger = mac_e
    if mac_e > acc_exp:
        diff = mac_e - acc_exp
        if diff <= 40:
            out_bits = (acc_ext & ((1 << diff) - 1)) << (40 - diff)
            acc_ext >>= diff
        else:
            acc_ext = 0
    elif mac_e < acc_exp:
        bigger = acc_exp
        diff = acc_exp - mac_e
        if diff <= 40:
            out_bits = (mac_ext & ((1 << diff) - 1)) << (40 - diff)
            mac_ext >>= diff
        else:
            mac_ext = 0
    out_bits &= M40
    total = sign_extend(acc_ext + mac_ext, 40)
    s_mac = (mac_ext >> 39) & 1
    s_acc = (acc_ext >> 39) & 1
    s_tot = (total >> 39) & 1
    overflow = False
    high_bit = 0
    if s_mac == s_acc and s_mac != s_tot:
        overflow = True
        high_bit = total & 1
        sum_man = sign_extend(((acc_ext + mac_ext) >> 1), 40)
        exp = bigger + 1
    elif ((total >> 38) & 1) == s_tot:
        shift1 = leading_zeros64((total ^ -s_tot) & ((1 << 39) - 1)) - 25  # bits 38.. == sign
        kept = total & ((1 << (40 - shift1)) - 1)
        sum_man = sign_extend((kept << shift1) | (out_bits >> (40 - shift1)), 40)
        out_bits = (out_bits << shift1) & M40
        exp = bigger - shift1
    else:
        sum_man = total
        exp = bigger
    negative = ((sum_man >> 39) & 1) == 1
    if overflow:
        guard = high_bit
        sticky = out_bits != 0
    else:
        guard = (out_bits >> 39) & 1
        sticky = (out_bits & ((1 << 39) - 1)) != 0
    if negative:
        need = guard == 1 and sticky
    else:
        need = guard == 1
    rounded = sign_extend(sum_man + 1, 40) if need else sum_man
    if ((rounded >> 39) & 1) != ((sum_man >> 39) & 1):
        final = sign_extend((((sum_man >> 39) & 1) << 39) | ((rounded & M40) >> 1), 40)
        exp += 1
    else:
        final = rounded
    exp &= 0xFF
    if final == 0:
        exp = 0
    return exp, final


@njit(inline="always")
def _pick(condition, a, b):
    """``a if condition else b`` as a mask, so no branch is taken (``condition`` 0 or 1)."""
    mask = -np.int64(condition)
    return (a & mask) | (b & ~mask)


@njit(inline="always")
def cacc_accumulate_finite(acc_exp, acc_man, mac_exp, mac_man):
    """:func:`cacc_accumulate` of a finite block onto a finite accumulator, without branches.

    The same steps, each case computed and the right one picked by a mask, so
    a loop of it over kernels vectorises instead of mispredicting on every
    block.  Callers keep NaN blocks and NaN accumulators for
    :func:`cacc_accumulate`.
    """
    sign = (mac_man >> 37) & 1
    shift0 = leading_zeros64((mac_man ^ -sign) & ((1 << 37) - 1)) - 27
    mac_ext = sign_extend(mac_man << shift0, 38) << 2
    mac_e = (mac_exp - shift0 + 49) & 0xFF
    acc_e = _pick(acc_man != 0, acc_exp, 0)
    # align the smaller operand to the bigger exponent, keeping the bits shifted out
    acc_bigger = mac_e < acc_e
    bigger = _pick(acc_bigger, acc_e, mac_e)
    diff = _pick(acc_bigger, acc_e - mac_e, mac_e - acc_e)
    small = _pick(acc_bigger, mac_ext, acc_man)
    large = _pick(acc_bigger, acc_man, mac_ext)
    near = diff <= 40
    d = _pick(near, diff, 40)
    out_bits = _pick(near, ((small & ((np.int64(1) << d) - 1)) << (40 - d)) & M40, 0)
    small = _pick(near, small >> d, 0)
    raw = large + small
    total = sign_extend(raw, 40)
    s_large, s_small, s_tot = (large >> 39) & 1, (small >> 39) & 1, (total >> 39) & 1
    overflow = (s_large == s_small) & (s_large != s_tot)
    # renormalise: one right shift after an overflow, else left until bit 38 leaves the sign
    shift1 = leading_zeros64((total ^ -s_tot) & ((1 << 39) - 1)) - 25
    left = ~overflow & (((total >> 38) & 1) == s_tot)
    kept = total & ((np.int64(1) << (40 - shift1)) - 1)
    left_man = sign_extend((kept << shift1) | (out_bits >> (40 - shift1)), 40)
    sum_man = _pick(overflow, sign_extend(raw >> 1, 40), _pick(left, left_man, total))
    exp = _pick(overflow, bigger + 1, _pick(left, bigger - shift1, bigger))
    out_bits = _pick(left, (out_bits << shift1) & M40, out_bits)
    guard = _pick(overflow, total & 1, (out_bits >> 39) & 1)
    sticky = _pick(overflow, out_bits != 0, (out_bits & ((1 << 39) - 1)) != 0)
    # round half up, half away from zero for negative sums; a carry out shifts once more
    negative = (sum_man >> 39) & 1
    need = guard & (sticky | (negative ^ 1))
    rounded = sign_extend(sum_man + need, 40)
    carry = ((rounded >> 39) & 1) ^ negative
    final = _pick(carry, sign_extend((negative << 39) | ((rounded & M40) >> 1), 40), rounded)
    exp = _pick(final != 0, (exp + carry) & 0xFF, 0)
    unchanged = mac_man == 0
    return _pick(unchanged, acc_exp, exp), _pick(unchanged, acc_man, final)


@njit
def cacc_to_fp32(exp, man):
    """Round the CACC accumulator to an fp32 bit pattern."""
    sign = (man >> 39) & 1
    if exp == CACC_NAN_EXP:
        return (sign << 31) | (0xFF << 23) | ((man >> 29) & 0x3FF)
    if sign == 1 and (man & ((1 << 39) - 1)) == 0:
        return (1 << 31) | (((exp + 65) & 0xFF) << 23)
    mag = -man if sign else man  # 39-bit magnitude below the sign
    out_exp = 0 if man == 0 else (exp + 64) & 0xFF
    if (mag >> 14) & 1:
        top = (mag >> 15) + 1  # 24 bits: implicit one and 23 fraction bits
        if top >> 24:
            top >>= 1
            out_exp = (out_exp + 1) & 0xFF
        frac = top & 0x7FFFFF
    else:
        frac = (mag >> 15) & 0x7FFFFF
    return (sign << 31) | (out_exp << 23) | frac


def _operand_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fp16_mac_operands` of all 65536 fp16 patterns, computed once."""
    global _TABLES
    if _TABLES is None:
        b = np.arange(1 << 16, dtype=np.uint32)
        e = (b >> 10) & 0x1F
        f = b & 0x3FF
        sig = np.where(e == 0, f << 1, (f | 0x400) << (e & 3)).astype(np.uint32)
        exp = np.where((b & 0x7FFF) == 0, ZERO_LANE_EXP, e >> 2).astype(np.int32)
        _TABLES = (b >> 15).astype(np.uint32), sig, exp
    return _TABLES


_TABLES = None


def fp16_mac_operands(bits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CMAC's view of fp16 operands, per element of ``bits`` (numpy arrays).

    Returns (sign as uint32, significand shifted left by ``e & 3`` as uint32,
    ``e >> 2`` as int32); ``sim.num.specials.nan_mask`` tells the NaNs.  The exponent of a
    zero (+0 or -0) is ``ZERO_LANE_EXP``, so that a lane's exponent, the sum
    of its operands', puts any lane with a zero operand out of every block's
    reach.
    """
    index = np.asarray(bits).astype(np.uint16)
    return tuple(table[index] for table in _operand_tables())


def weight_plans(sign: np.ndarray, sig: np.ndarray) -> np.ndarray:
    """The Booth recodings (:func:`sim.num.booth.booth_plans`) of weights (..., K) with
    CMAC operands ``sign``/``sig``: (..., 2, K) uint32, for positive and negative data."""
    return np.stack([booth_plans(sign, sig), booth_plans(1 - np.asarray(sign, np.int64), sig)],
                    axis=-2)


def first_nan_per_block(bits: np.ndarray, nan: np.ndarray, block: int) -> np.ndarray:
    """The first NaN (in lane order) of every ``block`` lanes of the last axis, -1 if none.

    ``bits`` (..., C) fp16 bits, ``nan`` their NaN mask; returns (..., ceil(C / block)) int64.
    """
    lanes = bits.shape[-1]
    groups = -(-lanes // block)
    if not nan.any():
        return np.full((*bits.shape[:-1], groups), -1, np.int64)
    pad = [(0, 0)] * (bits.ndim - 1) + [(0, groups * block - lanes)]
    nan = np.pad(nan, pad).reshape(*bits.shape[:-1], groups, block)
    bits = np.pad(bits, pad).reshape(nan.shape).astype(np.int64)
    first = np.argmax(nan, axis=-1)[..., None]
    return np.where(nan.any(axis=-1), np.take_along_axis(bits, first, -1)[..., 0], -1)


@njit
def mac_nan_block(bits):
    """The CMAC block result for a NaN input: its sign and fraction, 38-bit mantissa.

    It goes to :func:`cacc_accumulate` with the exponent ``MAC_NAN_EXP``.
    """
    b = np.int64(bits)
    return sign_extend((((b >> 15) & 1) << 37) | ((b & 0x3FF) << 27), 38)


@njit(inline="always")
def aligned_product(negative, wt, dat, lane_exp, block_exp):
    """One lane's product aligned to the block exponent: a uint32 word (read it as int32)."""
    return booth_lane(negative, wt, dat, word32((block_exp - lane_exp) * 4))


@njit(inline="always")
def block_exponent(d_exp, w_exp):
    """A block's exponent: the largest lane exponent, at least 0 (zero lanes are far below)."""
    block_exp = 0
    for j in range(d_exp.size):
        block_exp = max(block_exp, d_exp[j] + w_exp[j])
    return block_exp


@njit(inline="always")
def fp16_block_dots(d_sign, d_sig, d_exp, w_plans, w_exp, block_exp, high, low):
    """One CMAC block of data against the same lanes of every kernel.

    ``d_*`` (lanes,) are CMAC operands of the data (:func:`fp16_mac_operands`),
    ``w_exp`` (lanes, K) the weights' exponents and ``w_plans`` (lanes, 2, K)
    their Booth recodings for positive and for negative data
    (:func:`weight_plans`).  Kernel ``k``'s block exponent goes to
    ``block_exp[k]`` and the exact sum of its aligned lane products is
    ``block_sum(high[k], low[k])`` (``high``, ``low``: uint32 (K,)).  The
    sum goes to :func:`cacc_accumulate` as ``((4 * exponent) & 63,
    sign_extend(sum, 38))`` when it is not 0; NaN lanes give meaningless
    sums (the caller knows the block is NaN).

    The loops run over kernels, so they vectorise 16 wide however few the
    lanes; the products are summed as 16-bit halves in 32-bit words, exact
    for up to 32768 lanes.
    """
    n_k = block_exp.size
    block_exp[:] = 0
    for j in range(d_exp.size):
        de = d_exp[j]
        for k in range(n_k):
            block_exp[k] = max(block_exp[k], de + w_exp[j, k])
    high[:] = 0
    low[:] = 0
    for j in range(d_exp.size):
        plans, dat, de = w_plans[j, d_sign[j]], word32(d_sig[j]), d_exp[j]
        dat2 = shl32(dat, 1)
        for k in range(n_k):
            p = booth_lane_planned(plans[k], dat, dat2,
                                   word32((block_exp[k] - de - w_exp[j, k]) * 4))
            high[k] = add32(high[k], sar32(p, 16))
            low[k] = add32(low[k], and32(p, 0xFFFF))


@njit(inline="always")
def block_sum(high, low):
    """The block sum from its 32-bit halves (:func:`fp16_block_dots`)."""
    return np.int64(np.int32(high)) * 65536 + np.int64(low)


def cacc_round_int32(acc: np.ndarray, truncate: int) -> tuple[np.ndarray, int]:
    """CACC's integer delivery: round half away from zero by ``truncate`` bits, saturate to int32.

    ``acc`` holds the exact 48-bit sums (int64).  Returns the int32 cube and
    the number of saturated values (D_OUT_SATURATION).
    """
    acc = shift_right_round(np.asarray(acc, np.int64), truncate)
    if acc.size == 0 or (INT32_MIN <= acc.min() and acc.max() <= INT32_MAX):
        return acc.astype(np.int32), 0  # the usual case: nothing to saturate
    sat = int(np.count_nonzero((acc > INT32_MAX) | (acc < INT32_MIN)))
    return np.clip(acc, INT32_MIN, INT32_MAX).astype(np.int32), sat
