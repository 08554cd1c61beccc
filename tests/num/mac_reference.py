"""What a CMAC block computes, stated plainly: the reference of the fp16 MAC's fast kernels.

The design note of :mod:`sim.num.mac` in code, lane by lane: each fp16 operand as
the CMAC sees it (:func:`cmac_operand`), the block exponent and the sum of the
lanes' Booth products aligned to it (:func:`block_dot`, on the definitional
:func:`sim.num.booth.booth_lane`), and the block CACC receives, NaNs first
(:func:`cmac_block`).  The simulator's kernels (``fp16_tile_dots`` of :mod:`sim.num.mac`,
``fp16_fc_blocks`` of :mod:`sim.num.mac_fc`, ``conv_fp16`` of :mod:`sim.conv.mac_fp16`)
compute the same numbers by other routes; tests hold them to these.

Also the multiplier in the C-model's form, with its sign compensation table
(:func:`booth_product`), which ``booth_lane`` is tested against.
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit
from sim.num.mac import (
    MAC_BITS,
    MAC_NAN_EXP,
    ZERO_LANE_EXP,
    aligned_product,
    block_exponent,
    mac_nan_block,
)
from sim.num.rounding import sign_extend

M32 = 0xFFFFFFFF

# sign compensation added to the two shifted carry-save outputs, by shift // 4
SIGN_COMPENSATION = np.array([0xAAAB0000, 0xFAAAB000, 0xFFAAAB00, 0xFFFAAAB0, 0xFFFFAAAB,
                              0xFFFFFAAB, 0xFFFFFFAB, 0xFFFFFFFB], dtype=np.int64)


@njit(inline="always")
def _csa(a, b, c):
    """One 3:2 carry-save adder on 32-bit words: (sum, carry << 1)."""
    s = a ^ b ^ c
    carry = ((a & b) | (b & c) | (a & c)) << 1
    return s & M32, carry & M32


@njit(inline="always")
def _booth_row(digit, dat):
    """Partial product and negate bit of one radix-4 Booth digit, in 64-bit integers
    (``sim.num.booth._booth_row32`` says which row each digit selects)."""
    b0 = digit & 1
    b1 = (digit >> 1) & 1
    b2 = (digit >> 2) & 1
    one = b0 ^ b1
    two = (1 - one) & (b2 ^ b1)
    neg = b2 & (1 - (b1 & b0))
    v = (dat & -one) | ((dat << 1) & -two)
    return ((v ^ (0xFFFF * neg)) & 0xFFFF) | ((1 - neg) << 16), neg


@njit(inline="always")
def _booth_tree(negative, wt, dat):
    """The two carry-save words of the Booth multiplier for |wt| * |dat| (<= 14 bits):
    eight partial products (all digits inverted for a negative product), rows 0-4 and
    rows 5-9 of the tree reduced to two words each, then those four to two."""
    rev = 7 * negative
    w = wt << 1
    p0, i0 = _booth_row((w & 7) ^ rev, dat)
    p1, i1 = _booth_row(((w >> 2) & 7) ^ rev, dat)
    p2, i2 = _booth_row(((w >> 4) & 7) ^ rev, dat)
    p3, i3 = _booth_row(((w >> 6) & 7) ^ rev, dat)
    p4, i4 = _booth_row(((w >> 8) & 7) ^ rev, dat)
    p5, i5 = _booth_row(((w >> 10) & 7) ^ rev, dat)
    p6, i6 = _booth_row(((w >> 12) & 7) ^ rev, dat)
    p7, i7 = _booth_row(((w >> 14) & 7) ^ rev, dat)
    # rows of the tree: partial products shifted into place, negate bits below them
    a, b = _csa(p0, (p1 << 2) | i0, (p2 << 4) | (i1 << 2))
    a, b = _csa(a, b, (p3 << 6) | (i2 << 4))
    a, b = _csa(a, b, i3 << 6)
    c, d = _csa(p4 << 8, (p5 << 10) | (i4 << 8), (p6 << 12) | (i5 << 10))
    c, d = _csa(c, d, (p7 << 14) | (i6 << 12))
    c, d = _csa(c, d, i7 << 14)
    a, b = _csa(a, b, c)
    return _csa(a, b, d)


@njit
def booth_product(negative, wt, dat, shift, sign_comp):
    """The CMAC's shifted product (signed 32-bit) of two <= 14-bit magnitudes, in the
    C-model's form: each carry-save word shifted right by ``shift`` (a multiple of 4)
    *before* the two are added with the sign compensation ``sign_comp[shift >> 2]``; 0
    for shifts of 32 or more."""
    if shift >= 32:
        return 0
    a, b = _booth_tree(negative, wt, dat)
    total = ((a >> shift) + (b >> shift) + sign_comp[shift >> 2]) & M32
    return total - ((total >> 31) << 32)


@njit
def first_nan(bits):
    """The first NaN among fp16 patterns (lanes,) in lane order, -1 if none."""
    for j in range(bits.size):
        if (bits[j] & 0x7FFF) > 0x7C00:
            return np.int64(bits[j])
    return np.int64(-1)


@njit
def cmac_operand(bits):
    """One fp16 value as the CMAC sees it: (sign, significand, exponent) with the
    exponent field ``e`` split as ``4 * (e >> 2) + (e & 3)``: the significand (implicit
    bit unless e == 0, when e counts as 1) shifted left by ``e & 3``, and ``e >> 2``.
    Inf is the ordinary number 2**16; +0 and -0 get ``ZERO_LANE_EXP``."""
    b = np.int64(bits)
    e, f = (b >> 10) & 31, b & 0x3FF
    sig = f << 1 if e == 0 else (f | 0x400) << (e & 3)
    exp = ZERO_LANE_EXP if b & 0x7FFF == 0 else e >> 2
    return b >> 15, sig, exp


@njit
def block_dot(d_bits, w_bits):
    """A NaN-free block of data against one kernel's weights, fp16 bits (lanes,): (block
    exponent ``E``, the exact sum of the lanes' Booth products aligned to ``E``).  ``E``
    is the largest lane exponent (the sum of its operands'), at least 0: a lane with a
    zero operand sits 32 or more bits below, its aligned product is 0."""
    n = d_bits.size
    sign = np.zeros(n, np.int64)
    d_sig, d_exp = np.zeros(n, np.int64), np.zeros(n, np.int64)
    w_sig, w_exp = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for j in range(n):
        ds, d_sig[j], d_exp[j] = cmac_operand(d_bits[j])
        ws, w_sig[j], w_exp[j] = cmac_operand(w_bits[j])
        sign[j] = ds ^ ws
    block_exp = block_exponent(d_exp, w_exp)
    total = np.int64(0)
    for j in range(n):
        total += np.int32(aligned_product(sign[j], w_sig[j], d_sig[j], d_exp[j] + w_exp[j],
                                          block_exp))
    return block_exp, total


@njit
def cmac_block(d_bits, w_bits):
    """What one CMAC block hands CACC (``cacc_accumulate``): (6-bit exponent, 38-bit
    mantissa).  The first NaN among the weights, else among the data, in lane order,
    makes a NaN block; otherwise :func:`block_dot` with the exponent times four."""
    nan = first_nan(w_bits)
    if nan < 0:
        nan = first_nan(d_bits)
    if nan >= 0:
        return MAC_NAN_EXP, mac_nan_block(nan)
    block_exp, total = block_dot(d_bits, w_bits)
    return (4 * block_exp) & 63, sign_extend(total, MAC_BITS)


@njit
def block_dots(data, weights):
    """:func:`block_dot` of every data vector (lanes, P) against every kernel (K, lanes):
    (exponents, sums), each (K, P) int64."""
    n_k, n_p = weights.shape[0], data.shape[1]
    exps, sums = np.zeros((n_k, n_p), np.int64), np.zeros((n_k, n_p), np.int64)
    for k in range(n_k):
        for p in range(n_p):
            exps[k, p], sums[k, p] = block_dot(data[:, p], weights[k])
    return exps, sums
