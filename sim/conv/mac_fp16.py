"""CSC + CMAC + CACC for fp16 direct convolution, in the C-model's order of operations.

Order (CSC): for each output pixel and kernel, the partial sums arrive one
*block* at a time, channel groups of ``mac_atomic_c`` channels outermost and
kernel positions (r, s) row-major inside; each block is one atomic MAC
operation over up to ``mac_atomic_c`` channels of one kernel position.

CMAC, per block (NVDLA cmod ``NV_NVDLA_cmac.h``, ``calculation_fp16``):

* NaN: the weights of the block are scanned first, then the data, in channel
  order; the first NaN found becomes the block result (its sign and 10
  fraction bits, exponent field all ones).  A NaN is never skipped by the
  zero masks.
* Lanes whose data or weight is +0 or -0 contribute nothing.
* Every other lane splits each fp16 exponent ``e`` into ``4*(e>>2) + (e&3)``:
  the significand (implicit bit unless e == 0; e == 0 counts as e == 1) is
  shifted left by ``e&3`` (0..3 bits, 14-bit result) and ``(ed>>2)+(ew>>2)``
  is the lane's block exponent.  Inf (e == 31, fraction 0) is an ordinary
  number 2**16: direct convolution sees +/-65536.
* The block exponent ``E`` is the largest lane exponent; each lane's 28-bit
  product is computed by a radix-4 Booth multiplier with a carry-save tree
  whose two outputs are shifted right by ``4*(E - lane)`` *separately*
  before they are added with a sign-compensation constant -- so a shifted
  product may differ from the exact floor by one unit.  Lanes shifted by 32
  or more give 0.
* The block result is the exact integer sum of the lane products with the
  6-bit exponent ``4*E``: value ``sum * 2**(4E - 50)``.

CACC keeps one 48-bit float per output: an 8-bit exponent (bias 63) and a
40-bit two's-complement mantissa normalised so that bit 38 differs from the
sign bit.  Each block is normalised and added with alignment by right shift
(bits shifted out are kept for rounding only when the shift is at most 40),
renormalised, and rounded to 40 bits -- half up for positive sums, half down
(away from zero) for negative ones.  A NaN block makes the accumulator NaN;
the first NaN stays.  At the end the 48-bit value is rounded to fp32 (guard
bit only: round half away from zero) and goes to the SDP.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ..jit import njit
from .layer import ConvLayer

M32 = 0xFFFFFFFF
M40 = (1 << 40) - 1
NAN48_EXP = 255

# sign compensation added to the two shifted carry-save outputs, by shift
_SIGN_COMP = np.array([0xAAAB0000, 0xFAAAB000, 0xFFAAAB00, 0xFFFAAAB0, 0xFFFFAAAB,
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
def _sext(x, bits):
    x &= (1 << bits) - 1
    if x >> (bits - 1):
        x -= 1 << bits
    return x


@njit
def cacc_add(acc_exp, acc_man, mac_exp, mac_man):
    """Add a CMAC block (6-bit exponent, 38-bit signed mantissa) to the 48-bit accumulator.

    ``acc_man`` and ``mac_man`` are signed values.  Returns (exponent, mantissa).
    """
    if mac_man == 0:
        return acc_exp, acc_man
    if acc_exp == NAN48_EXP:
        return acc_exp, _sext(acc_man & ~((1 << 29) - 1), 40)
    if mac_exp == 63:
        return NAN48_EXP, _sext(((mac_man >> 27) & 0x7FF) << 29, 40)
    # normalise the block so that bit 36 differs from the sign (bit 37)
    sign = (mac_man >> 37) & 1
    i = 36
    while i >= 0 and ((mac_man >> i) & 1) == sign:
        i -= 1
    shift0 = 36 - i
    mac_ext = _sext(mac_man << shift0, 38) << 2
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
    total = _sext(acc_ext + mac_ext, 40)
    s_mac = (mac_ext >> 39) & 1
    s_acc = (acc_ext >> 39) & 1
    s_tot = (total >> 39) & 1
    overflow = False
    high_bit = 0
    if s_mac == s_acc and s_mac != s_tot:
        overflow = True
        high_bit = total & 1
        sum_man = _sext(((acc_ext + mac_ext) >> 1), 40)
        exp = bigger + 1
    elif ((total >> 38) & 1) == s_tot:
        j = 38
        while j >= 0 and ((total >> j) & 1) == s_tot:
            j -= 1
        shift1 = 38 - j
        kept = total & ((1 << (40 - shift1)) - 1)
        sum_man = _sext((kept << shift1) | (out_bits >> (40 - shift1)), 40)
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
    rounded = _sext(sum_man + 1, 40) if need else sum_man
    if ((rounded >> 39) & 1) != ((sum_man >> 39) & 1):
        final = _sext((((sum_man >> 39) & 1) << 39) | ((rounded & M40) >> 1), 40)
        exp += 1
    else:
        final = rounded
    exp &= 0xFF
    if final == 0:
        exp = 0
    return exp, final


@njit
def fp48_to_fp32(exp, man):
    """Round the CACC accumulator to an fp32 bit pattern."""
    sign = (man >> 39) & 1
    if exp == NAN48_EXP:
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
def _split(bits):
    """Per element: (is_zero, is_nan, sign, shifted significand, exponent >> 2)."""
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
def _nan_block(bits):
    """The CMAC block result for a NaN input: its sign and fraction, 38-bit mantissa."""
    b = np.int64(bits)
    return _sext((((b >> 15) & 1) << 37) | ((b & 0x3FF) << 27), 38)


@njit(parallel=True)
def _conv_fp16_kernel(x, w, stride_y, stride_x, dil_y, dil_x, top, left, pad_bits,
                      out_h, out_w, block):
    """x: (N, H, W, C) fp16 bits; w: (K, R, S, C) fp16 bits -> (N, K, H', W') fp32 bits."""
    n_b, in_h, in_w, n_c = x.shape
    n_k, n_r, n_s, _ = w.shape
    xf = x.ravel()
    wf = w.ravel()
    xz, xn, xsg, xm, xe = _split(xf)
    wz, wn, wsg, wm, we = _split(wf)
    pad = np.array([pad_bits], dtype=np.uint16)
    pz, pn, psg, pm, pe = _split(pad)
    groups = (n_c + block - 1) // block
    # first weight NaN of every block (weights are scanned before data), -1 if none
    wnan = np.full((n_k, groups, n_r, n_s), -1, np.int64)
    for k in range(n_k):
        for r in range(n_r):
            for s in range(n_s):
                base = ((k * n_r + r) * n_s + s) * n_c
                for g in range(groups):
                    for c in range(g * block, min(n_c, g * block + block)):
                        if wn[base + c]:
                            wnan[k, g, r, s] = wf[base + c]
                            break
    out = np.zeros((n_b, n_k, out_h, out_w), dtype=np.uint32)
    for row in prange(n_b * out_h):
        b = row // out_h
        oy = row % out_h
        d_z = np.zeros(block, np.bool_)
        d_s = np.zeros(block, np.int64)
        d_m = np.zeros(block, np.int64)
        d_e = np.zeros(block, np.int64)
        lane_e = np.zeros(block, np.int64)
        acc_e = np.zeros(n_k, np.int64)
        acc_m = np.zeros(n_k, np.int64)
        for ox in range(out_w):
            acc_e[:] = 0
            acc_m[:] = 0
            for g in range(groups):
                c0 = g * block
                lanes = min(n_c, c0 + block) - c0
                for r in range(n_r):
                    iy = oy * stride_y + r * dil_y - top
                    for s in range(n_s):
                        ix = ox * stride_x + s * dil_x - left
                        # the data lanes of this block, and their first NaN
                        dnan = -1
                        if 0 <= iy < in_h and 0 <= ix < in_w:
                            base = ((b * in_h + iy) * in_w + ix) * n_c + c0
                            for j in range(lanes):
                                d_z[j] = xz[base + j]
                                d_s[j] = xsg[base + j]
                                d_m[j] = xm[base + j]
                                d_e[j] = xe[base + j]
                                if dnan < 0 and xn[base + j]:
                                    dnan = xf[base + j]
                        else:
                            for j in range(lanes):
                                d_z[j] = pz[0]
                                d_s[j] = psg[0]
                                d_m[j] = pm[0]
                                d_e[j] = pe[0]
                            if pn[0]:
                                dnan = pad_bits
                        for k in range(n_k):
                            nan_bits = wnan[k, g, r, s]
                            if nan_bits < 0:
                                nan_bits = dnan
                            if nan_bits >= 0:
                                acc_e[k], acc_m[k] = cacc_add(acc_e[k], acc_m[k], 63,
                                                              _nan_block(nan_bits))
                                continue
                            wbase = ((k * n_r + r) * n_s + s) * n_c + c0
                            emax = 0
                            for j in range(lanes):
                                if wz[wbase + j] or d_z[j]:
                                    lane_e[j] = -1
                                else:
                                    e = d_e[j] + we[wbase + j]
                                    lane_e[j] = e
                                    if e > emax:
                                        emax = e
                            total = 0
                            for j in range(lanes):  # branch-free: vectorises
                                e = lane_e[j]
                                shift = ((emax - e) * 4) | (((e >> 63) & 1) << 5)
                                total += booth_lane(d_s[j] ^ wsg[wbase + j], wm[wbase + j],
                                                    d_m[j], shift)
                            if total != 0:
                                acc_e[k], acc_m[k] = cacc_add(acc_e[k], acc_m[k],
                                                              (emax * 4) & 63, _sext(total, 38))
            for k in range(n_k):
                out[b, k, oy, ox] = fp48_to_fp32(acc_e[k], acc_m[k])
    return out


def conv_fp16(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer, block: int) -> np.ndarray:
    """fp32 bit patterns (N, K, H', W') as uint32: CACC's output for an fp16 layer.

    ``cube`` is (N, C, H, W) fp16 bits after the CDMA (NaN flush applied);
    ``weights`` (K, C, R, S) fp16 bits; ``block`` is the MAC atomic C.
    """
    x = np.ascontiguousarray(np.asarray(cube, dtype=np.uint16).transpose(0, 2, 3, 1))
    w = np.ascontiguousarray(np.asarray(weights, dtype=np.uint16).transpose(0, 2, 3, 1))
    return _conv_fp16_kernel(
        x, w, layer.stride_y, layer.stride_x, layer.dilation_y, layer.dilation_x,
        layer.pad_top, layer.pad_left, np.int64(layer.pad_value & 0xFFFF), layer.out_height,
        layer.out_width, block)
