"""The SDP's integer LUT stage (index, table choice, interpolation or extrapolation),
one value at a time: the scalar twin of :mod:`sim.num.sdp`'s ``y_idx_stage`` and
``y_inp_stage`` (integer path) for the kernel large layers run.

The settings come as a parameter vector (the slots below; ``sim.sdp.lut_int``
fills it from a layer's registers); the table choice is the CDP's
(:func:`sim.num.lut_cdp.choose_table`).
"""

import numpy as np

from sim.jit import njit
from sim.num.lut import KIND_HIT, KIND_OFLOW, KIND_UFLOW
from sim.num.lut_cdp import choose_table
from sim.num.rounding import bit_length, convert, saturate, shift_signed, sign_extend
from sim.num.sdp import LUT_FRACTION_BITS, LUT_INDEX_MAX, LUT_LE_DEPTH, LUT_LO_DEPTH

# parameter vector slots
LE_START, LO_START, LE_OFFSET, LE_SELECT, LO_SELECT, LE_LINEAR = range(6)
UFLOW_LO, OFLOW_LO, HYBRID_LO, LE_BIAS = range(6, 10)
SCALE, SHIFT, EDGE = 10, 14, 18  # four each, by side: LE under, LE over, LO under, LO over
N_PARAMS = 22
FRACTION_MASK = (1 << LUT_FRACTION_BITS) - 1


@njit(inline="always")
def _shift_right(x, n):
    """``x >> n`` for ``x`` >= 0, 0 for counts of 64 or more (as numpy gives)."""
    return x >> n if n < 64 else 0


@njit(inline="always")
def _linear_index(u, select, signed_fraction):
    """(index before the depth check, 35-bit fraction) of the positive difference ``u``."""
    if select >= 0:
        integer = _shift_right(u, select)
        field = u & ((np.int64(1) << min(select, 62)) - 1) if select < 63 else u
    else:
        integer = LUT_INDEX_MAX if bit_length(u) - select > 9 else u << min(-select, 63)
        field = u
    if signed_fraction:
        field = sign_extend(field, 32) & FRACTION_MASK
    k = select - LUT_FRACTION_BITS
    if k >= 0:
        fraction = _shift_right(field, k)
    elif -k < LUT_FRACTION_BITS:
        fraction = (field << min(-k, 63)) & FRACTION_MASK
    else:
        fraction = 0
    return min(integer, LUT_INDEX_MAX), fraction


@njit(inline="always")
def _table(uflow, index, fraction, depth):
    """(kind, address, fraction) after a table's depth check."""
    if uflow:
        return KIND_UFLOW, 0, 0
    if index >= depth - 1:
        return KIND_OFLOW, depth - 1, 0
    return KIND_HIT, index, fraction


@njit
def lut_int(v, p, le, lo, out, counts, weights):
    """The LUT stage of the int32 values ``v`` (flat) into ``out``; adds the counters
    (underflows, overflows, hits of the chosen table, LE hits, LO hits) to ``counts``,
    each value counting ``weights[i]`` times (once when ``weights`` is empty)."""
    under = over = hits = le_hits = lo_hits = 0  # locals: threads never share a cache line
    weighted = weights.size > 0
    for i in range(v.size):
        x = sign_extend(v[i], 32)
        times = weights[i] if weighted else 1
        # LE table: exponent or linear index of x - start
        uflow = x <= p[LE_START]
        u = (x - p[LE_START]) & 0xFFFFFFFF
        if p[LE_LINEAR]:
            index, fraction = _linear_index(u, p[LE_SELECT], True)
        else:
            log2 = max(bit_length(u) - 1, 0)
            fraction = (u & ((np.int64(1) << log2) - 1)) << (LUT_FRACTION_BITS - log2)
            uflow = uflow or log2 < p[LE_OFFSET]
            index = (log2 - p[LE_OFFSET]) & 0x1FF
        le_kind, le_addr, le_frac = _table(uflow, index, fraction, LUT_LE_DEPTH)
        # LO table: linear
        uflow = x <= p[LO_START]
        index, fraction = _linear_index((x - p[LO_START]) & 0xFFFFFFFF, p[LO_SELECT], False)
        lo_kind, lo_addr, lo_frac = _table(uflow, index, fraction, LUT_LO_DEPTH)
        use_lo, _ = choose_table(le_kind, lo_kind, p[UFLOW_LO], p[OFLOW_LO], p[HYBRID_LO])
        if use_lo:
            kind, addr, fraction, table = lo_kind, lo_addr, lo_frac, lo
        else:
            kind, addr, fraction, table = le_kind, le_addr, le_frac, le
        y0 = sign_extend(table[min(addr, table.size - 1)] & 0xFFFF, 16)
        if kind != KIND_HIT:  # extrapolation from the table's edge
            oflow = kind == KIND_OFLOW
            side = 2 * use_lo + oflow
            bias = p[LE_BIAS] if not p[LE_LINEAR] and not use_lo and not oflow else 0
            a = x - (bias + p[EDGE + side])
            slope = shift_signed(a * p[SCALE + side], p[SHIFT + side], 32)
            out[i] = saturate(y0 + slope, 32) & 0xFFFFFFFF
            under += times * (not oflow)
            over += times * oflow
        else:  # interpolation between two entries
            y1 = sign_extend(table[min(addr + 1, table.size - 1)] & 0xFFFF, 16)
            f = fraction & FRACTION_MASK
            total = y0 * ((np.int64(1) << LUT_FRACTION_BITS) - f) + y1 * f
            out[i] = convert(total, LUT_FRACTION_BITS, 32) & 0xFFFFFFFF
            hits += times
        le_hits += times * (le_kind == KIND_HIT)
        lo_hits += times * (lo_kind == KIND_HIT)
    counts[0] += under
    counts[1] += over
    counts[2] += hits
    counts[3] += le_hits
    counts[4] += lo_hits
