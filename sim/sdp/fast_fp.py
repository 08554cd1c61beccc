"""The fp16 SDP datapath in the processor's float32, for the elements where that is NVDLA's.

In a real layer nearly every element is a normal number whose every
intermediate stays a normal number, and there IEEE float32 (nearest even) and
NVDLA's fp32 rules give the same bits.  :func:`run` computes the usual stages
(X ALU sum/max/min, multiplier with PReLU, ReLU, Y multiplier and ALU, fp16
output) in float32 and marks every element that meets anything else -- a NaN
or Inf, a denormal, a zero sum, an intermediate near the underflow or overflow
boundary, a max/min of two zeros.  :class:`sim.sdp.stages.Datapath` recomputes
the marked elements by the rules (:mod:`sim.num.sdp`); ``tests/sdp`` holds the
two paths to each other.

Layers using the LUT, the EQL comparison or an integer output take the rules
path throughout (:func:`applies`).
"""

from __future__ import annotations

import numpy as np

from ..num.sdp import ALU_EQL, ALU_MAX, ALU_SUM

FP16_CODE = 2
TINY = np.float32(2.0 ** -125)  # smaller magnitudes may round differently (or flush)
HUGE = np.float32(np.finfo(np.float32).max)


def applies(layer, precision: int, out_precision: int) -> bool:
    """Whether a layer's fp16 datapath can take the float32 pass."""
    if precision != FP16_CODE or out_precision != FP16_CODE or layer.eql:
        return False
    stages = [s for s in (layer.x1, layer.x2) if not s.bypass]
    if not layer.y.bypass:
        if not layer.y.lut_bypass:
            return False
        stages.append(layer.y)
    return all(s.alu_bypass or s.alu_algo != ALU_EQL for s in stages)


def _float(bits) -> np.ndarray:
    return np.asarray(bits & 0xFFFFFFFF, np.uint32).view(np.float32)


def _widen16(bits) -> np.ndarray:
    return np.asarray(bits & 0xFFFF, np.uint16).view(np.float16).astype(np.float32)


def _special32(bits) -> np.ndarray:
    """fp32 patterns that float32 does not read as NVDLA does: Inf, NaN, denormals."""
    e = np.asarray(bits) & 0x7F800000
    return (e == 0x7F800000) | ((e == 0) & ((np.asarray(bits) & 0x7FFFFFFF) != 0))


def _special16(bits) -> np.ndarray:
    """fp16 patterns that are Inf or NaN (their widening saturates or keeps a payload)."""
    return (np.asarray(bits) & 0x7C00) == 0x7C00


def _ordinary(r) -> np.ndarray:
    """Normal magnitudes clear of the underflow and overflow boundaries."""
    m = np.abs(r)
    return (m >= TINY) & (m <= HUGE)


class _Pass:
    """One block's float32 values and the mask of elements the rules must redo."""

    def __init__(self, f: np.ndarray, suspect: np.ndarray):
        self.f, self.suspect = f, suspect

    def alu(self, algo: int, a: np.ndarray) -> None:
        f = self.f
        if algo == ALU_SUM:
            self.f = f + a
            self.suspect = self.suspect | ~_ordinary(self.f)
            return
        greater = f > a if algo == ALU_MAX else f < a
        self.suspect = self.suspect | ((f == a) & (f == 0))  # +0 against -0
        self.f = np.where(greater, f, a)

    def mul(self, m: np.ndarray, prelu: bool) -> None:
        with np.errstate(all="ignore"):
            r = self.f * m
        ok = _ordinary(r) | (self.f == 0) | (m == 0)
        if prelu:  # PReLU: values with the sign bit clear pass unmultiplied
            keep = ~np.signbit(self.f)
            r, ok = np.where(keep, self.f, r), keep | ok
        self.f, self.suspect = r, self.suspect | ~ok

    def relu(self) -> None:
        self.f = np.where(np.signbit(self.f), np.float32(0), self.f)  # -0 becomes +0 too


def run(path, v: np.ndarray, operand) -> tuple[np.ndarray, np.ndarray]:
    """(fp16 output words as int64, elements the rules must recompute) of the block ``v``.

    ``path`` is the layer's :class:`sim.sdp.stages.Datapath`; ``operand(op)``
    shapes one of its operands for the block.
    """
    layer = path.layer
    with np.errstate(all="ignore"):
        if path.fp16_in:
            bits = v & 0xFFFF
            p = _Pass(_widen16(bits), _special16(bits))
        else:
            p = _Pass(_float(v), _special32(v))
        for name in ("x1", "x2"):
            stage = getattr(layer, name)
            if stage.bypass:
                continue
            alu, mul = (operand(op) for op in path.operands[name])  # fp16 operands
            if not stage.alu_bypass:
                p.suspect = p.suspect | _special16(alu)
                p.alu(stage.alu_algo, _widen16(alu))
            if not stage.mul_bypass:
                p.suspect = p.suspect | _special16(mul)
                p.mul(_widen16(mul), stage.mul_prelu)
            if not stage.relu_bypass:
                p.relu()
        y = layer.y
        if not y.bypass:
            alu, mul = (operand(op) for op in path.operands["y"])  # fp32 operands
            if not y.mul_bypass:
                p.suspect = p.suspect | _special32(mul)
                p.mul(_float(mul), y.mul_prelu)
            if not y.alu_bypass:
                p.suspect = p.suspect | _special32(alu)
                p.alu(y.alu_algo, _float(alu))
        h = p.f.astype(np.float16).view(np.uint16)
    e = h & 0x7C00
    narrow_ok = ((e >= 0x0800) & (e != 0x7C00)) | (p.f == 0)  # normal fp16, or a zero
    suspect = np.broadcast_to(p.suspect | ~narrow_ok, v.shape)
    return np.broadcast_to(h, v.shape).astype(np.int64), suspect
