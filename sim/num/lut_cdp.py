"""The CDP's LUT lookup, one value at a time (numba kernels for the LRN loops).

See :mod:`sim.num.lut` for the tables, the choice between them and the
integer lookup on whole arrays (numpy, which small layers use); fp16 data is
looked up in fp32/fp17 as NVDLA's C-model does.
"""

import math

import numpy as np

from sim.jit import njit
from sim.num import lut  # the tables and the parameter vector's slots
from sim.num.fp32_fast import as_float32, fp32_add
from sim.num.fpcore import fp_add, fp_mul, fp_sub
from sim.num.ops import (
    fp16_to_fp17_bits,
    fp16_to_fp32_bits,
    fp32_to_fp17_bits,
    uint16_to_fp17_bits,
)
from sim.num.rounding import bit_length, round_via_double
from sim.num.widths import FP17_EXP, FP17_FRAC, FP32_EXP, FP32_FRAC


@njit
def choose_table(le_kind, lo_kind, uflow_lo, oflow_lo, hybrid_lo):
    """(use LO, outcome) from the two tables' result kinds and the three priorities."""
    if le_kind == lut.KIND_UFLOW and lo_kind == lut.KIND_UFLOW:
        return uflow_lo != 0, lut.UFLOW
    if le_kind == lut.KIND_OFLOW and lo_kind == lut.KIND_OFLOW:
        return oflow_lo != 0, lut.OFLOW
    le_hit = le_kind == lut.KIND_HIT
    lo_hit = lo_kind == lut.KIND_HIT
    if le_hit != lo_hit:
        return lo_hit, (lut.LO_HIT if lo_hit else lut.LE_HIT)
    return hybrid_lo != 0, lut.HYBRID


# --- integer lookup ----------------------------------------------------------

@njit
def _c_shift_right(x, n):
    """``x >> n`` with the shift count taken modulo 64, as x86 does."""
    return x >> (n & 63)


@njit
def _c_shift_left(x, n):
    return x << (n & 63)


@njit
def _extrapolate(base, x, ref, scale, shift):
    r = base + round_via_double((x - ref) * scale, shift, lut.INTERP_BITS)
    return round_via_double(r, 0, 16)


@njit
def _interpolate(y0, y1, frac16):
    r = y0 + round_via_double((y1 - y0) * frac16, 16, lut.INTERP_BITS)
    return round_via_double(r, 0, 16)


@njit
def _linear_kind(x, size, start, select):
    """(kind, index, 16-bit fraction) in a linear table; kind 0 underflow, 1 overflow, 2 hit."""
    d = x - start
    index = _c_shift_left(d, -select) if select < 0 else _c_shift_right(d, select)
    if index < 0 or d <= 0:
        return 0, 0, 0
    if index >= size - 1:
        return 1, 0, 0
    frac = 0
    if select >= 0:
        frac = d & ((np.int64(1) << (select & 31)) - 1)  # d > 0: its remainder
        if select > 16:
            frac = _c_shift_right(frac, select - 16)
        else:
            frac = _c_shift_left(frac, 16 - select)
    return 2, index, frac


@njit
def _exponent_kind(x, start, offset):
    """:func:`_linear_kind` of the LE table in exponent mode."""
    d = x - start
    log2 = bit_length(d) - 1 if d > 0 else 0
    index = log2 - offset
    if index < 0 or d <= 0:
        return 0, 0, 0
    if index >= lut.LE_ENTRIES - 1:
        return 1, 0, 0
    frac = d - (np.int64(1) << log2)
    return 2, index, (frac >> (log2 - 16)) if log2 > 16 else (frac << (16 - log2))


@njit
def _value(kind, index, frac, x, x_under, table, start, end, uscale, ushift, oscale, oshift):
    """A table's value: extrapolated below (from ``x_under``) or above it, or interpolated."""
    if kind == 0:
        return _extrapolate(table[0], x_under, start, uscale, ushift)
    if kind == 1:
        return _extrapolate(table[table.size - 1], x, end, oscale, oshift)
    return _interpolate(table[index], table[index + 1], frac)


@njit
def lookup_int_one(x, le, lo, p):
    """LUT value (int16) of one integer square sum ``x`` and its counter index: the scalar
    twin of :func:`sim.num.lut.lookup_int`, for the fused LRN kernel.  Only the chosen
    table's value is computed."""
    x_under = x
    if p[lut.P_EXPONENT]:
        le_kind, le_index, le_frac = _exponent_kind(x, p[lut.P_LE_START], p[lut.P_LE_OFFSET])
        offset = p[lut.P_LE_OFFSET]
        x_under = x - (0 if offset < 0 else _c_shift_left(np.int64(1), offset))
    else:
        le_kind, le_index, le_frac = _linear_kind(x, lut.LE_ENTRIES, p[lut.P_LE_START],
                                                  p[lut.P_LE_SELECT])
    lo_kind, lo_index, lo_frac = _linear_kind(x, lut.LO_ENTRIES, p[lut.P_LO_START],
                                              p[lut.P_LO_SELECT])
    use_lo, outcome = choose_table(le_kind, lo_kind, p[lut.P_UFLOW_PRI], p[lut.P_OFLOW_PRI],
                                   p[lut.P_HYBRID_PRI])
    if use_lo:
        return _value(lo_kind, lo_index, lo_frac, x, x, lo, p[lut.P_LO_START],
                      p[lut.P_LO_END], p[lut.P_LO_USCALE], p[lut.P_LO_USHIFT],
                      p[lut.P_LO_OSCALE], p[lut.P_LO_OSHIFT]), outcome
    return _value(le_kind, le_index, le_frac, x, x_under, le, p[lut.P_LE_START],
                  p[lut.P_LE_END], p[lut.P_LE_USCALE], p[lut.P_LE_USHIFT], p[lut.P_LE_OSCALE],
                  p[lut.P_LE_OSHIFT]), outcome


# --- fp16 lookup (fp32 index arithmetic, fp17 interpolation) -------------------

@njit
def _f32(bits):
    """The IEEE value of an fp32 bit pattern, as float64 (a scalar bit cast: a cast through a
    one-element array allocated on every call was the lookup's largest cost)."""
    return np.float64(as_float32(bits))


@njit
def _power_of_two_bits(exponent):
    """The fp32 bit pattern of ``2.0 ** exponent``, ``exponent`` from -126 to 127."""
    return np.int64(exponent + 127) << 23


@njit
def _fp_table_place(x, size, exponent, start, offset, select):
    """Where the fp32 square sum ``x`` falls in one table: (kind, index, 16-bit fraction,
    ``x - start`` as fp32 bits)."""
    return _place_of_difference(fp_sub(x, start, FP32_EXP, FP32_FRAC), size, exponent,
                                offset, 2.0 ** (-select))


@njit(inline="always")
def _place_of_difference(d, size, exponent, offset, scale):
    """:func:`_fp_table_place` of ``d`` = ``x - start`` (fp32 bits), ``scale`` =
    ``2.0 ** -select`` (exact: a power of two)."""
    dv = _f32(d)
    kind = 2
    index = 0
    frac = 0
    if dv <= 0 or math.isnan(dv):
        kind = 0
    elif exponent:
        index = ((d >> 23) & 0xFF) - 127 - offset
        frac = (d >> 7) & 0xFFFF
        if index < 0:
            kind = 0
        elif index >= size - 1:
            kind = 1
    else:
        shifted = np.float64(np.float32(dv * scale))
        if shifted >= size - 1:
            kind = 1
        else:
            index = np.int64(shifted)
            frac = np.int64((shifted - np.float64(index)) * 65536.0) & 0xFFFF
    return kind, index, frac, d


@njit
def _fp_table_value(place, x, table, size, exponent, start, end, offset, uscale, oscale):
    """The fp17 value of one table of ``size`` entries at ``place`` (:func:`_fp_table_place`
    of ``x``): extrapolated below or above it, or interpolated."""
    kind, index, frac, d = place
    if kind == 0:
        if exponent:
            bias = 0 if offset <= -127 else _power_of_two_bits(offset)
            d = fp_sub(x, fp_add(start, bias, FP32_EXP, FP32_FRAC), FP32_EXP, FP32_FRAC)
        slope = fp16_to_fp17_bits(uscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, FP17_EXP, FP17_FRAC)
        return fp_add(term, fp16_to_fp17_bits(table[0] & 0xFFFF), FP17_EXP, FP17_FRAC)
    if kind == 1:
        d = fp_sub(x, end, FP32_EXP, FP32_FRAC)
        slope = fp16_to_fp17_bits(oscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, FP17_EXP, FP17_FRAC)
        return fp_add(term, fp16_to_fp17_bits(table[size - 1] & 0xFFFF), FP17_EXP, FP17_FRAC)
    y0 = table[index] & 0xFFFF
    y1 = table[index + 1] & 0xFFFF
    diff = fp_sub(fp16_to_fp32_bits(y1), fp16_to_fp32_bits(y0), FP32_EXP, FP32_FRAC)
    term = fp_mul(fp32_to_fp17_bits(diff), uint16_to_fp17_bits(frac), FP17_EXP, FP17_FRAC)
    return fp_add(term, fp16_to_fp17_bits(y0), FP17_EXP, FP17_FRAC)


@njit
def lookup_fp(x, le, lo, p):
    """LUT value (fp17 bits) for the fp32 square sum ``x``; returns (value, counter index).
    Both tables place ``x``; only the chosen one's value is computed."""
    exponent = p[lut.P_EXPONENT] != 0
    le_place = _fp_table_place(x, lut.LE_ENTRIES, exponent, p[lut.P_LE_START],
                               p[lut.P_LE_OFFSET], p[lut.P_LE_SELECT])
    lo_place = _fp_table_place(x, lut.LO_ENTRIES, False, p[lut.P_LO_START], 0,
                               p[lut.P_LO_SELECT])
    use_lo, outcome = choose_table(le_place[0], lo_place[0], p[lut.P_UFLOW_PRI],
                                   p[lut.P_OFLOW_PRI], p[lut.P_HYBRID_PRI])
    if use_lo:
        return _fp_table_value(lo_place, x, lo, lut.LO_ENTRIES, False, p[lut.P_LO_START],
                               p[lut.P_LO_END], 0, p[lut.P_LO_USCALE],
                               p[lut.P_LO_OSCALE]), outcome
    return _fp_table_value(le_place, x, le, lut.LE_ENTRIES, exponent, p[lut.P_LE_START],
                           p[lut.P_LE_END], p[lut.P_LE_OFFSET], p[lut.P_LE_USCALE],
                           p[lut.P_LE_OSCALE]), outcome


# --- fp16 lookup with the layer's constants prepared once ---------------------
# lookup_fp recomputes per value what only depends on the tables and registers (each
# entry's fp17 value and its step to the next, the slopes, the exponent table's
# underflow reference, 2**-select); prepare_fp computes them once.  The per-value
# functions take and return scalars only: an array handed to a function in a loop
# (inlined or not) gets its reference counted on every pass, which cost twice the
# lookup itself.  A caller does:
#     use_lo, outcome, kind, index, frac, d = place_fp(x, consts)
#     at = entry_fp(use_lo, kind, index)
#     value = value_fp(kind, frac, d, x, bases[use_lo, at], steps[use_lo, at], use_lo, consts)
# and gets lookup_fp's (value, outcome) bits.
SIGN32 = 0x80000000


@njit(inline="always")
def _fp32_sub(a, b):
    """``fp_sub(a, b, FP32_EXP, FP32_FRAC)``'s bits, the processor's sum where it is NVDLA's."""
    return fp32_add(a, b ^ SIGN32)


@njit
def _table_steps(table, size, bases, steps):
    """Fill ``bases``/``steps`` with each entry's fp17 value and the fp17 of the fp32 step to
    the next entry (as :func:`_fp_table_value` interpolates)."""
    for i in range(size):
        y0 = table[i] & 0xFFFF
        bases[i] = fp16_to_fp17_bits(y0)
        if i + 1 < size:
            diff = fp_sub(fp16_to_fp32_bits(table[i + 1] & 0xFFFF), fp16_to_fp32_bits(y0),
                          FP32_EXP, FP32_FRAC)
            steps[i] = fp32_to_fp17_bits(diff)


def prepare_fp(le, lo, p):
    """(consts, bases, steps) of the fp16 lookup for tables ``le``/``lo`` and the parameter
    vector ``p``: a tuple of scalars, and (2, LO_ENTRIES) arrays of fp17 entries and
    steps, row 0 the LE table, row 1 the LO table."""
    p = [int(v) for v in np.asarray(p, np.int64)]
    offset = p[lut.P_LE_OFFSET]
    bias = 0 if offset <= -127 else int(_power_of_two_bits(offset))
    under_start = int(fp_add(p[lut.P_LE_START], bias, FP32_EXP, FP32_FRAC))

    def slope(slot):
        return int(fp16_to_fp17_bits(p[slot] & 0xFFFF))

    consts = (p[lut.P_EXPONENT] != 0, p[lut.P_UFLOW_PRI], p[lut.P_OFLOW_PRI],
              p[lut.P_HYBRID_PRI],
              p[lut.P_LE_START], offset, 2.0 ** -p[lut.P_LE_SELECT], under_start,
              p[lut.P_LE_END], slope(lut.P_LE_USCALE), slope(lut.P_LE_OSCALE),
              p[lut.P_LO_START], 2.0 ** -p[lut.P_LO_SELECT], p[lut.P_LO_END],
              slope(lut.P_LO_USCALE), slope(lut.P_LO_OSCALE))
    bases = np.zeros((2, lut.LO_ENTRIES), np.int64)
    steps = np.zeros((2, lut.LO_ENTRIES), np.int64)
    _table_steps(np.asarray(le, np.int64), lut.LE_ENTRIES, bases[0], steps[0])
    _table_steps(np.asarray(lo, np.int64), lut.LO_ENTRIES, bases[1], steps[1])
    return consts, bases, steps


@njit(inline="always")
def _place_prepared(x, size, exponent, start, offset, scale):
    """:func:`_fp_table_place` with ``2.0 ** -select`` given as ``scale``, the difference
    in the processor's fp32 (:func:`_fp32_sub`)."""
    return _place_of_difference(_fp32_sub(x, start), size, exponent, offset, scale)


@njit(inline="always")
def place_fp(x, consts):
    """Where the fp32 square sum ``x`` falls: (use LO, outcome, and in the chosen table the
    kind (0 under, 1 over, 2 inside), index, 16-bit fraction and ``x - start``)."""
    (exponent, uflow_pri, oflow_pri, hybrid_pri, le_start, le_offset, le_scale, _, _, _, _,
     lo_start, lo_scale, _, _, _) = consts
    le_kind, le_index, le_frac, le_d = _place_prepared(x, lut.LE_ENTRIES, exponent, le_start,
                                                       le_offset, le_scale)
    lo_kind, lo_index, lo_frac, lo_d = _place_prepared(x, lut.LO_ENTRIES, False, lo_start, 0,
                                                       lo_scale)
    use_lo, outcome = choose_table(le_kind, lo_kind, uflow_pri, oflow_pri, hybrid_pri)
    if use_lo:
        return 1, outcome, lo_kind, lo_index, lo_frac, lo_d
    return 0, outcome, le_kind, le_index, le_frac, le_d


@njit(inline="always")
def entry_fp(use_lo, kind, index):
    """The chosen table's entry the value starts from: the first below it, the last above."""
    last = (lut.LO_ENTRIES if use_lo else lut.LE_ENTRIES) - 1
    return 0 if kind == 0 else (last if kind == 1 else index)


@njit(inline="always")
def value_fp(kind, frac, d, x, base, step, use_lo, consts):
    """:func:`_fp_table_value` of a place from :func:`place_fp`, ``base``/``step`` the
    prepared fp17 entry and step at :func:`entry_fp`."""
    (exponent, _, _, _, _, _, _, le_under_start, le_end, le_uslope, le_oslope, _, _, lo_end,
     lo_uslope, lo_oslope) = consts
    if kind == 0:
        if exponent and not use_lo:
            d = _fp32_sub(x, le_under_start)
        slope = lo_uslope if use_lo else le_uslope
        term = fp_mul(fp32_to_fp17_bits(d), slope, FP17_EXP, FP17_FRAC)
    elif kind == 1:
        slope = lo_oslope if use_lo else le_oslope
        over = _fp32_sub(x, lo_end if use_lo else le_end)
        term = fp_mul(fp32_to_fp17_bits(over), slope, FP17_EXP, FP17_FRAC)
    else:
        term = fp_mul(step, uint16_to_fp17_bits(frac), FP17_EXP, FP17_FRAC)
    return fp_add(term, base, FP17_EXP, FP17_FRAC)


@njit
def lookup_fp_prepared(x, consts, bases, steps):
    """:func:`lookup_fp` of ``x`` from :func:`prepare_fp`'s results, the three steps above:
    (fp17 value, counter index).  For tests and callers outside loops."""
    use_lo, outcome, kind, index, frac, d = place_fp(x, consts)
    at = entry_fp(use_lo, kind, index)
    return value_fp(kind, frac, d, x, bases[use_lo, at], steps[use_lo, at], use_lo,
                    consts), outcome


# --- the sign of a value times a zero centre ----------------------------------
# An fp17 product with a +-0 operand is the signed zero (sign xor) unless the other operand
# is a NaN, which it returns (rules 4 and 5: Inf is finite, 0 * Inf = 0).  So where the
# centre is +-0 the LRN output needs only the LUT value's sign, and that is often known
# from the chosen entry alone; zero_signs_fp finds where, once a layer.  Below or above a
# table with a zero slope the value itself is known (flat_values_fp), whatever the centre.
UNKNOWN_SIGN = -1
UNKNOWN_VALUE = -1  # (no fp17 pattern)
EXP17_ALL_ONES = 0x3F << FP17_FRAC
SIGN17_BIT = FP17_EXP + FP17_FRAC
MAGNITUDE32, INF32 = 0x7FFFFFFF, 0x7F800000


def _sign17(v):
    return (v >> SIGN17_BIT) & 1


def _magnitude17(v):
    return v & ((1 << SIGN17_BIT) - 1)


def _ordinary17(v):
    """Neither NaN nor Inf: fp_add takes its double path and cannot return the pattern."""
    return (v & EXP17_ALL_ONES) != EXP17_ALL_ONES


def _hit_signs(bases: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The sign of ``fp_add(fp_mul(step, f), base)`` for every fraction 0 <= f < 1, or
    UNKNOWN_SIGN, entry by entry.  The term has the step's sign and at most its magnitude
    (a product below a representable value rounds to at most it), so a non-zero base
    leads when the signs agree or the step is smaller: the exact sum keeps the base's
    sign, and rounding, flushing and saturating keep a sum's sign."""
    leads = (_sign17(steps) == _sign17(bases)) | (_magnitude17(steps) < _magnitude17(bases))
    known = _ordinary17(bases) & _ordinary17(steps) & (_magnitude17(bases) != 0) & leads
    return np.where(known, _sign17(bases), UNKNOWN_SIGN)


def _flat_value(base: int, slope: int, reference: int) -> int:
    """``fp_add(fp_mul(fp32_to_fp17(x - reference), slope), base)`` for every x that is not
    a NaN, when that is one value, else UNKNOWN_VALUE.  With a +-0 slope the term is a
    signed zero (0 * Inf is 0; the difference is no NaN when neither x nor the reference
    is), and a zero plus a base of a normal exponent field is the base, exactly.  (A NaN
    reference can narrow to the Inf pattern, whose term is a zero too; not worth telling
    apart.)"""
    reference_nan = (reference & 0x7FFFFFFF) > 0x7F800000
    exponent = (base >> FP17_FRAC) & 0x3F
    if reference_nan or _magnitude17(slope) != 0 or not 0 < exponent < 0x3F:
        return UNKNOWN_VALUE
    return base


def flat_values_fp(prepared):
    """(2, 2) LUT values below (column 0) and above (1) each table (row 0 LE, 1 LO) where
    the extrapolation is flat (:func:`_flat_value`), else UNKNOWN_VALUE; they hold for
    square sums that are not NaNs.  From :func:`prepare_fp`'s results."""
    consts, bases, _ = prepared
    (exponent, _, _, _, le_start, _, _, le_under_start, le_end, le_uslope, le_oslope,
     lo_start, _, lo_end, lo_uslope, lo_oslope) = consts
    tables = ((lut.LE_ENTRIES, le_under_start if exponent else le_start, le_end, le_uslope,
               le_oslope),
              (lut.LO_ENTRIES, lo_start, lo_end, lo_uslope, lo_oslope))
    flat = np.full((2, 2), UNKNOWN_VALUE, np.int64)
    for t, (size, under_ref, over_ref, uslope, oslope) in enumerate(tables):
        flat[t, 0] = _flat_value(int(bases[t, 0]), uslope, under_ref)
        flat[t, 1] = _flat_value(int(bases[t, size - 1]), oslope, over_ref)
    return flat


def zero_signs_fp(prepared):
    """(2, LO_ENTRIES + 2) signs of the LUT value (0 +, 1 -, UNKNOWN_SIGN) by table (row 0
    LE, 1 LO) and :func:`entry_fp`'s entry for hits; column LO_ENTRIES + kind for below and
    above the table, which hold for square sums that are not NaNs.  From
    :func:`prepare_fp`'s results."""
    _, bases, steps = prepared
    signs = np.full((2, lut.LO_ENTRIES + 2), UNKNOWN_SIGN, np.int64)
    flat = flat_values_fp(prepared)
    for t, size in enumerate((lut.LE_ENTRIES, lut.LO_ENTRIES)):
        signs[t, :size - 1] = _hit_signs(bases[t, :size - 1], steps[t, :size - 1])
        for kind in (0, 1):
            if flat[t, kind] != UNKNOWN_VALUE:
                signs[t, lut.LO_ENTRIES + kind] = _sign17(int(flat[t, kind]))
    return signs


@njit(inline="always")
def zero_centre_product(centre, x, kind, use_lo, at, zero_signs):
    """``fp_mul(centre, value)`` for an fp17 ``centre`` of +-0 whose LUT value's sign
    :func:`zero_signs_fp` knows at the place of the square sum ``x`` (:func:`place_fp`'s
    ``use_lo`` and ``kind``, :func:`entry_fp`'s ``at``): the signed zero; else
    UNKNOWN_VALUE (a non-zero centre, an unknown sign, a NaN sum off the table)."""
    if centre & ((1 << SIGN17_BIT) - 1):
        return UNKNOWN_VALUE
    if kind == 2:
        sign = zero_signs[use_lo, at]
    elif (x & MAGNITUDE32) <= INF32:  # off the table: the signs hold for sums not NaN
        sign = zero_signs[use_lo, lut.LO_ENTRIES + kind]
    else:
        sign = UNKNOWN_SIGN
    if sign == UNKNOWN_SIGN:
        return UNKNOWN_VALUE
    return (((centre >> SIGN17_BIT) ^ sign) & 1) << SIGN17_BIT


@njit(inline="always")
def flat_value(x, kind, use_lo, flat):
    """The LUT value :func:`flat_values_fp` knows for the square sum ``x`` off a table
    (``kind`` 0 below, 1 above), else UNKNOWN_VALUE (a hit, a NaN sum, a slope not 0)."""
    if kind == 2 or (x & MAGNITUDE32) > INF32:
        return UNKNOWN_VALUE
    return flat[use_lo, kind]
