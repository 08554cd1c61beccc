"""BRDMA / NRDMA / ERDMA: the operand streams of X1, X2 and Y.

A stage whose ALU or MUL takes its operand from memory (``*_SRC=MEM``, the
ALU/MUL not bypassed) reads it through its DMA: BRDMA feeds X1 (BS), NRDMA
X2 (BN) and ERDMA Y (EW).  DATA_USE says which operand the stream carries
(ALU, MUL or BOTH, interleaved ALU-first), DATA_SIZE its bytes per component
and DATA_MODE whether there is one operand per channel or per element.  One
operand stream serves every batch.
"""

from __future__ import annotations

import numpy as np

from ..dma.elements import elements_per_atom
from ..dma.operands import read_sdp_operand
from ..errors import ConfigurationError
from .config import RDMA, USE_ALU, USE_BOTH, USE_MUL
from .stages import OP_CHANNEL, OP_ELEMENT, OP_REGISTER

_USE_NAMES = {USE_MUL: "MUL", USE_ALU: "ALU", USE_BOTH: "BOTH"}
_ALIGNMENT_USE = {"BS": "bias", "BN": "bn", "EW": "ew"}  # format.rst Table 35 rows


def _stream(ctx, layer, dma, cp: int) -> np.ndarray:
    """The DMA's components: (components, Cp, 1, 1) per channel, (components, Cp, H, W)."""
    what = f"{RDMA}.D_{dma.prefix}_BASE_ADDR"
    comps = 2 if dma.use == USE_BOTH else 1
    group = elements_per_atom(layer.proc_precision, ctx.config.atom_bytes)
    line, surface = dma.line_stride, dma.surface_stride
    if dma.per_element:
        # strides of a dimension of one are never applied (see sim.sdp.engine)
        atom = group * comps * dma.data_size
        if layer.height == 1:
            line = layer.width * atom
        if cp <= group:
            surface = layer.height * line
    mem = ctx.memory(dma.ram_type, f"NVDLA_SDP_RDMA.D_{dma.prefix}_CFG_0.{dma.prefix}_RAM_TYPE")
    return read_sdp_operand(
        mem, dma.address, precision=layer.proc_precision,
        data_size=dma.data_size, components=comps, per_element=dma.per_element,
        channels=cp, height=layer.height, width=layer.width, atom_bytes=ctx.config.atom_bytes,
        line_stride=line, surface_stride=surface, what=what, use=_ALIGNMENT_USE[dma.prefix])


def _stage_operands(ctx, layer, stage, dma, cp: int, reg_alu: int, reg_mul: int):
    """((alu values, mode), (mul values, mode)) of one stage (modes: see stages.OP_*)."""
    alu = (np.array([reg_alu], dtype=np.int64), OP_REGISTER)
    mul = (np.array([reg_mul], dtype=np.int64), OP_REGISTER)
    if not (stage.needs_alu_mem or stage.needs_mul_mem):
        return alu, mul
    cfg = f"{RDMA}.D_{dma.name}_CFG_0"
    if not dma.enabled:
        raise ConfigurationError(f"{cfg}: {dma.name} is disabled but the {dma.prefix} stage reads "
                                 "an operand from memory (*_SRC=MEM)")
    stream = _stream(ctx, layer, dma, cp)
    mode = OP_ELEMENT if dma.per_element else OP_CHANNEL

    def flat(component):
        return (np.ascontiguousarray(stream[component]).ravel(), mode)

    if stage.needs_alu_mem:
        if dma.use not in (USE_ALU, USE_BOTH):
            raise ConfigurationError(f"{cfg}: DATA_USE={_USE_NAMES.get(dma.use, dma.use)} carries "
                                     f"no ALU operand but the {dma.prefix} ALU reads from memory")
        alu = flat(0)
    if stage.needs_mul_mem:
        if dma.use not in (USE_MUL, USE_BOTH):
            raise ConfigurationError(f"{cfg}: DATA_USE={_USE_NAMES.get(dma.use, dma.use)} carries "
                                     f"no MUL operand but the {dma.prefix} MUL reads from memory")
        mul = flat(1 if dma.use == USE_BOTH else 0)
    return alu, mul


def read_operands(ctx, layer, cp: int) -> dict:
    """``{"x1": (alu, mul), "x2": ..., "y": ...}``, each operand a (values, mode) pair.

    Mode OP_REGISTER: one value; OP_CHANNEL: one per channel (Cp values);
    OP_ELEMENT: one per element of a (Cp, H, W) cube, shared by the batches.
    """
    x1, x2, y = layer.x1, layer.x2, layer.y
    return {
        "x1": _stage_operands(ctx, layer, x1, layer.dmas[0], cp, x1.alu_operand, x1.mul_operand),
        "x2": _stage_operands(ctx, layer, x2, layer.dmas[1], cp, x2.alu_operand, x2.mul_operand),
        "y": _stage_operands(ctx, layer, y, layer.dmas[2], cp, y.alu_operand, y.mul_operand),
    }
