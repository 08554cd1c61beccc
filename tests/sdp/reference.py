"""Independent SDP references, written from the documented semantics.

NVDLA's ``ias/precision.rst`` and ``unit_description.rst`` describe the SDP
integer datapath in terms of three operations, computed here with Python
integers and exact fractions:

* shifter     ``saturate(x * 2**s)``
* truncation  ``saturate(round_half_away(x / 2**s))``
* convertor   ``saturate(round_half_away((x - offset) * scale / 2**s))``

The fp16 datapath works in fp32; for normal values its add, multiply and
max/min are IEEE (numpy float32), fp32 -> fp16 rounds to nearest even and
overflow saturates to +-65504.
"""

from __future__ import annotations

from fractions import Fraction
from math import floor

import numpy as np


def round_half_away(q) -> int:
    q = Fraction(q)
    r = floor(abs(q) + Fraction(1, 2))
    return r if q >= 0 else -r


def sat(v: int, bits: int) -> int:
    hi = (1 << (bits - 1)) - 1
    return max(-hi - 1, min(hi, v))


def truncate(v: int, shift: int, bits: int = 32) -> int:
    return sat(round_half_away(Fraction(v, 1 << shift)), bits)


def wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def x_stage(v: int, alu: int, mul: int, *, alu_bypass=1, alu_algo=2, alu_shift=0,
            mul_bypass=1, prelu=0, mul_shift=0, relu_bypass=1) -> int:
    """X1/X2 on integers: ALU (operand shifted left), MUL, truncation, ReLU."""
    if not alu_bypass:
        op = sat(alu << alu_shift, 32)
        v = max(v, op) if alu_algo == 0 else min(v, op) if alu_algo == 1 else v + op
    if not mul_bypass and prelu and v >= 0:
        v = wrap32(v)
    else:
        if not mul_bypass:
            v = v * mul
        v = truncate(v, mul_shift)
    if not relu_bypass:
        v = max(v, 0)
    return v


def out_cvt(v: int, offset: int, scale: int, shift: int, out_bits: int) -> tuple[int, bool]:
    """Output convertor to int8/int16; flag = the int17 stage saturated."""
    exact = Fraction((v - offset) * scale, 1 << shift)
    t = sat(round_half_away(exact), 17)
    return sat(t, out_bits), abs(exact) > (1 << 16)


def y_cvt(d: int, offset: int, scale: int, shift: int) -> int:
    return truncate((d - offset) * scale, shift)


def y_core(v: int, alu: int, mul: int, *, alu_bypass=1, alu_algo=2, mul_bypass=1, prelu=0,
           shift=0) -> int:
    """Y on integers: MUL (truncated by EW_TRUNCATE) then ALU (saturated)."""
    if not mul_bypass and not (prelu and v >= 0):
        v = truncate(v * mul, shift)
    if not alu_bypass:
        if alu_algo == 3:
            v = int(v != alu)
        else:
            v = sat(max(v, alu) if alu_algo == 0 else min(v, alu) if alu_algo == 1 else v + alu,
                    32)
    return v


# -- fp16 -------------------------------------------------------------------------
FP16_MAX = 65504.0


def f16(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


def to_fp16_bits(values) -> np.ndarray:
    """fp32 values -> fp16 patterns, RNE, overflow and Inf saturating to +-65504."""
    v = np.asarray(values, dtype=np.float32)
    v = np.clip(v, -FP16_MAX, FP16_MAX)
    with np.errstate(over="ignore"):
        return v.astype(np.float16).view(np.uint16)


FP32_MAX = float(np.finfo(np.float32).max)


def fp16_input(bits) -> np.ndarray:
    """An fp16 input widened to fp32: Inf becomes the fp32 maximum (+-3.40282e38)."""
    v = f16(bits)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(v), np.sign(v) * np.float32(FP32_MAX), v).astype(
            np.float32)


def is_fp16_nan(bits) -> np.ndarray:
    b = np.asarray(bits, dtype=np.int64)
    return ((b >> 10) & 0x1F == 0x1F) & (b & 0x3FF != 0)


def is_fp16_inf(bits) -> np.ndarray:
    b = np.asarray(bits, dtype=np.int64)
    return ((b >> 10) & 0x1F == 0x1F) & (b & 0x3FF == 0)
