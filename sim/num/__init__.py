"""sim.num: every bit-exact number operation of NVDLA, in one package.

Primitives (SoftFloat-style names, raw bit patterns in and out, numpy arrays
or scalars): ``fp16_add`` ... ``uint16_to_fp17`` from ``sim.num.ops``.
Element kernels for other numba code (int64 in and out): ``sim.num.fpcore``
(``fp_add(a, b, *FP16)`` ...) and the conversions ``sim.num.ops.*_bits``.
Integer rounding and saturation helpers: ``sim.num.rounding``.
NVDLA's departures from IEEE-754: ``sim.num.rules``.
Block convertors (keyword arrays in, dict of arrays out): ``cdma_cvt``,
``csc_cvt``, ``cdp_icvt``, ``cdp_ocvt``, ``cdp_sq`` (``sim.num.blocks``) and
the SDP stages ``sdp_x``, ``sdp_c``, ``sdp_y_cvt``, ``sdp_y_core``,
``sdp_y_idx``, ``sdp_y_inp`` (``sim.num.sdp``).
Per-unit Inf/NaN handling as data: ``sim.num.specials``.
The convolution MAC (Booth product, block-aligned fp16 dot product, CACC's
48-bit accumulator and int32 rounding): ``sim.num.mac``.  The LUT RAM, table
choice and the CDP's lookup (SDP and CDP share them): ``sim.num.lut``.
A value's bit fields for reports (``describe_fields``): ``sim.num.bits``.
"""

from sim.num.blocks import cdma_cvt, cdp_icvt, cdp_ocvt, cdp_sq, csc_cvt
from sim.num.ops import (
    BINARY_OPS,
    UNARY_OPS,
    fp16_add,
    fp16_max,
    fp16_min,
    fp16_mul,
    fp16_sub,
    fp16_to_fp17,
    fp16_to_fp32,
    fp17_add,
    fp17_max,
    fp17_min,
    fp17_mul,
    fp17_sub,
    fp17_to_fp16,
    fp17_to_fp32,
    fp32_add,
    fp32_max,
    fp32_min,
    fp32_mul,
    fp32_sub,
    fp32_to_fp16,
    fp32_to_fp17,
    uint16_to_fp17,
)
from sim.num.sdp import sdp_c, sdp_x, sdp_y_core, sdp_y_cvt, sdp_y_idx, sdp_y_inp
from sim.num.specials import INF_CONVERSION, NAN_HANDLING, flush_nans, inf_mask, nan_mask

__all__ = [
    "INF_CONVERSION",
    "NAN_HANDLING",
    "flush_nans",
    "inf_mask",
    "nan_mask",
    "cdma_cvt",
    "cdp_icvt",
    "cdp_ocvt",
    "cdp_sq",
    "csc_cvt",
    "sdp_c",
    "sdp_x",
    "sdp_y_core",
    "sdp_y_cvt",
    "sdp_y_idx",
    "sdp_y_inp",
    "BINARY_OPS",
    "UNARY_OPS",
    "fp16_add",
    "fp16_max",
    "fp16_min",
    "fp16_mul",
    "fp16_sub",
    "fp16_to_fp17",
    "fp16_to_fp32",
    "fp17_add",
    "fp17_max",
    "fp17_min",
    "fp17_mul",
    "fp17_sub",
    "fp17_to_fp16",
    "fp17_to_fp32",
    "fp32_add",
    "fp32_max",
    "fp32_min",
    "fp32_mul",
    "fp32_sub",
    "fp32_to_fp16",
    "fp32_to_fp17",
    "uint16_to_fp17",
]
