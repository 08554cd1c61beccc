"""SDP operand data: bias, PReLU, batch-normalization and element-wise data.

format.rst defines their atom differently from feature data::

    BytesPerAtom = ElementPerAtom x ComponentsPerElement x BytesPerComponent

* ElementPerAtom follows the SDP processing precision (PROC_PRECISION):
  32 for int8, 16 for int16/fp16 on nv_full -- one memory atom of elements of
  that precision, ``atom_bytes // bytes_per_element(precision)``.
* ComponentsPerElement follows the use (DATA_USE): 1 for bias, PReLU and
  element-wise data with only ALU or MUL, 2 for batch normalization and for
  element-wise data feeding both.  With 2 components, component 0 feeds the
  ALU (the addend) and component 1 the multiplier; they are interleaved per
  element.
* BytesPerComponent follows DATA_SIZE: 1 (ONE_BYTE) or 2 (TWO_BYTE).

Two mappings exist (the RDMA's DATA_MODE):

* per channel (per kernel): a 1x1xC cube stored contiguously, channel c at
  ``c * ComponentsPerElement * BytesPerComponent``; the DMA reads whole atoms.
* per element: a W x H x C cube laid out like feature data (see
  :mod:`sim.dma.feature`) with the atom above, line and surface strides.

Per-layer operands live in registers, not memory.

Arrays: one component -> (C,) per channel or (C, H, W) per element; two
components -> (2, C) or (2, C, H, W) (index 0 = ALU, 1 = MUL).  Component
dtype: int8 (one byte), int16 (two bytes) or uint16 fp16 bit patterns (two
bytes at fp16 precision).
"""

from __future__ import annotations

import functools

import numpy as np

from ..configs import FP16
from ..records import record
from ..regs.enums import Precision
from .align import LayoutError, check_alignment
from .elements import check_precision_name, elements_per_atom
from .feature import (
    FeatureLayout,
    _as_flat_u8,
    atoms_in_order,
    gather_atoms,
    resolve_atom,
    scatter_atoms,
)

USES = {"bias": 1, "prelu": 1, "bn": 2, "ew": 1}
_ALIGN_KIND = {"bias": "bias", "prelu": "prelu", "bn": "bn", "ew": "ew"}


@record
class OperandFormat:
    """How one SDP operand stream is stored (see the module docstring)."""

    use: str  # "bias", "prelu", "bn" or "ew"
    precision: str  # SDP processing precision
    data_size: int  # BytesPerComponent: 1 or 2
    components: int  # ComponentsPerElement: 1 or 2
    per_element: bool  # DATA_MODE: per element (True) or per channel (False)
    strict: bool = True  # False: every combination the registers can express

    def elements_per_atom(self, atom_bytes: int) -> int:
        return elements_per_atom(self.precision, atom_bytes)

    @property
    def element_bytes(self) -> int:
        return self.components * self.data_size

    def bytes_per_atom(self, atom_bytes: int) -> int:
        """BytesPerAtom = ElementPerAtom x ComponentsPerElement x BytesPerComponent."""
        return self.elements_per_atom(atom_bytes) * self.element_bytes

    @property
    def dtype(self) -> np.dtype:
        if self.data_size == 1:
            return np.dtype(np.int8)
        return np.dtype("<u2") if self.precision == FP16 else np.dtype("<i2")


#: An SDP layer asks for its operand streams' format and layout twice (SDP_RDMA's fetch
#: as it starts, the read as the layer computes), with the arguments of the layers
#: before: each is made once (both are frozen records; an error is not remembered).
@functools.lru_cache(maxsize=256, typed=True)  # a Precision and its name kept apart
def operand_format(use: str, precision: str, data_size: int | None = None,
                   components: int | None = None, per_element: bool = False,
                   strict: bool = True) -> OperandFormat:
    """Build an :class:`OperandFormat`; data_size defaults to the precision's element bytes.

    ``strict`` enforces what format.rst documents (fp16 components are two
    bytes, PReLU is per channel, an operand atom is whole memory atoms);
    ``strict=False`` accepts every combination the SDP RDMA registers can
    express, as the hardware fetches them (one-byte components read as
    sign-extended values, per-channel atoms narrower than a memory atom).
    """
    if use not in USES:
        raise LayoutError(f"unknown operand use {use!r} (expected {', '.join(USES)})")
    check_precision_name(precision)
    if data_size is None:
        data_size = Precision(precision).bytes
    if data_size not in (1, 2):
        raise LayoutError(f"{use}: BytesPerComponent {data_size} must be 1 or 2")
    if strict and precision == FP16 and data_size != 2:
        raise LayoutError(f"{use}: fp16 operands take 2 bytes per component (format.rst)")
    components = USES[use] if components is None else components
    if components not in (1, 2):
        raise LayoutError(f"{use}: ComponentsPerElement {components} must be 1 or 2")
    if strict and use == "prelu" and (components != 1 or per_element):
        raise LayoutError("prelu: PReLU data is per channel with one component (format.rst)")
    return OperandFormat(use, precision, data_size, components, bool(per_element), strict)


@functools.lru_cache(maxsize=1024, typed=True)
def operand_layout(fmt: OperandFormat, channels: int, height: int = 1, width: int = 1,
                   atom_bytes: int = 32, line_stride: int | None = None,
                   surface_stride: int | None = None, what: str = "") -> FeatureLayout:
    """The atom layout of an operand cube (per-channel data is a 1x1xC packed cube)."""
    group = fmt.elements_per_atom(atom_bytes)
    atom = fmt.bytes_per_atom(atom_bytes)
    if fmt.strict and atom % atom_bytes:
        raise LayoutError(f"{what or fmt.use}: BytesPerAtom {atom} ({fmt.precision}, "
                          f"{fmt.data_size}-byte components) is not a whole memory atom of "
                          f"{atom_bytes} bytes")
    if not fmt.per_element:
        if (height, width) != (1, 1):
            raise LayoutError(f"{what or fmt.use}: per-channel data is 1x1xC, not "
                              f"{width}x{height}x{channels}")
        # one contiguous run of whole operand atoms: no stride registers to check
        return FeatureLayout(int(channels), 1, 1, group, fmt.element_bytes, atom, atom)
    else:
        line_stride = width * atom if line_stride is None else int(line_stride)
        surface_stride = height * line_stride if surface_stride is None else int(surface_stride)
    layout = FeatureLayout(int(channels), int(height), int(width), group, fmt.element_bytes,
                           line_stride, surface_stride)
    return layout.validate(atom_bytes, _ALIGN_KIND[fmt.use], what)


def _shape_of(fmt: OperandFormat, array: np.ndarray) -> tuple[int, int, int]:
    dims = array.shape[1:] if fmt.components == 2 else array.shape
    if fmt.components == 2 and (array.ndim < 1 or array.shape[0] != 2):
        raise LayoutError(f"{fmt.use}: two-component data must have a leading axis of 2, "
                          f"got {array.shape}")
    if fmt.per_element and len(dims) == 3:
        return dims
    if not fmt.per_element and len(dims) == 1:
        return dims[0], 1, 1
    want = "(C, H, W)" if fmt.per_element else "(C,)"
    raise LayoutError(f"{fmt.use}: array shape {array.shape} is not {want} per component")


def _to_components(fmt: OperandFormat, array) -> np.ndarray:
    arr = np.asarray(array)
    if fmt.dtype == np.uint16 and arr.dtype == np.float16:
        arr = arr.view(np.uint16)
    if arr.dtype != fmt.dtype:
        if arr.dtype.kind not in "iu":
            raise LayoutError(f"{fmt.use}: {arr.dtype} data cannot be stored as {fmt.dtype}")
        info = np.iinfo(fmt.dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise LayoutError(f"{fmt.use}: values out of range for {fmt.data_size}-byte data")
        arr = arr.astype(fmt.dtype)
    return arr


def pack_operand(array, fmt: OperandFormat, cfg=None, *, atom_bytes: int | None = None,
                 line_stride: int | None = None, surface_stride: int | None = None,
                 fill: int = 0):
    """Memory image of operand data: returns ``(data uint8 array, layout)``.

    Channels padding the last atom are zero; gaps are ``fill``.
    """
    atom = resolve_atom(cfg, atom_bytes)
    arr = _to_components(fmt, array)
    c, h, w = _shape_of(fmt, arr)
    layout = operand_layout(fmt, c, h, w, atom, line_stride, surface_stride)
    comps = arr if fmt.components == 2 else arr[None]
    comps = comps.reshape(fmt.components, c, h, w)
    padded = np.zeros((fmt.components, layout.surfaces * layout.group, h, w), dtype=fmt.dtype)
    padded[:, :c] = comps
    # element bytes: component-major inside the element, little-endian inside a component
    raw = np.ascontiguousarray(padded.transpose(1, 2, 3, 0)).view(np.uint8)
    raw = raw.reshape(1, padded.shape[1], h, w, fmt.element_bytes)
    data = np.full(layout.extent, fill, dtype=np.uint8)
    scatter_atoms(data, 0, layout, raw)
    return data, layout


def gather_operand(buf, base: int, fmt: OperandFormat, layout: FeatureLayout) -> np.ndarray:
    """Operand data from a flat uint8 buffer at index ``base`` (shapes as documented)."""
    raw = gather_atoms(_as_flat_u8(buf), base, layout)[0, : layout.channels]
    c, h, w = raw.shape[:3]
    comps = np.ascontiguousarray(raw).view(fmt.dtype).reshape(c, h, w, fmt.components)
    comps = comps.transpose(3, 0, 1, 2)
    if not fmt.per_element:
        comps = comps[:, :, 0, 0]
    return np.ascontiguousarray(comps if fmt.components == 2 else comps[0])


def unpack_operand(memory, addr: int, fmt: OperandFormat, channels: int, height: int = 1,
                   width: int = 1, cfg=None, *, atom_bytes: int | None = None,
                   line_stride: int | None = None, surface_stride: int | None = None):
    """Operand data from a flat memory image (bytes or uint8 array) at offset ``addr``."""
    atom = resolve_atom(cfg, atom_bytes)
    check_alignment(_ALIGN_KIND[fmt.use], atom, start=addr)
    layout = operand_layout(fmt, channels, height, width, atom, line_stride, surface_stride)
    return gather_operand(memory, addr, fmt, layout)


def read_operand(mem, addr: int, fmt: OperandFormat, channels: int, height: int = 1,
                 width: int = 1, atom_bytes: int = 32, line_stride: int | None = None,
                 surface_stride: int | None = None, what: str = "") -> np.ndarray:
    """Operand data read through ``mem.read_array`` (the SDP RDMAs' reader).

    Reads whole atoms, as the hardware does; see the module docstring for shapes.
    """
    check_alignment(_ALIGN_KIND[fmt.use], atom_bytes, what, start=addr)
    layout = operand_layout(fmt, channels, height, width, atom_bytes, line_stride,
                            surface_stride, what)
    window = mem.read_array(addr, layout.extent, what, lines=layout.lines)
    return gather_operand(window, 0, fmt, layout)


def read_sdp_operand(mem, addr: int, *, precision: str, data_size: int, components: int,
                     per_element: bool, channels: int, height: int, width: int,
                     atom_bytes: int, line_stride: int = 0, surface_stride: int = 0,
                     what: str = "", use: str = "bias", narrow: bool = False,
                     atom_order: bool = False) -> np.ndarray:
    """What an SDP RDMA (BRDMA/NRDMA/ERDMA) fetches, as signed int64 components.

    Returns (components, C, H', W'), H' = W' = 1 for per-channel data.
    One-byte components are sign-extended; two-byte components are read as
    int16 (fp16 bit patterns included).  Accepts every register combination
    (``strict=False`` formats); ``use`` only selects the alignment rule.
    ``narrow``: the components as read, int8 or int16 (the same values), not int64.
    ``atom_order``: per-element data of one component and whole atoms of channels, its
    elements in the order of its atoms, (1, S, H*W, G) (see
    :func:`sim.dma.feature.read_feature_atoms`): no transpose.
    """
    fmt = operand_format(use, precision, data_size, components, per_element, strict=False)
    check_alignment(_ALIGN_KIND[use], atom_bytes, what, start=addr)
    layout = operand_layout(fmt, channels, height if per_element else 1,
                            width if per_element else 1, atom_bytes,
                            line_stride if per_element else None,
                            surface_stride if per_element else None, what)
    window = mem.read_array(addr, layout.extent, what, lines=layout.lines)
    signed = np.int8 if data_size == 1 else np.dtype("<i2")
    if atom_order:
        if not per_element or components != 1 or layout.surfaces * layout.group != channels:
            raise ValueError("atom order: per-element data of one component, whole atoms")
        values = atoms_in_order(window, 0, layout).view(signed)[None]  # (1, S, H*W, G)
        return values if narrow else values.astype(np.int64)
    raw = gather_atoms(window, 0, layout)[0, :channels]  # (C, H, W, element bytes)
    c, h, w = raw.shape[:3]
    values = np.ascontiguousarray(raw).view(signed).reshape(c, h, w, components)
    values = values.transpose(3, 0, 1, 2)
    return values if narrow else values.astype(np.int64)
