"""Independent references for PDP tests, written from the documented semantics.

Pooling on a (C, H, W) cube, window by window:

* max/min: over the real (unpadded) elements of the window;
* average: (sum of real elements + n_padded * pad_value), then times the
  width reciprocal and the height reciprocal (registers in 1/65536 units),
  each product rounded half away from zero; the result wraps to the output
  width.  Padding values are programmed as ``PADDING_VALUE_n = n * value``.
"""

from __future__ import annotations

from fractions import Fraction
from math import floor

import numpy as np


def out_size(n, k, s, lo, hi):
    return (lo + n + hi - k) // s + 1


def windows(x, k, s, pads):
    """Yield (c, oh, ow, real elements as a flat array, padded count)."""
    kw, kh = k
    sw, sh = s
    pl, pr, pt, pb = pads
    C, H, W = x.shape
    for oh in range(out_size(H, kh, sh, pt, pb)):
        h0 = oh * sh - pt
        for ow in range(out_size(W, kw, sw, pl, pr)):
            w0 = ow * sw - pl
            win = x[:, max(h0, 0): h0 + kh, max(w0, 0): w0 + kw]
            real = win.shape[1] * win.shape[2]
            yield oh, ow, win.reshape(C, -1), kw * kh - real


def round_half_away(q: Fraction) -> int:
    r = floor(abs(q) + Fraction(1, 2))
    return r if q >= 0 else -r


def pool_int(x, k, s, pads, method, pad_value=0, recip=(0x10000, 0x10000), bits=8):
    """Integer reference (x int array, C x H x W)."""
    kw, kh = k
    C, H, W = x.shape
    out = np.zeros((C, out_size(H, kh, s[1], pads[2], pads[3]),
                    out_size(W, kw, s[0], pads[0], pads[1])), dtype=np.int64)
    for oh, ow, real, padded in windows(x.astype(np.int64), k, s, pads):
        for c in range(C):
            if method == "max":
                v = int(real[c].max())
            elif method == "min":
                v = int(real[c].min())
            else:
                total = int(real[c].sum()) + padded * pad_value
                v = round_half_away(Fraction(total * recip[0], 65536))
                v = round_half_away(Fraction(v * recip[1], 65536))
            half = 1 << (bits - 1)
            out[c, oh, ow] = (v + half) % (2 * half) - half
    return out


def pool_float(x, k, s, pads, method, pad_value=0.0):
    """Exact float reference (x float64; average divides by kw*kh exactly)."""
    kw, kh = k
    C, H, W = x.shape
    out = np.zeros((C, out_size(H, kh, s[1], pads[2], pads[3]),
                    out_size(W, kw, s[0], pads[0], pads[1])))
    for oh, ow, real, padded in windows(x, k, s, pads):
        if method == "max":
            out[:, oh, ow] = real.max(axis=1)
        elif method == "min":
            out[:, oh, ow] = real.min(axis=1)
        else:
            out[:, oh, ow] = (real.sum(axis=1) + padded * pad_value) / (kw * kh)
    return out


def fp17(value: float) -> int:
    """fp17 pattern (1 sign, 6 exponent bits with bias 31, 10 mantissa bits) of an
    exactly representable normal value or zero."""
    if value == 0:
        return 0
    sign = 1 if value < 0 else 0
    m, e = np.frexp(abs(value))  # value = m * 2**e, 0.5 <= m < 1
    mant = int(round((m * 2 - 1) * 1024))
    assert (1 + mant / 1024) * 2.0 ** (e - 1) == abs(value), value
    return int(sign << 16 | (int(e) - 1 + 31) << 10 | mant)


def split_widths(w, k, s, pl, out_widths):
    """(in_first, in_mid, in_last) of a split with output widths (first, mid..., last)."""
    first = out_widths[0] * s - pl + k - s
    mid = out_widths[1] * s if len(out_widths) > 2 else 1
    last = w - first - (len(out_widths) - 2) * mid
    return first, mid, last
