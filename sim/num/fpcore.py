"""Format-generic floating-point algorithms on raw bit patterns.

Each function takes the format widths ``E`` and ``M`` (and ``oE``/``oM`` for
the output of a conversion) as its last arguments; ``sim.num.ops`` binds them
to fp16, fp17 and fp32.  Values are ``int64`` bit patterns.  The NVDLA rules
that differ from IEEE-754 come from ``sim.num.rules``.

Add and multiply exist twice.  The ``*_window`` functions follow the hardware
step by step on integer significands; they define the results.  ``fp_add``
and ``fp_mul`` get the same bits from double-precision hardware arithmetic:
a double holds every fp16/fp17/fp32 value exactly (rules 1 and 4 included)
and every product of two significands (at most 48 bits); a sum rounded to 53
bits and then to M+1 <= 24 bits is still correctly rounded, because
53 >= 2*24 + 1 (Figueroa, "When is double rounding innocuous?", 1995).  They
are straight-line code (selects, no early returns) so that the array loops of
``sim.num.ops`` vectorise.  Only an addition with an all-ones exponent
operand, where the window's missing sticky bit shows, goes to the window
algorithm.  ``tests/num`` checks each fast kernel against its window twin.
"""

import numpy as np

from sim.jit import njit
from sim.num.rounding import bit_length, round_nearest_even, shift_right_round
from sim.num.rules import (
    arithmetic_value,
    first_is_larger,
    flushed,
    is_nan,
    nan_or,
    narrowed_nan,
    pack,
    saturated,
    significand,
    unpack,
    widened_nan,
)


@njit
def _rounded_fields(u, E, M):
    """Round the positive double whose bits are ``u`` to M mantissa bits (RNE).

    Returns (exponent field before rounding, exponent field after rounding,
    mantissa field) in the format's bias, unbounded: a field <= 0 or >= the
    all-ones value is the caller's to flush or saturate.  A carry out of the
    mantissa moves into the exponent by itself.
    """
    drop = 52 - M
    r = (u + ((1 << (drop - 1)) - 1) + ((u >> drop) & 1)) >> drop
    rebias = 1024 - (1 << (E - 1))  # double bias - format bias
    return (u >> 52) - rebias, (r >> M) - rebias, r & ((1 << M) - 1)


@njit
def add_is_ordinary(a, b, E, M):
    """Neither operand is an Inf pattern: ``fp_add_ordinary`` applies.

    Rule 4 makes Inf a finite number, but aligned in the hardware's window
    without a sticky bit its sums can differ from the correctly rounded ones.
    """
    inf = ((1 << E) - 1) << M
    magnitude = (1 << (E + M)) - 1
    return ((a & magnitude) != inf) & ((b & magnitude) != inf)


@njit
def fp_add_ordinary(a, b, E, M):
    """``fp_add`` for operands that are not Inf patterns, in double arithmetic.

    Straight-line code for vectorised loops; an Inf operand gives garbage.
    A sum whose exponent field is <= 0 (flushed) has operands within a
    binade of each other, so its double is exact.  A NaN operand is
    selected at the end (rule 5).
    """
    width = 1 + E + M
    a &= (1 << width) - 1
    b &= (1 << width) - 1
    emax = (1 << E) - 1
    total = arithmetic_value(a, E, M) + arithmetic_value(b, E, M)
    u = np.float64(total).view(np.int64)
    sign = (u >> 63) & 1
    u &= (1 << 63) - 1
    sign = a >> (E + M) if u == 0 else sign  # rule 6: an exact zero is a tie, a leads
    e_exact, e, mant = _rounded_fields(u, E, M)
    r = pack(sign, e, mant, E, M)
    r = saturated(sign, E, M) if e >= emax else r
    r = flushed(sign, E, M) if e_exact <= 0 else r
    return nan_or(a, b, E, M, r)


@njit
def fp_add(a, b, E, M):
    """a + b, rounded to nearest even, with NVDLA's special-value rules."""
    if add_is_ordinary(a, b, E, M):
        return fp_add_ordinary(a, b, E, M)
    return fp_add_window(a, b, E, M)


@njit
def fp_add_window(a, b, E, M):
    """a + b, rounded to nearest even, with NVDLA's special-value rules.

    Both significands are placed in a window of 2M+3 bits: the larger operand
    at the top, the smaller one shifted right by the exponent difference.
    Bits shifted below the window are discarded (there is no sticky bit); for
    finite operands this never changes the correctly rounded result, but with
    an all-ones exponent it shows (fp16 0x7c00 + 0x5800 = 0x7c02).
    """
    width = 1 + E + M
    a &= (1 << width) - 1
    b &= (1 << width) - 1
    emax = (1 << E) - 1
    extra = M + 2  # bits below the significand inside the window
    top = 2 * M + 2  # index of the window's most significant bit

    if first_is_larger(a, b, E, M):
        big, small = a, b
    else:
        big, small = b, a
    sign, e, mb = unpack(big, E, M)
    s_small, e_small, ms = unpack(small, E, M)

    x = significand(e, mb, M) << extra
    d = e - e_small
    y = (significand(e_small, ms, M) << extra) >> d if d < 64 else 0
    v = x + y if sign == s_small else x - y

    if v >> (top + 1):  # carry out of the window
        if e >= emax - 1:
            return nan_or(a, b, E, M, saturated(sign, E, M))
        e += 1
        v >>= 1
    else:
        lead = top + 1 - bit_length(v)
        if v == 0 or e <= lead:
            return nan_or(a, b, E, M, flushed(sign, E, M))
        e -= lead
        v <<= lead

    r = round_nearest_even(v, M + 2)
    if r >> (M + 1):  # rounding carried into a new binade
        if e >= emax - 1:
            return nan_or(a, b, E, M, saturated(sign, E, M))
        e += 1
        r >>= 1
    return nan_or(a, b, E, M, pack(sign, e, r & ((1 << M) - 1), E, M))


@njit
def fp_sub(a, b, E, M):
    """a - b: the sign of ``b`` is flipped, then ``fp_add`` (a NaN b keeps the flip)."""
    return fp_add(a, b ^ (1 << (E + M)), E, M)


@njit
def fp_mul(a, b, E, M):
    """a * b, rounded to nearest even; underflow flushes, overflow saturates.

    Straight-line double arithmetic (the product is exact); same bits as
    ``fp_mul_window``.
    """
    width = 1 + E + M
    a &= (1 << width) - 1
    b &= (1 << width) - 1
    emax = (1 << E) - 1
    bias = (1 << (E - 1)) - 1
    sign = (a ^ b) >> (E + M)
    ea = (a >> M) & emax
    eb = (b >> M) & emax
    product = arithmetic_value(a, E, M) * arithmetic_value(b, E, M)
    u = np.float64(product).view(np.int64) & ((1 << 63) - 1)
    _, e, mant = _rounded_fields(u, E, M)  # a zero product gives e <= 0
    r = pack(sign, e, mant, E, M)
    r = saturated(sign, E, M) if e >= emax else r
    # the exponent-sum test comes first in hardware: no rounding up to e = 1 from e = -1
    r = flushed(sign, E, M) if (e <= 0) | (ea + eb < bias) else r
    return nan_or(a, b, E, M, r)


@njit
def fp_mul_window(a, b, E, M):
    """a * b step by step on integer significands (the definition of ``fp_mul``)."""
    width = 1 + E + M
    a &= (1 << width) - 1
    b &= (1 << width) - 1
    emax = (1 << E) - 1
    bias = (1 << (E - 1)) - 1
    sa, ea, ma = unpack(a, E, M)
    sb, eb, mb = unpack(b, E, M)
    sign = sa ^ sb
    ia = significand(ea, ma, M)
    ib = significand(eb, mb, M)

    if ia == 0 or ib == 0 or ea + eb < bias:
        return nan_or(a, b, E, M, flushed(sign, E, M))
    if ea + eb >= emax + bias:
        return nan_or(a, b, E, M, saturated(sign, E, M))
    e = ea + eb - bias
    p = ia * ib  # 2M+2 bits: 1.x or 1x.x
    if p >> (2 * M + 1):
        if e >= emax - 1:
            return nan_or(a, b, E, M, saturated(sign, E, M))
        e += 1
    else:
        p <<= 1
    r = round_nearest_even(p, M + 1)
    if r >> (M + 1):
        e += 1
        r >>= 1
        if e == emax:
            return nan_or(a, b, E, M, saturated(sign, E, M))
    if e == 0:
        return nan_or(a, b, E, M, flushed(sign, E, M))
    return nan_or(a, b, E, M, pack(sign, e, r & ((1 << M) - 1), E, M))


@njit
def fp_max(a, b, want_max, E, M):
    """max (``want_max``) or min of two patterns; a NaN operand propagates.

    The order is by sign, then by the (exponent, mantissa) field, so
    -0 < +0; on equal patterns the choice does not matter.
    """
    width = 1 + E + M
    a &= (1 << width) - 1
    b &= (1 << width) - 1
    magnitude = (1 << (E + M)) - 1
    sa = a >> (E + M)
    sb = b >> (E + M)
    a_mag_greater = (a & magnitude) > (b & magnitude)
    # selects only: the array loops vectorise
    a_greater = (sa == 0) if sa != sb else (a_mag_greater != (sa == 1))
    return nan_or(a, b, E, M, a if a_greater == want_max else b)


@njit
def fp_widen(x, iE, iM, oE, oM, keep_denormals):
    """Exact conversion to a format at least as wide in both fields.

    ``keep_denormals``: an exponent-0 input is an IEEE subnormal and is
    renormalised (fp16 sources); otherwise it is read as ``1.m * 2**-bias``
    like in arithmetic (fp17 sources).  Inf becomes the largest finite value.
    """
    s, e, m = unpack(x & ((1 << (1 + iE + iM)) - 1), iE, iM)
    if is_nan(e, m, iE):
        return widened_nan(s, m, oE, oM)
    if e == (1 << iE) - 1:
        return saturated(s, oE, oM)
    if e == 0 and m == 0:
        return flushed(s, oE, oM)
    delta = (1 << (oE - 1)) - (1 << (iE - 1))
    if e == 0 and keep_denormals:
        lead = iM - bit_length(m)  # leading zeros of the mantissa field
        return pack(s, delta - lead, ((m << (lead + 1)) & ((1 << iM) - 1)) << (oM - iM), oE, oM)
    return pack(s, e + delta, m << (oM - iM), oE, oM)


@njit
def fp_narrow(x, iE, iM, oE, oM, keep_denormals):
    """Conversion to a format at most as wide in both fields, rounding to nearest even.

    Results in the output's subnormal range are IEEE subnormals when
    ``keep_denormals`` is set (fp16 outputs) and flushed to a signed zero
    otherwise (fp17), unless they round up to the smallest normal.  Overflow
    and Inf give the largest finite value.
    """
    s, e, m = unpack(x & ((1 << (1 + iE + iM)) - 1), iE, iM)
    if is_nan(e, m, iE):
        return narrowed_nan(s, m, oE, oM)
    delta = (1 << (iE - 1)) - (1 << (oE - 1))
    emax = (1 << oE) - 1
    if e >= emax + delta:
        return saturated(s, oE, oM)
    if e < delta - oM:
        return flushed(s, oE, oM)
    p = m | (1 << iM)
    drop = iM - oM
    if e <= delta:  # below the output's normal range
        r = round_nearest_even(p, drop + delta - e + 1)
        if r >> oM:
            return pack(s, 1, 0, oE, oM)
        return pack(s, 0, r, oE, oM) if keep_denormals else flushed(s, oE, oM)
    e -= delta
    r = round_nearest_even(p, drop)
    if r >> (oM + 1):
        e += 1
        r = 0
        if e == emax:
            return saturated(s, oE, oM)
    return pack(s, e, r & ((1 << oM) - 1), oE, oM)


@njit
def int_to_float(v, E, M):
    """Signed integer ``v`` to float, rounding to nearest even, saturating."""
    if v == 0:
        return 0
    s = 1 if v < 0 else 0
    mag = -v if v < 0 else v
    n = bit_length(mag)
    emax = (1 << E) - 1
    e = n - 1 + (1 << (E - 1)) - 1
    r = round_nearest_even(mag, n - (M + 1))
    if e >= emax:
        return saturated(s, E, M)
    if r >> (M + 1):
        if e >= emax - 1:
            return saturated(s, E, M)
        e += 1
    return pack(s, e, r & ((1 << M) - 1), E, M)


@njit
def fraction_to_float(f, width, E, M):
    """Unsigned ``width``-bit fraction to float: the value ``f / 2**width``.

    Rounds to nearest even; values whose exponent field would be <= 0 flush
    to +0.
    """
    if width <= 52 and width < (1 << (E - 1)) - 1:
        # exact in a double and never flushed: straight-line code
        scale = np.int64((1023 - width) << 52).view(np.float64)  # 2**-width
        u = np.float64(f * scale).view(np.int64)
        _, e, mant = _rounded_fields(u, E, M)
        return pack(0, e, mant, E, M) if f != 0 else 0
    if f == 0:
        return 0
    n = bit_length(f)
    lead = width - n
    bias = (1 << (E - 1)) - 1
    r = round_nearest_even(f, n - (M + 1))
    if r >> (M + 1):
        return pack(0, bias - lead, 0, E, M)
    if bias <= lead + 1:
        return 0
    return pack(0, bias - lead - 1, r & ((1 << M) - 1), E, M)


@njit
def float_to_int(x, width, E, M):
    """Float to a signed ``width``-bit integer, rounding half away from zero.

    Out-of-range values (and Inf) saturate by sign; a NaN gives the most
    negative value.  Every pattern, zero included, carries the implied 1, so
    zero and tiny values round to 0.
    """
    s, e, m = unpack(x & ((1 << (1 + E + M)) - 1), E, M)
    lo = -(1 << (width - 1))
    hi = (1 << (width - 1)) - 1
    if is_nan(e, m, E):
        return lo
    p = m | (1 << M)
    k = e - ((1 << (E - 1)) - 1) - M  # value = p * 2**k
    if k >= width:
        mag = hi + 1
    elif k >= 0:
        mag = p << k
    else:
        mag = shift_right_round(p, -k)
    if mag > hi:
        return lo if s else hi
    return -mag if s else mag
