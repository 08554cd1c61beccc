"""The SDP datapath stages as element loops over flat arrays.

The arithmetic of every stage is NVDLA's, from :mod:`sim.num.sdp` (one
"cell" per block, verified against the golden vectors); this module only
runs those cells over a whole cube.  Values travel as int64 holding the
32-bit datapath word (signed int32 values on the integer path, fp32 bit
patterns on the fp16 path).  Operand arrays hold one entry (a register
operand, used for every element) or one entry per element (memory).

Each loop fills a cell's input row once with the layer's settings and then
only the per-element columns, so numba compiles each loop once.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..num.ops import fp16_to_fp32_bits
from ..num.sdp import (
    sdp_c_cell,
    sdp_x_cell,
    sdp_y_core_cell,
    sdp_y_cvt_cell,
    sdp_y_idx_cell,
    sdp_y_inp_cell,
)

# sdp_x_cell row: data, alu_dma, mul_dma, alu_cfg, mul_cfg, alu_bypass, alu_algo, alu_src,
# alu_shift, mul_bypass, mul_prelu, mul_src, mul_shift, relu_bypass, nan_to_zero, precision
X_ROW = 16
# sdp_c_cell row: data, offset, scale, truncate, proc_precision, out_precision, mode_eql
C_ROW = 7

# y_loop settings (one int64 array)
(Y_PREC, Y_NTZ, Y_ALU_MEM, Y_ALU_CVT_BYPASS, Y_ALU_CVT_OFFSET, Y_ALU_CVT_SCALE,
 Y_ALU_CVT_TRUNC, Y_MUL_MEM, Y_MUL_CVT_BYPASS, Y_MUL_CVT_OFFSET, Y_MUL_CVT_SCALE,
 Y_MUL_CVT_TRUNC, Y_ALU_BYPASS, Y_ALU_ALGO, Y_MUL_BYPASS, Y_TRUNCATE, Y_PRELU,
 Y_LUT_ON, Y_LE_START, Y_LO_START, Y_LE_OFFSET, Y_LE_SELECT, Y_LO_SELECT, Y_LE_LINEAR,
 Y_UPRIO, Y_OPRIO, Y_HPRIO, Y_LE_END, Y_LO_END,
 Y_LE_USCALE, Y_LE_USHIFT, Y_LE_OSCALE, Y_LE_OSHIFT,
 Y_LO_USCALE, Y_LO_USHIFT, Y_LO_OSCALE, Y_LO_OSHIFT, Y_LE_BIAS, Y_SIZE) = range(39)

# LUT statistics slots
ST_UFLOW, ST_OFLOW, ST_HYBRID, ST_LE_HIT, ST_LO_HIT = range(5)


@njit
def fp16_input_loop(raw, out, counts):
    """SDP_RDMA fp16 input -> fp32; counts[0] += NaN, counts[1] += Inf (raw inputs)."""
    for i in range(raw.shape[0]):
        b = raw[i] & 0xFFFF
        if (b >> 10) & 0x1F == 0x1F:
            if b & 0x3FF:
                counts[0] += 1
            else:
                counts[1] += 1
        out[i] = fp16_to_fp32_bits(b)


@njit
def flush_nan32_loop(data):
    """NAN_TO_ZERO on the datapath input: fp32 NaN patterns become +0 (in place)."""
    for i in range(data.shape[0]):
        x = data[i]
        if (x >> 23) & 0xFF == 0xFF and x & 0x7FFFFF:
            data[i] = 0


@njit
def x_loop(data, alu, mul, row, out):
    """X1 or X2 (``row`` is an sdp_x_cell row with the settings filled in)."""
    n = data.shape[0]
    alu_step = 1 if alu.shape[0] == n else 0
    mul_step = 1 if mul.shape[0] == n else 0
    r = row.copy()
    o = np.zeros(2, np.int64)
    for i in range(n):
        r[0] = data[i]
        r[1] = alu[i * alu_step]
        r[2] = mul[i * mul_step]
        sdp_x_cell(r, o)
        out[i] = o[0]


@njit
def c_loop(data, row, fp16_out, out):
    """Output convertor; returns the saturation count the SDP reports.

    For fp16 output a saturated value is one of magnitude 0x7bff (65504);
    otherwise the convertor's int17 saturation flag counts.
    """
    r = row.copy()
    o = np.zeros(2, np.int64)
    sat = 0
    for i in range(data.shape[0]):
        r[0] = data[i]
        sdp_c_cell(r, o)
        out[i] = o[0]
        if fp16_out:
            if o[0] & 0x7FFF == 0x7BFF:
                sat += 1
        else:
            sat += o[1]
    return sat


@njit
def y_loop(data, alu, mul, p, le, lo, out, stats):
    """Y: operand convertors, core (MUL then ALU), then the LUT when enabled."""
    n = data.shape[0]
    alu_step = 1 if alu.shape[0] == n else 0
    mul_step = 1 if mul.shape[0] == n else 0
    prec = p[Y_PREC]
    cvt = np.zeros(7, np.int64)
    cvt[5] = p[Y_NTZ]
    cvt[6] = prec
    core = np.zeros(13, np.int64)
    core[3] = p[Y_ALU_BYPASS]
    core[4] = 1
    core[6] = p[Y_ALU_ALGO]
    core[7] = p[Y_MUL_BYPASS]
    core[8] = 1
    core[10] = p[Y_TRUNCATE]
    core[11] = p[Y_PRELU]
    core[12] = prec
    idx = np.zeros(11, np.int64)
    idx[1] = p[Y_LE_START]
    idx[2] = p[Y_LO_START]
    idx[3] = p[Y_LE_OFFSET]
    idx[4] = p[Y_LE_SELECT]
    idx[5] = p[Y_LO_SELECT]
    idx[6] = p[Y_LE_LINEAR]
    idx[7] = p[Y_UPRIO]
    idx[8] = p[Y_OPRIO]
    idx[9] = p[Y_HPRIO]
    idx[10] = prec
    inp = np.zeros(10, np.int64)
    inp[9] = prec
    o = np.zeros(8, np.int64)
    for i in range(n):
        a = alu[i * alu_step]
        if p[Y_ALU_MEM]:
            cvt[0] = a
            cvt[1] = p[Y_ALU_CVT_BYPASS]
            cvt[2] = p[Y_ALU_CVT_OFFSET]
            cvt[3] = p[Y_ALU_CVT_SCALE]
            cvt[4] = p[Y_ALU_CVT_TRUNC]
            sdp_y_cvt_cell(cvt, o)
            a = o[0]
        m = mul[i * mul_step]
        if p[Y_MUL_MEM]:
            cvt[0] = m
            cvt[1] = p[Y_MUL_CVT_BYPASS]
            cvt[2] = p[Y_MUL_CVT_OFFSET]
            cvt[3] = p[Y_MUL_CVT_SCALE]
            cvt[4] = p[Y_MUL_CVT_TRUNC]
            sdp_y_cvt_cell(cvt, o)
            m = o[0]
        core[0] = data[i]
        core[1] = a
        core[2] = m
        sdp_y_core_cell(core, o)
        v = o[0]
        if p[Y_LUT_ON]:
            idx[0] = v
            sdp_y_idx_cell(idx, o)
            fraction, x, oflow, uflow = o[0], o[1], o[2], o[3]
            use_lo, addr, le_hit, lo_hit = o[4], o[5], o[6], o[7]
            table = lo if use_lo else le
            flow = oflow != 0 or uflow != 0
            inp[0] = x
            inp[1] = fraction
            inp[2] = table[addr] & 0xFFFF
            inp[3] = 0 if flow else table[addr + 1] & 0xFFFF
            inp[4] = 0
            inp[5] = 0
            inp[6] = 0
            inp[7] = 0
            if flow:
                if use_lo:
                    if oflow:
                        inp[4], inp[5], inp[6] = p[Y_LO_OSCALE], p[Y_LO_OSHIFT], p[Y_LO_END]
                    else:
                        inp[4], inp[5], inp[6] = p[Y_LO_USCALE], p[Y_LO_USHIFT], p[Y_LO_START]
                else:
                    if oflow:
                        inp[4], inp[5], inp[6] = p[Y_LE_OSCALE], p[Y_LE_OSHIFT], p[Y_LE_END]
                    else:
                        inp[4], inp[5], inp[6] = p[Y_LE_USCALE], p[Y_LE_USHIFT], p[Y_LE_START]
                        if not p[Y_LE_LINEAR]:
                            inp[7] = p[Y_LE_BIAS]
            inp[8] = 1 if flow else 0
            sdp_y_inp_cell(inp, o)
            v = o[0]
            if uflow:
                stats[ST_UFLOW] += 1
            if oflow:
                stats[ST_OFLOW] += 1
            if not flow:
                stats[ST_HYBRID] += 1
            if le_hit:
                stats[ST_LE_HIT] += 1
            if lo_hit:
                stats[ST_LO_HIT] += 1
        out[i] = v


# -- settings rows ------------------------------------------------------------------
def x_row(stage, nan_to_zero: bool, precision: int) -> np.ndarray:
    """The sdp_x_cell row of a stage; operands come through the per-element columns."""
    row = np.zeros(X_ROW, dtype=np.int64)
    row[5:16] = [int(stage.alu_bypass), stage.alu_algo, 1, stage.alu_shift,
                 int(stage.mul_bypass), int(stage.mul_prelu), 1, stage.mul_shift,
                 int(stage.relu_bypass), int(nan_to_zero), precision]
    return row


def c_row(layer, precision: int, out_precision: int) -> np.ndarray:
    return np.array([0, layer.cvt_offset & 0xFFFFFFFF, layer.cvt_scale & 0xFFFF, layer.cvt_shift,
                     precision, out_precision, int(layer.eql)], dtype=np.int64)


def le_exponent_bias(offset: int, fp: bool) -> int:
    """The start of the LE table in exponent mode, 2**offset (underflow extrapolation base)."""
    if fp:
        return int(np.array(2.0 ** offset, dtype=np.float32).view(np.uint32))
    return (1 << (offset & 31)) & 0xFFFFFFFF if offset > 0 else 0


def y_params(layer, precision: int, nan_to_zero: bool) -> np.ndarray:
    y, lut = layer.y, layer.lut
    fp = precision == 2
    p = np.zeros(Y_SIZE, dtype=np.int64)
    p[Y_PREC] = precision
    p[Y_NTZ] = int(nan_to_zero)
    p[Y_ALU_MEM] = int(y.alu_src_mem)
    p[Y_ALU_CVT_BYPASS] = int(y.alu_cvt_bypass)
    p[Y_ALU_CVT_OFFSET] = y.alu_cvt_offset & 0xFFFFFFFF
    p[Y_ALU_CVT_SCALE] = y.alu_cvt_scale & 0xFFFF
    p[Y_ALU_CVT_TRUNC] = y.alu_cvt_truncate
    p[Y_MUL_MEM] = int(y.mul_src_mem)
    p[Y_MUL_CVT_BYPASS] = int(y.mul_cvt_bypass)
    p[Y_MUL_CVT_OFFSET] = y.mul_cvt_offset & 0xFFFFFFFF
    p[Y_MUL_CVT_SCALE] = y.mul_cvt_scale & 0xFFFF
    p[Y_MUL_CVT_TRUNC] = y.mul_cvt_truncate
    p[Y_ALU_BYPASS] = int(y.alu_bypass)
    p[Y_ALU_ALGO] = y.alu_algo
    p[Y_MUL_BYPASS] = int(y.mul_bypass)
    p[Y_TRUNCATE] = y.truncate
    p[Y_PRELU] = int(y.mul_prelu)
    p[Y_LUT_ON] = int(not y.lut_bypass)
    p[Y_LE_START] = lut.le_start
    p[Y_LO_START] = lut.lo_start
    p[Y_LE_OFFSET] = lut.le_index_offset & 0xFF
    p[Y_LE_SELECT] = lut.le_index_select & 0xFF
    p[Y_LO_SELECT] = lut.lo_index_select & 0xFF
    p[Y_LE_LINEAR] = int(lut.le_function_linear)
    p[Y_UPRIO] = int(lut.uflow_priority_lo)
    p[Y_OPRIO] = int(lut.oflow_priority_lo)
    p[Y_HPRIO] = int(lut.hybrid_priority_lo)
    p[Y_LE_END] = lut.le_end
    p[Y_LO_END] = lut.lo_end
    p[Y_LE_USCALE], p[Y_LE_USHIFT] = lut.le_uflow_scale, lut.le_uflow_shift
    p[Y_LE_OSCALE], p[Y_LE_OSHIFT] = lut.le_oflow_scale, lut.le_oflow_shift
    p[Y_LO_USCALE], p[Y_LO_USHIFT] = lut.lo_uflow_scale, lut.lo_uflow_shift
    p[Y_LO_OSCALE], p[Y_LO_OSHIFT] = lut.lo_oflow_scale, lut.lo_oflow_shift
    p[Y_LE_BIAS] = le_exponent_bias(lut.le_index_offset, fp)
    return p
