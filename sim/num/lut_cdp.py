"""The CDP's LUT lookup, one value at a time (numba kernels for the LRN loops).

See :mod:`sim.num.lut` for the tables, the choice between them and the
integer lookup on whole arrays (numpy, which small layers use); fp16 data is
looked up in fp32/fp17 as NVDLA's C-model does.
"""

import math

import numpy as np

from sim.jit import njit
from sim.num import lut  # the tables and the parameter vector's slots
from sim.num.fp32_fast import as_float32
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
    d = fp_sub(x, start, FP32_EXP, FP32_FRAC)
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
        shifted = np.float64(np.float32(dv * (2.0 ** (-select))))
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
