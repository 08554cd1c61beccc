"""Which layers run the SDP's integer LUT in a kernel, and the kernel's settings.

Blocks of ``KERNEL_MIN`` elements or more run the Y stage's LUT in
:func:`sim.num.lut_sdp.lut_int`, one element at a time, instead of as the
hundred-odd array passes of :mod:`sim.num.sdp` (``y_idx_stage`` and
``y_inp_stage``); ``tests/sdp`` holds the two to each other.  Small layers
stay in numpy, so they need no compiling.  A block whose values span a range
small beside it looks every value of that range up once (the memo) and
gathers; each value's counters then count as often as it occurs.
"""

from __future__ import annotations

import numpy as np

from ..num.lut_sdp import (
    EDGE,
    HYBRID_LO,
    LE_BIAS,
    LE_LINEAR,
    LE_OFFSET,
    LE_SELECT,
    LE_START,
    LO_SELECT,
    LO_START,
    N_PARAMS,
    OFLOW_LO,
    SCALE,
    SHIFT,
    UFLOW_LO,
)
from ..num.lut_sdp import lut_int as lut_kernel
from ..num.vector_int import sign_extend

KERNEL_MIN = 1 << 16  # blocks from this many elements take the kernel
MEMO_SHARE = 4  # ... and look their range up once when it is at most 1/4 of their size
MEMO_MAX = 1 << 22  # ... and at most this long
_EVERY_ONCE = np.zeros(0, np.int64)  # no weights: each value counts once


def lookup(v: np.ndarray, lut, le_bias: int, le: np.ndarray, lo: np.ndarray):
    """(LUT outputs shaped as ``v``, the five counters) of a block of int32 patterns."""
    flat = np.ascontiguousarray(v).reshape(-1)
    p = params(lut, le_bias)
    found = np.zeros(5, np.int64)
    x = sign_extend(flat, 32)
    least = int(x.min())
    span = int(x.max()) - least + 1
    if span <= MEMO_MAX and span * MEMO_SHARE <= flat.size:
        index = x - least
        values = np.empty(span, np.int64)
        lut_kernel(np.arange(least, least + span, dtype=np.int64), p, le, lo, values, found,
                   np.bincount(index, minlength=span).astype(np.int64))
        return values[index].reshape(v.shape), found
    out = np.empty(flat.size, np.int64)
    lut_kernel(flat, p, le, lo, out, found, _EVERY_ONCE)
    return out.reshape(v.shape), found


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
