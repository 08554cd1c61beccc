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

from ..jit import njit
from .layer import ConvLayer

M32 = 0xFFFFFFFF
M40 = (1 << 40) - 1
NAN48_EXP = 255

# sign compensation added to the two shifted carry-save outputs, by shift
_SIGN_COMP = np.array([0xAAAB0000, 0xFAAAB000, 0xFFAAAB00, 0xFFFAAAB0, 0xFFFFAAAB,
                       0xFFFFFAAB, 0xFFFFFFAB, 0xFFFFFFFB], dtype=np.int64)


@njit
def _csa(a, b, c):
    s = a ^ b ^ c
    carry = ((a & b) | (b & c) | (a & c)) << 1
    return s & M32, carry & M32


@njit
def booth_product(negative, wt, dat, shift, sign_comp, pp, pps, inv):
    """The CMAC's shifted product of two <= 14-bit magnitudes (signed 32-bit result).

    ``pp`` (10), ``pps`` and ``inv`` (8) are int64 scratch arrays.
    """
    if shift >= 32:
        return 0
    rev = 7 if negative else 0
    w = wt << 1
    for i in range(8):
        inv[i] = 0
        code = (w & 7) ^ rev
        w >>= 2
        if code == 0 or code == 7:
            pps[i] = 0x10000
        elif code == 1 or code == 2:
            pps[i] = dat | 0x10000
        elif code == 3:
            pps[i] = (dat << 1) | 0x10000
        elif code == 4:
            pps[i] = ~(dat << 1) & 0xFFFF
            inv[i] = 1
        else:
            pps[i] = ~dat & 0xFFFF
            inv[i] = 1
    pp[0] = pps[0]
    pp[1] = (pps[1] << 2) | inv[0]
    pp[2] = (pps[2] << 4) | (inv[1] << 2)
    pp[3] = (pps[3] << 6) | (inv[2] << 4)
    pp[4] = inv[3] << 6
    pp[5] = pps[4] << 8
    pp[6] = (pps[5] << 10) | (inv[4] << 8)
    pp[7] = (pps[6] << 12) | (inv[5] << 10)
    pp[8] = (pps[7] << 14) | (inv[6] << 12)
    pp[9] = inv[7] << 14
    # Wallace reduction: rows 0-4 and 5-9 to two each, then the four to two
    for rnd in range(3):
        if rnd == 0:
            n, st = 5, 0
        elif rnd == 1:
            n, st = 5, 5
        else:
            pp[2] = pp[5]
            pp[3] = pp[6]
            n, st = 4, 0
        while n >= 3:
            groups = n // 3
            for j in range(groups):
                s, c = _csa(pp[st + 3 * j], pp[st + 3 * j + 1], pp[st + 3 * j + 2])
                pp[st + 2 * j] = s
                pp[st + 2 * j + 1] = c
            for j in range(groups * 3, n):
                pp[st + j - groups] = pp[st + j]
            n -= groups
    total = ((pp[0] >> shift) + (pp[1] >> shift) + sign_comp[shift >> 2]) & M32
    if total >= 0x80000000:
        total -= 1 << 32
    return total


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
def _conv_fp16_kernel(x, w, stride_y, stride_x, dil_y, dil_x, top, left, pad_bits,
                      out_h, out_w, block, sign_comp):
    n_b, n_c, in_h, in_w = x.shape
    n_k, _, n_r, n_s = w.shape
    xf = x.ravel()
    wf = w.ravel()
    xz, xn, xsg, xm, xe = _split(xf)
    wz, wn, wsg, wm, we = _split(wf)
    pp = np.zeros(10, np.int64)
    pps = np.zeros(8, np.int64)
    inv = np.zeros(8, np.int64)
    pz, pn, psg, pm, pe = _split(np.array([pad_bits], dtype=np.uint16))
    out = np.zeros((n_b, n_k, out_h, out_w), dtype=np.uint32)
    groups = (n_c + block - 1) // block
    lane_x = np.zeros(block, np.int64)  # flat data index of each lane, -1 = pad
    prod = np.zeros(block, np.int64)
    for b in range(n_b):
        for oy in range(out_h):
            for ox in range(out_w):
                for k in range(n_k):
                    acc_e = 0
                    acc_m = 0
                    for g in range(groups):
                        c0 = g * block
                        c1 = min(n_c, c0 + block)
                        for r in range(n_r):
                            iy = oy * stride_y + r * dil_y - top
                            for s in range(n_s):
                                ix = ox * stride_x + s * dil_x - left
                                inside = 0 <= iy < in_h and 0 <= ix < in_w
                                for c in range(c0, c1):
                                    if inside:
                                        lane_x[c - c0] = ((b * n_c + c) * in_h + iy) * in_w + ix
                                    else:
                                        lane_x[c - c0] = -1
                                # NaN: weights first, then data, in channel order
                                nan_bits = -1
                                for c in range(c0, c1):
                                    wi = ((k * n_c + c) * n_r + r) * n_s + s
                                    if wn[wi]:
                                        nan_bits = wf[wi]
                                        break
                                if nan_bits < 0:
                                    for c in range(c0, c1):
                                        xi = lane_x[c - c0]
                                        if (pn[0] if xi < 0 else xn[xi]):
                                            nan_bits = pad_bits if xi < 0 else xf[xi]
                                            break
                                if nan_bits >= 0:
                                    nb = np.int64(nan_bits)
                                    mac_m = _sext((((nb >> 15) & 1) << 37)
                                                  | ((nb & 0x3FF) << 27), 38)
                                    acc_e, acc_m = cacc_add(acc_e, acc_m, 63, mac_m)
                                    continue
                                emax = 0
                                for c in range(c0, c1):
                                    wi = ((k * n_c + c) * n_r + r) * n_s + s
                                    xi = lane_x[c - c0]
                                    dz = pz[0] if xi < 0 else xz[xi]
                                    if wz[wi] or dz:
                                        prod[c - c0] = -1
                                        continue
                                    de = pe[0] if xi < 0 else xe[xi]
                                    e = de + we[wi]
                                    prod[c - c0] = e
                                    if e > emax:
                                        emax = e
                                total = 0
                                for c in range(c0, c1):
                                    e = prod[c - c0]
                                    if e < 0:
                                        continue
                                    wi = ((k * n_c + c) * n_r + r) * n_s + s
                                    xi = lane_x[c - c0]
                                    if xi < 0:
                                        ds, dm = psg[0], pm[0]
                                    else:
                                        ds, dm = xsg[xi], xm[xi]
                                    total += booth_product(ds ^ wsg[wi], wm[wi], dm,
                                                           (emax - e) * 4, sign_comp, pp, pps,
                                                           inv)
                                if total != 0:
                                    acc_e, acc_m = cacc_add(acc_e, acc_m, (emax * 4) & 63,
                                                            _sext(total, 38))
                    out[b, k, oy, ox] = fp48_to_fp32(acc_e, acc_m)
    return out


def conv_fp16(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer, block: int) -> np.ndarray:
    """fp32 bit patterns (N, K, H', W') as uint32: CACC's output for an fp16 layer.

    ``cube`` is (N, C, H, W) fp16 bits after the CDMA (NaN flush applied);
    ``weights`` (K, C, R, S) fp16 bits; ``block`` is the MAC atomic C.
    """
    return _conv_fp16_kernel(
        np.ascontiguousarray(cube, dtype=np.uint16), np.ascontiguousarray(weights, np.uint16),
        layer.stride_y, layer.stride_x, layer.dilation_y, layer.dilation_x, layer.pad_top,
        layer.pad_left, np.uint16(layer.pad_value & 0xFFFF), layer.out_height, layer.out_width,
        block, _SIGN_COMP)
