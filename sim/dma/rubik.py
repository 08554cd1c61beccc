"""Rubik's memory reshuffles: contract, split and merge (byte moves, no arithmetic).

All three move 32-byte atoms or elements between layouts; ``epa`` is the
elements per atom (32 int8, 16 int16/fp16) and ``ebs`` the element size.

- **contract** (deconvolution): output surface ``so`` of an ``sx`` by ``sy``
  strided deconvolution is gathered from input surfaces
  ``(y * sx + x) * S + so`` (``S`` = output surfaces): the atom at input
  ``(h, w)`` goes to output row ``h * sy + y`` (at ``h * super_line + y *
  line``), column ``w * sx + x``.
- **split**: every channel of a feature cube becomes a plane (``planar``
  stride apart) of ``width`` elements, each line zero-padded to whole atoms.
- **merge**: planes back into feature atoms; channels past the cube's last
  one read as zero in the last surface.
"""

from __future__ import annotations

import numpy as np

from ..records import record
from .align import align_up, ceil_div

ATOM = 32


@record
class RubikLayout:
    width: int
    height: int
    in_channels: int
    out_channels: int
    ebs: int  # bytes per element
    src: int
    src_line: int
    src_surface: int
    src_planar: int
    dst: int
    dst_line: int
    dst_surface: int
    dst_planar: int
    super_line: int  # contract: output bytes between input rows
    stride_x: int
    stride_y: int

    @property
    def epa(self) -> int:
        return ATOM // self.ebs


def read_lines(layout: RubikLayout, mode: str) -> tuple[np.ndarray, int]:
    """(offsets from ``layout.src``, bytes) of every line the ``mode`` function reads
    (``contract``, ``split``, ``merge``), in no particular order."""
    L = layout
    if mode == "contract":
        surfaces = ceil_div(L.out_channels, L.epa)
        phases = np.arange(L.stride_x * L.stride_y * surfaces, dtype=np.int64)
        return _grid(phases * L.src_surface, np.arange(L.height) * L.src_line), L.width * ATOM
    if mode == "split":
        surfaces = ceil_div(L.out_channels, L.epa)
        return (_grid(np.arange(surfaces) * L.src_surface, np.arange(L.height) * L.src_line),
                L.width * ATOM)
    planes = np.arange(L.in_channels, dtype=np.int64)  # merge: every channel's plane
    return _grid(planes * L.src_planar, np.arange(L.height) * L.src_line), L.width * L.ebs


def write_lines(layout: RubikLayout, mode: str) -> tuple[np.ndarray, int]:
    """(offsets from ``layout.dst``, bytes) of every line the ``mode`` function writes."""
    L = layout
    if mode == "contract":
        surfaces = ceil_div(L.out_channels, L.epa)
        rows = _grid(np.arange(L.height) * L.super_line, np.arange(L.stride_y) * L.dst_line)
        return _grid(np.arange(surfaces) * L.dst_surface, rows), L.width * L.stride_x * ATOM
    if mode == "split":
        planes = np.arange(L.out_channels, dtype=np.int64)
        return (_grid(planes * L.dst_planar, np.arange(L.height) * L.dst_line),
                align_up(L.width * L.ebs, ATOM))
    surfaces = ceil_div(L.in_channels, L.epa)  # merge
    return (_grid(np.arange(surfaces) * L.dst_surface, np.arange(L.height) * L.dst_line),
            L.width * ATOM)


def _grid(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.asarray(a, np.int64)[:, None] + np.asarray(b, np.int64)[None, :]).ravel()


def contract(layout: RubikLayout, read, write) -> None:
    """Deconvolution reshuffle (``read(addr, n)`` -> bytes, ``write(addr, bytes)``)."""
    L = layout
    surfaces = ceil_div(L.out_channels, L.epa)
    sx, sy = L.stride_x, L.stride_y
    for so in range(surfaces):
        for h in range(L.height):
            for y in range(sy):
                line = np.empty((L.width, sx, ATOM), np.uint8)
                for x in range(sx):
                    surface = (y * sx + x) * surfaces + so
                    src = L.src + surface * L.src_surface + h * L.src_line
                    line[:, x] = np.frombuffer(read(src, L.width * ATOM), np.uint8).reshape(
                        L.width, ATOM)
                dst = L.dst + so * L.dst_surface + h * L.super_line + y * L.dst_line
                write(dst, line.tobytes())


def split(layout: RubikLayout, read, write) -> None:
    """Feature cube -> one plane per output channel."""
    L = layout
    surfaces = ceil_div(L.out_channels, L.epa)
    line_bytes = align_up(L.width * L.ebs, ATOM)
    for s in range(surfaces):
        planes = min(L.out_channels - s * L.epa, L.epa)
        for h in range(L.height):
            src = L.src + s * L.src_surface + h * L.src_line
            atoms = np.frombuffer(read(src, L.width * ATOM), np.uint8).reshape(
                L.width, L.epa, L.ebs)
            for c in range(planes):
                out = np.zeros(line_bytes, np.uint8)
                out[: L.width * L.ebs] = atoms[:, c].reshape(-1)
                write(L.dst + h * L.dst_line + (s * L.epa + c) * L.dst_planar, out.tobytes())


def merge(layout: RubikLayout, read, write) -> None:
    """Planes -> feature cube (channels past the last plane are zero)."""
    L = layout
    surfaces = ceil_div(L.in_channels, L.epa)
    for s in range(surfaces):
        planes = min(L.in_channels - s * L.epa, L.epa)
        for h in range(L.height):
            atoms = np.zeros((L.width, L.epa, L.ebs), np.uint8)
            for c in range(planes):
                src = L.src + h * L.src_line + (s * L.epa + c) * L.src_planar
                atoms[:, c] = np.frombuffer(read(src, L.width * L.ebs), np.uint8).reshape(
                    L.width, L.ebs)
            write(L.dst + h * L.dst_line + s * L.dst_surface, atoms.tobytes())
