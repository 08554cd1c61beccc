"""The SDP datapath stages as element loops over flat arrays.

Every stage takes the flat ``data`` array (int64: signed int32 values on the
integer path, fp32 bit patterns on the fp16 path) and writes a new one.
Operand arrays have either one entry (a register operand, used for every
element) or one entry per element.  Stage parameters travel as a small int64
array so numba compiles each loop once.

The integer arithmetic is NVDLA's (``ias/precision.rst``), through the
helpers of :mod:`sim.num.rounding`:

* X (BS/BN): ALU operand = saturate32(op << alu_shift); ALU max/min/sum
  in 33 bits; MUL by a signed 16-bit operand in 49 bits (PReLU passes
  non-negative values through unchanged, wrapped to 32 bits); truncation =
  round-half-away right shift by mul_shift saturated to int32 (applied also
  when the multiplier is bypassed); ReLU.
* C (output convertor): ``(x - offset) * scale``, round-half-away right
  shift saturated to int17 (the saturation counter counts this step), then
  saturation to int8/int16 or conversion to fp16.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..num.fpcore import int_to_float
from ..num.rounding import convert, convert_flag, saturate, shift_left_saturate, sign_extend

# X stage parameter slots
XP_ALU_ON, XP_ALGO, XP_ALU_SHIFT, XP_MUL_ON, XP_PRELU, XP_MUL_SHIFT, XP_RELU_ON = range(7)
# C stage parameter slots
CP_OFFSET, CP_SCALE, CP_SHIFT, CP_OUT = range(4)
OUT_INT8, OUT_INT16, OUT_FP16 = 0, 1, 2


@njit
def x_int_loop(data, alu, mul, p, out):
    """X1/X2 on the integer path (see the module docstring)."""
    n = data.shape[0]
    alu_on, algo, alu_shift = p[XP_ALU_ON], p[XP_ALGO], p[XP_ALU_SHIFT]
    mul_on, prelu, mul_shift, relu_on = p[XP_MUL_ON], p[XP_PRELU], p[XP_MUL_SHIFT], p[XP_RELU_ON]
    alu_step = 1 if alu.shape[0] == n else 0
    mul_step = 1 if mul.shape[0] == n else 0
    for i in range(n):
        v = data[i]
        if alu_on:
            op = shift_left_saturate(alu[i * alu_step], alu_shift, 32)
            if algo == 0:
                v = v if v > op else op
            elif algo == 1:
                v = v if v < op else op
            else:
                v = v + op
        if mul_on and prelu and v >= 0:
            v = sign_extend(v, 32)
        else:
            if mul_on:
                v = v * mul[i * mul_step]
            v = convert(v, mul_shift, 32)
        if relu_on and v < 0:
            v = 0
        out[i] = v


@njit
def c_int_loop(data, p, out):
    """Output convertor on the integer path; returns the saturation count."""
    offset, scale, shift, kind = p[CP_OFFSET], p[CP_SCALE], p[CP_SHIFT], p[CP_OUT]
    sat_count = 0
    for i in range(data.shape[0]):
        t, sat = convert_flag((data[i] - offset) * scale, shift, 17)
        if sat:
            sat_count += 1
        if kind == OUT_INT8:
            out[i] = saturate(t, 8)
        elif kind == OUT_INT16:
            out[i] = saturate(t, 16)
        else:
            out[i] = int_to_float(t, 5, 10)
    return sat_count


def x_params(stage) -> np.ndarray:
    return np.array([
        int(stage.alu_used), stage.alu_algo, stage.alu_shift,
        int(stage.mul_used), int(stage.mul_prelu), stage.mul_shift,
        int(not stage.relu_bypass),
    ], dtype=np.int64)


def c_params(layer) -> np.ndarray:
    kind = {"int8": OUT_INT8, "int16": OUT_INT16, "fp16": OUT_FP16}[layer.out_precision]
    return np.array([layer.cvt_offset, layer.cvt_scale, layer.cvt_shift, kind], dtype=np.int64)
