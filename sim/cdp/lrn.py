"""Local response normalization kernels (the CDP datapath).

For every pixel and every channel ``c`` of the (atom-padded) cube::

    a[c]   = input_convertor(x[c])
    s[c]   = sum(a[c+j]**2 for j in -n..n)     (or a[c] with SQSUM_BYPASS)
    l[c]   = LUT(s[c])
    y[c]   = output_convertor(l[c] * a[c])     (or l[c] with MUL_BYPASS)

with a window of 2n+1 = 3, 5, 7 or 9 channels (``D_LRN_CFG``).  Channels
outside the cube (below 0, at or beyond the real channel count, including the
padding of the last atom) enter as the raw value ``D_DATIN_OFFSET`` (its low
byte for int8, +0.0 for fp16), so after the input convertor they are 0.
Outputs are produced for every channel of every atom, padding included, as
the hardware writes whole atoms and counts them in its counters.

fp16 data works in fp17/fp32 as NVDLA does: fp16 -> fp17 -> fp32, squares
and sums in fp32 (summed from the centre outwards in symmetric pairs), the
LUT in fp32/fp17, the product in fp17, then fp17 -> fp16.  The fp16 input
convertor ignores offset/scale/shifter, and the output convertor too.

Arrays are (channels, pixels) int64; counters are returned in an int64 array
indexed by ``sim.cdp.lut`` counter indices, then ``SATURATION`` and
``NAN_OUTPUT``.
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit
from sim.num.fpcore import fp_add, fp_mul
from sim.num.ops import fp16_to_fp17_bits, fp17_to_fp16_bits, fp17_to_fp32_bits

from .convert import icvt_int, ocvt_int
from .lut import lookup_fp, lookup_int

HALO = 4  # the widest window (9) reaches 4 channels either side
SATURATION, NAN_OUTPUT = 5, 6
N_COUNTERS = 7


@njit
def lrn_int(x, channels, pad, int8, din, half, sqsum_bypass, mul_bypass, dout, le, lo, p,
            out, counters):
    """Integer LRN over ``x`` (raw elements, (C_padded, P)) into ``out``.

    ``din`` and ``dout`` are (offset, scale, shifter) register values.
    """
    cpad, pixels = x.shape
    a = np.zeros(cpad + 2 * HALO, np.int64)
    sq = np.zeros(cpad + 2 * HALO, np.int64)
    pad_value = icvt_int(pad, din[0], din[1], din[2], int8)
    for px in range(pixels):
        for k in range(cpad + 2 * HALO):
            c = k - HALO
            if 0 <= c < channels:
                v = icvt_int(x[c, px], din[0], din[1], din[2], int8)
            else:
                v = pad_value
            a[k] = v
            sq[k] = v * v
        for c in range(cpad):
            k = c + HALO
            if sqsum_bypass:
                s = a[k]
            else:
                s = np.int64(0)
                for j in range(-half, half + 1):
                    s += sq[k + j]
            value, which = lookup_int(s, le, lo, p)
            counters[which] += 1
            y = value if mul_bypass else value * a[k]
            r, sat = ocvt_int(y, dout[0], dout[1], dout[2], int8)
            out[c, px] = r
            if sat:
                counters[SATURATION] += 1


@njit
def lrn_fp16(x, channels, nan_to_zero, half, sqsum_bypass, mul_bypass, le, lo, p,
             out, counters):
    """fp16 LRN over ``x`` (fp16 bit patterns, (C_padded, P)) into ``out`` (fp16 bits)."""
    cpad, pixels = x.shape
    x17 = np.zeros(cpad + 2 * HALO, np.int64)
    x32 = np.zeros(cpad + 2 * HALO, np.int64)
    sq = np.zeros(cpad + 2 * HALO, np.int64)
    for px in range(pixels):
        for k in range(cpad + 2 * HALO):
            c = k - HALO
            v = x[c, px] & 0xFFFF if 0 <= c < channels else 0
            if nan_to_zero and (v & 0x7C00) == 0x7C00 and (v & 0x3FF) != 0:
                v = 0
            x17[k] = fp16_to_fp17_bits(v)
            x32[k] = fp17_to_fp32_bits(x17[k])
            sq[k] = x32[k] if sqsum_bypass else fp_mul(x32[k], x32[k], 8, 23)
        for c in range(cpad):
            k = c + HALO
            if sqsum_bypass:
                s = x32[k]
            else:
                s = fp_add(fp_add(sq[k - 1], sq[k + 1], 8, 23), sq[k], 8, 23)
                for j in range(2, half + 1):
                    s = fp_add(s, fp_add(sq[k - j], sq[k + j], 8, 23), 8, 23)
            value, which = lookup_fp(s, le, lo, p)
            counters[which] += 1
            if mul_bypass:
                centre = x32[k]
                centre_nan = (centre & 0x7F800000) == 0x7F800000 and (centre & 0x7FFFFF) != 0
                y = x17[k] if centre_nan else value
            else:
                y = fp_mul(x17[k], value, 6, 10)
            r = fp17_to_fp16_bits(y)
            out[c, px] = r
            if (r & 0x7C00) == 0x7C00 and (r & 0x3FF) != 0:
                counters[NAN_OUTPUT] += 1
