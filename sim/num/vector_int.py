"""Integer rounding, saturation and shifts on whole int64 arrays (numpy only).

The array twins of :mod:`sim.num.rounding` (which holds the scalar numba
kernels and defines the vocabulary): the same names and results, written
with selects instead of branches so that one numpy call handles a whole
cube and nothing needs compiling.  Shift amounts may be scalars or arrays;
numpy gives 0 (or the sign) for shifts of 64 bits or more, as the scalar
kernels do by hand.
"""

import sys

import numpy as np

from sim.num.arrays import sign_extend_array


def i64(x) -> np.ndarray:
    """``x`` as an int64 array (a copy only when the type differs)."""
    return np.asarray(x, dtype=np.int64)


def choose(cond, if_true, if_false):
    """``where(cond, if_true(), if_false())``, computing only the sides in use.

    The stages are written for per-element settings (golden vectors mix
    precisions row by row); a layer has one setting, so usually one side runs.
    """
    cond = np.asarray(cond)
    if not cond.any():
        return if_false()
    if cond.all():
        return if_true()
    return np.where(cond, if_true(), if_false())


def sign_extend(x, bits: int):
    """The low ``bits`` bits of each value as two's complement (a Python int for an int)."""
    if isinstance(x, int | np.integer):
        x = int(x) & ((1 << bits) - 1)
        return x - ((x >> (bits - 1)) << bits)
    return sign_extend_array(x, bits)


def wrap(x, bits: int) -> np.ndarray:
    """The low ``bits`` bits, as an unsigned field."""
    return i64(x) & ((1 << bits) - 1)


def saturate(x, bits: int) -> np.ndarray:
    """Clamp to the signed ``bits``-bit range."""
    return np.clip(x, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def bit_length(x) -> np.ndarray:
    """Bits needed for each non-negative value: 0 for 0 (exact up to 2**63)."""
    x = i64(x)
    high = x >> 32
    low_bits = np.frexp((x & 0xFFFFFFFF).astype(np.float64))[1]
    high_bits = np.frexp(high.astype(np.float64))[1]
    return np.where(high > 0, 32 + high_bits, low_bits).astype(np.int64)


def shift_right_round(x, s) -> np.ndarray:
    """``x / 2**s`` rounded half away from zero (``s`` >= 0)."""
    x, s = i64(x), i64(s)
    if s.ndim == 0 and s < 63:  # one shift for the whole array (a layer's setting)
        if s == 0:
            return x
        if x.ndim == 0:
            return (x + ((np.int64(1) << (s - 1)) - (x < 0))) >> s
        return _round_shift_into(x + (np.int64(1) << (s - 1)), x >> 63, int(s))
    m = np.abs(x)
    half = np.where(s > 0, (m >> np.maximum(s - 1, 0)) & 1, 0)
    r = (m >> s) + half
    return np.where(x < 0, -r, r)


def _round_shift_into(biased, sign, s: int) -> np.ndarray:
    """``(x + half + sign) >> s`` finished in place on ``biased = x + half``, with ``sign``
    -1 for a negative x, else 0 (``x`` shifted right by its width less one: an add of
    one dtype, cheaper than subtracting a boolean mask).

    -x rounds to -((|x| + half) >> s), which is (x + half - 1) >> s; |x| <= 2**62
    (every datapath value): no overflow.
    """
    biased += sign
    biased >>= s
    return biased


_LITTLE_ENDIAN = sys.byteorder == "little"


def owned_sign_extend(x, bits: int) -> np.ndarray:
    """:func:`sign_extend` of an array into a new int64 array the caller may change in place.

    For 32 bits the low word of each int64 read as int32 is the answer, and int32 values
    are their own: one pass.
    """
    if bits == 32 and isinstance(x, np.ndarray) and x.dtype == np.int32:
        return x.astype(np.int64)
    x = i64(x)
    if bits == 32 and _LITTLE_ENDIAN and x.ndim and x.strides[-1] == 8:
        return x.view(np.int32)[..., ::2].astype(np.int64)
    out = np.left_shift(x, 64 - bits)
    out >>= 64 - bits
    return out


def round_bound(v: int, s: int) -> int:
    """:func:`shift_right_round` of one Python int (``s`` 0..62)."""
    return (v + (1 << (s - 1)) - (v < 0)) >> s if s else v


def array_bounds(x: np.ndarray) -> tuple[int, int]:
    """(min, max) of a non-empty array, as Python ints."""
    return int(x.min()), int(x.max())


def dtype_bounds(x: np.ndarray) -> tuple[int, int]:
    """(min, max) an integer array's dtype can hold, as Python ints: bounds of its values
    without a pass over them."""
    info = np.iinfo(x.dtype)
    return int(info.min), int(info.max)


def convert_owned(x: np.ndarray, s: int, lo: int, hi: int, bounds=None) -> np.ndarray:
    """``clip(shift_right_round(x, s), lo, hi)`` for one shift ``s`` (0..63), reusing
    ``x`` -- an int64 array of the caller's, |x| <= 2**62, or an int32 one whose values
    plus and minus ``2**(s-1)`` stay in int32 -- as the result.

    One array pass per step and no temporaries but the signs: the layer path of
    :func:`convert` (``lo``/``hi`` may be any range inside the saturation's, a ReLU's 0).
    ``bounds``, the (min, max) of ``x`` when the caller has them, tell which clip is
    needed (rounding keeps the order); without them they are looked up after rounding.
    """
    if not (isinstance(x, np.ndarray) and x.ndim and x.size):
        return np.clip(shift_right_round(x, s), lo, hi)
    if 0 < s < 63:  # constants as Python ints: the array's own dtype computes
        if bounds is not None and (bounds[0] >= 0 or bounds[1] < 0):  # one sign: no mask
            x += (1 << (s - 1)) - (bounds[1] < 0)
            x >>= s
        else:
            sign = x >> (x.dtype.itemsize * 8 - 1)
            x += 1 << (s - 1)
            x = _round_shift_into(x, sign, s)
    elif s:
        x, bounds = shift_right_round(x, s), None
    low, high = array_bounds(x) if bounds is None else (round_bound(bounds[0], s),
                                                        round_bound(bounds[1], s))
    if low < lo or high > hi:
        return clip_into(x, lo, hi, (low, high))
    return x


def clip_into(x: np.ndarray, lo: int, hi: int, bounds: tuple[int, int]) -> np.ndarray:
    """``np.clip(x, lo, hi)`` (``lo <= hi``) written over ``x``, whose values lie within
    ``bounds``.

    The limits go in as scalars of x's dtype, each moved inside ``bounds`` (the same
    result for those values): numpy 2 clips int32 against Python ints that are the
    dtype's own extremes (a ReLU's INT32_MAX) through its unvectorised maximum/minimum
    loops, several times slower than its clip loop (as are np.maximum/np.minimum).
    """
    kind = x.dtype.type
    return np.clip(x, kind(min(max(bounds[0], lo), hi)), kind(min(max(bounds[1], lo), hi)),
                   out=x)


def converted_bounds(bounds: tuple[int, int], s: int, lo: int, hi: int) -> tuple[int, int]:
    """Bounds of :func:`convert_owned`'s result for values within ``bounds`` (both steps keep
    the order)."""
    low, high = (min(max(round_bound(b, s), lo), hi) for b in bounds)
    return low, high


def convert(x, s, bits: int) -> np.ndarray:
    """Right shift rounding half away from zero, then saturate to ``bits``."""
    return saturate(shift_right_round(x, s), bits)


def convert_flag(x, s, bits: int) -> tuple:
    """``convert`` and the saturation flag (result more than a rounding step from ``x >> s``)."""
    x, s = i64(x), i64(s)
    y = convert(x, s, bits)
    if s.ndim == 0:
        return y, step_overflow(x, int(s), bits)
    return y, np.abs((x >> s) - y) > 1


def step_overflow(x: np.ndarray, s: int, bits: int, bounds=None) -> np.ndarray:
    """``convert_flag``'s flag for one shift ``s`` (0..63), from ``x`` alone.

    ``y`` is ``x >> s`` or one more, saturated, so it is more than a step from
    ``x >> s`` exactly when ``x >> s >= 2**(bits-1) + 1`` or ``x >> s <= -2**(bits-1) - 2``:
    ``x >= t`` or ``x < -t`` with ``t = (2**(bits-1) + 1) << s``.  The range of ``x`` is
    looked at first (``bounds``, its (min, max), when the caller has them): most layers
    cannot saturate at all.
    """
    x = i64(x)
    t = ((1 << (bits - 1)) + 1) << s
    if not x.size or t > np.iinfo(np.int64).max:
        return np.zeros(x.shape, bool)
    low, high = array_bounds(x) if bounds is None else bounds
    if high < t and low >= -t:
        return np.zeros(x.shape, bool)
    flag = x >= t
    flag |= x < -t
    return flag


def step_overflow_possible(bounds: tuple[int, int], s: int, bits: int) -> bool:
    """Whether :func:`step_overflow` or :func:`saturated` can flag a value within
    ``bounds`` (the latter's thresholds are the lower)."""
    high, low = _saturation_thresholds(s, bits)
    return bounds[1] >= high or bounds[0] < low


def _saturation_thresholds(s: int, bits: int) -> tuple[int, int]:
    """(high, low): :func:`saturated` flags ``x >= high`` and ``x < low``."""
    top = 1 << (bits - 1)
    return (top << s) - ((1 << s) >> 1), -(top << s)


def saturated(x: np.ndarray, s, bits: int) -> np.ndarray:
    """The saturation flag of NVIDIA's master RTL (NV_NVDLA_HLS_shiftrightsatsu) for the
    shift ``s``: a positive ``x`` whose rounded shift passes the largest value, a negative
    one whose plain shift ``x >> s`` passes the smallest (the rounding step that could
    bring it back is not looked at).  The C-model's :func:`step_overflow` leaves out
    results a rounding step from ``x >> s``."""
    x, s = i64(x), i64(s)
    if s.ndim == 0:
        high, low = _saturation_thresholds(int(s), bits)
        if high > np.iinfo(np.int64).max:
            return np.zeros(x.shape, bool)
        flag = x >= high
        flag |= x < low
        return flag
    past = s > 62 - bits  # thresholds beyond int64: no int64 value reaches them
    s = np.where(past, 0, s)
    top = np.int64(1) << (bits - 1)
    high, low = (top << s) - ((np.int64(1) << s) >> 1), -(top << s)
    return ~past & ((x >= high) | (x < low))


def overflow_flags(x: np.ndarray, s: int, bits: int, rtl: bool, bounds=None) -> np.ndarray:
    """:func:`saturated` (``rtl``) or :func:`step_overflow`."""
    return saturated(x, s, bits) if rtl else step_overflow(x, s, bits, bounds)


def step_overflow_count(x: np.ndarray, s: int, bits: int, bounds=None, rtl: bool = False
                        ) -> int:
    """How many values :func:`step_overflow` (or, ``rtl``, :func:`saturated`) flags (no
    pass when ``bounds`` rule it out)."""
    if bounds is not None and not step_overflow_possible(bounds, s, bits):
        return 0
    return int(np.count_nonzero(overflow_flags(x, s, bits, rtl, bounds)))


def shift_left_saturate(x, s, bits: int) -> np.ndarray:
    """``saturate(x << s)`` into ``bits`` bits without overflow (``s`` >= 0)."""
    x, s = i64(x), i64(s)
    over = bit_length(np.abs(x)) + s >= bits
    limit = np.where(x > 0, (1 << (bits - 1)) - 1, -(1 << (bits - 1)))
    return np.where(x == 0, 0, np.where(over, limit, x << np.minimum(s, 63)))


def shift_signed(x, s, bits: int) -> np.ndarray:
    """Right shift by the signed ``s`` (left when negative), rounding and saturating."""
    s = i64(s)
    return choose(s < 0, lambda: shift_left_saturate(x, -s, bits),
                  lambda: convert(x, np.maximum(s, 0), bits))


def round_nearest_even(m, drop) -> np.ndarray:
    """Drop the low ``drop`` bits of the unsigned ``m`` to nearest even (``drop`` <= 0 shifts left).

    The result can carry one bit past ``m >> drop``; callers test for it.
    """
    m, drop = i64(m), i64(drop)
    d = np.maximum(drop, 1)
    kept = m >> d
    guard = (m >> (d - 1)) & 1
    sticky = (m & ((1 << (d - 1)) - 1)) != 0
    rounded = kept + (guard & (sticky | (kept & 1)))
    return np.where(drop <= 0, m << np.minimum(-drop, 63), rounded)


def round_via_double(value, shift, bits: int) -> np.ndarray:
    """``saturate(round_half_away(value / 2**shift))`` through IEEE doubles, as the C-model's
    LUT arithmetic does it (see ``rounding.round_via_double``)."""
    vf = i64(value).astype(np.float64) * np.exp2(-np.asarray(shift, np.float64))  # exact
    hi, lo = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
    huge = np.abs(vf) >= 9223372036854775808.0
    out = np.trunc(vf + np.copysign(0.5, vf))
    out = np.clip(np.where(huge, 0.0, out).astype(np.int64), lo, hi)
    return np.where(huge, np.where(vf > 0, hi, lo), out)


def x86_int32(v) -> np.ndarray:
    """C's ``(int32_t)`` of an integral double on x86: out of range gives INT32_MIN."""
    v = i64(v)
    return np.where((v > 0x7FFFFFFF) | (v < -0x80000000), -0x80000000, v)


def pdp_reciprocal_stage(x, recip: int, product_bits: int, out_bits: int):
    """One reciprocal stage of NVIDIA's RTL PDP int8 average (sim.pdp.pooling):
    ``x * recip / 2**16`` rounded half away from zero, cut to ``out_bits`` (signed).

    The product is kept to ``product_bits`` (two's complement); its sign there
    picks one of two cuts.  Negative: the rounded quotient's low ``out_bits``
    bits.  Non-negative: the truncated quotient's low ``out_bits - 1`` bits
    plus the half bit (bit 15), so the top result bit is lost unless the
    increment carries into it (0x7F + 1 gives 0x80).  Scalar or array.
    """
    p = sign_extend(np.asarray(x, dtype=np.int64) * int(recip), product_bits)
    floor_q, frac = p >> 16, p & 0xFFFF
    negative = floor_q + (frac > 0x8000)  # -x.5 stays at the floor (away from zero)
    positive = (floor_q & ((1 << (out_bits - 1)) - 1)) + (frac >= 0x8000)
    return sign_extend(np.where(p < 0, negative, positive), out_bits)
