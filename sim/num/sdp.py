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

import functools

import numpy as np

from sim.num import vector_fp as fp
from sim.num.cells import elementwise, results
from sim.num.lut import LE_ENTRIES, LO_ENTRIES, choose_tables
from sim.num.vector_fp import FP16, FP17, FP32
from sim.num.vector_int import (
    array_bounds,
    bit_length,
    choose,
    clip_into,
    convert,
    convert_flag,
    convert_owned,
    converted_bounds,
    dtype_bounds,
    i64,
    overflow_flags,
    owned_sign_extend,
    round_bound,
    saturate,
    saturated,
    shift_left_saturate,
    shift_signed,
    sign_extend,
    step_overflow_count,
    step_overflow_possible,
    wrap,
)
from sim.num.widths import INT16_MAX, INT16_MIN, INT32_MAX, INT32_MIN
from sim.regs.enums import AluAlgo, Precision

LUT_LE_DEPTH = LE_ENTRIES  # entries of the LE (exponent/linear) table
LUT_LO_DEPTH = LO_ENTRIES  # entries of the LO (linear) table
LUT_FRACTION_BITS = 35
LUT_INDEX_MAX = 511  # 9-bit index before the depth check


def flag(x) -> np.ndarray:
    """A setting read as a boolean (any non-zero value is set)."""
    return np.asarray(x) != 0


# --- shared element helpers -------------------------------------------------
def fp32_alu(algo, a, b):
    """The SDP float ALU on fp32 patterns."""
    return choose(algo == AluAlgo.SUM, lambda: fp.fp_add(a, b, *FP32),
                  lambda: choose(algo == AluAlgo.EQL, lambda: (wrap(a, 32) != wrap(b, 32)) * 1,
                                 lambda: fp.fp_max(a, b, algo == AluAlgo.MAX, *FP32)))


_INT_ALU = {AluAlgo.MAX: np.maximum, AluAlgo.MIN: np.minimum, AluAlgo.SUM: np.add,
            AluAlgo.EQL: lambda a, b: (a != b) * 1}


def int_alu(algo, a, b):
    """The SDP integer ALU (exact; callers saturate)."""
    if np.ndim(algo) == 0:  # a layer's one setting
        return _INT_ALU[int(algo)](a, b)
    return np.where(algo == AluAlgo.MAX, np.maximum(a, b),
                    np.where(algo == AluAlgo.MIN, np.minimum(a, b),
                             np.where(algo == AluAlgo.EQL, (a != b) * 1, a + b)))


def fp16_operand(op, nan_to_zero):
    """An fp16 operand widened to fp32; with ``nan_to_zero`` a NaN becomes +0."""
    op = wrap(op, 16)
    return np.where(flag(nan_to_zero) & fp.is_nan_pattern(op, *FP16), 0, fp.fp16_to_fp32(op))


def fp32_positive(x):
    """Sign bit of an fp32 pattern clear (the PReLU pass-through test)."""
    return wrap(x, 32) < 0x80000000


# --- X: ALU, multiplier, shift, ReLU ------------------------------------------
def _x_fp(x, alu_op, mul_op, alu_bypass, alu_algo, mul_bypass, mul_prelu, relu_bypass, ntz):
    x = wrap(x, 32)
    x = choose(alu_bypass, lambda: x, lambda: fp32_alu(alu_algo, x, fp16_operand(alu_op, ntz)))
    x = choose(mul_bypass, lambda: x, lambda: np.where(
        mul_prelu & fp32_positive(x), x, fp.fp_mul(x, fp16_operand(mul_op, ntz), *FP32)))
    if (~relu_bypass).any():  # ReLU: negative values (-0 to -Inf) become +0; NaNs stay
        x = np.where(~relu_bypass & (x >= 0x80000000) & (x <= 0xFF800000), 0, x)
    return x


def _one_setting(*settings) -> bool:
    """Every setting is one value (a layer's registers), not one per element."""
    return all(type(s) in (int, bool) or np.ndim(s) == 0 for s in settings)


def _into(ufunc, x: np.ndarray, operand) -> np.ndarray:
    """``ufunc(x, operand)``, written over ``x`` (the caller's own array) when the shapes allow."""
    if x.ndim and np.broadcast_shapes(x.shape, np.shape(operand)) == x.shape:
        return ufunc(x, operand, out=x)
    return ufunc(x, operand)



# A layer's integer path (one setting per field) carries its signed int32 values with
# bounds that hold them -- the input's range, then what each step makes of it -- and skips
# the clips, sign masks and saturation tests the range cannot need; while the bounds fit
# int32 it computes in int32 (passes of half the bytes).  Bounds wider than the values
# only cost a pass; None means unknown (the steps then look at the values, in int64).
def x_int_operands(alu_op, mul_op, alu_shift: int) -> tuple:
    """A layer's X operands as its datapath applies them, each as (values, bounds).

    ALU: the 16-bit operand shifted left by ``alu_shift`` and saturated to int32 (a shift
    of at most 15 cannot saturate); MUL: the 16-bit operand.  Computed once per layer.
    """
    alu, alu_bounds = _operand16(alu_op)
    if 0 < alu_shift <= 15:
        alu = alu.astype(np.int32) << alu_shift  # 16-bit values shifted by 15 fit int32
        alu_bounds = tuple(b << alu_shift for b in alu_bounds)
    elif alu_shift:
        alu = shift_left_saturate(alu, alu_shift, 32)
        alu_bounds = array_bounds(alu) if alu.size else (0, 0)
    mul, mul_bounds = _operand16(mul_op)
    return (_int32_if_small(alu), alu_bounds), (_int32_if_small(mul), mul_bounds)


#: An int8/int16 operand of at most this many values (one per channel) is widened to int32
#: once per layer: numpy adds or multiplies an int32 block and a narrower operand through
#: its casting loops, about twice the time of the same-dtype loop.  An operand per element
#: stays narrow (widening it would cost a pass over the cube).
SMALL_OPERAND = 1 << 14


def _int32_if_small(values):
    if isinstance(values, np.ndarray) and values.dtype in (np.int8, np.int16) \
            and values.size <= SMALL_OPERAND:
        return values.astype(np.int32)
    return values


def _operand16(values) -> tuple:
    """(the 16-bit operand ``values`` sign-extended, their bounds); memory operands are
    read as int8/int16 values already, which a look at their range tells.  int8/int16
    arrays (memory operands as read) are signed 16-bit values already and stay in their
    dtype: an operand per element is as large as the cube, and its dtype's range bounds it
    (bounds may be wider than the values: they only pick work dtypes and skip tests)."""
    values = np.asarray(values)
    if values.ndim == 0 and values.dtype == np.int64:  # a register: no reductions
        value = sign_extend(int(values), 16)
        return np.array(value, np.int64), (value, value)
    if values.dtype in (np.int8, np.int16):
        if values.size > SMALL_OPERAND:  # one per element: its dtype's range, not two passes
            return values, dtype_bounds(values)
        return values, (array_bounds(values) if values.size else (0, 0))
    values = i64(values)
    if not values.size:
        return values, (0, 0)
    bounds = array_bounds(values)
    if INT16_MIN <= bounds[0] and bounds[1] <= INT16_MAX:
        return values, bounds
    values = sign_extend(values, 16)
    return values, array_bounds(values)


def _alu_bounds(algo: int, x: tuple | None, op: tuple) -> tuple | None:
    if x is None:
        return None
    if algo == AluAlgo.MAX:
        return max(x[0], op[0]), max(x[1], op[1])
    if algo == AluAlgo.MIN:
        return min(x[0], op[0]), min(x[1], op[1])
    return x[0] + op[0], x[1] + op[1]


def _product_bounds(x: tuple | None, op: tuple) -> tuple | None:
    if x is None:
        return None
    corners = [a * b for a in x for b in op]
    return min(corners), max(corners)


def _work_dtype(x, bounds: tuple | None, operand=0) -> type:
    """int32 for values of at most 32 bits whose result stays in its range, else int64;
    int16 when the values, the ``operand`` and the result all fit it (int8 memory input
    and operands: numpy's int16 loops take half the time of int8 cast to int32)."""
    itemsize = np.asarray(x).dtype.itemsize
    if bounds is None or itemsize > 4 or not (INT32_MIN <= bounds[0] and bounds[1] <= INT32_MAX):
        return np.int64
    if itemsize <= 2 and INT16_MIN <= bounds[0] and bounds[1] <= INT16_MAX and (
            operand.dtype.itemsize <= 2 if isinstance(operand, np.ndarray) and operand.ndim
            else INT16_MIN <= int(operand) <= INT16_MAX):
        return np.int16
    return np.int32


def _apply(ufunc, x, operand, owned: bool, bounds: tuple | None) -> np.ndarray:
    """``ufunc(x, operand)`` in the dtype that holds ``bounds`` (the result's): over ``x``
    when it is the caller's own array of that dtype, else into a new one.  Operands are
    at most 32 bits."""
    dtype = _work_dtype(x, bounds, operand)
    if owned and x.dtype == dtype and x.ndim \
            and np.broadcast_shapes(x.shape, np.shape(operand)) == x.shape:
        return ufunc(x, operand, out=x, dtype=dtype)
    return ufunc(x, operand, dtype=dtype)


def _convert(x, s: int, lo: int, hi: int, bounds: tuple | None, owned: bool) -> tuple:
    """:func:`convert_owned` of ``x`` (a copy first unless ``owned``; int64 unless the
    rounding stays in int32) and the result's bounds."""
    half = (1 << s >> 1) if s < 63 else 1 << 62
    rounding = None if bounds is None else (bounds[0] - half, bounds[1] + half)
    dtype = _work_dtype(x, rounding)
    if not owned or x.dtype != dtype:
        x = np.asarray(x).astype(dtype)
    x = convert_owned(x, s, lo, hi, bounds)
    return x, None if bounds is None else converted_bounds(bounds, s, lo, hi)


def x_int_block(x, bounds, alu, mul, alu_bypass, alu_algo, mul_bypass, mul_shift, relu_bypass,
                owned: bool = True) -> tuple:
    """One X stage, one setting per field and no PReLU, on signed int32 values ``x``
    within ``bounds``: (signed int32 results, their bounds).

    ``alu``, ``mul``: (values, bounds) of :func:`x_int_operands`.  ``owned``: ``x`` is
    the caller's array, changed in place; otherwise new arrays are made.  ReLU after the
    int32 saturation is the saturation's lower bound raised to 0.

    When the bounds leave the stage one possible result (a shift that rounds every value
    to zero, a ReLU under negative values), it is that value as a 0-d array, with no pass
    over ``x``: it broadcasts against the block like any operand.
    """
    algo = AluAlgo.SUM if alu_algo == AluAlgo.EQL else int(alu_algo)
    low = 0 if not relu_bypass else INT32_MIN
    # each step's bounds (None stays None), worked out before any pass over x
    alu_bounds = bounds if alu_bypass else _alu_bounds(algo, bounds, alu[1])
    mul_bounds = alu_bounds if mul_bypass else _product_bounds(alu_bounds, mul[1])
    if mul_bounds is not None:
        result = converted_bounds(mul_bounds, int(mul_shift), low, INT32_MAX)
        if result[0] == result[1]:
            return np.array(result[0], np.int64), result
    if not alu_bypass:
        x, owned = _apply(_INT_ALU[algo], x, alu[0], owned, alu_bounds), True
    if not mul_bypass:
        x, owned = _apply(np.multiply, x, mul[0], owned, mul_bounds), True
    return _convert(x, int(mul_shift), low, INT32_MAX, mul_bounds, owned)


def _x_int_layer(x, alu_op, mul_op, alu_bypass, alu_algo, alu_shift, mul_bypass, mul_shift,
                 relu_bypass):
    """:func:`_x_int` for one setting of each field and no PReLU: 32-bit words in and out."""
    alu, mul = x_int_operands(alu_op, mul_op, int(alu_shift))
    x, _ = x_int_block(owned_sign_extend(x, 32), None, alu, mul, alu_bypass, alu_algo,
                       mul_bypass, mul_shift, relu_bypass)
    return wrap(x, 32) if np.ndim(x) == 0 else _into(np.bitwise_and, x, 0xFFFFFFFF)


def _x_int(x, alu_op, mul_op, alu_bypass, alu_algo, alu_shift, mul_bypass, mul_prelu,
           mul_shift, relu_bypass):
    if _one_setting(alu_bypass, alu_algo, alu_shift, mul_bypass, mul_prelu, mul_shift,
                    relu_bypass) and (mul_bypass or not mul_prelu):
        return _x_int_layer(x, alu_op, mul_op, alu_bypass, alu_algo, alu_shift, mul_bypass,
                            mul_shift, relu_bypass)
    x = sign_extend(x, 32)
    x = choose(alu_bypass, lambda: x, lambda: int_alu(
        np.where(alu_algo == AluAlgo.EQL, AluAlgo.SUM, alu_algo), x,
        shift_left_saturate(sign_extend(alu_op, 16), alu_shift, 32)))
    # products are truncated by mul_shift (also when bypassed); PReLU passes x >= 0 unshifted
    product = choose(mul_bypass, lambda: x, lambda: x * sign_extend(mul_op, 16))
    converted = convert(product, mul_shift, 32)
    prelu = ~mul_bypass & mul_prelu
    if prelu.any():
        converted = np.where(prelu & (x >= 0), sign_extend(x, 32), converted)
    if (~relu_bypass).any():
        converted = np.where(~relu_bypass & (converted < 0), 0, converted)
    return wrap(converted, 32)


def x_stage(data, alu_op, mul_op, alu_bypass, alu_algo, alu_shift, mul_bypass, mul_prelu,
            mul_shift, relu_bypass, nan_to_zero, precision):
    """One X stage (X1 or X2) on 32-bit values with the operands already selected."""
    alu_bypass, mul_bypass, relu_bypass = flag(alu_bypass), flag(mul_bypass), flag(relu_bypass)
    mul_prelu, alu_algo = flag(mul_prelu), i64(alu_algo) & 3
    return choose((i64(precision) & 3) == Precision.FP16.code,
                  lambda: _x_fp(data, alu_op, mul_op, alu_bypass, alu_algo, mul_bypass,
                                mul_prelu, relu_bypass, nan_to_zero),
                  lambda: _x_int(data, alu_op, mul_op, alu_bypass, alu_algo, i64(alu_shift) & 63,
                                 mul_bypass, mul_prelu, i64(mul_shift) & 63, relu_bypass))


# --- C: output convertor -------------------------------------------------------
def c_stage(data, offset, scale, truncate, proc_precision, out_precision, mode_eql,
            rtl_flag: bool = False):
    """The output convertor: (16-bit out, saturation flag).  ``rtl_flag``: the flag of
    NVIDIA's master RTL (:func:`saturated`), else the C-model's."""
    data, out_precision = i64(data), i64(out_precision) & 3

    def fp_path():
        out = fp.fp32_to_fp16(data)
        out = choose(out_precision == Precision.INT16.code,
                     lambda: wrap(fp.float_to_int(out, 16, *FP16), 16), lambda: out)
        return np.stack(np.broadcast_arrays(out, 0))

    def int_path():
        x = (sign_extend(data, 32) - sign_extend(offset, 32)) * sign_extend(scale, 16)
        t, sat = convert_flag(x, i64(truncate) & 63, 17)
        if rtl_flag:
            sat = saturated(x, i64(truncate) & 63, 17)
        bits = np.where(out_precision == Precision.INT8.code, 8, 16)
        out = np.where(out_precision == 3, 0, wrap(saturate(t, bits), 16))  # 3: undefined
        out = choose(out_precision == Precision.FP16.code, lambda: fp.int_to_float(t, *FP16),
                     lambda: out)
        return np.stack(np.broadcast_arrays(out, sat))

    fp_on = (i64(proc_precision) & 3) == Precision.FP16.code
    if (_one_setting(offset, scale, truncate, out_precision, mode_eql) and not fp_on
            and data.ndim):
        out, sat = _c_int_layer(data, offset, scale, truncate, out_precision, rtl_flag)
        return (wrap(data, 16) if mode_eql else out), sat
    out, sat = choose(fp_on, fp_path, int_path)
    return np.where(flag(mode_eql), wrap(data, 16), out), sat


_C_OUT_RANGE = {Precision.INT8.code: (-(1 << 7), (1 << 7) - 1),
                Precision.INT16.code: (INT16_MIN, INT16_MAX),
                Precision.FP16.code: (-(1 << 16), (1 << 16) - 1)}  # int17, then to fp16


def _c_scaled(x, bounds, offset: int, scale: int, owned: bool) -> tuple:
    """``(x - offset) * scale`` of signed int32 values (offset and scale sign-extended)
    and its bounds."""
    if offset:
        bounds = None if bounds is None else (bounds[0] - offset, bounds[1] - offset)
        x, owned = _apply(np.subtract, x, offset, owned, bounds), True
    if scale != 1:
        bounds = _product_bounds(bounds, (scale, scale))
        x, owned = _apply(np.multiply, x, scale, owned, bounds), True
    return x, bounds, owned


def _c_value(x: int, offset: int, scale: int, shift: int, lo: int, hi: int) -> int:
    """The convertor's output for one value (the rule of :func:`_c_output`, in Python ints)."""
    return min(max(round_bound((x - offset) * scale, shift), lo), hi)


@functools.lru_cache(maxsize=256)
def _c_window(offset: int, scale: int, shift: int, lo: int, hi: int) -> tuple[int, int]:
    """[a, b] of int32 inputs outside which the convertor's output no longer changes: it
    is monotonic in x, so clipping x to [a, b] first gives the same output from smaller
    products.  (a, a) when it never changes."""
    def value(x):
        return _c_value(x, offset, scale, shift, lo, hi)

    first, last = value(INT32_MIN), value(INT32_MAX)
    if first == last:
        return INT32_MIN, INT32_MIN
    up = 1 if first < last else -1  # the output's direction as x grows (the scale's sign)

    def crossing(level: int) -> int:  # about where the output leaves ``level`` towards last
        return offset + ((2 * level + up) << shift >> 1) // scale

    return (_last_true(INT32_MIN, INT32_MAX, lambda x: value(x) == first, crossing(first)),
            _last_true(INT32_MIN, INT32_MAX, lambda x: value(x) != last,
                       crossing(last - up)) + 1)


def _last_true(low: int, high: int, test, guess: int | None = None) -> int:
    """The largest x in [low, high] with ``test(x)``, which holds on a prefix from low;
    searched near ``guess`` first."""
    if guess is not None:
        near = max(low, guess - 2), min(high, guess + 2)
        if test(near[0]) and not test(near[1]):
            low, high = near[0], near[1] - 1
    while low < high:
        mid = (low + high + 1) // 2
        if test(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _c_output(x, bounds, shift: int, out_precision: int, owned: bool) -> np.ndarray:
    """The scaled values shifted, rounded and saturated to the output precision: signed
    int8/int16 values, or fp16 patterns (through int17); zeros for the undefined code 3.

    Saturating to int17 and then to int8/int16 is one clip to the narrower range.
    """
    code = int(out_precision)
    if code == 3:
        return np.zeros(np.shape(x), np.int64)
    lo, hi = _C_OUT_RANGE[code]
    x, _ = _convert(x, shift, lo, hi, bounds, owned)
    return fp.int_to_float(x, *FP16) if code == Precision.FP16.code else x


def _windowed(bounds, offset: int, scale: int, shift: int, code: int) -> bool:
    """Whether :func:`c_int_block` may clip its int32 input to :func:`_c_window` first:
    integer output, and no value can saturate int17 (the count looks at the values)."""
    if bounds is None or code not in (Precision.INT8.code, Precision.INT16.code) \
            or bounds[0] < INT32_MIN or bounds[1] > INT32_MAX:
        return False
    scaled = _product_bounds((bounds[0] - offset, bounds[1] - offset), (scale, scale))
    return not step_overflow_possible(scaled, shift, 17)


def c_int_block(x, bounds, offset, scale, truncate, out_precision, owned: bool = True,
                rtl_flag: bool = False) -> tuple[np.ndarray, int]:
    """The integer output convertor, one setting per field, on signed int32 values ``x``
    within ``bounds``: (output, how many saturated int17, by the rule ``rtl_flag`` picks
    as for :func:`c_stage`).

    The output is the signed int8/int16 value (the low bits of :func:`c_stage`'s word),
    or the fp16 pattern.  ``owned`` as for :func:`x_int_block`.
    """
    offset, scale = sign_extend(int(offset), 32), sign_extend(int(scale), 16)
    shift, code = int(truncate) & 63, int(out_precision)
    if _windowed(bounds, offset, scale, shift, code):
        a, b = _c_window(offset, scale, shift, *_C_OUT_RANGE[code])
        window = (min(max(a, bounds[0]), bounds[1]), max(min(b, bounds[1]), bounds[0]))
        if window != tuple(bounds):
            x = clip_into(x, *window, bounds) if owned else np.clip(x, *window)
            owned, bounds = True, window
        x, bounds, owned = _c_scaled(x, bounds, offset, scale, owned)
        return _c_output(x, bounds, shift, code, owned), 0
    x, bounds, owned = _c_scaled(x, bounds, offset, scale, owned)
    count = step_overflow_count(x, shift, 17, bounds, rtl_flag)
    return _c_output(x, bounds, shift, code, owned), count


def _c_int_layer(data, offset, scale, truncate, out_precision, rtl_flag: bool = False):
    """The integer output convertor for one setting of each field: (16-bit words, flags)."""
    offset, scale = sign_extend(int(offset), 32), sign_extend(int(scale), 16)
    x = owned_sign_extend(data, 32)
    x, bounds, owned = _c_scaled(x, array_bounds(x) if x.size else None, offset, scale, True)
    shift = int(truncate) & 63
    sat = overflow_flags(x, shift, 17, rtl_flag, bounds)
    out = _c_output(x, bounds, shift, out_precision, owned)
    if int(out_precision) in (Precision.INT8.code, Precision.INT16.code):
        out = out & 0xFFFF
    return out, sat


# --- Y: operand convertor, multiplier + ALU ------------------------------------
def y_cvt_stage(data, bypass, offset, scale, truncate, nan_to_zero, precision):
    """A 16-bit memory operand converted to the 32-bit Y datapath."""
    def integer():
        converted = convert((sign_extend(data, 16) - sign_extend(offset, 32))
                            * sign_extend(scale, 16), i64(truncate) & 63, 32)
        return wrap(np.where(flag(bypass), sign_extend(data, 16), converted), 32)

    return choose((i64(precision) & 3) == Precision.FP16.code,
                  lambda: fp16_operand(data, nan_to_zero), integer)


def y_core_stage(data, alu_op, mul_op, alu_bypass, alu_algo, mul_bypass, truncate, mul_prelu,
                 precision):
    """The Y multiplier then ALU, on 32-bit values with the operands selected."""
    x = wrap(data, 32)
    alu_bypass, mul_bypass, alu_algo = flag(alu_bypass), flag(mul_bypass), i64(alu_algo) & 3
    multiply = ~mul_bypass & ~(flag(mul_prelu) & fp32_positive(x))
    fp_on = (i64(precision) & 3) == Precision.FP16.code

    def fp_path():
        y = choose(multiply, lambda: fp.fp_mul(x, mul_op, *FP32), lambda: x)
        return choose(alu_bypass, lambda: y, lambda: fp32_alu(alu_algo, y, alu_op))

    def int_path():
        y = choose(multiply, lambda: wrap(convert(sign_extend(x, 32) * sign_extend(mul_op, 32),
                                                  i64(truncate) & 1023, 32), 32), lambda: x)
        return choose(alu_bypass, lambda: y, lambda: saturate(
            int_alu(alu_algo, sign_extend(y, 32), sign_extend(alu_op, 32)), 32))

    return wrap(choose(fp_on, fp_path, int_path), 32)


# --- Y: LUT index ----------------------------------------------------------------
def _float_index(diff, select):
    """Linear index of a positive fp32 ``diff`` scaled by ``2**-select``.

    Returns (integer part saturated to 9 bits, 35-bit fraction).  The
    unbiased exponent is kept in 8 signed bits, so Inf reads as 2**-128.
    """
    _, e, m = fp.unpack(diff, *FP32)
    p = m | (1 << 23)
    lshift = sign_extend(e - 127, 8) - select - 23  # value = p * 2**lshift
    integer = p >> np.maximum(-lshift, 0)
    k = LUT_FRACTION_BITS + lshift
    fraction = np.where(k >= 0, np.where(k < 40, wrap(p << np.clip(k, 0, 63), LUT_FRACTION_BITS),
                                         0), p >> np.maximum(-k, 0))
    return (np.where(lshift >= 0, LUT_INDEX_MAX, np.minimum(integer, LUT_INDEX_MAX)),
            np.where(lshift >= 0, 0, fraction))


def _int_index(u, select, signed_fraction):
    """Linear index of the positive integer ``u`` (< 2**32) shifted by ``select``.

    The fraction is the ``select`` low bits of ``u`` aligned to the top of 35
    bits.  For the LE table the masked bits pass through a signed 32-bit
    field first (``signed_fraction``), which the LO table does not do.
    """
    left = np.where(bit_length(u) - select > 9, LUT_INDEX_MAX, u << np.clip(-select, 0, 63))
    integer = np.where(select >= 0, u >> np.maximum(select, 0), left)
    field = np.where((select >= 0) & (select < 63), u & ((1 << np.clip(select, 0, 62)) - 1), u)
    if signed_fraction:
        field = wrap(sign_extend(field, 32), LUT_FRACTION_BITS)
    k = select - LUT_FRACTION_BITS  # right shift of the field (left if negative)
    fraction = np.where(k >= 0, field >> np.maximum(k, 0),
                        np.where(-k < LUT_FRACTION_BITS,
                                 wrap(field << np.clip(-k, 0, 63), LUT_FRACTION_BITS), 0))
    return np.minimum(integer, LUT_INDEX_MAX), fraction


def _fp_difference(x, start):
    """fp32 ``x - start`` and whether it underflows (negative, zero or NaN)."""
    diff = fp.fp_sub(x, start, *FP32)
    s, e, m = fp.unpack(diff, *FP32)
    return diff, (s == 1) | ((e == 0) & (m == 0)) | fp.is_nan(e, m, FP32[0])


def _int_difference(x, start):
    """The 32-bit difference ``x - start`` and whether ``x <= start``."""
    x, start = sign_extend(x, 32), sign_extend(start, 32)
    return wrap(x - start, 32), x <= start


def _exponent_index(x, start, offset, fp_on):
    """LE exponent mode: (uflow, index before the depth check, fraction)."""
    def fp_path():
        diff, uflow = _fp_difference(x, start)
        _, e, m = fp.unpack(diff, *FP32)
        return np.stack(np.broadcast_arrays(uflow, e - 127, m << (LUT_FRACTION_BITS - 23)))

    def int_path():
        u, uflow = _int_difference(x, start)
        log2 = np.maximum(bit_length(u) - 1, 0)
        fraction = (u & ((1 << log2) - 1)) << (LUT_FRACTION_BITS - log2)
        return np.stack(np.broadcast_arrays(uflow, log2, fraction))

    uflow, log2, fraction = choose(fp_on, fp_path, int_path)
    uflow = (uflow != 0) | (log2 < offset)
    return uflow, wrap(log2 - offset, 9), np.where(uflow, 0, fraction)


def _linear_index(x, start, select, fp_on, signed_fraction):
    """Linear mode: (uflow, index before the depth check, fraction)."""
    def fp_path():
        diff, uflow = _fp_difference(x, start)
        return np.stack(np.broadcast_arrays(uflow, *_float_index(diff, select)))

    def int_path():
        u, uflow = _int_difference(x, start)
        return np.stack(np.broadcast_arrays(uflow, *_int_index(u, select, signed_fraction)))

    uflow, index, fraction = choose(fp_on, fp_path, int_path)
    uflow = uflow != 0
    return uflow, np.where(uflow, 0, index), np.where(uflow, 0, fraction)


def _table_hit(uflow, index, fraction, depth):
    """(uflow, oflow, address, fraction) after the table's depth check."""
    oflow = ~uflow & (index >= depth - 1)
    address = np.where(uflow, 0, np.where(oflow, depth - 1, index))
    return uflow, oflow, address, np.where(uflow | oflow, 0, fraction)


def y_idx_stage(x, le_start, lo_start, le_offset, le_select, lo_select, le_linear,
                uflow_priority, oflow_priority, hybrid_priority, precision):
    """Both tables' lookups and the choice between them (see ``sdp_y_idx``).

    Returns (fraction, oflow, uflow, use_lo, address, le_hit, lo_hit).
    """
    fp_on = (i64(precision) & 3) == Precision.FP16.code
    le_offset, le_select = sign_extend(le_offset, 8), sign_extend(le_select, 8)
    lo_select = sign_extend(lo_select, 8)
    le_linear = flag(le_linear)
    le = choose(le_linear,
                lambda: np.stack(np.broadcast_arrays(
                    *_linear_index(x, le_start, le_select, fp_on, True))),
                lambda: np.stack(np.broadcast_arrays(
                    *_exponent_index(x, le_start, le_offset, fp_on))))
    le = _table_hit(le[0] != 0, le[1], le[2], LUT_LE_DEPTH)
    lo = _table_hit(*_linear_index(x, lo_start, lo_select, fp_on, False), LUT_LO_DEPTH)
    le_uflow, le_oflow = le[0] != 0, le[1] != 0
    lo_uflow, lo_oflow = lo[0] != 0, lo[1] != 0
    le_hit, lo_hit = ~(le_uflow | le_oflow), ~(lo_uflow | lo_oflow)
    use_lo, _ = choose_tables(le_uflow, le_oflow, lo_uflow, lo_oflow, uflow_priority,
                              oflow_priority, hybrid_priority)
    pick = [np.where(use_lo, b, a) for a, b in zip(le, lo, strict=True)]
    both = le_hit & lo_hit
    uflow = (pick[0] != 0) & ~both
    oflow = (pick[1] != 0) & ~both
    return pick[3], oflow, uflow, use_lo, pick[2], le_hit, lo_hit


# --- Y: LUT interpolation -------------------------------------------------------
def y_inp_stage(x, fraction, y0, y1, scale, shift, offset, bias, flow, precision):
    """Interpolation between two entries, or extrapolation past the table (``flow``)."""
    flow = flag(flow)
    shift = sign_extend(shift, 5)
    f = wrap(fraction, LUT_FRACTION_BITS)

    def fp_flow():  # y0 + (x - (offset + bias)) * scale, in fp17
        base = fp.fp_add(offset, bias, *FP32)
        a = fp.fp32_to_fp17(fp.fp_sub(x, base, *FP32))
        slope = fp.fp_mul(a, fp.fp16_to_fp17(scale), *FP17)
        return fp.fp17_to_fp32(fp.fp_add(fp.fp16_to_fp17(y0), slope, *FP17))

    def int_flow():  # y0 + ((x - (offset + bias)) * scale >> shift)
        a = sign_extend(x, 32) - (wrap(bias, 32) + sign_extend(offset, 32))
        slope = shift_signed(a * sign_extend(scale, 16), shift, 32)
        return wrap(saturate(sign_extend(y0, 16) + slope, 32), 32)

    def fp_hit():  # y0 * (1 - f) + y1 * f, in fp17
        w0 = np.where(f == 0, 0x7C00,  # 1.0 in fp17
                      fp.fraction_to_float((1 << LUT_FRACTION_BITS) - f, LUT_FRACTION_BITS,
                                           *FP17))
        w1 = fp.fraction_to_float(f, LUT_FRACTION_BITS, *FP17)
        b0 = fp.fp_mul(w0, fp.fp16_to_fp17(y0), *FP17)
        b1 = fp.fp_mul(w1, fp.fp16_to_fp17(y1), *FP17)
        return fp.fp17_to_fp32(fp.fp_add(b0, b1, *FP17))

    def int_hit():
        v = sign_extend(y0, 16) * ((1 << LUT_FRACTION_BITS) - f) + sign_extend(y1, 16) * f
        return wrap(convert(v, LUT_FRACTION_BITS, 32), 32)

    fp_on = (i64(precision) & 3) == 2
    return choose(flow, lambda: choose(fp_on, fp_flow, int_flow),
                  lambda: choose(fp_on, fp_hit, int_hit))


# --- public functions ------------------------------------------------------------
# Each passes ``locals()`` -- its keyword arguments, in the order the stage
# reads them -- to ``elementwise``.
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
    shape, c = elementwise(locals())
    alu = np.where(c[7] != 0, c[1], c[3])
    mul = np.where(c[11] != 0, c[2], c[4])
    out = x_stage(c[0], alu, mul, c[5], c[6], c[8], c[9], c[10], c[12], c[13], c[14], c[15])
    return results(shape, out=(out, np.uint32))


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
    shape, cols = elementwise(locals())
    out, sat = c_stage(*cols)
    return results(shape, out=(out, np.uint16), sat=(sat, np.uint8))


def sdp_y_cvt(*, data_in, bypass, offset, scale, truncate, nan_to_zero, precision) -> dict:
    """SDP Y operand convertor: 16-bit operand to the 32-bit Y datapath.

    fp16: fp16_to_fp32 (a NaN becomes +0 when ``nan_to_zero``).  Integer:
    sign extension when ``bypass``, else ``(d - offset) * scale`` shifted
    right by ``truncate`` (round half away from zero, saturate to int32).
    """
    shape, cols = elementwise(locals())
    return results(shape, out=(y_cvt_stage(*cols), np.uint32))


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
    shape, c = elementwise(locals())
    alu = np.where(c[4] != 0, c[1], c[5])
    mul = np.where(c[8] != 0, c[2], c[9])
    out = y_core_stage(c[0], alu, mul, c[3], c[6], c[7], c[10], c[11], c[12])
    return results(shape, out=(out, np.uint32))


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
    shape, cols = elementwise(locals())
    fraction, oflow, uflow, use_lo, address, le_hit, lo_hit = y_idx_stage(*cols)
    values = (fraction, wrap(cols[0], 32), oflow, uflow, use_lo, address, le_hit, lo_hit)
    pairs = zip(_IDX_OUTPUTS.items(), values, strict=True)
    return results(shape, **{name: (v, dtype) for (name, dtype), v in pairs})


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
    shape, cols = elementwise(locals())
    return results(shape, out=(y_inp_stage(*cols), np.uint32))
