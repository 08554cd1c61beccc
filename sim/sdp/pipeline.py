"""The SDP datapath: X1 -> X2 -> Y -> C on a whole (N, C, H, W) cube.

``run_pipeline`` takes the input as SDP_RDMA delivers it (int8/int16 values,
or raw fp16 patterns when ``from_memory``) or as CACC does (int32 values, or
fp32 patterns) and returns the output elements in the output precision's
dtype (fp16 as uint16 patterns) together with the layer's statistics.

Order of operations, as in the C-model's SDP wrapper: fp16 memory input is
counted (NaN/Inf, raw) and widened to fp32; with NAN_TO_ZERO an fp32 NaN
input becomes +0 (fp16 processing only); then X1, X2, Y and the output
convertor.  The NaN output counter counts fp16 NaN patterns of the output.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..configs import FP16
from ..dma.elements import element_dtype
from . import stages
from .config import PRECISION_CODE

PARALLEL_MIN = 1 << 20  # elements below which one thread runs the whole cube


def _chunks(n: int) -> int:
    return min(os.cpu_count() or 1, 8) if n >= PARALLEL_MIN else 1


def run_pipeline(layer, data: np.ndarray, operands: dict, lut, from_memory: bool = True):
    n, cp, h, w = data.shape
    flat = np.ascontiguousarray(data, dtype=np.int64).ravel()
    prec = PRECISION_CODE[layer.proc_precision]
    fp = layer.proc_precision == FP16
    nan_to_zero = layer.nan_to_zero and fp
    flags = np.zeros(stages.F_SIZE, dtype=np.int64)
    flags[stages.F_FP16_IN] = fp and from_memory
    flags[stages.F_FLUSH] = nan_to_zero
    flags[stages.F_X1] = not layer.x1.bypass
    flags[stages.F_X2] = not layer.x2.bypass
    flags[stages.F_Y] = not layer.y.bypass
    flags[stages.F_FP16_OUT] = layer.out_precision == FP16
    flags[stages.F_EQL] = layer.eql
    ops = [operands[s][k] for s in ("x1", "x2", "y") for k in (0, 1)]
    modes = np.array([mode for _, mode in ops], dtype=np.int64)
    out = np.empty_like(flat)
    settings = (stages.x_row(layer.x1, nan_to_zero, prec),
                stages.x_row(layer.x2, nan_to_zero, prec),
                stages.y_params(layer, prec, nan_to_zero),
                stages.c_row(layer, prec, PRECISION_CODE[layer.out_precision]),
                *[values for values, _ in ops], modes, lut.le, lut.lo)

    def run(lo: int, hi: int) -> np.ndarray:
        counts = np.zeros(stages.ST_SIZE, dtype=np.int64)
        geom = np.array([h * w, cp, lo], dtype=np.int64)
        stages.sdp_loop(flat[lo:hi], geom, flags, *settings, out[lo:hi], counts)
        return counts

    # the loop releases the GIL: large cubes run in chunks on every core
    bounds = np.linspace(0, flat.size, _chunks(flat.size) + 1).astype(np.int64)
    if len(bounds) > 2:
        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            parts = list(pool.map(run, bounds[:-1], bounds[1:]))
    else:
        parts = [run(0, flat.size)]
    counts = np.sum(parts, axis=0)
    stats = {
        "saturation": int(counts[stages.ST_SAT]), "nan_out": int(counts[stages.ST_NAN_OUT]),
        "nan_in": int(counts[stages.ST_NAN_IN]), "inf_in": int(counts[stages.ST_INF_IN]),
        "unequal": bool(counts[stages.ST_UNEQUAL]),
        "lut_uflow": int(counts[stages.ST_UFLOW]), "lut_oflow": int(counts[stages.ST_OFLOW]),
        "lut_hybrid": int(counts[stages.ST_HYBRID]), "lut_le_hit": int(counts[stages.ST_LE_HIT]),
        "lut_lo_hit": int(counts[stages.ST_LO_HIT]),
    }
    bits = (out & 0xFFFF).astype(np.uint16)
    if layer.out_precision == FP16:
        elems = bits
    else:
        elems = bits.view(np.int16).astype(element_dtype(layer.out_precision))
    return elems.reshape(data.shape), stats
