"""NVDLA's floating-point algorithms on whole int64 arrays of bit patterns (numpy only).

The array twins of :mod:`sim.num.fpcore` (scalar numba kernels, where each
algorithm and NVDLA rule is explained): same names, same bits, selects
instead of branches.  ``E``/``M`` are the exponent and mantissa widths.
Add and multiply use double arithmetic as ``fpcore.fp_add``/``fp_mul`` do
(exact or innocuously double-rounded); only additions with an all-ones
exponent operand take the window algorithm, on just those elements.

fp32 add and multiply, and the fp16 <-> fp32 conversions, first run in the
processor's own IEEE arithmetic (nearest even), which gives NVDLA's bits
wherever its rules and IEEE's agree: normal or zero operands and a normal
result clear of the underflow boundary.  Only the other elements (NaN, Inf,
denormals, overflow, underflow, a zero sum) go through the rules.
``tests/num`` checks every function against its scalar twin and the golden
vectors.

Once numba is loaded (a kernel ran: no import is ever paid for this) and a process
has made :data:`LOOPS_AFTER_CALLS` calls of them, add, sub, mul, max/min, widening and
narrowing go through those scalar twins in one compiled loop instead
(:func:`_compiled_binary`, :func:`_compiled_conversion`): the same bits, without the
numpy steps' fixed costs (a few dozen calls, 40-200 us: most of a small layer's
arithmetic) and faster on any size, but for fp32 sums and fp32 -> fp16 on more than
:data:`KERNEL_ELEMENTS` elements, where numpy's IEEE path is faster.
"""

import functools
import math

import numpy as np

from sim.jit import njit, numba_loaded
from sim.num import fpcore
from sim.num.vector_int import bit_length, i64, round_nearest_even, shift_right_round
from sim.num.widths import FP16_EXP, FP16_FRAC, FP17_EXP, FP17_FRAC, FP32_EXP, FP32_FRAC

# (exponent, mantissa) widths
FP16 = (5, 10)
FP17 = (6, 10)
FP32 = (8, 23)


# --- fields and rules (sim.num.rules) --------------------------------------------
def unpack(x, E, M):
    x = i64(x)
    return (x >> (E + M)) & 1, (x >> M) & ((1 << E) - 1), x & ((1 << M) - 1)


def pack(sign, expo, mant, E, M):
    return (sign << (E + M)) | (expo << M) | mant


def is_nan(expo, mant, E):
    return (expo == (1 << E) - 1) & (mant != 0)


def is_nan_pattern(x, E, M):
    """NaN test on whole patterns (of any integer dtype): magnitudes above Inf's."""
    return (x & ((1 << (E + M)) - 1)) > (((1 << E) - 1) << M)


def is_inf_pattern(x, E, M):
    """+-Inf test on whole patterns (of any integer dtype)."""
    return (x & ((1 << (E + M)) - 1)) == (((1 << E) - 1) << M)


def significand(expo, mant, M):
    """Rules 1 and 4: every pattern but +-0 carries the implied 1."""
    return np.where((expo == 0) & (mant == 0), 0, mant | (1 << M))


def arithmetic_value(x, E, M):
    """The exact double that arithmetic reads from each pattern (rules 1 and 4)."""
    tabled = _VALUE_TABLES.get((E, M))
    return arithmetic_value_fields(x, E, M) if tabled is None else tabled(x)


def arithmetic_value_fields(x, E, M):
    """:func:`arithmetic_value` from the fields (any width; the tables are made with it)."""
    sign, expo, mant = unpack(x, E, M)
    bits = (sign << 63) | ((expo + 1024 - (1 << (E - 1))) << 52) | (mant << (52 - M))
    bits = np.where((expo == 0) & (mant == 0), sign << 63, bits)
    return bits.view(np.float64)


# --- whole-format tables -------------------------------------------------------
# fp16 and fp17 have 2**16 and 2**17 patterns, so a function of one such pattern can be
# a table made once from the field-by-field function (on every pattern): one gather then
# replaces its dozen or more whole-array numpy steps, a fixed cost of every small layer.

class _TableWhenItPays:
    """A function of one pattern of ``width`` bits: ``general`` until the elements it was
    given add up to the table's size, then a lookup in the table of every pattern made
    with ``general``.  Making a table costs about as much as converting its size in
    elements (1-14 ms), so a process that converts a few small cubes never pays for it
    and one that converts many pays at most twice what it needed (the rent-or-buy rule)."""

    def __init__(self, width: int, general):
        self.size = 1 << width
        self.general = general
        self.table = None
        self.seen = 0

    def __call__(self, x):
        table = self.table
        if table is None:
            self.seen += np.size(x)
            if self.seen < self.size:
                return self.general(x)
            table = self.table = self.general(np.arange(self.size, dtype=np.int64))
        return _by_table(table, x)


def _by_table(table, x):
    """``table`` at each pattern of ``x`` (bits above the table's width ignored, as the
    field-by-field functions ignore them); int arrays keep their shape, 0-d included."""
    x = np.asarray(x, dtype=np.int64)
    return table[(x & (len(table) - 1)).reshape(-1)].reshape(x.shape)


_VALUE_TABLES = {fmt: _TableWhenItPays(1 + sum(fmt), functools.partial(
    arithmetic_value_fields, E=fmt[0], M=fmt[1])) for fmt in (FP16, FP17)}


def saturated(sign, E, M):
    return pack(sign, (1 << E) - 2, (1 << M) - 1, E, M)


def flushed(sign, E, M):
    return sign << (E + M)


def nan_or(a, b, E, M, result):
    """Rule 5: a NaN operand is returned bit for bit, ``a`` first."""
    result = np.where(is_nan_pattern(b, E, M), b, result)
    return np.where(is_nan_pattern(a, E, M), a, result)


def _masked(x, E, M):
    return i64(x) & ((1 << (1 + E + M)) - 1)


# --- add, sub, mul, max ---------------------------------------------------------
def _rounded_fields(u, E, M):
    drop = 52 - M
    r = (u + ((1 << (drop - 1)) - 1) + ((u >> drop) & 1)) >> drop
    rebias = 1024 - (1 << (E - 1))
    return (u >> 52) - rebias, (r >> M) - rebias, r & ((1 << M) - 1)


def add_is_ordinary(a, b, E, M):
    inf = ((1 << E) - 1) << M
    magnitude = (1 << (E + M)) - 1
    return ((a & magnitude) != inf) & ((b & magnitude) != inf)


def fp_add_ordinary(a, b, E, M):
    a, b = _masked(a, E, M), _masked(b, E, M)
    u = (arithmetic_value(a, E, M) + arithmetic_value(b, E, M)).view(np.int64)
    sign = (u >> 63) & 1
    u = u & ((1 << 63) - 1)
    sign = np.where(u == 0, a >> (E + M), sign)  # rule 6
    e_exact, e, mant = _rounded_fields(u, E, M)
    r = np.where(e >= (1 << E) - 1, saturated(sign, E, M), pack(sign, e, mant, E, M))
    r = np.where(e_exact <= 0, flushed(sign, E, M), r)
    return nan_or(a, b, E, M, r)


def fp_add_window(a, b, E, M):
    """The hardware's window algorithm (see ``fpcore.fp_add_window``)."""
    a, b = _masked(a, E, M), _masked(b, E, M)
    emax = (1 << E) - 1
    extra, top = M + 2, 2 * M + 2
    a_leads = (a & ((1 << (E + M)) - 1)) >= (b & ((1 << (E + M)) - 1))  # rule 6
    big, small = np.where(a_leads, a, b), np.where(a_leads, b, a)
    sign, e, mb = unpack(big, E, M)
    s_small, e_small, ms = unpack(small, E, M)
    x = significand(e, mb, M) << extra
    y = (significand(e_small, ms, M) << extra) >> (e - e_small)
    v = np.where(sign == s_small, x + y, x - y)
    carry = (v >> (top + 1)) != 0
    lead = top + 1 - bit_length(v)
    overflow = carry & (e >= emax - 1)
    flush = ~carry & ((v == 0) | (e <= lead))
    e = np.where(carry, e + 1, e - lead)
    v = np.where(carry, v >> 1, v << np.clip(lead, 0, 63))
    r = round_nearest_even(v, M + 2)
    carry = (r >> (M + 1)) != 0
    overflow |= carry & (e >= emax - 1)
    e = np.where(carry, e + 1, e)
    r = np.where(carry, r >> 1, r)
    out = np.where(overflow, saturated(sign, E, M), pack(sign, e, r & ((1 << M) - 1), E, M))
    return nan_or(a, b, E, M, np.where(flush, flushed(sign, E, M), out))


def fp_add(a, b, E, M):
    """a + b, nearest even, NVDLA rules (arrays broadcast together)."""
    compiled = _compiled_binary(_ADD, a, b, E, M, KERNEL_ELEMENTS if (E, M) == FP32 else None)
    if compiled is not None:
        return compiled
    if (E, M) == FP32:
        return _fp32_in_hardware(a, b, ieee_fp32_add, fp_add_rules)
    return fp_add_rules(a, b, E, M)


def fp_add_rules(a, b, E, M):
    """:func:`fp_add` by NVDLA's rules on every element."""
    a, b = np.broadcast_arrays(_masked(a, E, M), _masked(b, E, M))
    out = np.array(fp_add_ordinary(a, b, E, M))
    rare = ~add_is_ordinary(a, b, E, M)
    if rare.any():
        out[rare] = fp_add_window(a[rare], b[rare], E, M)
    return out


def fp_sub(a, b, E, M):
    return fp_add(a, i64(b) ^ (1 << (E + M)), E, M)


def fp_mul(a, b, E, M):
    """a * b, nearest even; underflow flushes, overflow saturates."""
    compiled = _compiled_binary(_MUL, a, b, E, M)
    if compiled is not None:
        return compiled
    if (E, M) == FP32:
        return _fp32_in_hardware(a, b, ieee_fp32_mul, fp_mul_rules)
    return fp_mul_rules(a, b, E, M)


def fp_mul_rules(a, b, E, M):
    """:func:`fp_mul` by NVDLA's rules on every element."""
    a, b = _masked(a, E, M), _masked(b, E, M)
    emax = (1 << E) - 1
    bias = (1 << (E - 1)) - 1
    sign = (a ^ b) >> (E + M)
    ea, eb = (a >> M) & emax, (b >> M) & emax
    u = (arithmetic_value(a, E, M) * arithmetic_value(b, E, M)).view(np.int64)
    _, e, mant = _rounded_fields(u & ((1 << 63) - 1), E, M)
    r = np.where(e >= emax, saturated(sign, E, M), pack(sign, e, mant, E, M))
    r = np.where((e <= 0) | (ea + eb < bias), flushed(sign, E, M), r)
    return nan_or(a, b, E, M, r)


def fp_max(a, b, want_max, E, M):
    """max (``want_max``) or min by sign, then by (exponent, mantissa); NaNs propagate."""
    if np.ndim(want_max) == 0:  # one choice for all (an array of them: numpy's)
        compiled = _compiled_binary(_MAX if want_max else _MIN, a, b, E, M)
        if compiled is not None:
            return compiled
    a, b = _masked(a, E, M), _masked(b, E, M)
    magnitude = (1 << (E + M)) - 1
    sa, sb = a >> (E + M), b >> (E + M)
    a_greater = np.where(sa != sb, sa == 0, ((a & magnitude) > (b & magnitude)) != (sa == 1))
    return nan_or(a, b, E, M, np.where(a_greater == want_max, a, b))


# --- the processor's IEEE fp32 where NVDLA agrees -------------------------------
def _magnitude32(u):
    return u & np.uint32(0x7FFFFFFF)


def _zero32(u):
    return _magnitude32(u) == 0


def normal_result32(u):
    """fp32 patterns (uint32) with exponent fields 2..254: normal, finite, and clear of the
    underflow boundary (where IEEE rounds up to 2**-126 what NVDLA flushes)."""
    with np.errstate(over="ignore"):  # the range test wraps below the range
        return (_magnitude32(u) - np.uint32(0x01000000)) < np.uint32(0x7E800000)


def reads_as_ieee32(u):
    """fp32 patterns (uint32) that NVDLA and IEEE read as the same number: normal or zero
    (NVDLA reads a denormal with an implied 1, and Inf as an ordinary number)."""
    m = _magnitude32(u)
    with np.errstate(over="ignore"):  # the range test wraps below the range
        return ((m - np.uint32(0x00800000)) < np.uint32(0x7F000000)) | (m == 0)


def ieee_fp32_mul(ua, ub, alike: bool = False):
    """(IEEE float32 product of uint32 patterns, where it is NVDLA's :func:`fp_mul`).

    They agree when both operands read alike (:func:`reads_as_ieee32`; a caller
    that knows it passes ``alike``) and the product is normal or has a zero operand.
    """
    with np.errstate(all="ignore"):
        ur = (ua.view(np.float32) * ub.view(np.float32)).view(np.uint32)
    agrees = normal_result32(ur) | _zero32(ua) | _zero32(ub)
    return ur, agrees if alike else agrees & reads_as_ieee32(ua) & reads_as_ieee32(ub)


def ieee_fp32_add(ua, ub, alike: bool = False):
    """(IEEE float32 sum of uint32 patterns, where it is NVDLA's :func:`fp_add`): operands
    that read alike (or ``alike``) and a normal sum (a zero sum takes ``a``'s sign)."""
    with np.errstate(all="ignore"):
        ur = (ua.view(np.float32) + ub.view(np.float32)).view(np.uint32)
    # a zero sum agrees when IEEE gave it a's sign (x + -x, and most sums of zeros): the
    # padded channels of every float SDP layer are 0 + 0
    agrees = normal_result32(ur) | (_zero32(ur) & ((ur ^ ua) < np.uint32(0x80000000)))
    return ur, agrees if alike else agrees & reads_as_ieee32(ua) & reads_as_ieee32(ub)


def ieee_fp32_max(ua, ub, want_max: bool):
    """(the larger (``want_max``) or smaller of uint32 fp32 patterns as IEEE compares them,
    where that is NVDLA's :func:`fp_max`) for operands that read alike: all but a comparison
    of two zeros (IEEE finds +0 and -0 equal, NVDLA orders them)."""
    a, b = ua.view(np.float32), ub.view(np.float32)
    return np.where(a > b if want_max else a < b, ua, ub), ~((a == b) & (a == 0))


def ieee_fp32_relu(u):
    """NVDLA's fp32 ReLU of uint32 patterns that are not NaN: a set sign bit (-0 too) gives +0."""
    return np.where(u >= np.uint32(0x80000000), np.uint32(0), u)


def ieee_fp16_to_fp32(u16):
    """(IEEE widening of uint16 fp16 patterns, where it is NVDLA's): all but Inf and NaN."""
    return (u16.view(np.float16).astype(np.float32).view(np.uint32),
            (u16 & 0x7C00) != 0x7C00)


def ieee_fp32_to_fp16(u):
    """(IEEE narrowing, nearest even, of uint32 fp32 patterns, where it is NVDLA's): finite
    inputs whose result is zero from a zero, or normal and off the underflow boundary."""
    with np.errstate(all="ignore"):
        h = u.view(np.float32).astype(np.float16).view(np.uint16)
    e = (h >> 10) & 0x1F
    return h, (_magnitude32(u) < np.uint32(0x7F800000)) & (_zero32(u) | ((e >= 2) & (e != 31)))


def _fp32_in_hardware(a, b, ieee_op, rules):
    """``ieee_op`` where it agrees with NVDLA, ``rules`` elsewhere (fp32 patterns).

    Operands broadcast together; a scalar operand stays scalar until the end.
    """
    a, b = _masked(a, *FP32), _masked(b, *FP32)
    result_shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a, b = np.atleast_1d(a), np.atleast_1d(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    ur, agrees = ieee_op(a.astype(np.uint32), b.astype(np.uint32))
    out = ur.astype(np.int64)
    rare = ~agrees
    if rare.any():
        rare = np.broadcast_to(rare, shape)
        out[rare] = rules(np.broadcast_to(a, shape)[rare], np.broadcast_to(b, shape)[rare],
                          *FP32)
    return out.reshape(result_shape)


# --- conversions ----------------------------------------------------------------
def fp_widen(x, iE, iM, oE, oM, keep_denormals):
    """Exact widening; Inf becomes the largest finite value (``fpcore.fp_widen``)."""
    compiled = _compiled_conversion(_WIDEN, x, (iE, iM, oE, oM, keep_denormals))
    if compiled is not None:
        return compiled
    s, e, m = unpack(_masked(x, iE, iM), iE, iM)
    delta = (1 << (oE - 1)) - (1 << (iE - 1))
    out = pack(s, e + delta, m << (oM - iM), oE, oM)
    if keep_denormals:
        lead = iM - bit_length(m)
        sub = pack(s, delta - lead, ((m << np.clip(lead + 1, 0, 63)) & ((1 << iM) - 1))
                   << (oM - iM), oE, oM)
        out = np.where(e == 0, sub, out)
    out = np.where((e == 0) & (m == 0), flushed(s, oE, oM), out)
    out = np.where(e == (1 << iE) - 1, saturated(s, oE, oM), out)
    return np.where(is_nan(e, m, iE), pack(s, (1 << oE) - 1, m, oE, oM), out)


def fp_narrow(x, iE, iM, oE, oM, keep_denormals):
    """Narrowing with nearest even (``fpcore.fp_narrow``)."""
    compiled = _compiled_conversion(_NARROW, x, (iE, iM, oE, oM, keep_denormals))
    if compiled is not None:
        return compiled
    s, e, m = unpack(_masked(x, iE, iM), iE, iM)
    delta = (1 << (iE - 1)) - (1 << (oE - 1))
    emax = (1 << oE) - 1
    p = m | (1 << iM)
    drop = iM - oM
    # below the output's normal range
    r_low = round_nearest_even(p, drop + delta - e + 1)
    low = np.where(r_low >> oM, pack(s, 1, 0, oE, oM),
                   pack(s, 0, r_low, oE, oM) if keep_denormals else flushed(s, oE, oM))
    # normal range
    r = round_nearest_even(p, drop)
    carry = (r >> (oM + 1)) != 0
    e_out = np.where(carry, e - delta + 1, e - delta)
    normal = np.where(carry & (e_out == emax), saturated(s, oE, oM),
                      pack(s, e_out, np.where(carry, 0, r & ((1 << oM) - 1)), oE, oM))
    out = np.where(e <= delta, low, normal)
    out = np.where(e < delta - oM, flushed(s, oE, oM), out)
    out = np.where(e >= emax + delta, saturated(s, oE, oM), out)
    return np.where(is_nan(e, m, iE), pack(s, emax, m & ((1 << oM) - 1), oE, oM), out)


def int_to_float(v, E, M):
    """Signed integers to float, nearest even, saturating."""
    v = i64(v)
    s = (v < 0).astype(np.int64)
    mag = np.abs(v)
    n = bit_length(mag)
    emax = (1 << E) - 1
    e = n - 1 + (1 << (E - 1)) - 1
    r = round_nearest_even(mag, n - (M + 1))
    carry = (r >> (M + 1)) != 0
    overflow = (e >= emax) | (carry & (e >= emax - 1))
    out = pack(s, np.where(carry, e + 1, e), r & ((1 << M) - 1), E, M)
    out = np.where(overflow, saturated(s, E, M), out)
    return np.where(v == 0, 0, out)


def fraction_to_float(f, width, E, M):
    """The unsigned ``width``-bit fraction ``f / 2**width``; exponents <= 0 flush to +0."""
    f = i64(f)
    n = bit_length(f)
    lead = width - n
    bias = (1 << (E - 1)) - 1
    r = round_nearest_even(f, n - (M + 1))
    out = np.where(bias <= lead + 1, 0, pack(0, bias - lead - 1, r & ((1 << M) - 1), E, M))
    out = np.where((r >> (M + 1)) != 0, pack(0, bias - lead, 0, E, M), out)
    return np.where(f == 0, 0, out)


def float_to_int(x, width, E, M):
    """Float to a signed ``width``-bit integer, half away from zero; NaN -> most negative."""
    s, e, m = unpack(_masked(x, E, M), E, M)
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    p = m | (1 << M)
    k = e - ((1 << (E - 1)) - 1) - M
    mag = np.where(k >= 0, p << np.clip(k, 0, 63), shift_right_round(p, np.maximum(-k, 0)))
    mag = np.where(k >= width, hi + 1, mag)
    out = np.where(mag > hi, np.where(s == 1, lo, hi), np.where(s == 1, -mag, mag))
    return np.where(is_nan(e, m, E), lo, out)


# --- named conversions (the formats of sim.num.ops) -------------------------------
def fp16_to_fp17(a):
    return _FP16_TO_FP17(a)


def fp16_to_fp32(a):
    """Exact; IEEE's widening agrees except on Inf (saturates) and NaN (payload kept)."""
    return _FP16_TO_FP32(a)


def fp16_to_fp32_by_ieee(a):
    """:func:`fp16_to_fp32` by the processor's IEEE widening (its table is made with it)."""
    u = np.asarray(i64(a) & 0xFFFF)
    shape, u = u.shape, u.reshape(-1).astype(np.uint16)
    widened, agrees = ieee_fp16_to_fp32(u)
    out = widened.astype(np.int64)
    rare = ~agrees
    if rare.any():
        out[rare] = fp_widen(u[rare].astype(np.int64), FP16_EXP, FP16_FRAC, FP32_EXP,
                             FP32_FRAC, True)
    return out.reshape(shape)


def fp17_to_fp32(a):
    return _FP17_TO_FP32(a)


def fp17_to_fp16(a):
    return _FP17_TO_FP16(a)


_FP16_TO_FP17 = _TableWhenItPays(16, lambda a: fp_widen(a, *FP16, *FP17, True))
_FP16_TO_FP32 = _TableWhenItPays(16, fp16_to_fp32_by_ieee)
_FP17_TO_FP32 = _TableWhenItPays(17, lambda a: fp_widen(a, *FP17, *FP32, False))
_FP17_TO_FP16 = _TableWhenItPays(17, lambda a: fp_narrow(a, *FP17, *FP16, True))


def fp32_to_fp16(a):
    """Nearest even (:func:`fp_narrow`): IEEE's narrowing but for NaNs (:func:`_narrow32`)."""
    compiled = _compiled_conversion(_NARROW, a, (*FP32, *FP16, True), KERNEL_ELEMENTS)
    if compiled is not None:
        return compiled
    u = np.asarray(_masked(a, *FP32))
    shape, u = u.shape, u.reshape(-1).astype(np.uint32)
    out = _narrow32(u)
    nan = _magnitude32(u) > np.uint32(0x7F800000)
    if nan.any():
        out[nan] = fp_narrow(u[nan].astype(np.int64), FP32_EXP, FP32_FRAC, FP16_EXP,
                             FP16_FRAC, True)
    return out.reshape(shape)


def _narrow32(u):
    """NVDLA's fp32 -> fp16 narrowing of uint32 patterns that are not NaN (int64): IEEE's
    nearest even with an Inf result saturated.  With denormals kept, NVDLA rounds a small
    value onto fp16's denormal grid, flushes it to a signed zero below half its step, and
    reads an fp32 denormal (implied 1) as far below that: IEEE does the same, so only its
    overflow differs (the same inputs round to Inf, NVDLA keeps the largest finite value).
    :func:`ieee_fp32_to_fp16` (the fused paths' test) stays the narrower rule."""
    with np.errstate(all="ignore"):
        out = u.view(np.float32).astype(np.float16).view(np.uint16).astype(np.int64)
    out -= (out & 0x7FFF) == 0x7C00  # +-Inf -> +-0x7BFF
    return out


def fp32_to_fp17(a):
    return fp_narrow(a, FP32_EXP, FP32_FRAC, FP17_EXP, FP17_FRAC, False)


def uint16_to_fp17(a):
    return fraction_to_float(i64(a) & 0xFFFF, 16, FP17_EXP, FP17_FRAC)


# --- the scalar twins in one compiled loop, once numba is loaded ----------------------
#: fp32 sums and fp32 -> fp16 narrowing take the compiled loops up to this many elements:
#: beyond it numpy's IEEE path is faster (an fp32 sum of 16384 ordinary numbers: 100 us
#: against 170); below it its fixed costs dominate (of 900: 40-160 us against 9).  The
#: other operations' loops are faster on any size (fp16 and fp17 sums 3-5 times).
KERNEL_ELEMENTS = 4096
#: The loops come from numba's cache in 10-16 ms, once per process: they are taken only
#: after this many calls were made in numpy with numba loaded (about as long), so a
#: process with a few fp layers never pays for them, and one with many pays at most
#: twice what it needed (the rent-or-buy rule, as :class:`_TableWhenItPays`)
LOOPS_AFTER_CALLS = 200
_calls_before_loops = LOOPS_AFTER_CALLS  # counted down by _use_loops
_ADD, _MUL, _MAX, _MIN = 0, 1, 2, 3  # _binary_elements' operations
_WIDEN, _NARROW = 0, 1  # _conversion_elements'


@njit
def _binary_elements(op, a, b, E, M, out):
    """``out[i]`` = the ``fpcore`` operation ``op`` of ``a[i]`` and ``b[i]``."""
    for i in range(out.size):
        if op == _ADD:
            out[i] = fpcore.fp_add(a[i], b[i], E, M)
        elif op == _MUL:
            out[i] = fpcore.fp_mul(a[i], b[i], E, M)
        else:
            out[i] = fpcore.fp_max(a[i], b[i], op == _MAX, E, M)


@njit
def _conversion_elements(op, x, iE, iM, oE, oM, keep_denormals, out):
    """``out[i]`` = ``fpcore.fp_widen`` (``op`` _WIDEN) or ``fp_narrow`` of ``x[i]``."""
    for i in range(out.size):
        if op == _WIDEN:
            out[i] = fpcore.fp_widen(x[i], iE, iM, oE, oM, keep_denormals)
        else:
            out[i] = fpcore.fp_narrow(x[i], iE, iM, oE, oM, keep_denormals)


def _flat_int64(x, shape) -> np.ndarray:
    """``x`` broadcast to ``shape`` as a new C-ordered int64 array, flattened (one kernel
    signature: never a read-only or strided view)."""
    if np.shape(x) != shape:
        x = np.broadcast_to(x, shape)
    return np.array(x, np.int64).reshape(-1)


def _use_loops() -> bool:
    """Whether the compiled loops compute (numba loaded, and LOOPS_AFTER_CALLS calls made
    in numpy with it loaded); else one such call more is counted.  (Threads may race on
    the count: it only decides a little earlier or later.)"""
    global _calls_before_loops
    if _calls_before_loops <= 0:
        return True  # counted down only while numba was loaded
    if numba_loaded():
        _calls_before_loops -= 1
    return False


def _compiled_binary(op, a, b, E, M, limit=None):
    """The :func:`_binary_elements` result (int64, the operands' broadcast shape) when the
    loops compute (:func:`_use_loops`) and the result has at most ``limit`` elements (None:
    any number), else None (numpy computes it)."""
    if not _use_loops():
        return None
    a, b = i64(a), i64(b)
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    if limit is not None and math.prod(shape) > limit:
        return None
    out = np.empty(shape, np.int64)
    _binary_elements(op, _flat_int64(a, shape), _flat_int64(b, shape), E, M, out.reshape(-1))
    return out


def _compiled_conversion(op, x, widths, limit=None):
    """The :func:`_conversion_elements` result (int64, ``x``'s shape) for ``widths`` =
    (iE, iM, oE, oM, keep_denormals), or None as :func:`_compiled_binary`."""
    if not _use_loops():
        return None
    x = i64(x)
    if limit is not None and x.size > limit:
        return None
    iE, iM, oE, oM, keep_denormals = widths
    out = np.empty(x.shape, np.int64)
    _conversion_elements(op, _flat_int64(x, x.shape), iE, iM, oE, oM, bool(keep_denormals),
                         out.reshape(-1))
    return out
