"""Block convertors of the convolution pipeline and CDP.

``cdma_cvt`` (CDMA input data convertor), ``csc_cvt`` (CSC Winograd input
transform), ``cdp_icvt``/``cdp_ocvt`` (CDP input/output convertors) and
``cdp_sq`` (CDP square).  Precision codes: 0 int8, 1 int16, 2 fp16; the
2-bit fields are read modulo 4 and code 3 takes the integer path.

Each public function takes the block's arrays as keyword arguments (named as
in the golden vector files) and returns a dict of output arrays.
"""

from typing import NamedTuple

import numpy as np

from sim.num import vector_fp as fp
from sim.num.arrays import as_bits
from sim.num.cells import elementwise, results
from sim.num.vector_fp import FP16, FP17
from sim.num.vector_int import (
    choose,
    convert,
    convert_flag,
    saturate,
    shift_right_round,
    sign_extend,
    wrap,
)
from sim.regs.enums import Precision


def _cdma_cvt(data, alu, mul, in_precision, out_precision, truncate):
    x = (sign_extend(data, 17) - sign_extend(alu, 16)) * sign_extend(mul, 16)
    v = convert(x, truncate & 63, 17)
    out = choose((out_precision & 3) == Precision.FP16.code, lambda: fp.int_to_float(v, *FP16),
                 lambda: wrap(saturate(v, np.where((out_precision & 3) == 1, 16, 8)), 16))
    return choose((in_precision & 3) == Precision.FP16.code, lambda: wrap(data, 16), lambda: out)


class CdpIntWidths(NamedTuple):
    """Field widths (bits) of the integer CDP convertors."""

    data: int  # an input element, and the part of the offset subtracted from it
    converted: int  # the input convertor's output
    word: int  # the output convertor's input (the LRN product)
    offset: int  # the part of the output offset subtracted from it
    out: int  # an output element


CDP_INT_WIDTHS = {Precision.INT8.code: CdpIntWidths(8, 9, 25, 25, 8),
                  Precision.INT16.code: CdpIntWidths(16, 17, 33, 32, 16)}


def _cdp_icvt(data, alu, mul, truncate, precision):
    truncate, precision, mul = truncate & 31, precision & 3, sign_extend(mul, 16)

    def int8():
        w = CDP_INT_WIDTHS[Precision.INT8.code]
        alu8 = sign_extend(alu, w.data)  # only the low byte of the offset is used
        lo = convert((sign_extend(data, w.data) - alu8) * mul, truncate, w.converted)
        hi = convert((sign_extend(data >> w.data, w.data) - alu8) * mul, truncate, w.converted)
        return (wrap(hi, w.converted) << w.converted) | wrap(lo, w.converted)

    def int16():
        w = CDP_INT_WIDTHS[Precision.INT16.code]
        return wrap(convert((sign_extend(data, w.data) - sign_extend(alu, w.data)) * mul, truncate,
                            w.converted), 18)

    return choose(precision == Precision.FP16.code,
                  lambda: wrap(sign_extend(fp.fp16_to_fp17(wrap(data, 16)), 17), 18),
                  lambda: choose(precision == Precision.INT8.code, int8, int16))


def _cdp_ocvt(data, alu, mul, truncate, precision):
    truncate, precision, mul = truncate & 63, precision & 3, sign_extend(mul, 16)

    def int8():
        w = CDP_INT_WIDTHS[Precision.INT8.code]
        alu25 = sign_extend(alu, w.offset)  # each 25-bit half uses the low 25 bits of the offset
        lo, lo_sat = convert_flag((sign_extend(data, w.word) - alu25) * mul, truncate, w.out)
        hi, hi_sat = convert_flag((sign_extend(data >> w.word, w.word) - alu25) * mul, truncate,
                                  w.out)
        return np.stack([(wrap(hi, w.out) << w.out) | wrap(lo, w.out),
                         lo_sat | (hi_sat.astype(np.int64) << 1)])

    def int16():
        w = CDP_INT_WIDTHS[Precision.INT16.code]
        v, sat = convert_flag((sign_extend(data, w.word) - sign_extend(alu, w.offset)) * mul,
                              truncate, w.out)
        return np.stack([wrap(v, w.out), sat.astype(np.int64)])

    def fp16():
        return np.stack([fp.fp17_to_fp16(data), np.zeros_like(data)])

    both = choose(precision == Precision.FP16.code, fp16,
                  lambda: choose(precision == Precision.INT8.code, int8, int16))
    return both[0], both[1]


def _cdp_sq(data, precision):
    def fp16():
        x = wrap(data, 16)
        return wrap(sign_extend(fp.fp_mul(x, x, *FP16), 16), 33)

    def integer():
        x = sign_extend(data, 17)
        return wrap(x * x, 33)

    return choose((precision & 3) == Precision.FP16.code, fp16, integer)


# Winograd F(2x2, 3x3) input transform Bt * D * B, one row of Bt per entry:
# (first index, second index, subtract) -> first - second, or first + second.
_WINOGRAD_BT = ((0, 2, True), (1, 2, False), (2, 1, True), (1, 3, True))
# the same rows as one call of each operation over stacked operands (fp17 arithmetic
# costs a call per array, not per element): (first rows, second rows) of the
# differences, then of the sums, and where each result row goes back
_BT_PAIRS = tuple(tuple([row[k] for row in _WINOGRAD_BT if row[2] is sub] for k in (0, 1))
                  for sub in (True, False))
_BT_ORDER = np.argsort([k for sub in (True, False)
                        for k, row in enumerate(_WINOGRAD_BT) if row[2] is sub])


def _bt(x, sub, add):
    """``Bt * x`` along the first axis of ``x`` (4, ...), with ``sub(a, b)``/``add(a, b)``."""
    (d1, d2), (s1, s2) = _BT_PAIRS
    return np.concatenate([sub(x[d1], x[d2]), add(x[s1], x[s2])])[_BT_ORDER]


def _winograd(tiles, sub, add):
    """``Bt * D * B`` of (4, 4, ...) tiles (tile row and column first, so each step is a
    whole-array operation)."""
    return _bt(_bt(tiles, sub, add).swapaxes(0, 1), sub, add).swapaxes(0, 1)


def _fp17_sub(x, y):
    return fp.fp_sub(x, y, *FP17)


def _fp17_add(x, y):
    return fp.fp_add(x, y, *FP17)


def winograd_pre_add_int(tiles, truncate, bits):
    """The CSC's integer pre-addition ``Bt d B`` of (4, 4, ...) integer tiles, shifted
    right by ``truncate`` rounding half away from zero and saturated to ``bits`` (int64).

    ``truncate``/``bits`` are one layer's settings or arrays broadcasting to the tiles.
    """
    v = _winograd(np.asarray(tiles, np.int64), np.subtract, np.add)
    return saturate(shift_right_round(v, truncate), bits)


def _csc_cvt(tiles, precision, truncate):
    """(T, 16) tiles; ``precision``/``truncate`` of shape (T, 1)."""
    tiles = tiles.reshape(-1, 4, 4).transpose(1, 2, 0)  # (4, 4, T)
    precision, truncate = precision.reshape(1, 1, -1) & 3, truncate.reshape(1, 1, -1) & 3

    def fp16():
        return fp.fp17_to_fp16(_winograd(fp.fp16_to_fp17(tiles), _fp17_sub, _fp17_add))

    def integer():
        bits = np.where(precision == Precision.INT8.code, 8, 16)
        return wrap(winograd_pre_add_int(sign_extend(tiles, 16), truncate, bits), 16)

    both = choose(precision == Precision.FP16.code, fp16, integer)
    return both.transpose(2, 0, 1).reshape(-1, 16)


# --- public functions ------------------------------------------------------
# Each passes ``locals()`` -- its keyword arguments, in the order the block
# reads them -- to ``elementwise``.
def cdma_cvt(*, data_in, alu_in, mul_in, in_precision, out_precision, truncate) -> dict:
    """CDMA input convertor, one value per element.

    fp16 input passes unchanged.  Otherwise ``((data - alu) * mul)`` (17-bit
    signed data, 16-bit signed alu and mul) is shifted right by ``truncate``
    rounding half away from zero and saturated to int17, then saturated to
    int16 or int8 (sign-extended into the 16-bit ``out``) or converted to
    fp16 (nearest even, saturating) by ``out_precision``.
    """
    shape, cols = elementwise(locals())
    return results(shape, out=(_cdma_cvt(*cols), np.uint16))


def cdma_cvt_is_identity(offset: int, scale: int, truncate: int) -> bool:
    """Whether :func:`cdma_cvt` of integer data into its own precision maps every value to
    itself: offset 0, scale 1, no truncation (``((x - 0) * 1) >> 0`` saturated to the
    precision the data already has is ``x``) -- what compilers program when they enable
    the convertor without a conversion.  Fields as the registers hold them."""
    return offset == 0 and scale == 1 and truncate & 63 == 0


def cdp_icvt(*, data_in, alu_in, mul_in, truncate, precision) -> dict:
    """CDP input convertor; ``out`` is an 18-bit two's-complement pattern.

    fp16: fp16_to_fp17 of the data, sign-extended.  int16:
    ``sat17(round((d - alu) * mul >> truncate))``.  int8: each byte of the
    data separately with the low byte of ``alu``, saturated to 9 bits, packed
    ``high << 9 | low``.
    """
    shape, cols = elementwise(locals())
    return results(shape, out=(_cdp_icvt(*cols), np.uint32))


def cdp_ocvt(*, data_in, alu_in, mul_in, truncate, precision) -> dict:
    """CDP output convertor: ``out`` (16 bits) and ``sat`` flags.

    fp16: ``out = fp17_to_fp16(low 17 bits)``.  int16: the low 33 bits of the
    data, ``sat16(round((d - alu) * mul >> truncate))``.  int8: two 25-bit
    halves with the low 25 bits of ``alu``, each saturated to int8 and packed
    ``high << 8 | low``.  ``sat`` bit 0 (low/only lane) and bit 1 (high lane)
    are set when saturation changed a value by more than the rounding step.
    """
    shape, cols = elementwise(locals())
    out, sat = _cdp_ocvt(*cols)
    return results(shape, out=(out, np.uint16), sat=(sat, np.uint8))


def cdp_sq(*, data_in, precision) -> dict:
    """CDP square into 33 bits: fp16_mul(x, x) sign-extended, or the int17 square."""
    shape, cols = elementwise(dict(data_in=data_in, precision=precision))
    return results(shape, out=(_cdp_sq(*cols), np.uint64))


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
    per_tile = [np.broadcast_to(np.asarray(v, np.int64), shape[:-1]).reshape(-1)
                for v in (precision, truncate)]
    out = _csc_cvt(tiles.reshape(-1, 16).astype(np.int64), *per_tile)
    return {"out": out.astype(np.uint16).reshape(shape)}
