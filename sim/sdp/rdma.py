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
from ..dma.operands import operand_format, operand_layout, read_sdp_operand
from ..errors import ConfigurationError
from .config import RDMA, USE_ALU, USE_BOTH, USE_MUL
from .stages import OP_CHANNEL, OP_ELEMENT, OP_REGISTER

_USE_NAMES = {USE_MUL: "MUL", USE_ALU: "ALU", USE_BOTH: "BOTH"}
_ALIGNMENT_USE = {"BS": "bias", "BN": "bn", "EW": "ew"}  # format.rst Table 35 rows


def stream_geometry(dma, precision: str, cp: int, height: int, width: int,
                    atom_bytes: int) -> dict:
    """The arguments of :func:`sim.dma.operands.read_sdp_operand` for ``dma``'s stream.

    Shared by the read when the layer computes and by :mod:`sim.sdp.fetch`, which
    keeps the bytes the stream covers from the moment the RDMA layer starts.
    """
    comps = 2 if dma.use == USE_BOTH else 1
    group = elements_per_atom(precision, atom_bytes)
    line, surface = dma.line_stride, dma.surface_stride
    if dma.per_element:
        # strides of a dimension of one are never applied (see sim.sdp.engine)
        atom = group * comps * dma.data_size
        if height == 1:
            line = width * atom
        if cp <= group:
            surface = height * line
    return dict(precision=precision, data_size=dma.data_size, components=comps,
                per_element=dma.per_element, channels=cp, height=height, width=width,
                atom_bytes=atom_bytes, line_stride=line, surface_stride=surface,
                use=_ALIGNMENT_USE[dma.prefix])


def stream_layout(geometry: dict):
    """The atom layout (:class:`sim.dma.feature.FeatureLayout`) a stream's geometry reads."""
    g = geometry
    fmt = operand_format(g["use"], g["precision"], g["data_size"], g["components"],
                         g["per_element"], strict=False)
    one = not g["per_element"]
    return operand_layout(fmt, g["channels"], 1 if one else g["height"],
                          1 if one else g["width"], g["atom_bytes"],
                          None if one else g["line_stride"], None if one else g["surface_stride"])


def _stream(ctx, layer, dma, cp: int, fetched=None, atom_order: bool = False) -> np.ndarray:
    """The DMA's components: (components, Cp, 1, 1) per channel, (components, Cp, H, W),
    int8/int16 as read (:mod:`sim.sdp.pipeline` widens what its path needs widened).

    ``fetched``: the bytes the RDMA layer read when it started
    (:class:`sim.sdp.fetch.Fetched`), or None to read the memory as it is now.
    ``atom_order``: per-element data in the order of its atoms (read_sdp_operand's).
    """
    what = f"{RDMA}.D_{dma.prefix}_BASE_ADDR"
    mem = ctx.memory(dma.ram_type, f"NVDLA_SDP_RDMA.D_{dma.prefix}_CFG_0.{dma.prefix}_RAM_TYPE")
    if fetched is not None:
        mem = fetched.view(mem)
    geometry = stream_geometry(dma, layer.proc_precision, cp, layer.height, layer.width,
                               ctx.config.atom_bytes)
    return read_sdp_operand(mem, dma.address, what=what, narrow=True,
                            atom_order=atom_order and dma.per_element, **geometry)


def _stage_operands(ctx, layer, stage, dma, cp: int, reg_alu: int, reg_mul: int, fetched=None,
                    atom_order: bool = False):
    """((alu values, mode), (mul values, mode)) of one stage (modes: see stages.OP_*)."""
    alu = (np.array([reg_alu], dtype=np.int64), OP_REGISTER)
    mul = (np.array([reg_mul], dtype=np.int64), OP_REGISTER)
    if not (stage.needs_alu_mem or stage.needs_mul_mem):
        return alu, mul
    cfg = f"{RDMA}.D_{dma.name}_CFG_0"
    if not dma.enabled:
        raise ConfigurationError(f"{cfg}: {dma.name} is disabled but the {dma.prefix} stage reads "
                                 "an operand from memory (*_SRC=MEM)")
    stream = _stream(ctx, layer, dma, cp, fetched, atom_order)
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


def read_operands(ctx, layer, cp: int, fetched=None, atom_order: bool = False) -> dict:
    """``{"x1": (alu, mul), "x2": ..., "y": ...}``, each operand a (values, mode) pair.

    Mode OP_REGISTER: one value; OP_CHANNEL: one per channel (Cp values);
    OP_ELEMENT: one per element of a (Cp, H, W) cube, shared by the batches (``atom_order``:
    in the order of the cube's atoms, :func:`sim.dma.feature.read_feature_atoms`).
    ``fetched``: what the RDMA layer read when it started (:mod:`sim.sdp.fetch`).
    """
    stages = (layer.x1, layer.x2, layer.y)
    names = ("x1", "x2", "y")
    return {name: _stage_operands(ctx, layer, stage, dma, cp, stage.alu_operand,
                                  stage.mul_operand, fetched, atom_order)
            for name, stage, dma in zip(names, stages, layer.dmas, strict=True)}
