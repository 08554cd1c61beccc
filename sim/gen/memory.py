"""Memory of generated traces: non-overlapping regions, layer inputs and outputs."""

from __future__ import annotations

from ..dma.align import align_up
from ..dma.elements import elements_per_atom
from ..dma.feature import FeatureLayout, feature_layout, read_feature
from ..records import record
from .data import random_cube

BASE = {"pri_mem": 0x80000000, "sec_mem": 0x50000000}  # NVIDIA's traces use these windows
ALIGN = 0x100


@record(frozen=False)
class Output:
    """What a layer wrote: a feature cube (chainable) or raw bytes (BDMA)."""

    memory: str
    addr: int
    size: int
    precision: str | None = None
    layout: FeatureLayout | None = None
    reserved: int = 0  # bytes set aside (>= size): what a consumer may read past the cube

    @property
    def slack(self) -> int:
        return max(self.reserved - self.size, 0)


class Allocator:
    """Non-overlapping regions, ALIGN-aligned, per memory."""

    def __init__(self):
        self.next = dict(BASE)

    def take(self, size: int, memory: str = "pri_mem") -> int:
        addr = self.next[memory]
        self.next[memory] = align_up((addr + max(size, 1)), ALIGN)
        return addr


def input_cube(m, layer, alloc: Allocator, rng, outputs: dict,
               kind: str = "feature"):
    """(elements (C, H, W), address, layout) of a layer's input, chained or random.

    ``outputs`` maps earlier layers' names to their records; a chained input is
    read from the machine's memory and not loaded again by the trace.
    """
    cfg = m.config
    atom = cfg.atom_bytes
    if isinstance(layer.input, str):
        src = outputs[layer.input].output
        if src.layout is None:
            raise layer.fail("input", f"{layer.input!r} writes raw bytes, not a feature cube")
        if src.precision != layer.precision:
            raise layer.fail("input", f"{layer.input!r} writes {src.precision} but this layer "
                             f"reads {layer.precision}: set precision = \"{src.precision}\"")
        if src.layout.batch != 1:
            raise layer.fail("input", f"{layer.input!r} writes a batch of cubes")
        lay = src.layout
        cube = read_feature(m.memory(src.memory), src.addr, (lay.channels, lay.height,
                                                             lay.width),
                            layer.precision, atom, lay.line_stride, lay.surface_stride)
        m.chained.add((src.memory, src.addr))
        return cube, src.addr, lay
    c, h, w = layer.input
    cube = random_cube(rng, (c, h, w), layer.precision, layer.get("data"), kind)
    lay = feature_layout((c, h, w), layer.precision, atom)
    return cube, alloc.take(reserve_extent((c, h, w), layer.precision, atom)), lay


def output_region(m, alloc: Allocator, shape, precision: str, memory: str = "pri_mem",
                  written: int | None = None, stride_align: int | None = None) -> Output:
    """An output cube (C, H, W) or (N, C, H, W) in a fresh region, packed unless
    ``stride_align`` asks for line and surface strides in multiples of that many bytes.

    ``written``: the channels the unit writes when it moves more whole atoms
    than the cube needs (the SDP works in whole atoms of every precision
    involved); the region, and so the trace's check, covers them.
    """
    atom = m.config.atom_bytes
    line = surface = None
    if stride_align:
        line = align_up(shape[-1] * atom, stride_align)
        surface = align_up(line * shape[-2], stride_align)
    lay = feature_layout(shape, precision, atom, line, surface)
    size = lay.extent
    if written is not None and written > lay.channels:
        size = feature_layout((*shape[:-3], written, *shape[-2:]), precision, atom, line,
                              surface).extent
    reserved = max(size, reserve_extent(shape, precision, atom, line, surface))
    return Output(memory, alloc.take(reserved, memory), size, precision, lay, reserved)


def reserve_extent(shape, precision: str, atom: int, line_stride: int | None = None,
                   surface_stride: int | None = None) -> int:
    """Bytes to set aside for a cube: an SDP reading it moves whole atoms of every
    precision it involves, so up to ``atom`` channels a surface (int8's group)."""
    full = padded(shape[-3], "int8", atom)
    return feature_layout((*shape[:-3], full, *shape[-2:]), precision, atom, line_stride,
                          surface_stride).extent


def sdp_written(channels: int, precisions, atom: int) -> int:
    """Channels an SDP layer writes: whole atoms of each precision it involves."""
    return max(padded(channels, p, atom) for p in precisions)


def padded(channels: int, precision: str, atom: int) -> int:
    """``channels`` rounded up to whole atoms of ``precision``."""
    group = elements_per_atom(precision, atom)
    return align_up(channels, group)

