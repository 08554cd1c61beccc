"""SDP datapath stages, element by element.

Each public function takes the stage's arrays as keyword arguments, named as
in the golden vector files, and works per element: per-lane arrays of shape
``(N, lanes)`` (or any shape), per-call settings of shape ``(N,)`` (applied to
every lane of the row) or scalars.  It returns a dict of output arrays.

In fp16 precision the SDP computes in fp32 (X, Y core, C input) or fp17
(LUT interpolation); operands read from memory or registers as fp16 are
widened with ``fp16_to_fp32``.  Other precision codes (int8, int16) take the
integer path; ``precision`` fields are 2 bits and code 2 is fp16.

ALU algorithms (``alu_algo``): 0 max, 1 min, 2 sum, 3 "not equal" (1 when the
operands differ, else 0; the X stage's integer ALU adds instead).
"""

import numpy as np

from sim.jit import njit
from sim.num.cells import PRECISION_FP16, PRECISION_INT8, PRECISION_INT16, run_cells
from sim.num.fpcore import (
    float_to_int,
    fp_add,
    fp_max,
    fp_mul,
    fp_sub,
    fraction_to_float,
    int_to_float,
)
from sim.num.lut import (
    KIND_HIT,
    KIND_OFLOW,
    KIND_UFLOW,
    LE_ENTRIES,
    LO_ENTRIES,
    choose_table,
)
from sim.num.ops import (
    FP16,
    FP17,
    FP32,
    fp16_to_fp17_bits,
    fp16_to_fp32_bits,
    fp17_to_fp32_bits,
    fp32_to_fp16_bits,
    fp32_to_fp17_bits,
)
from sim.num.rounding import (
    bit_length,
    convert,
    convert_flag,
    saturate,
    shift_left_saturate,
    shift_signed,
    sign_extend,
    wrap,
)
from sim.num.rules import is_nan, unpack

ALU_MAX = 0
ALU_MIN = 1
ALU_SUM = 2
ALU_EQL = 3

LUT_LE_DEPTH = LE_ENTRIES  # entries of the LE (exponent/linear) table
LUT_LO_DEPTH = LO_ENTRIES  # entries of the LO (linear) table
LUT_FRACTION_BITS = 35
LUT_INDEX_MAX = 511  # 9-bit index before the depth check


# --- shared element helpers -------------------------------------------------
@njit
def fp32_alu(algo, a, b):
    """The SDP float ALU on fp32 patterns."""
    if algo == ALU_SUM:
        return fp_add(a, b, *FP32)
    if algo == ALU_EQL:
        return 0 if wrap(a, 32) == wrap(b, 32) else 1
    return fp_max(a, b, algo == ALU_MAX, *FP32)


@njit
def int_alu(algo, a, b):
    """The SDP integer ALU (exact; callers saturate)."""
    if algo == ALU_MAX:
        return a if a > b else b
    if algo == ALU_MIN:
        return a if a < b else b
    if algo == ALU_EQL:
        return 0 if a == b else 1
    return a + b


@njit
def fp16_operand(op, nan_to_zero):
    """An fp16 operand widened to fp32; with ``nan_to_zero`` a NaN becomes +0."""
    s, e, m = unpack(wrap(op, 16), *FP16)
    if nan_to_zero and is_nan(e, m, FP16[0]):
        return 0
    return fp16_to_fp32_bits(op)


@njit
def fp32_positive(x):
    """Sign bit of an fp32 pattern clear (the PReLU pass-through test)."""
    return (x >> 31) & 1 == 0


# --- X: ALU, multiplier, shift, ReLU ------------------------------------------
@njit
def sdp_x_cell(r, o):
    data, alu_dma, mul_dma, alu_cfg, mul_cfg = r[0], r[1], r[2], r[3], r[4]
    alu_bypass, alu_algo, alu_src, alu_shift = r[5], r[6] & 3, r[7], r[8] & 63
    mul_bypass, mul_prelu, mul_src, mul_shift = r[9], r[10], r[11], r[12] & 63
    relu_bypass, nan_to_zero, fp = r[13], r[14], r[15] & 3 == PRECISION_FP16
    alu_op = alu_dma if alu_src else alu_cfg
    mul_op = mul_dma if mul_src else mul_cfg

    x = wrap(data, 32) if fp else sign_extend(data, 32)
    if not alu_bypass:
        if fp:
            x = fp32_alu(alu_algo, x, fp16_operand(alu_op, nan_to_zero))
        else:
            operand = shift_left_saturate(sign_extend(alu_op, 16), alu_shift, 32)
            x = int_alu(alu_algo if alu_algo != ALU_EQL else ALU_SUM, x, operand)

    shifted = True  # integer products are truncated by mul_shift
    if not mul_bypass:
        if fp:
            if not (mul_prelu and fp32_positive(x)):
                x = fp_mul(x, fp16_operand(mul_op, nan_to_zero), *FP32)
        elif mul_prelu and x >= 0:
            shifted = False
        else:
            x = x * sign_extend(mul_op, 16)
    if fp:
        x = wrap(x, 32)
    elif shifted:
        x = convert(x, mul_shift, 32)
    else:
        x = sign_extend(x, 32)

    if not relu_bypass:
        if fp:
            s, e, m = unpack(x, *FP32)
            if s and not is_nan(e, m, FP32[0]):
                x = 0
        elif x < 0:
            x = 0
    o[0] = wrap(x, 32)


# --- C: output convertor -------------------------------------------------------
@njit
def sdp_c_cell(r, o):
    data, offset, scale, truncate = r[0], r[1], r[2], r[3] & 63
    proc_precision, out_precision, mode_eql = r[4] & 3, r[5] & 3, r[6]
    sat = 0
    if proc_precision == PRECISION_FP16:
        out = fp32_to_fp16_bits(data)
        if out_precision == PRECISION_INT16:
            out = wrap(float_to_int(out, 16, *FP16), 16)
    else:
        x = (sign_extend(data, 32) - sign_extend(offset, 32)) * sign_extend(scale, 16)
        t, sat = convert_flag(x, truncate, 17)
        if out_precision == PRECISION_FP16:
            out = int_to_float(t, *FP16)
        elif out_precision == PRECISION_INT16:
            out = wrap(saturate(t, 16), 16)
        elif out_precision == PRECISION_INT8:
            out = wrap(saturate(t, 8), 16)
        else:
            out = 0  # precision 3: the reference leaves the value undefined
    if mode_eql:
        out = wrap(data, 16)
    o[0] = out
    o[1] = sat


# --- Y: operand convertor, multiplier + ALU ------------------------------------
@njit
def sdp_y_cvt_cell(r, o):
    data, bypass, offset, scale = r[0], r[1], r[2], r[3]
    truncate, nan_to_zero, precision = r[4] & 63, r[5], r[6] & 3
    if precision == PRECISION_FP16:
        o[0] = fp16_operand(data, nan_to_zero)
    elif bypass:
        o[0] = wrap(sign_extend(data, 16), 32)
    else:
        x = (sign_extend(data, 16) - sign_extend(offset, 32)) * sign_extend(scale, 16)
        o[0] = wrap(convert(x, truncate, 32), 32)


@njit
def sdp_y_core_cell(r, o):
    data, alu_dma, mul_dma = r[0], r[1], r[2]
    alu_bypass, alu_src, alu_cfg, alu_algo = r[3], r[4], r[5], r[6] & 3
    mul_bypass, mul_src, mul_cfg = r[7], r[8], r[9]
    truncate, mul_prelu, fp = r[10] & 1023, r[11], r[12] & 3 == PRECISION_FP16
    x = wrap(data, 32)
    if not mul_bypass and not (mul_prelu and fp32_positive(x)):
        op = mul_dma if mul_src else mul_cfg
        if fp:
            x = fp_mul(x, op, *FP32)
        else:
            x = wrap(convert(sign_extend(x, 32) * sign_extend(op, 32), truncate, 32), 32)
    if not alu_bypass:
        op = alu_dma if alu_src else alu_cfg
        if fp:
            x = fp32_alu(alu_algo, x, op)
        else:
            x = saturate(int_alu(alu_algo, sign_extend(x, 32), sign_extend(op, 32)), 32)
    o[0] = wrap(x, 32)


# --- Y: LUT index ----------------------------------------------------------------
@njit
def _float_index(diff, select):
    """Linear index of a positive fp32 ``diff`` scaled by ``2**-select``.

    Returns (integer part saturated to 9 bits, 35-bit fraction).  The
    unbiased exponent is kept in 8 signed bits, so Inf reads as 2**-128.
    """
    s, e, m = unpack(diff, *FP32)
    p = m | (1 << 23)
    lshift = sign_extend(e - 127, 8) - select - 23  # value = p * 2**lshift
    if lshift >= 0:
        return LUT_INDEX_MAX, 0
    integer = p >> -lshift if -lshift < 64 else 0
    k = LUT_FRACTION_BITS + lshift
    if k >= 0:
        fraction = wrap(p << k, LUT_FRACTION_BITS) if k < 40 else 0
    else:
        fraction = p >> -k if -k < 64 else 0
    return min(integer, LUT_INDEX_MAX), fraction


@njit
def _int_index(u, select, signed_fraction):
    """Linear index of the positive integer ``u`` (< 2**32) shifted by ``select``.

    The fraction is the ``select`` low bits of ``u`` aligned to the top of 35
    bits.  For the LE table the masked bits pass through a signed 32-bit
    field first (``signed_fraction``), which the LO table does not do.
    """
    if select >= 0:
        integer = u >> select if select < 64 else 0
    else:
        integer = LUT_INDEX_MAX if bit_length(u) - select > 9 else u << -select
    field = u & ((1 << select) - 1) if 0 <= select < 63 else u
    if signed_fraction:
        field = wrap(sign_extend(field, 32), LUT_FRACTION_BITS)
    k = select - LUT_FRACTION_BITS  # right shift of the field (left if negative)
    if k >= 0:
        fraction = field >> k if k < 64 else 0
    else:
        fraction = wrap(field << -k, LUT_FRACTION_BITS) if -k < LUT_FRACTION_BITS else 0
    return min(integer, LUT_INDEX_MAX), fraction


@njit
def _exponent_index(x, start, offset, fp):
    """LE exponent mode: (uflow, index before the depth check, fraction)."""
    if fp:
        diff = fp_sub(x, start, *FP32)
        s, e, m = unpack(diff, *FP32)
        if s or (e == 0 and m == 0) or is_nan(e, m, FP32[0]):
            return True, 0, 0
        log2 = e - 127
        fraction = m << (LUT_FRACTION_BITS - 23)
    else:
        if sign_extend(x, 32) <= sign_extend(start, 32):
            return True, 0, 0
        u = wrap(sign_extend(x, 32) - sign_extend(start, 32), 32)
        log2 = bit_length(u) - 1
        fraction = (u & ((1 << log2) - 1)) << (LUT_FRACTION_BITS - log2)
    if log2 < offset:
        return True, 0, 0
    return False, wrap(log2 - offset, 9), fraction


@njit
def _linear_index(x, start, select, fp, signed_fraction):
    """Linear mode: (uflow, index before the depth check, fraction)."""
    if fp:
        diff = fp_sub(x, start, *FP32)
        s, e, m = unpack(diff, *FP32)
        if s or (e == 0 and m == 0) or is_nan(e, m, FP32[0]):
            return True, 0, 0
        index, fraction = _float_index(diff, select)
    else:
        if sign_extend(x, 32) <= sign_extend(start, 32):
            return True, 0, 0
        u = wrap(sign_extend(x, 32) - sign_extend(start, 32), 32)
        index, fraction = _int_index(u, select, signed_fraction)
    return False, index, fraction


@njit
def _table_hit(uflow, index, fraction, depth):
    """(uflow, oflow, address, fraction) after the table's depth check."""
    if uflow:
        return True, False, 0, 0
    if index >= depth - 1:
        return False, True, depth - 1, 0
    return False, False, index, fraction


@njit
def _kind(hit):
    """The result kind (sim.num.lut) of a :func:`_table_hit` tuple."""
    if hit[0]:
        return KIND_UFLOW
    return KIND_OFLOW if hit[1] else KIND_HIT


@njit
def sdp_y_idx_cell(r, o):
    x, le_start, lo_start = r[0], r[1], r[2]
    le_offset = sign_extend(r[3], 8)
    le_select = sign_extend(r[4], 8)
    lo_select = sign_extend(r[5], 8)
    le_linear, uflow_priority, oflow_priority, hybrid_priority = r[6], r[7], r[8], r[9]
    fp = r[10] & 3 == PRECISION_FP16

    if le_linear:
        flow, index, fraction = _linear_index(x, le_start, le_select, fp, True)
    else:
        flow, index, fraction = _exponent_index(x, le_start, le_offset, fp)
    le = _table_hit(flow, index, fraction, LUT_LE_DEPTH)
    flow, index, fraction = _linear_index(x, lo_start, lo_select, fp, False)
    lo = _table_hit(flow, index, fraction, LUT_LO_DEPTH)

    le_hit = not (le[0] or le[1])
    lo_hit = not (lo[0] or lo[1])
    use_lo, _ = choose_table(_kind(le), _kind(lo), uflow_priority, oflow_priority,
                             hybrid_priority)
    uflow, oflow, address, fraction = lo if use_lo else le
    if le_hit and lo_hit:
        uflow = oflow = False
    o[0] = fraction
    o[1] = wrap(x, 32)
    o[2] = oflow
    o[3] = uflow
    o[4] = 1 if use_lo else 0
    o[5] = address
    o[6] = le_hit
    o[7] = lo_hit


# --- Y: LUT interpolation -------------------------------------------------------
@njit
def sdp_y_inp_cell(r, o):
    x, fraction, y0, y1, scale = r[0], r[1], r[2], r[3], r[4]
    shift, offset, bias, flow, fp = sign_extend(r[5], 5), r[6], r[7], r[8], r[9] & 3 == 2
    if flow and fp:  # extrapolate: y0 + (x - (offset + bias)) * scale, in fp17
        base = fp_add(offset, bias, *FP32)
        a = fp32_to_fp17_bits(fp_sub(x, base, *FP32))
        slope = fp_mul(a, fp16_to_fp17_bits(scale), *FP17)
        out = fp17_to_fp32_bits(fp_add(fp16_to_fp17_bits(y0), slope, *FP17))
    elif flow:  # y0 + ((x - (offset + bias)) * scale >> shift)
        a = sign_extend(x, 32) - (wrap(bias, 32) + sign_extend(offset, 32))
        slope = shift_signed(a * sign_extend(scale, 16), shift, 32)
        out = wrap(saturate(sign_extend(y0, 16) + slope, 32), 32)
    elif fp:  # interpolate: y0 * (1 - f) + y1 * f, in fp17
        f = wrap(fraction, LUT_FRACTION_BITS)
        if f == 0:
            w0 = 0x7C00  # 1.0 in fp17
        else:
            w0 = fraction_to_float((1 << LUT_FRACTION_BITS) - f, LUT_FRACTION_BITS, *FP17)
        w1 = fraction_to_float(f, LUT_FRACTION_BITS, *FP17)
        b0 = fp_mul(w0, fp16_to_fp17_bits(y0), *FP17)
        b1 = fp_mul(w1, fp16_to_fp17_bits(y1), *FP17)
        out = fp17_to_fp32_bits(fp_add(b0, b1, *FP17))
    else:
        f = wrap(fraction, LUT_FRACTION_BITS)
        x = sign_extend(y0, 16) * ((1 << LUT_FRACTION_BITS) - f) + sign_extend(y1, 16) * f
        out = wrap(convert(x, LUT_FRACTION_BITS, 32), 32)
    o[0] = out


@njit
def sdp_loop(cell, table, result):
    """Run cell number ``cell`` on every row of ``table`` into ``result``."""
    for i in range(table.shape[0]):
        r = table[i]
        o = result[i]
        if cell == 0:
            sdp_x_cell(r, o)
        elif cell == 1:
            sdp_c_cell(r, o)
        elif cell == 2:
            sdp_y_cvt_cell(r, o)
        elif cell == 3:
            sdp_y_core_cell(r, o)
        elif cell == 4:
            sdp_y_idx_cell(r, o)
        else:
            sdp_y_inp_cell(r, o)


# --- public functions ------------------------------------------------------------
# Each passes ``dict(locals())`` -- its keyword arguments, in the order the
# cell reads them -- to ``run_cells``.
_IDX_OUTPUTS = {
    "out_fraction": np.uint64,
    "out_x": np.uint32,
    "out_oflow": np.uint16,
    "out_uflow": np.uint16,
    "out_ram_sel": np.uint16,
    "out_ram_addr": np.uint16,
    "out_le_hit": np.uint16,
    "out_lo_hit": np.uint16,
}


def sdp_x(
    *,
    data_in,
    alu_op,
    mul_op,
    cfg_alu_op,
    cfg_mul_op,
    alu_bypass,
    alu_algo,
    alu_src,
    alu_shift_value,
    mul_bypass,
    mul_prelu,
    mul_src,
    mul_shift_value,
    relu_bypass,
    nan_to_zero,
    precision,
) -> dict:
    """SDP X stage (X1/X2): ALU, multiplier, shift, ReLU; ``out`` 32 bits.

    Operands come from ``alu_op``/``mul_op`` (16-bit, from memory) when
    ``alu_src``/``mul_src`` is 1, else from ``cfg_alu_op``/``cfg_mul_op``.

    fp16 precision (``data_in`` fp32): a NaN operand becomes +0 if
    ``nan_to_zero``; the operand is widened to fp32; ALU max/min/sum/"not
    equal" in fp32; multiply in fp32 (with ``mul_prelu`` a non-negative input
    passes); ReLU zeroes negative values but keeps NaNs.

    Integer precision (``data_in`` int32): the ALU operand is shifted left by
    ``alu_shift_value`` and saturated to int32, then max, min or sum (algo 3
    also sums) into 33 bits; the product with the int16 ``mul_op`` is shifted
    right by ``mul_shift_value`` (round half away from zero, saturate to
    int32) -- also when the multiplier is bypassed; with ``mul_prelu`` a
    non-negative input passes unshifted (its low 32 bits).  ReLU: max(x, 0).
    """
    return run_cells(sdp_loop, 0, dict(locals()), {"out": np.uint32})


def sdp_c(*, data_in, offset, scale, truncate, proc_precision, out_precision, mode_eql) -> dict:
    """SDP output convertor: ``out`` (16 bits) and ``sat`` (1 bit).

    fp16 processing: fp32_to_fp16, then for int16 output a conversion to
    int16 rounding half away from zero and saturating (NaN gives 0x8000; an
    fp32 NaN with zero low mantissa bits has become Inf and saturates).
    Integer processing: ``(data - offset) * scale`` shifted right by
    ``truncate`` (round half away from zero), saturated to int17 (``sat``
    flags it), then to fp16, int16 or int8 (sign-extended) by
    ``out_precision``.  ``mode_eql`` passes the low 16 bits of the data.
    """
    return run_cells(sdp_loop, 1, dict(locals()), {"out": np.uint16, "sat": np.uint8})


def sdp_y_cvt(*, data_in, bypass, offset, scale, truncate, nan_to_zero, precision) -> dict:
    """SDP Y operand convertor: 16-bit operand to the 32-bit Y datapath.

    fp16: fp16_to_fp32 (a NaN becomes +0 when ``nan_to_zero``).  Integer:
    sign extension when ``bypass``, else ``(d - offset) * scale`` shifted
    right by ``truncate`` (round half away from zero, saturate to int32).
    """
    return run_cells(sdp_loop, 2, dict(locals()), {"out": np.uint32})


def sdp_y_core(
    *,
    data_in,
    alu_op,
    mul_op,
    alu_bypass,
    alu_src,
    cfg_alu_op,
    alu_algo,
    mul_bypass,
    mul_src,
    cfg_mul_op,
    truncate,
    mul_prelu,
    precision,
) -> dict:
    """SDP Y core: multiplier, then ALU, on 32-bit values; ``out`` 32 bits.

    Operands are ``alu_op``/``mul_op`` when the ``*_src`` bit is 1, else the
    ``cfg_*`` registers (already converted by ``sdp_y_cvt``).  With
    ``mul_prelu`` a value whose bit 31 is clear passes the multiplier.
    fp16 precision: fp32 multiply and fp32 ALU (max, min, sum, "not equal").
    Integer: the 64-bit product shifted right by ``truncate`` (10 bits; round
    half away from zero, saturate to int32), then max/min/"not equal"/sum
    saturated to int32.
    """
    return run_cells(sdp_loop, 3, dict(locals()), {"out": np.uint32})


def sdp_y_idx(
    *,
    x_in,
    le_start,
    lo_start,
    le_index_offset,
    le_index_select,
    lo_index_select,
    le_function,
    uflow_priority,
    oflow_priority,
    hybrid_priority,
    precision,
) -> dict:
    """SDP LUT index calculation for the LE (65 entries) and LO (257) tables.

    Each table sees ``x - start`` (fp32 subtraction in fp16 precision, int32
    otherwise); zero, negative or NaN differences underflow.  LE exponent
    mode (``le_function`` 0): index = log2 of the difference minus
    ``le_index_offset``, fraction = the bits below the leading one.  Linear
    mode (LE with ``le_function`` 1, and always LO): the difference shifted
    right by ``*_index_select`` gives the index, the bits shifted out the
    35-bit fraction.  An index at or past the last entry overflows (address =
    last entry, fraction 0).  The table used follows the priorities: both
    underflow -> ``uflow_priority`` (1 = LO), both overflow ->
    ``oflow_priority``, both hit or both miss otherwise -> ``hybrid_priority``,
    else the table that hits.

    Outputs: ``out_fraction`` [35], ``out_x`` (the input), ``out_oflow``,
    ``out_uflow``, ``out_ram_sel`` (0 LE, 1 LO), ``out_ram_addr`` [9],
    ``out_le_hit``, ``out_lo_hit``.
    """
    return run_cells(sdp_loop, 4, dict(locals()), _IDX_OUTPUTS)


def sdp_y_inp(*, x, fraction, y0, y1, scale, shift, offset, bias, flow, precision) -> dict:
    """SDP LUT interpolation; ``out`` 32 bits (fp32 in fp16 precision).

    In range (``flow`` 0): ``y0 * (1 - f) + y1 * f`` with the 35-bit fraction
    ``f`` -- in fp17 for fp16 precision (weights from the fraction, products
    and sum in fp17, result widened to fp32), else exactly and then shifted
    right by 35 (round half away from zero, saturate to int32).
    Under/overflow (``flow`` 1): extrapolation ``y0 + (x - (offset + bias)) *
    scale`` -- fp32 add/sub, then fp17 multiply and add; or in integers with
    the product shifted right by the signed ``shift`` (left when negative;
    round half away from zero, saturate to int32) and the sum saturated.
    ``bias`` is unsigned, ``offset`` signed.
    """
    return run_cells(sdp_loop, 5, dict(locals()), {"out": np.uint32})
