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

import numpy as np

from ..configs import FP16
from ..dma.elements import element_dtype
from . import stages
from .config import PRECISION_CODE


def _empty_stats() -> dict:
    return {"saturation": 0, "nan_out": 0, "nan_in": 0, "inf_in": 0, "unequal": False,
            "lut_uflow": 0, "lut_oflow": 0, "lut_hybrid": 0, "lut_le_hit": 0, "lut_lo_hit": 0}


def _fp16_nan_count(bits: np.ndarray) -> int:
    bits = bits.astype(np.int64)
    return int(np.count_nonzero(((bits >> 10) & 0x1F == 0x1F) & (bits & 0x3FF != 0)))


def run_pipeline(layer, data: np.ndarray, operands: dict, lut, from_memory: bool = True):
    shape = data.shape
    flat = np.ascontiguousarray(data, dtype=np.int64).ravel()
    stats = _empty_stats()
    prec = PRECISION_CODE[layer.proc_precision]
    fp = layer.proc_precision == FP16
    nan_to_zero = layer.nan_to_zero and fp
    if fp:
        if from_memory:
            counts = np.zeros(2, dtype=np.int64)
            wide = np.empty_like(flat)
            stages.fp16_input_loop(flat, wide, counts)
            flat = wide
            stats["nan_in"], stats["inf_in"] = int(counts[0]), int(counts[1])
        else:
            flat = flat & 0xFFFFFFFF
        if nan_to_zero:
            stages.flush_nan32_loop(flat)
    else:
        flat = flat & 0xFFFFFFFF
    for name, stage in (("x1", layer.x1), ("x2", layer.x2)):
        if stage.bypass:
            continue
        alu, mul = operands[name]
        out = np.empty_like(flat)
        stages.x_loop(flat, alu, mul, stages.x_row(stage, nan_to_zero, prec), out)
        flat = out
    if not layer.y.bypass:
        alu, mul = operands["y"]
        out = np.empty_like(flat)
        counts = np.zeros(5, dtype=np.int64)
        stages.y_loop(flat, alu, mul, stages.y_params(layer, prec, nan_to_zero),
                      lut.le, lut.lo, out, counts)
        flat = out
        for key, slot in (("lut_uflow", stages.ST_UFLOW), ("lut_oflow", stages.ST_OFLOW),
                          ("lut_hybrid", stages.ST_HYBRID), ("lut_le_hit", stages.ST_LE_HIT),
                          ("lut_lo_hit", stages.ST_LO_HIT)):
            stats[key] = int(counts[slot])
    result = np.empty_like(flat)
    out_code = PRECISION_CODE[layer.out_precision]
    stats["saturation"] = int(stages.c_loop(flat, stages.c_row(layer, prec, out_code),
                                            layer.out_precision == FP16, result))
    if layer.eql:
        stats["unequal"] = bool(np.any(result & 0xFFFF))
    result &= 0xFFFF
    if layer.out_precision == FP16:
        elems = result.astype(np.uint16)
        stats["nan_out"] = _fp16_nan_count(elems)
    else:
        elems = result.astype(np.uint16).view(np.int16).astype(element_dtype(layer.out_precision))
    return elems.reshape(shape), stats
