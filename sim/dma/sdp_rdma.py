"""SDP_RDMA operand streams (BRDMA/NRDMA/ERDMA) as the hardware fetches them.

:mod:`sim.dma.operands` describes the documented operand formats; the SDP's
DMAs also fetch combinations the documentation leaves out (one-byte
components at fp16 precision, which the datapath reads as sign-extended
16-bit patterns) and per-channel data whose atom is narrower than a memory
atom (16 one-byte components at int16/fp16 precision).  This reader covers
every combination the registers can express, using the atom layout of
:class:`~sim.dma.feature.FeatureLayout`:

* ElementPerAtom = memory atom / bytes of one PROC_PRECISION element;
* an element is ``components`` components of ``data_size`` bytes, component
  0 feeding the ALU and 1 the multiplier when both are used;
* per channel: channel c at ``c * element_bytes`` (one contiguous 1x1xC cube);
* per element: atoms of ElementPerAtom elements laid out like feature data
  with the DMA's line and surface strides.
"""

from __future__ import annotations

import numpy as np

from .align import check_alignment
from .elements import elements_per_atom
from .feature import FeatureLayout, gather_atoms


def operand_layout_raw(precision: str, data_size: int, components: int, per_element: bool,
                       channels: int, height: int, width: int, atom_bytes: int,
                       line_stride: int, surface_stride: int) -> FeatureLayout:
    """Where the operand of (c, h, w) lives (per-channel data ignores h and w)."""
    group = elements_per_atom(precision, atom_bytes)
    element_bytes = components * data_size
    if not per_element:
        atom = group * element_bytes
        return FeatureLayout(channels, 1, 1, group, element_bytes, atom, atom)
    return FeatureLayout(channels, height, width, group, element_bytes, line_stride,
                         surface_stride)


def read_sdp_operand(mem, addr: int, *, precision: str, data_size: int, components: int,
                     per_element: bool, channels: int, height: int, width: int,
                     atom_bytes: int, line_stride: int = 0, surface_stride: int = 0,
                     what: str = "") -> np.ndarray:
    """Operand components as signed values, shape (components, C, H', W').

    H' = W' = 1 for per-channel data.  One-byte components are sign-extended,
    two-byte components read as int16 (fp16 patterns included).
    """
    check_alignment("feature", atom_bytes, what, start=addr)
    layout = operand_layout_raw(precision, data_size, components, per_element, channels,
                                height, width, atom_bytes, line_stride, surface_stride)
    window = mem.read_array(addr, layout.extent)
    raw = gather_atoms(window, 0, layout)[0, :channels]  # (C, H, W, element_bytes)
    dtype = np.int8 if data_size == 1 else np.dtype("<i2")
    c, h, w = raw.shape[:3]
    values = np.ascontiguousarray(raw).view(dtype).reshape(c, h, w, components)
    return values.transpose(3, 0, 1, 2).astype(np.int64)
