"""Integer helpers shared by every datapath: sign extension, saturation,
rounding shifts.

All kernels work on Python/numba ``int64`` values.  Hardware words narrower
than 64 bits are carried as their signed value; ``sign_extend`` turns a raw
bit field into that value and ``wrap`` goes back.

Rounding vocabulary (NVDLA ``ias/precision.rst``):

* **convertor**  ``y = saturate(round((x - offset) * scale >> shift))``
* **truncation** ``y = saturate(round(x[msb:lsb]))`` -- a right shift by ``lsb``
* **shifter**    ``y = saturate(x << shift)``

where ``round`` is *round half away from zero* and ``saturate`` clamps to the
output's two's-complement range.  Floating-point mantissas are instead rounded
to nearest, ties to even (``round_nearest_even``).
"""

import math

import numpy as np

from sim.jit import njit
from sim.num.word32 import leading_zeros64


@njit
def mask(bits):
    """The all-ones value of width ``bits`` (0 < bits < 64)."""
    return (1 << bits) - 1


@njit
def sign_extend(x, bits):
    """Read the low ``bits`` bits of ``x`` as a two's-complement number."""
    x &= (1 << bits) - 1
    if x >> (bits - 1):
        x -= 1 << bits
    return x


@njit
def wrap(x, bits):
    """Keep the low ``bits`` bits of ``x`` (modular, as an unsigned field)."""
    return x & ((1 << bits) - 1)


@njit
def saturate(x, bits):
    """Clamp ``x`` to the signed ``bits``-bit range."""
    hi = (1 << (bits - 1)) - 1
    lo = -(1 << (bits - 1))
    if x > hi:
        return hi
    if x < lo:
        return lo
    return x


@njit
def bit_length(x):
    """Number of bits needed for the non-negative ``x``: 0 for 0."""
    return 64 - leading_zeros64(x)


@njit
def shift_right_round(x, s):
    """``x / 2**s`` rounded half away from zero (``s`` >= 0, |x| < 2**63)."""
    if s == 0:
        return x
    m = -x if x < 0 else x
    if s >= 64:
        r = 0
    else:
        r = (m >> s) + ((m >> (s - 1)) & 1)
    return -r if x < 0 else r


@njit
def convert(x, s, bits):
    """Right shift with round half away from zero, then saturate to ``bits``.

    This is NVDLA's truncation ``saturate_round(x[msb:lsb])`` with ``lsb = s``
    and the last step of every integer convertor.
    """
    return saturate(shift_right_round(x, s), bits)


@njit
def convert_flag(x, s, bits):
    """``convert`` plus the saturation flag the CDP/SDP output convertors report.

    The flag compares the rounded result with the plain arithmetic shift
    ``x >> s``: it is set only when they differ by more than the rounding step.
    """
    y = convert(x, s, bits)
    floor = x >> s if s < 64 else (-1 if x < 0 else 0)
    return y, abs(floor - y) > 1


@njit
def shift_left_saturate(x, s, bits):
    """NVDLA's shifter: ``saturate(x << s)`` into ``bits`` bits, without overflow."""
    if x == 0:
        return 0
    if bit_length(-x if x < 0 else x) + s >= bits:
        return (1 << (bits - 1)) - 1 if x > 0 else -(1 << (bits - 1))
    return x << s


@njit
def shift_signed(x, s, bits):
    """Shift right by the signed amount ``s`` (left when negative), then as
    ``convert`` / ``shift_left_saturate``: round half away, saturate."""
    if s < 0:
        return shift_left_saturate(x, -s, bits)
    return convert(x, s, bits)


@njit
def round_nearest_even(m, drop):
    """Drop the low ``drop`` bits of the unsigned ``m``, rounding to nearest even.

    The result can be one bit wider than ``m >> drop`` when the rounding
    carries out; callers test for that themselves.
    """
    if drop <= 0:
        return m << -drop
    kept = m >> drop
    guard = (m >> (drop - 1)) & 1
    sticky = (m & ((1 << (drop - 1)) - 1)) != 0
    if guard and (sticky or (kept & 1)):
        kept += 1
    return kept


_EXACT_IN_DOUBLE = 1 << 52  # value + 2**(shift-1) stays below 2**53: exact in a double


@njit
def round_via_double(value, shift, bits):
    """``saturate(round_half_away(value / 2**shift))`` computed as NVDLA's C-model does it.

    The C-model's LUT arithmetic (CDP) rounds through an IEEE double:
    ``value`` is converted to double (rounding beyond 53 bits), scaled by a
    power of two (``shift`` may be negative) and 0.5 is added (or subtracted)
    in double before truncation.  Magnitudes of 2**63 or more saturate first.
    Below 2**52, shifting right, every one of those steps is exact (or, past a
    shift of 52, gives 0 as the integer rounding does), so integers serve.
    """
    if shift >= 0 and -_EXACT_IN_DOUBLE < value < _EXACT_IN_DOUBLE:
        return saturate(shift_right_round(value, shift), bits)
    vf = np.float64(value)
    positive = vf > 0
    vf = math.ldexp(vf, -shift)  # exact scaling, as dividing by 2.0**shift is
    hi = (1 << (bits - 1)) - 1
    lo = -(1 << (bits - 1))
    if abs(vf) >= 9223372036854775808.0:
        return hi if positive else lo
    out = np.int64(vf + 0.5) if positive else np.int64(vf - 0.5)
    if out > hi:
        return hi
    if out < lo:
        return lo
    return out


@njit
def x86_int32(v):
    """A C ``(int32_t)`` conversion of a double as x86 does it: out of range gives INT32_MIN.

    ``v`` is an integer already (NVDLA's C-model converts a rounded double).
    """
    if v > 0x7FFFFFFF or v < -0x80000000:
        return np.int64(-0x80000000)
    return v
