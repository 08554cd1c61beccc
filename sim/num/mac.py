"""fp16 multiply-accumulate of the convolution pipeline (CMAC + CACC), bit-exact.

Element kernels for numba (int64 in and out); the convolution units loop over
lanes, blocks and outputs in the CSC's order and call them.  The arithmetic
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
  (:func:`booth_product`, :func:`booth_lane`).  Lanes shifted by 32 or more
  give 0.
* The block result (:func:`fp16_block_dot`) is the exact integer sum of the
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
from sim.num.rounding import sign_extend

M32 = 0xFFFFFFFF
M40 = (1 << 40) - 1
MAC_NAN_EXP = 63  # block exponent of a NaN block
CACC_NAN_EXP = 255  # accumulator exponent of NaN
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

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
    """Partial product and negate bit of one radix-4 Booth digit (branch-free).

    Digits 1, 2 (5, 6) select +1 (-1) times the multiplicand, 3 (4) select
    +2 (-2) times, 0 and 7 select zero.  A positive row carries a leading one
    at bit 16; a negative row is the 16-bit ones' complement with the negate
    bit set (added one position below the next row).
    """
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
    """The two carry-save words of the CMAC's Booth multiplier for |wt| * |dat| (<= 14 bits).

    The weight is Booth-recoded (radix 4; all digits inverted for a negative
    product) into eight partial products; a carry-save tree reduces rows 0-4
    and rows 5-9 to two words each, then those four to two.
    """
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
    """The CMAC's shifted product (signed 32-bit) of two <= 14-bit magnitudes.

    Each carry-save word is shifted right by ``shift`` (a multiple of 4)
    *before* the two are added with the sign compensation ``sign_comp[shift
    >> 2]`` -- the truncation NVDLA's C-model applies; 0 for shifts of 32 or
    more.
    """
    if shift >= 32:
        return 0
    a, b = _booth_tree(negative, wt, dat)
    total = ((a >> shift) + (b >> shift) + sign_comp[shift >> 2]) & M32
    return total - ((total >> 31) << 32)


@njit(inline="always")
def booth_lane(negative, wt, dat, shift):
    """:func:`booth_product` without branches or table, so lane loops vectorise.

    The compensation table is ``(0xAAAB0000 as int32) >> shift``, plus one
    for shifts of 20 and more.
    """
    a, b = _booth_tree(negative, wt, dat)
    s = shift & 31
    comp = (-0x55550000 >> s) + ((s + 12) >> 5)
    total = ((a >> s) + (b >> s) + comp) & M32
    return (total - ((total >> 31) << 32)) & -(shift < 32)


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
    i = 36
    while i >= 0 and ((mac_man >> i) & 1) == sign:
        i -= 1
    shift0 = 36 - i
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
        j = 38
        while j >= 0 and ((total >> j) & 1) == s_tot:
            j -= 1
        shift1 = 38 - j
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


@njit
def fp16_mac_operands(bits):
    """The CMAC's view of fp16 operands, per element of ``bits``.

    Returns (is_zero, is_nan, sign, significand shifted left by ``e & 3``,
    ``e >> 2``): the lane exponent of a product is the sum of its operands'
    ``e >> 2``.
    """
    n = bits.size
    zero = np.zeros(n, np.bool_)
    nan = np.zeros(n, np.bool_)
    sign = np.zeros(n, np.int64)
    mts = np.zeros(n, np.int64)
    hexp = np.zeros(n, np.int64)
    for i in range(n):
        b = np.int64(bits[i])
        e = (b >> 10) & 0x1F
        f = b & 0x3FF
        zero[i] = (b & 0x7FFF) == 0
        nan[i] = e == 31 and f != 0
        sign[i] = (b >> 15) & 1
        low = 1 if e == 0 else (e & 3)
        m = f | (1 << 10) if e != 0 else f
        mts[i] = m << low
        hexp[i] = e >> 2
    return zero, nan, sign, mts, hexp


@njit
def mac_nan_block(bits):
    """The CMAC block result for a NaN input: its sign and fraction, 38-bit mantissa.

    It goes to :func:`cacc_accumulate` with the exponent ``MAC_NAN_EXP``.
    """
    b = np.int64(bits)
    return sign_extend((((b >> 15) & 1) << 37) | ((b & 0x3FF) << 27), 38)


@njit(inline="always")
def aligned_product(negative, wt, dat, lane_exp, block_exp):
    """One lane's product aligned to the block exponent (:func:`booth_lane`).

    ``lane_exp`` is -1 for a lane that contributes nothing (a zero operand).
    """
    shift = ((block_exp - lane_exp) * 4) | (((lane_exp >> 63) & 1) << 5)
    return booth_lane(negative, wt, dat, shift)


@njit(inline="always")
def lane_exponent(d_zero, w_zero, d_exp, w_exp):
    """A lane's exponent (``e >> 2`` of data plus weight), -1 when an operand is zero."""
    if d_zero or w_zero:
        return -1
    return d_exp + w_exp


@njit(inline="always")
def fp16_block_dot(d_zero, d_sign, d_sig, d_exp, w_zero, w_sign, w_sig, w_exp, w0, lanes,
                   lane_exp):
    """One CMAC block: (block exponent, exact sum of the aligned lane products).

    Lane ``j`` multiplies data ``d_*[j]`` by weight ``w_*[w0 + j]`` (arrays
    from :func:`fp16_mac_operands`); ``lane_exp`` is scratch space of at least
    ``lanes`` entries.  The result goes to :func:`cacc_accumulate` as
    ``((4 * exponent) & 63, sign_extend(sum, 38))`` when the sum is not 0.
    """
    block_exp = 0
    for j in range(lanes):
        e = lane_exponent(d_zero[j], w_zero[w0 + j], d_exp[j], w_exp[w0 + j])
        lane_exp[j] = e
        if e > block_exp:
            block_exp = e
    total = 0
    for j in range(lanes):  # branch-free: vectorises
        total += aligned_product(d_sign[j] ^ w_sign[w0 + j], w_sig[w0 + j], d_sig[j],
                                 lane_exp[j], block_exp)
    return block_exp, total


def cacc_round_int32(acc: np.ndarray, truncate: int) -> tuple[np.ndarray, int]:
    """CACC's integer delivery: round half away from zero by ``truncate`` bits, saturate to int32.

    ``acc`` holds the exact 48-bit sums (int64).  Returns the int32 cube and
    the number of saturated values (D_OUT_SATURATION).
    """
    if truncate:
        half = np.int64(1 << (truncate - 1))
        mag = (np.abs(acc) + half) >> truncate
        acc = np.where(acc < 0, -mag, mag)
    sat = int(np.count_nonzero((acc > INT32_MAX) | (acc < INT32_MIN)))
    return np.clip(acc, INT32_MIN, INT32_MAX).astype(np.int32), sat
