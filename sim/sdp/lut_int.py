"""The SDP's integer LUT (index, table choice, interpolation or extrapolation) in one kernel.

Large integer layers run the Y stage's LUT here, one element at a time,
instead of as the hundred-odd array passes of :mod:`sim.num.sdp`
(``y_idx_stage`` and ``y_inp_stage``, verified against the golden vectors);
this is the same arithmetic element by element, and ``tests/sdp`` holds the
two to each other.  Small layers stay in numpy, so they need no compiling.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..num.rounding import bit_length, convert, saturate, shift_signed, sign_extend

KERNEL_MIN = 1 << 16  # blocks from this many elements take the kernel
FRACTION_BITS = 35
INDEX_MAX = 511
LE_DEPTH, LO_DEPTH = 65, 257

# parameter vector (params())
LE_START, LO_START, LE_OFFSET, LE_SELECT, LO_SELECT, LE_LINEAR = range(6)
UFLOW_LO, OFLOW_LO, HYBRID_LO, LE_BIAS = range(6, 10)
SCALE, SHIFT, EDGE = 10, 14, 18  # four each, by side: LE under, LE over, LO under, LO over
N_PARAMS = 22


def params(lut, le_bias: int) -> np.ndarray:
    """The kernel's parameter vector from a layer's :class:`sim.sdp.config.LutConfig`."""
    p = np.zeros(N_PARAMS, np.int64)
    p[LE_START] = sign_extend(lut.le_start, 32)
    p[LO_START] = sign_extend(lut.lo_start, 32)
    p[LE_OFFSET] = sign_extend(lut.le_index_offset & 0xFF, 8)
    p[LE_SELECT] = sign_extend(lut.le_index_select & 0xFF, 8)
    p[LO_SELECT] = sign_extend(lut.lo_index_select & 0xFF, 8)
    p[LE_LINEAR] = bool(lut.le_function_linear)
    p[UFLOW_LO], p[OFLOW_LO] = bool(lut.uflow_priority_lo), bool(lut.oflow_priority_lo)
    p[HYBRID_LO] = bool(lut.hybrid_priority_lo)
    p[LE_BIAS] = le_bias & 0xFFFFFFFF
    sides = (("le", "uflow", "start"), ("le", "oflow", "end"), ("lo", "uflow", "start"),
             ("lo", "oflow", "end"))
    for i, (table, side, edge) in enumerate(sides):
        p[SCALE + i] = sign_extend(getattr(lut, f"{table}_{side}_scale") & 0xFFFF, 16)
        p[SHIFT + i] = sign_extend(getattr(lut, f"{table}_{side}_shift") & 0x1F, 5)
        p[EDGE + i] = sign_extend(getattr(lut, f"{table}_{edge}") & 0xFFFFFFFF, 32)
    return p


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
        integer = INDEX_MAX if bit_length(u) - select > 9 else u << min(-select, 63)
        field = u
    if signed_fraction:
        field = sign_extend(field, 32) & ((np.int64(1) << FRACTION_BITS) - 1)
    k = select - FRACTION_BITS
    if k >= 0:
        fraction = _shift_right(field, k)
    elif -k < FRACTION_BITS:
        fraction = (field << min(-k, 63)) & ((np.int64(1) << FRACTION_BITS) - 1)
    else:
        fraction = 0
    return min(integer, INDEX_MAX), fraction


@njit(inline="always")
def _table(uflow, index, fraction, depth):
    """(uflow, oflow, address, fraction) after a table's depth check."""
    if uflow:
        return True, False, 0, 0
    if index >= depth - 1:
        return False, True, depth - 1, 0
    return False, False, index, fraction


@njit
def lut_int(v, p, le, lo, out, counts):
    """The LUT stage of the int32 values ``v`` (flat) into ``out``; adds the counters
    (underflows, overflows, hits of the chosen table, LE hits, LO hits) to ``counts``."""
    under = over = hits = le_hits = lo_hits = 0  # locals: threads never share a cache line
    for i in range(v.size):
        x = sign_extend(v[i], 32)
        # LE table: exponent or linear index of x - start
        uflow = x <= p[LE_START]
        u = (x - p[LE_START]) & 0xFFFFFFFF
        if p[LE_LINEAR]:
            index, fraction = _linear_index(u, p[LE_SELECT], True)
        else:
            log2 = max(bit_length(u) - 1, 0)
            fraction = (u & ((np.int64(1) << log2) - 1)) << (FRACTION_BITS - log2)
            uflow = uflow or log2 < p[LE_OFFSET]
            index = (log2 - p[LE_OFFSET]) & 0x1FF
        le_u, le_o, le_addr, le_frac = _table(uflow, index, fraction, LE_DEPTH)
        # LO table: linear
        uflow = x <= p[LO_START]
        index, fraction = _linear_index((x - p[LO_START]) & 0xFFFFFFFF, p[LO_SELECT], False)
        lo_u, lo_o, lo_addr, lo_frac = _table(uflow, index, fraction, LO_DEPTH)
        # the choice between them
        le_hit, lo_hit = not (le_u or le_o), not (lo_u or lo_o)
        if le_u and lo_u:
            use_lo = p[UFLOW_LO] != 0
        elif le_o and lo_o:
            use_lo = p[OFLOW_LO] != 0
        elif le_hit != lo_hit:
            use_lo = lo_hit
        else:
            use_lo = p[HYBRID_LO] != 0
        both = le_hit and lo_hit
        if use_lo:
            uflow, oflow, addr, fraction, table = lo_u, lo_o, lo_addr, lo_frac, lo
        else:
            uflow, oflow, addr, fraction, table = le_u, le_o, le_addr, le_frac, le
        uflow, oflow = uflow and not both, oflow and not both
        y0 = sign_extend(table[min(addr, table.size - 1)] & 0xFFFF, 16)
        if uflow or oflow:  # extrapolation from the table's edge
            side = 2 * use_lo + oflow
            bias = p[LE_BIAS] if not p[LE_LINEAR] and not use_lo and not oflow else 0
            a = x - (bias + p[EDGE + side])
            slope = shift_signed(a * p[SCALE + side], p[SHIFT + side], 32)
            out[i] = saturate(y0 + slope, 32) & 0xFFFFFFFF
            under += uflow
            over += oflow
        else:  # interpolation between two entries
            y1 = sign_extend(table[min(addr + 1, table.size - 1)] & 0xFFFF, 16)
            f = fraction & ((np.int64(1) << FRACTION_BITS) - 1)
            total = y0 * ((np.int64(1) << FRACTION_BITS) - f) + y1 * f
            out[i] = convert(total, FRACTION_BITS, 32) & 0xFFFFFFFF
            hits += 1
        le_hits += le_hit
        lo_hits += lo_hit
    counts[0] += under
    counts[1] += over
    counts[2] += hits
    counts[3] += le_hits
    counts[4] += lo_hits
