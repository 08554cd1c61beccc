"""The SDP datapath: X1 -> X2 -> Y -> C on a whole (N, C, H, W) cube.

``run_pipeline`` takes the input as the datapath sees it (int64 signed
values on the integer path; fp32 bit patterns on the fp16 path, i.e. after
the RDMA's fp16 -> fp32 conversion or straight from CACC) and returns the
output elements in the output precision's dtype (fp16 as uint16 patterns)
together with the layer's statistics (counters).
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16
from ..dma.elements import element_dtype
from . import stages
from .config import unsupported


def _empty_stats() -> dict:
    return {"saturation": 0, "nan_out": 0, "nan_in": 0, "inf_in": 0, "unequal": False,
            "lut_uflow": 0, "lut_oflow": 0, "lut_hybrid": 0, "lut_le_hit": 0, "lut_lo_hit": 0}


def run_pipeline(layer, data: np.ndarray, operands: dict, lut, from_memory: bool = True):
    shape = data.shape
    flat = np.ascontiguousarray(data, dtype=np.int64).ravel()
    stats = _empty_stats()
    if layer.proc_precision == FP16:
        raise unsupported("fp16 processing")
    for name, stage in (("x1", layer.x1), ("x2", layer.x2)):
        if stage.bypass:
            continue
        alu, mul = operands[name]
        out = np.empty_like(flat)
        stages.x_int_loop(flat, alu, mul, stages.x_params(stage), out)
        flat = out
    if not layer.y.bypass:
        raise unsupported("Y (EW) stage")
    result = np.empty_like(flat)
    stats["saturation"] = int(stages.c_int_loop(flat, stages.c_params(layer), result))
    if layer.eql:
        stats["unequal"] = bool(np.any(flat & 0xFFFF))
    out_dtype = element_dtype(layer.out_precision)
    if layer.out_precision == FP16:
        elems = (result & 0xFFFF).astype(np.uint16)
    else:
        elems = result.astype(out_dtype)
    return elems.reshape(shape), stats
