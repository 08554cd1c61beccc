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

from ..num.vector_fp import (
    ieee_fp16_to_fp32,
    ieee_fp32_add,
    ieee_fp32_max,
    ieee_fp32_mul,
    ieee_fp32_relu,
    ieee_fp32_to_fp16,
    reads_as_ieee32,
)
from ..regs.enums import FP16, AluAlgo

SIGN = np.uint32(0x80000000)


def applies(layer, precision: int, out_precision: int) -> bool:
    """Whether a layer's fp16 datapath can take the float32 pass."""
    if precision != FP16.code or out_precision != FP16.code or layer.eql:
        return False
    stages = [s for s in (layer.x1, layer.x2) if not s.bypass]
    if not layer.y.bypass:
        if not layer.y.lut_bypass:
            return False
        stages.append(layer.y)
    return all(s.alu_bypass or s.alu_algo != AluAlgo.EQL for s in stages)


class _Pass:
    """One block's fp32 patterns (uint32) and the mask of elements the rules must redo.

    Each step is :mod:`sim.num.vector_fp`'s IEEE step with its agreement mask.
    Values that are not suspect are normal or zero, and operands are checked as
    they come in, so the steps skip the operand test (``alike``).
    """

    def __init__(self, u: np.ndarray, agrees: np.ndarray):
        self.u, self.suspect = u, ~agrees

    def _redo_unless(self, agrees) -> None:
        self.suspect = self.suspect | ~agrees

    def alu(self, algo: int, a: np.ndarray) -> None:
        if algo == AluAlgo.SUM:
            self.u, agrees = ieee_fp32_add(self.u, a, alike=True)
            self._redo_unless(agrees)
            return
        self.u, agrees = ieee_fp32_max(self.u, a, algo == AluAlgo.MAX)
        self._redo_unless(agrees)

    def mul(self, m: np.ndarray, prelu: bool) -> None:
        r, agrees = ieee_fp32_mul(self.u, m, alike=True)
        if prelu:  # PReLU: values with the sign bit clear pass unmultiplied
            keep = self.u < SIGN
            r, agrees = np.where(keep, self.u, r), keep | agrees
        self.u = r
        self._redo_unless(agrees)

    def relu(self) -> None:  # NaNs are suspects already
        self.u = ieee_fp32_relu(self.u)


def _words16(bits) -> tuple[np.ndarray, np.ndarray]:
    """fp16 patterns widened to fp32 patterns, and where the widening is NVDLA's."""
    bits = np.asarray(bits)
    return ieee_fp16_to_fp32(bits if bits.dtype == np.uint16 else (bits & 0xFFFF).astype(np.uint16))


ALU, MUL, RELU = "alu", "mul", "relu"


def steps(path):
    """The float32 pass's steps in the datapath's order -- X1 and X2 (ALU, multiplier,
    ReLU), then Y (multiplier, ALU) -- each as (kind, ALU algorithm or PReLU flag, the
    operand's register, whether the operand is fp16); ReLU has neither."""
    layer = path.layer
    for name in ("x1", "x2"):
        stage = getattr(layer, name)
        if stage.bypass:
            continue
        alu, mul = path.operands[name]  # fp16 operands
        if not stage.alu_bypass:
            yield ALU, stage.alu_algo, alu, True
        if not stage.mul_bypass:
            yield MUL, stage.mul_prelu, mul, True
        if not stage.relu_bypass:
            yield RELU, None, None, False
    y = layer.y
    if not y.bypass:
        alu, mul = path.operands["y"]  # fp32 operands
        if not y.mul_bypass:
            yield MUL, y.mul_prelu, mul, False
        if not y.alu_bypass:
            yield ALU, y.alu_algo, alu, False


def run(path, v: np.ndarray, operand) -> tuple[np.ndarray, np.ndarray]:
    """(fp16 output words as uint16, elements the rules must recompute) of the block ``v``.

    ``path`` is the layer's :class:`sim.sdp.stages.Datapath`; ``operand(op)``
    shapes one of its operands for the block.
    """
    if path.fp16_in:
        p = _Pass(*_words16(v))
    else:
        u = np.asarray(v & 0xFFFFFFFF, np.uint32)
        p = _Pass(u, reads_as_ieee32(u))
    for kind, detail, op, fp16 in steps(path):
        if kind == RELU:
            p.relu()
            continue
        words = operand(op)
        if fp16:
            w, agrees = _words16(words)
        else:
            w = np.asarray(words & 0xFFFFFFFF, np.uint32)
            agrees = reads_as_ieee32(w)
        p._redo_unless(agrees)
        if kind == ALU:
            p.alu(detail, w)
        else:
            p.mul(w, detail)
    h, agrees = ieee_fp32_to_fp16(p.u)
    suspect = np.broadcast_to(p.suspect | ~agrees, v.shape)
    return (h if h.shape == v.shape else np.broadcast_to(h, v.shape).copy()), suspect
