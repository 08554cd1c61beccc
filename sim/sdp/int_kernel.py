"""The integer SDP datapath (X1, X2, Y core and LUT, output convertor) in one kernel.

Large integer layers run here one element at a time instead of as dozens of
array passes of :mod:`sim.num.sdp` (whose stage functions are verified
against the golden vectors): the same arithmetic, element by element, and
``tests/sdp`` holds the two to each other.  Small layers, and the rare modes
this kernel leaves out (EQL comparison, fp16 output of integer data), stay in
numpy.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..num.rounding import convert, convert_flag, saturate, shift_left_saturate, sign_extend
from ..num.sdp import ALU_EQL, ALU_MAX, ALU_MIN, ALU_SUM
from . import lut_int

KERNEL_MIN = 1 << 16  # blocks from this many elements take the kernels
INT8_CODE, INT16_CODE = 0, 1
OPERANDS = (("x1", 0), ("x1", 1), ("x2", 0), ("x2", 1), ("y", 0), ("y", 1))

# settings vector: X1 and X2 at 0 and X_SIZE, then Y, then the output convertor
(X_ON, X_ALU_BYPASS, X_ALU_ALGO, X_ALU_SHIFT, X_MUL_BYPASS, X_PRELU, X_MUL_SHIFT,
 X_RELU_BYPASS) = range(8)
X_SIZE = 8
Y = 2 * X_SIZE
Y_ON, Y_ALU_BYPASS, Y_ALU_ALGO, Y_MUL_BYPASS, Y_PRELU, Y_TRUNCATE, Y_LUT = range(Y, Y + 7)
C = Y + 7
C_OFFSET, C_SCALE, C_SHIFT, C_BITS = range(C, C + 4)
N_SETTINGS = C + 4


def applies(layer, precision: int, out_precision: int) -> bool:
    """Whether the kernel computes a layer (integer in and out, no EQL)."""
    return (precision in (INT8_CODE, INT16_CODE) and out_precision in (INT8_CODE, INT16_CODE)
            and not layer.eql)


def settings(layer, out_precision: int) -> np.ndarray:
    s = np.zeros(N_SETTINGS, np.int64)
    for base, stage in ((0, layer.x1), (X_SIZE, layer.x2)):
        s[base + X_ON] = not stage.bypass
        s[base + X_ALU_BYPASS] = stage.alu_bypass
        s[base + X_ALU_ALGO] = stage.alu_algo & 3
        s[base + X_ALU_SHIFT] = stage.alu_shift & 63
        s[base + X_MUL_BYPASS] = stage.mul_bypass
        s[base + X_PRELU] = stage.mul_prelu
        s[base + X_MUL_SHIFT] = stage.mul_shift & 63
        s[base + X_RELU_BYPASS] = stage.relu_bypass
    y = layer.y
    s[Y_ON], s[Y_ALU_BYPASS], s[Y_ALU_ALGO] = not y.bypass, y.alu_bypass, y.alu_algo & 3
    s[Y_MUL_BYPASS], s[Y_PRELU], s[Y_TRUNCATE] = y.mul_bypass, y.mul_prelu, y.truncate & 1023
    s[Y_LUT] = not y.bypass and not y.lut_bypass
    s[C_OFFSET] = sign_extend(layer.cvt_offset & 0xFFFFFFFF, 32)
    s[C_SCALE] = sign_extend(layer.cvt_scale & 0xFFFF, 16)
    s[C_SHIFT] = layer.cvt_shift & 63
    s[C_BITS] = 8 if out_precision == INT8_CODE else 16
    return s


def operand_3d(operand: np.ndarray) -> np.ndarray:
    """An operand (0-d, (1, Cp, 1) or (1, Cp, H*W)) as a 3-d array."""
    return np.asarray(operand, np.int64).reshape((1, 1, 1) if np.ndim(operand) == 0
                                                 else np.shape(operand))


@njit(inline="always")
def _operand(op, c, px):
    """The operand of the block's channel ``c`` and pixel ``px`` (register, per channel or
    per element)."""
    return op[0, c if op.shape[1] > 1 else 0, px if op.shape[2] > 1 else 0]


@njit(inline="always")
def _alu(algo, a, b):
    if algo == ALU_MAX:
        return max(a, b)
    if algo == ALU_MIN:
        return min(a, b)
    if algo == ALU_EQL:
        return np.int64(a != b)
    return a + b


@njit(inline="always")
def _x_stage(x, s, base, alu_op, mul_op):
    """X1 or X2: ALU (EQL adds), multiplier with truncation, PReLU, ReLU (32-bit word out)."""
    x = sign_extend(x, 32)
    if not s[base + X_ALU_BYPASS]:
        algo = s[base + X_ALU_ALGO]
        x = _alu(ALU_SUM if algo == ALU_EQL else algo, x,
                 shift_left_saturate(sign_extend(alu_op, 16), s[base + X_ALU_SHIFT], 32))
    product = x if s[base + X_MUL_BYPASS] else x * sign_extend(mul_op, 16)
    out = convert(product, s[base + X_MUL_SHIFT], 32)
    if not s[base + X_MUL_BYPASS] and s[base + X_PRELU] and x >= 0:
        out = sign_extend(x, 32)  # PReLU passes x >= 0 unshifted
    if not s[base + X_RELU_BYPASS] and out < 0:
        out = 0
    return out & 0xFFFFFFFF


@njit(inline="always")
def _y_core(x, s, alu_op, mul_op):
    """Y: multiplier with truncation (PReLU passes positive words), then the ALU."""
    if not s[Y_MUL_BYPASS] and not (s[Y_PRELU] and x < 0x80000000):
        x = convert(sign_extend(x, 32) * sign_extend(mul_op, 32), s[Y_TRUNCATE], 32) \
            & 0xFFFFFFFF
    if not s[Y_ALU_BYPASS]:
        x = saturate(_alu(s[Y_ALU_ALGO], sign_extend(x, 32), sign_extend(alu_op, 32)), 32) \
            & 0xFFFFFFFF
    return x


@njit
def int_datapath(v, ops, s, lut, le, lo, out, counts):
    """The datapath of the block ``v`` (N, channels, pixels); 16-bit output words to ``out``.

    ``ops`` are the six operands (:data:`OPERANDS`) as 3-d arrays for the block,
    ``s`` the :func:`settings`, ``lut`` the LUT's :func:`lut_int.params`.
    ``counts`` gains the output saturations (index 0) and the LUT counters
    (indices 1-5, :func:`lut_int.lut_element`).
    """
    x1_alu, x1_mul, x2_alu, x2_mul, y_alu, y_mul = ops
    tally = np.zeros(24, np.int64)  # padded: threads never share its cache line
    lut_tally = tally[8:16]
    n_b, n_c, n_p = v.shape
    for b in range(n_b):
        for c in range(n_c):
            for px in range(n_p):
                x = v[b, c, px] & 0xFFFFFFFF
                if s[X_ON]:
                    x = _x_stage(x, s, 0, _operand(x1_alu, c, px), _operand(x1_mul, c, px))
                if s[X_SIZE + X_ON]:
                    x = _x_stage(x, s, X_SIZE, _operand(x2_alu, c, px),
                                 _operand(x2_mul, c, px))
                if s[Y_ON]:
                    x = _y_core(x, s, _operand(y_alu, c, px), _operand(y_mul, c, px))
                    if s[Y_LUT]:
                        x = lut_int.lut_element(x, lut, le, lo, lut_tally)
                word, saturated = convert_flag(
                    (sign_extend(x, 32) - s[C_OFFSET]) * s[C_SCALE], s[C_SHIFT], 17)
                out[b, c, px] = saturate(word, s[C_BITS]) & 0xFFFF
                tally[0] += saturated
    counts[0] += tally[0]
    counts[1:6] += lut_tally[:5]
