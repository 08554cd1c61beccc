"""Block convertors of the convolution pipeline and CDP.

``cdma_cvt`` (CDMA input data convertor), ``csc_cvt`` (CSC Winograd input
transform), ``cdp_icvt``/``cdp_ocvt`` (CDP input/output convertors) and
``cdp_sq`` (CDP square).  Precision codes: 0 int8, 1 int16, 2 fp16; the
2-bit fields are read modulo 4 and code 3 takes the integer path.

Each public function takes the block's arrays as keyword arguments (named as
in the golden vector files) and returns a dict of output arrays.
"""

import numpy as np

from sim.jit import njit
from sim.num.arrays import as_bits
from sim.num.cells import PRECISION_FP16, PRECISION_INT8, run_cells
from sim.num.fpcore import fp_add, fp_mul, fp_sub, int_to_float
from sim.num.ops import FP16, FP17, fp16_to_fp17_bits, fp17_to_fp16_bits
from sim.num.rounding import convert, convert_flag, saturate, sign_extend, wrap


# --- cells -----------------------------------------------------------------
@njit
def cdma_cvt_cell(r, o):
    data, alu, mul, in_precision, out_precision, truncate = r[0], r[1], r[2], r[3], r[4], r[5]
    if in_precision & 3 == PRECISION_FP16:
        o[0] = wrap(data, 16)
        return
    x = (sign_extend(data, 17) - sign_extend(alu, 16)) * sign_extend(mul, 16)
    v = convert(x, truncate & 63, 17)
    out_precision &= 3
    if out_precision == PRECISION_FP16:
        o[0] = int_to_float(v, *FP16)
    elif out_precision == PRECISION_INT8 or out_precision == 3:
        o[0] = wrap(saturate(v, 8), 16)
    else:
        o[0] = wrap(saturate(v, 16), 16)


@njit
def _cdp_in_lane(x, alu, mul, truncate, bits):
    return convert((x - alu) * mul, truncate, bits)


@njit
def cdp_icvt_cell(r, o):
    data, alu, mul, truncate, precision = r[0], r[1], r[2], r[3] & 31, r[4] & 3
    mul = sign_extend(mul, 16)
    if precision == PRECISION_FP16:
        o[0] = wrap(sign_extend(fp16_to_fp17_bits(data), 17), 18)
    elif precision == PRECISION_INT8:
        alu = sign_extend(alu, 8)  # only the low byte of the offset is used
        lo = _cdp_in_lane(sign_extend(data, 8), alu, mul, truncate, 9)
        hi = _cdp_in_lane(sign_extend(data >> 8, 8), alu, mul, truncate, 9)
        o[0] = (wrap(hi, 9) << 9) | wrap(lo, 9)
    else:
        v = _cdp_in_lane(sign_extend(data, 16), sign_extend(alu, 16), mul, truncate, 17)
        o[0] = wrap(v, 18)


@njit
def cdp_ocvt_cell(r, o):
    data, alu, mul, truncate, precision = r[0], r[1], r[2], r[3] & 63, r[4] & 3
    mul = sign_extend(mul, 16)
    if precision == PRECISION_FP16:
        o[0] = fp17_to_fp16_bits(data)
        o[1] = 0
    elif precision == PRECISION_INT8:
        alu = sign_extend(alu, 25)  # each 25-bit half uses the low 25 bits of the offset
        lo, lo_sat = convert_flag((sign_extend(data, 25) - alu) * mul, truncate, 8)
        hi, hi_sat = convert_flag((sign_extend(data >> 25, 25) - alu) * mul, truncate, 8)
        o[0] = (wrap(hi, 8) << 8) | wrap(lo, 8)
        o[1] = lo_sat | (hi_sat << 1)
    else:
        v, sat = convert_flag((sign_extend(data, 33) - sign_extend(alu, 32)) * mul, truncate, 16)
        o[0] = wrap(v, 16)
        o[1] = sat


@njit
def cdp_sq_cell(r, o):
    data, precision = r[0], r[1] & 3
    if precision == PRECISION_FP16:
        x = wrap(data, 16)
        o[0] = wrap(sign_extend(fp_mul(x, x, *FP16), 16), 33)
    else:
        x = sign_extend(data, 17)
        o[0] = wrap(x * x, 33)


# Winograd F(2x2, 3x3) input transform Bt * D * B, one row of Bt per entry:
# (first index, second index, subtract) -> first - second, or first + second.
_WINOGRAD_BT = ((0, 2, True), (1, 2, False), (2, 1, True), (1, 3, True))


@njit
def _winograd_term(x, y, subtract, fp):
    if fp:
        return fp_sub(x, y, *FP17) if subtract else fp_add(x, y, *FP17)
    return x - y if subtract else x + y


@njit
def csc_cvt_cell(r, o):
    """One 4x4 tile (row-major, 16 values) then ``precision`` and ``truncate``."""
    precision, truncate = r[16] & 3, r[17] & 3
    fp = precision == PRECISION_FP16
    d = np.empty(16, np.int64)
    for i in range(16):
        d[i] = fp16_to_fp17_bits(r[i]) if fp else sign_extend(r[i], 16)
    m = np.empty(16, np.int64)  # Bt * D: combine rows
    for row in range(4):
        first, second, subtract = _WINOGRAD_BT[row]
        for col in range(4):
            m[4 * row + col] = _winograd_term(d[4 * first + col], d[4 * second + col], subtract, fp)
    for row in range(4):  # (Bt * D) * B: combine columns
        for col in range(4):
            first, second, subtract = _WINOGRAD_BT[col]
            v = _winograd_term(m[4 * row + first], m[4 * row + second], subtract, fp)
            if fp:
                o[4 * row + col] = fp17_to_fp16_bits(v)
            elif precision == PRECISION_INT8:
                o[4 * row + col] = wrap(convert(v, truncate, 8), 16)
            else:
                o[4 * row + col] = wrap(convert(v, truncate, 16), 16)


@njit
def block_loop(cell, table, result):
    """Run cell number ``cell`` on every row of ``table`` into ``result``."""
    for i in range(table.shape[0]):
        r = table[i]
        o = result[i]
        if cell == 0:
            cdma_cvt_cell(r, o)
        elif cell == 1:
            cdp_icvt_cell(r, o)
        elif cell == 2:
            cdp_ocvt_cell(r, o)
        elif cell == 3:
            cdp_sq_cell(r, o)
        else:
            csc_cvt_cell(r, o)


# --- public functions ------------------------------------------------------
# Each passes ``dict(locals())`` -- its keyword arguments, in the order the
# cell reads them -- to ``run_cells``.
def cdma_cvt(*, data_in, alu_in, mul_in, in_precision, out_precision, truncate) -> dict:
    """CDMA input convertor, one value per element.

    fp16 input passes unchanged.  Otherwise ``((data - alu) * mul)`` (17-bit
    signed data, 16-bit signed alu and mul) is shifted right by ``truncate``
    rounding half away from zero and saturated to int17, then saturated to
    int16 or int8 (sign-extended into the 16-bit ``out``) or converted to
    fp16 (nearest even, saturating) by ``out_precision``.
    """
    return run_cells(block_loop, 0, dict(locals()), {"out": np.uint16})


def cdp_icvt(*, data_in, alu_in, mul_in, truncate, precision) -> dict:
    """CDP input convertor; ``out`` is an 18-bit two's-complement pattern.

    fp16: fp16_to_fp17 of the data, sign-extended.  int16:
    ``sat17(round((d - alu) * mul >> truncate))``.  int8: each byte of the
    data separately with the low byte of ``alu``, saturated to 9 bits, packed
    ``high << 9 | low``.
    """
    return run_cells(block_loop, 1, dict(locals()), {"out": np.uint32})


def cdp_ocvt(*, data_in, alu_in, mul_in, truncate, precision) -> dict:
    """CDP output convertor: ``out`` (16 bits) and ``sat`` flags.

    fp16: ``out = fp17_to_fp16(low 17 bits)``.  int16: the low 33 bits of the
    data, ``sat16(round((d - alu) * mul >> truncate))``.  int8: two 25-bit
    halves with the low 25 bits of ``alu``, each saturated to int8 and packed
    ``high << 8 | low``.  ``sat`` bit 0 (low/only lane) and bit 1 (high lane)
    are set when saturation changed a value by more than the rounding step.
    """
    return run_cells(block_loop, 2, dict(locals()), {"out": np.uint16, "sat": np.uint8})


def cdp_sq(*, data_in, precision) -> dict:
    """CDP square into 33 bits: fp16_mul(x, x) sign-extended, or the int17 square."""
    return run_cells(block_loop, 3, dict(data_in=data_in, precision=precision), {"out": np.uint64})


def csc_cvt(*, data_in, precision, truncate) -> dict:
    """CSC Winograd input transform ``Bt * D * B`` of 4x4 tiles.

    ``data_in`` has shape ``(..., 16)`` (a tile, row-major); ``precision``
    and ``truncate`` one value per tile.  fp16 tiles are computed in fp17
    (fp16_to_fp17, fp17 add/sub, fp17_to_fp16); integer tiles exactly, then
    shifted right by ``truncate`` (round half away from zero) and saturated
    to int16 or int8 (sign-extended into the 16-bit ``out``).
    """
    tiles = as_bits(data_in, np.uint16)
    shape = tiles.shape
    table = np.empty((int(np.prod(shape[:-1])), 18), np.int64)
    table[:, :16] = tiles.reshape(-1, 16)
    table[:, 16] = np.broadcast_to(precision, shape[:-1]).reshape(-1)
    table[:, 17] = np.broadcast_to(truncate, shape[:-1]).reshape(-1)
    result = np.zeros((table.shape[0], 16), np.int64)
    block_loop(4, table, result)
    return {"out": result.astype(np.uint16).reshape(shape)}
