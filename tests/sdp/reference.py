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


# -- LUT (integer) ----------------------------------------------------------------
def lut_index(x: int, start: int, *, exponent: bool, select: int = 0, offset: int = 0,
              depth: int = 65):
    """('uflow' | 'oflow' | 'hit', index, fraction) of one table (lut-programming.rst)."""
    diff = x - start
    if diff <= 0:
        return "uflow", 0, Fraction(0)
    if exponent:
        log2 = diff.bit_length() - 1
        if log2 < offset:
            return "uflow", 0, Fraction(0)
        index, fraction = log2 - offset, Fraction(diff - (1 << log2), 1 << log2)
    else:
        index, fraction = diff >> select, Fraction(diff % (1 << select), 1 << select)
    if index >= depth - 1:
        return "oflow", depth - 1, Fraction(0)
    return "hit", index, fraction


def lut(x: int, cfg: dict, le, lo):
    """LUT output and (table used, flow) for one integer input."""
    exponent = not cfg.get("le_function", 0)
    e = lut_index(x, cfg["le_start"], exponent=exponent, select=cfg.get("le_index_select", 0),
                  offset=cfg.get("le_index_offset", 0), depth=65)
    o = lut_index(x, cfg["lo_start"], exponent=False, select=cfg.get("lo_index_select", 0),
                  depth=257)
    if e[0] == "hit" and o[0] == "hit" or (e[0] != "hit" and o[0] != "hit" and e[0] != o[0]):
        use_lo = cfg.get("hybrid_priority", 0)
    elif e[0] == o[0] == "uflow":
        use_lo = cfg.get("uflow_priority", 0)
    elif e[0] == o[0] == "oflow":
        use_lo = cfg.get("oflow_priority", 0)
    else:
        use_lo = o[0] == "hit"
    kind, index, f = o if use_lo else e
    table, t = (lo, "lo") if use_lo else (le, "le")
    if kind == "hit":
        return round_half_away(table[index] * (1 - f) + table[index + 1] * f), t, kind
    end = "end" if kind == "oflow" else "start"
    base = cfg[f"{t}_{end}"]
    if t == "le" and kind == "uflow" and exponent and cfg.get("le_index_offset", 0) > 0:
        base += 1 << cfg["le_index_offset"]
    scale = cfg.get(f"{t}_slope_{kind}_scale", 0)
    shift = cfg.get(f"{t}_slope_{kind}_shift", 0)
    shift = shift - 32 if shift >= 16 else shift  # a signed 5-bit field: negative = left
    slope = round_half_away(Fraction((x - base) * scale) / Fraction(2) ** shift)
    return sat(table[index] + slope, 32), t, kind
