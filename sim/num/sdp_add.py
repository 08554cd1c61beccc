"""The integer SDP layer whose only X stage adds (a bias, a residual) and whose output
convertor cannot saturate int17, in the fewest numpy passes.

Such a stage (ALU sum or "not equal", which the X ALU also sums; multiplier bypassed,
no multiplier shift; ReLU or not) makes ``u = clip(x + a, low, INT32_MAX)`` (``low`` 0
with ReLU, else INT32_MIN: the int32 saturation), and the convertor
``clip(round_s((u - offset) * scale))``.  The steps of :func:`sim.num.sdp.x_int_block`
and :func:`sim.num.sdp.c_int_block` on such a layer are passes the composition does not
need:

* the saturation clip, ReLU and the convertor's window (:func:`sim.num.sdp._c_window`,
  outside which the output no longer changes) are clips of ``u``: one clip;
* the offset folds into the addend (``x + (a - offset)``), the clip moving with it;
* rounding half away from zero is ``(p + half + sign) >> s`` with ``sign`` -1 for a
  negative ``p``; without the sign term only a negative ``p`` exactly half-way between
  two multiples of ``2**s`` comes out otherwise, which :func:`negative_ties` rules out
  from the clipped range and the scale alone (the usual layer: no sign pass).

Every step's dtype comes from the bounds of its values; a block whose bounds would need
int64, or whose convertor could saturate, is left to the general path (None).
"""

from __future__ import annotations

import functools

import numpy as np

from sim.num.sdp import _C_OUT_RANGE, _c_window, _product_bounds, _windowed, _work_dtype
from sim.num.vector_int import clip_into, round_bound
from sim.num.widths import INT32_MAX, INT32_MIN
from sim.regs.enums import Precision

INTEGER_OUTPUTS = (Precision.INT8.code, Precision.INT16.code)


def negative_ties(bounds: tuple[int, int], scale: int, shift: int) -> bool:
    """Whether some ``v`` within ``bounds`` makes ``v * scale`` negative and an odd multiple
    of ``2**(shift-1)`` (a tie that ``(p + half) >> shift`` rounds up, not away from zero).

    ``v * scale`` is such a multiple exactly when ``v`` is an odd multiple of
    ``2**(shift - 1 - k)``, with ``2**k`` the largest power of two dividing ``scale``.
    """
    if shift <= 0 or scale == 0:
        return False
    k = (scale & -scale).bit_length() - 1
    if k >= shift:
        return False
    low, high = (bounds[0], min(bounds[1], -1)) if scale > 0 else (max(bounds[0], 1), bounds[1])
    step = 1 << (shift - 1 - k)
    first = -(-low // step)  # the first multiple of step at or above low
    first += (first + 1) & 1  # made odd
    return first * step <= high


@functools.lru_cache(maxsize=256)
def clip_limits(low: int, offset: int, scale: int, shift: int, code: int) -> tuple[int, int]:
    """[L, H] with ``clip(u, L, H)`` = the int32 saturation and ReLU (``clip(u, low,
    INT32_MAX)``) followed by the convertor's window clip (two clips, composed exactly)."""
    a, b = _c_window(offset, scale, shift, *_C_OUT_RANGE[code])
    return min(max(low, a), b), max(min(INT32_MAX, b), a)


def _fits(bounds: tuple[int, int], low: int, high: int) -> bool:
    return low <= bounds[0] and bounds[1] <= high


def add_convert_block(x: np.ndarray, x_bounds: tuple[int, int], addend, addend_bounds,
                      low: int, offset: int, scale: int, shift: int, code: int, out
                      ) -> bool:
    """Write the layer's output for the values ``x`` (within ``x_bounds``) into ``out``
    (cast to its dtype): ``clip(round_shift((clip(x + a, low, INT32_MAX) - offset) * scale))``
    with ``addend`` = a - offset (an int array broadcasting against x, or an int) within
    ``addend_bounds``; ``offset``/``scale`` sign-extended, ``shift`` 0..63, ``code`` the
    integer output precision.  ``x`` is not changed.

    Returns False, having written nothing, when the bounds leave the int32 steps or
    could saturate int17 (the caller's general path then computes the block); no value
    saturates otherwise, so the saturation count is 0.
    """
    if not _fits(addend_bounds, INT32_MIN, INT32_MAX):
        return False
    sums = (x_bounds[0] + addend_bounds[0], x_bounds[1] + addend_bounds[1])  # u - offset
    clipped = tuple(min(max(v + offset, low), INT32_MAX) for v in sums)  # the X stage's u
    if not _windowed(clipped, offset, scale, shift, code) or shift >= 32:
        return False
    lo, hi = (v - offset for v in clip_limits(low, offset, scale, shift, code))
    kept = (min(max(sums[0], lo), hi), min(max(sums[1], lo), hi))
    dtype = _work_dtype(x, (min(sums[0], kept[0]), max(sums[1], kept[1])), addend)
    product = _product_bounds(kept, (scale, scale))
    half = 1 << shift >> 1
    if dtype is np.int64 or not _fits((product[0] - half, product[1] + half), INT32_MIN,
                                      INT32_MAX):
        return False
    v = _add(x, addend, dtype)
    if kept != sums:
        v = clip_into(v, lo, hi, sums)
    if scale != 1:
        v = _widened(v, np.int32)
        v *= scale
    if shift:
        v = _round_shift(v, product, kept, scale, shift)
    lo_out, hi_out = _C_OUT_RANGE[code]
    rounded = (round_bound(product[0], shift), round_bound(product[1], shift))
    if not _fits(rounded, lo_out, hi_out):
        v = clip_into(v, lo_out, hi_out, rounded)
    np.copyto(out, v, casting="unsafe")
    return True


#: numpy buffers an operand broadcast along rows shorter than its buffer (8192 elements by
#: default), copying it out element by element: twice the time of the unbuffered add.  Rows
#: longer than this (56x56 and 28x28 feature maps) are added with a buffer this small.
SHORT_BUFFER = 256


def _add(x: np.ndarray, addend, dtype) -> np.ndarray:
    """``x + addend`` in ``dtype``; a per-row addend of x's dtype unbuffered when rows are long."""
    if isinstance(addend, np.ndarray) and addend.ndim == x.ndim and addend.shape[-1] == 1 \
            and x.shape[-1] > SHORT_BUFFER and x.dtype == addend.dtype == dtype:
        size = np.setbufsize(SHORT_BUFFER)  # numpy keeps it per thread (a context variable)
        try:
            return np.add(x, addend)
        finally:
            np.setbufsize(size)
    if x.dtype == dtype:
        return np.add(x, addend)  # a new array: x is the caller's
    wide = _widened(x, dtype)
    return np.add(wide, addend, out=wide)


def _widened(x: np.ndarray, dtype) -> np.ndarray:
    """``x`` in ``dtype``: a new array, cast by a copy (a ufunc that casts its operands
    as it computes takes twice the time of the copy and the same-dtype loop)."""
    if x.dtype == dtype:
        return x
    wide = np.empty(x.shape, dtype)
    np.copyto(wide, x, casting="unsafe")
    return wide


def _round_shift(p: np.ndarray, bounds: tuple[int, int], kept: tuple[int, int], scale: int,
                 shift: int) -> np.ndarray:
    """``p`` (int32, within ``bounds``, ``p = v * scale`` for v within ``kept``) shifted right
    by ``shift`` rounding half away from zero, in place (an int16 ``p`` is widened first)."""
    p = _widened(p, np.int32)
    half = 1 << (shift - 1)
    if bounds[1] < 0:  # all negative: the sign is a constant
        p += half - 1
    elif bounds[0] >= 0 or not negative_ties(kept, scale, shift):
        p += half
    else:
        sign = p >> 31
        p += half
        p += sign
    p >>= shift
    return p


#: Addends of at most this many values (a register, one per channel) are made ``a - offset``
#: once per layer; a larger one (per element) only takes a zero offset (no cube-sized copy).
SMALL_ADDEND = 1 << 14


def folded_addend(values, bounds: tuple[int, int], offset: int):
    """(``values - offset``, its bounds): int32 arrays (or the values as they are, for a zero
    offset), or None when a per-element operand would need a copy or the result leaves
    int32."""
    if not offset:
        return values, bounds
    if np.size(values) > SMALL_ADDEND:
        return None
    bounds = (bounds[0] - offset, bounds[1] - offset)
    if not _fits(bounds, INT32_MIN, INT32_MAX):
        return None
    folded = np.asarray(values, np.int64) - offset
    return (folded.astype(np.int32) if folded.ndim else int(folded)), bounds
