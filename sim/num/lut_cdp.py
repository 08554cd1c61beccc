"""The CDP's fp16 LUT lookup, one value at a time (numba kernels for the LRN loop).

See :mod:`sim.num.lut` for the tables, the choice between them and the
integer lookup (numpy); fp16 data is looked up in fp32/fp17 as NVDLA's
C-model does.
"""

import math

import numpy as np

from sim.jit import njit
from sim.num.fpcore import fp_add, fp_mul, fp_sub
from sim.num.lut import (
    HYBRID,
    KIND_HIT,
    KIND_OFLOW,
    KIND_UFLOW,
    LE_ENTRIES,
    LE_HIT,
    LO_ENTRIES,
    LO_HIT,
    OFLOW,
    P_EXPONENT,
    P_HYBRID_PRI,
    P_LE_END,
    P_LE_OFFSET,
    P_LE_OSCALE,
    P_LE_SELECT,
    P_LE_START,
    P_LE_USCALE,
    P_LO_END,
    P_LO_OSCALE,
    P_LO_SELECT,
    P_LO_START,
    P_LO_USCALE,
    P_OFLOW_PRI,
    P_UFLOW_PRI,
    UFLOW,
)
from sim.num.ops import (
    fp16_to_fp17_bits,
    fp16_to_fp32_bits,
    fp32_to_fp17_bits,
    uint16_to_fp17_bits,
)


@njit
def choose_table(le_kind, lo_kind, uflow_lo, oflow_lo, hybrid_lo):
    """(use LO, outcome) from the two tables' result kinds and the three priorities."""
    if le_kind == KIND_UFLOW and lo_kind == KIND_UFLOW:
        return uflow_lo != 0, UFLOW
    if le_kind == KIND_OFLOW and lo_kind == KIND_OFLOW:
        return oflow_lo != 0, OFLOW
    le_hit = le_kind == KIND_HIT
    lo_hit = lo_kind == KIND_HIT
    if le_hit != lo_hit:
        return lo_hit, (LO_HIT if lo_hit else LE_HIT)
    return hybrid_lo != 0, HYBRID


# --- CDP lookup ----------------------------------------------------------------



# --- fp16 lookup (fp32 index arithmetic, fp17 interpolation) -------------------

@njit
def _f32(bits):
    """The IEEE value of an fp32 bit pattern, as float64."""
    return np.float64(np.array([bits & 0xFFFFFFFF], np.uint32).view(np.float32)[0])


@njit
def _f32_bits(value):
    return np.int64(np.array([value], np.float32).view(np.uint32)[0])


@njit
def _fp_table_lookup(x, table, size, exponent, start, end, offset, select,
                     uscale, oscale):
    """(fp17 value, kind) of one table for the fp32 square sum ``x``."""
    d = fp_sub(x, start, 8, 23)
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
    if kind == 0:
        if exponent:
            bias = 0.0 if offset <= -127 else 2.0 ** offset
            d = fp_sub(x, fp_add(start, _f32_bits(bias), 8, 23), 8, 23)
        slope = fp16_to_fp17_bits(uscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, 6, 10)
        return fp_add(term, fp16_to_fp17_bits(table[0] & 0xFFFF), 6, 10), 0
    if kind == 1:
        d = fp_sub(x, end, 8, 23)
        slope = fp16_to_fp17_bits(oscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, 6, 10)
        return fp_add(term, fp16_to_fp17_bits(table[size - 1] & 0xFFFF), 6, 10), 1
    y0 = table[index] & 0xFFFF
    y1 = table[index + 1] & 0xFFFF
    diff = fp_sub(fp16_to_fp32_bits(y1), fp16_to_fp32_bits(y0), 8, 23)
    term = fp_mul(fp32_to_fp17_bits(diff), uint16_to_fp17_bits(frac), 6, 10)
    return fp_add(term, fp16_to_fp17_bits(y0), 6, 10), 2


@njit
def lookup_fp(x, le, lo, p):
    """LUT value (fp17 bits) for the fp32 square sum ``x``; returns (value, counter index)."""
    le_val, le_kind = _fp_table_lookup(x, le, LE_ENTRIES, p[P_EXPONENT] != 0, p[P_LE_START],
                                       p[P_LE_END], p[P_LE_OFFSET], p[P_LE_SELECT],
                                       p[P_LE_USCALE], p[P_LE_OSCALE])
    lo_val, lo_kind = _fp_table_lookup(x, lo, LO_ENTRIES, False, p[P_LO_START], p[P_LO_END],
                                       0, p[P_LO_SELECT], p[P_LO_USCALE], p[P_LO_OSCALE])
    use_lo, outcome = choose_table(le_kind, lo_kind, p[P_UFLOW_PRI], p[P_OFLOW_PRI],
                                   p[P_HYBRID_PRI])
    return (lo_val if use_lo else le_val), outcome
