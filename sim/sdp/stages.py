"""The SDP datapath stages as element loops over flat arrays.

The arithmetic of every stage is NVDLA's, from :mod:`sim.num.sdp` (one
"cell" per block, verified against the golden vectors); this module only
runs those cells over a whole cube.  Values travel as int64 holding the
32-bit datapath word (signed int32 values on the integer path, fp32 bit
patterns on the fp16 path).  Operand arrays hold one entry (a register
operand, used for every element) or one entry per element (memory).

One fused loop runs every enabled stage on an element before moving to the
next (one pass over the cube); it fills each cell's input row once with the
layer's settings and then only the per-element columns.
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

# statistics slots
(ST_SAT, ST_NAN_IN, ST_INF_IN, ST_UFLOW, ST_OFLOW, ST_HYBRID, ST_LE_HIT, ST_LO_HIT,
 ST_NAN_OUT, ST_UNEQUAL, ST_SIZE) = range(11)
# flags
(F_FP16_IN, F_FLUSH, F_X1, F_X2, F_Y, F_FP16_OUT, F_EQL, F_SIZE) = range(8)
# operand modes
OP_REGISTER, OP_CHANNEL, OP_ELEMENT = 0, 1, 2


@njit
def _operand(values, mode, i, hw, cp):
    """The operand of flat element ``i`` of an (N, Cp, H, W) cube."""
    if mode == OP_REGISTER:
        return values[0]
    if mode == OP_CHANNEL:
        return values[(i // hw) % cp]
    return values[i % (hw * cp)]


@njit
def _y_rows(p):
    """The Y cells' input rows with the layer's settings filled in."""
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
    return cvt, core, idx, inp


@njit
def _convert_operand(value, p, first, cvt, o):
    """Y operand convertor of a memory operand (``first``: Y_ALU_CVT_BYPASS or Y_MUL_...)."""
    cvt[0] = value
    cvt[1] = p[first]
    cvt[2] = p[first + 1]
    cvt[3] = p[first + 2]
    cvt[4] = p[first + 3]
    sdp_y_cvt_cell(cvt, o)
    return o[0]


@njit
def _lut(v, p, le, lo, idx, inp, o, stats):
    """LUT index, RAM read and interpolation/extrapolation of one value."""
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
        # slope registers (scale, shift) of the table and the side it left
        base = Y_LO_USCALE if use_lo else Y_LE_USCALE
        if oflow:
            base += 2
        inp[4] = p[base]
        inp[5] = p[base + 1]
        if use_lo:
            inp[6] = p[Y_LO_END] if oflow else p[Y_LO_START]
        else:
            inp[6] = p[Y_LE_END] if oflow else p[Y_LE_START]
            if not oflow and not p[Y_LE_LINEAR]:
                inp[7] = p[Y_LE_BIAS]
    inp[8] = 1 if flow else 0
    sdp_y_inp_cell(inp, o)
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
    return o[0]


@njit
def _x(v, row, o, alu, mul):
    """One X stage (X1 or X2) on one value."""
    row[0] = v
    row[1] = alu
    row[2] = mul
    sdp_x_cell(row, o)
    return o[0]


@njit
def sdp_loop(data, geom, flags, x1_row, x2_row, yp, c_row,
             op0, op1, op2, op3, op4, op5, modes, le, lo, out, stats):
    """The whole SDP datapath, element by element, over a flat (N, Cp, H, W) cube.

    ``data``/``out`` may be a slice of the cube starting at element
    ``geom[2]``.  ``op0..op5`` are the X1 ALU/MUL, X2 ALU/MUL and Y ALU/MUL
    operands with their ``modes`` (register, per channel or per element);
    ``geom`` = (H*W, Cp, first element).  Statistics accumulate into
    ``stats`` (ST_* slots).
    """
    hw, cp, first = geom[0], geom[1], geom[2]
    fp16_in, flush = flags[F_FP16_IN], flags[F_FLUSH]
    x1_on, x2_on, y_on = flags[F_X1], flags[F_X2], flags[F_Y]
    fp16_out, eql = flags[F_FP16_OUT], flags[F_EQL]
    r1 = x1_row.copy()
    r2 = x2_row.copy()
    rc = c_row.copy()
    cvt, core, idx, inp = _y_rows(yp)
    y_alu_mem, y_mul_mem, lut_on = yp[Y_ALU_MEM], yp[Y_MUL_MEM], yp[Y_LUT_ON]
    o = np.zeros(8, np.int64)
    for i in range(data.shape[0]):
        k = first + i
        v = data[i]
        if fp16_in:
            b = v & 0xFFFF
            if (b >> 10) & 0x1F == 0x1F:
                if b & 0x3FF:
                    stats[ST_NAN_IN] += 1
                else:
                    stats[ST_INF_IN] += 1
            v = fp16_to_fp32_bits(b)
        else:
            v &= 0xFFFFFFFF
        if flush and (v >> 23) & 0xFF == 0xFF and v & 0x7FFFFF:
            v = 0
        if x1_on:
            v = _x(v, r1, o, _operand(op0, modes[0], k, hw, cp), _operand(op1, modes[1], k, hw, cp))
        if x2_on:
            v = _x(v, r2, o, _operand(op2, modes[2], k, hw, cp), _operand(op3, modes[3], k, hw, cp))
        if y_on:
            a = _operand(op4, modes[4], k, hw, cp)
            if y_alu_mem:
                a = _convert_operand(a, yp, Y_ALU_CVT_BYPASS, cvt, o)
            m = _operand(op5, modes[5], k, hw, cp)
            if y_mul_mem:
                m = _convert_operand(m, yp, Y_MUL_CVT_BYPASS, cvt, o)
            core[0] = v
            core[1] = a
            core[2] = m
            sdp_y_core_cell(core, o)
            v = o[0]
            if lut_on:
                v = _lut(v, yp, le, lo, idx, inp, o, stats)
        rc[0] = v
        sdp_c_cell(rc, o)
        w = o[0]
        out[i] = w
        if fp16_out:
            if w & 0x7FFF == 0x7BFF:
                stats[ST_SAT] += 1
            if (w >> 10) & 0x1F == 0x1F and w & 0x3FF:
                stats[ST_NAN_OUT] += 1
        else:
            stats[ST_SAT] += o[1]
        if eql and w & 0xFFFF:
            stats[ST_UNEQUAL] = 1


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
