"""Compare checked regions and say, for each differing byte, what it is.

Every differing byte is traced back to the last write that covered it
before the check (:mod:`sim.diff.record`): a layer's feature cube gives the
element (batch, surface, h, w, c) from the cube's
:class:`~sim.dma.feature.FeatureLayout`; other writes (BDMA copies, the
trace's own loads) give the write and the byte offset in it.  Elements are
decoded in the layer's precision.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field

import numpy as np

from ..configs import FP16
from ..dma.elements import element_dtype
from ..num.bits import describe_fields
from ..records import record
from .record import Write, element_map


@record(frozen=False)
class Cube:
    """One output cube a layer wrote (PDP split pieces joined back into one)."""

    key: tuple
    layer: int
    engine: str
    unit: str
    memory: str
    addr: int
    precision: str
    channels: int
    height: int
    width: int
    batch: int
    group: int  # channels per atom (surface)

    def label(self) -> str:
        who = self.engine if self.unit == self.engine else f"{self.engine} (written by {self.unit})"
        return (f"layer {self.layer} {who}, {self.precision} cube N{self.batch} C{self.channels} "
                f"H{self.height} W{self.width} at {self.memory} {self.addr:#x}")

    def as_json(self) -> dict:
        return {"layer": self.layer, "engine": self.engine, "unit": self.unit,
                "memory": self.memory, "address": self.addr, "precision": self.precision,
                "batch": self.batch, "channels": self.channels, "height": self.height,
                "width": self.width, "channels_per_surface": self.group}


@record(frozen=False)
class ElementDiff:
    cube: Cube
    address: int
    n: int
    c: int
    h: int
    w: int
    expected: int  # bit pattern
    actual: int

    @property
    def surface(self) -> int:
        return self.c // self.cube.group

    @property
    def pad_lane(self) -> bool:
        return self.c >= self.cube.channels

    def as_json(self) -> dict:
        p = self.cube.precision
        return {"layer": self.cube.layer, "unit": self.cube.unit, "memory": self.cube.memory,
                "address": self.address, "batch": self.n, "surface": self.surface, "h": self.h,
                "w": self.w, "c": self.c, "pad_lane": self.pad_lane, "precision": p,
                "expected": decode(self.expected, p), "actual": decode(self.actual, p),
                "expected_bits": self.expected, "actual_bits": self.actual}

    def describe(self) -> str:
        p = self.cube.precision
        digits = 2 * element_dtype(p).itemsize
        pad = " (pad lane)" if self.pad_lane else ""
        text = (f"n{self.n} s{self.surface} h{self.h} w{self.w} c{self.c}{pad} "
                f"@{self.address:#x}: expected {decode(self.expected, p)} "
                f"(0x{self.expected:0{digits}x}), actual {decode(self.actual, p)} "
                f"(0x{self.actual:0{digits}x})")
        if p == FP16:  # which fields differ: sign | exponent | mantissa
            text += (f" [{describe_fields(self.expected, p)} vs "
                     f"{describe_fields(self.actual, p)}]")
        return text


@record(frozen=False)
class ByteDiff:
    """A differing byte not inside a layer's feature element."""

    write: Write | None  # None: nothing wrote it (the memory's initial zero)
    memory: str
    address: int
    expected: int
    actual: int

    def owner(self) -> str:
        if self.write is None:
            return "never written"
        w = self.write
        part = f"write {w.part} at {w.addr:#x}" if w.layer is not None else "load"
        return f"{w.label()}, {part}, byte {self.address - w.addr:#x}"

    def as_json(self) -> dict:
        w = self.write
        return {"memory": self.memory, "address": self.address, "expected": self.expected,
                "actual": self.actual, "layer": None if w is None else w.layer,
                "engine": None if w is None else w.engine, "unit": None if w is None else w.unit,
                "write": None if w is None else w.part,
                "offset": None if w is None else self.address - w.addr}

    def describe(self) -> str:
        return (f"{self.memory} @{self.address:#x}: expected 0x{self.expected:02x}, "
                f"actual 0x{self.actual:02x} ({self.owner()})")


@record(frozen=False)
class RegionDiff:
    region: object  # sim.diff.simulate.Region
    differing_bytes: int
    missing_bytes: int  # not in ACTUAL
    elements: list[ElementDiff] = field(default_factory=list)
    bytes: list[ByteDiff] = field(default_factory=list)


def decode(bits: int, precision: str) -> str:
    """An element's value as text: integers signed, fp16 as a number, NaN or +-Inf named."""
    if precision == FP16:
        value = float(np.uint16(bits).view(np.float16))
        if np.isnan(value):
            return "NaN"
        if np.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        text = f"{value:.6g}"
        return text + (" (denormal)" if bits & 0x7C00 == 0 and bits & 0x3FF else "")
    width = 8 * element_dtype(precision).itemsize
    value = bits & ((1 << width) - 1)
    return str(value - (1 << width) if value >> (width - 1) else value)


# -- cubes: one per layer output, PDP split pieces joined ---------------------------

def _cube_key(w: Write) -> tuple:
    lay = w.layout
    return (w.layer, w.unit, w.memory, w.precision, lay.group, lay.element_bytes,
            lay.line_stride, lay.surface_stride, lay.batch_stride, lay.channels, lay.height,
            lay.batch)


def build_cubes(writes: list[Write]) -> dict[int, tuple[Cube, int]]:
    """write seq -> (its cube, width offset of the write inside the cube)."""
    families: dict[tuple, list[Write]] = {}
    for w in writes:
        if w.layout is not None and w.layer is not None:
            families.setdefault(_cube_key(w), []).append(w)
    out = {}
    for key, members in families.items():
        base = min(w.addr for w in members)
        lay = members[0].layout
        joined = [w for w in members
                  if (w.addr - base) % lay.atom_bytes == 0 and w.addr - base < max(
                      lay.line_stride, lay.line_bytes)]
        width = max((w.addr - base) // lay.atom_bytes + w.layout.width for w in joined)
        first = members[0]
        cube = Cube(key + (base,), first.layer, first.engine, first.unit, first.memory, base,
                    first.precision, first.channels or lay.channels, lay.height, width, lay.batch,
                    lay.group)
        for w in joined:
            out[w.seq] = (cube, (w.addr - base) // lay.atom_bytes)
        for w in members:
            if w.seq not in out:  # not a split of the others: a cube of its own
                own = Cube(_cube_key(w) + (w.addr,), w.layer, w.engine, w.unit, w.memory,
                           w.addr, w.precision, w.channels or lay.channels, lay.height,
                           w.layout.width, lay.batch, lay.group)
                out[w.seq] = (own, 0)
    return out


# -- localisation -------------------------------------------------------------------

def compare_region(region, expected: bytes, actual: np.ndarray, known: np.ndarray,
                   writes: list[Write], cubes: dict, layer: int | None = None) -> RegionDiff:
    """Differences of one region, localised through the writes made before its check."""
    exp = np.frombuffer(expected, dtype=np.uint8)
    offsets = np.flatnonzero((exp != actual) & known)
    addrs = region.addr + offsets.astype(np.int64)
    owner = np.full(addrs.size, -1, dtype=np.int64)
    element = np.full(addrs.size, -1, dtype=np.int64)
    maps = {}
    candidates = [w for w in writes[: region.seq]
                  if w.memory == region.memory and w.addr < region.end and w.end > region.addr]
    for w in reversed(candidates):
        lo, hi = np.searchsorted(addrs, [w.addr, w.end])
        if lo == hi:
            continue
        sel = np.arange(lo, hi)[owner[lo:hi] < 0]
        if not sel.size:
            continue
        if w.layout is None or w.layer is None:
            owner[sel] = w.seq
        else:
            if w.seq not in maps:
                maps[w.seq] = element_map(w.layout)
            starts, _ = maps[w.seq]
            rel = addrs[sel] - w.addr
            k = np.searchsorted(starts, rel, side="right") - 1
            inside = (k >= 0) & (rel - starts[np.maximum(k, 0)] < w.layout.element_bytes)
            owner[sel[inside]] = w.seq
            element[sel[inside]] = k[inside]
        if (owner >= 0).all():
            break
    result = RegionDiff(region, int(offsets.size), int((~known).sum()))
    if layer is not None:  # the verdict covers the bytes that layer wrote, and no others
        layers = np.array([-2 if w.layer is None else w.layer for w in writes] + [-2])
        keep = layers[owner] == layer  # owner -1 indexes the sentinel
        addrs, offsets, owner, element = addrs[keep], offsets[keep], owner[keep], element[keep]
        result.differing_bytes = int(keep.sum())
        result.missing_bytes = int((~known & _last_written_by(region, candidates, layer)).sum())
    for i in np.flatnonzero(element < 0):
        w = writes[owner[i]] if owner[i] >= 0 else None
        result.bytes.append(ByteDiff(w, region.memory, int(addrs[i]), int(exp[offsets[i]]),
                                     int(actual[offsets[i]])))
    for seq in np.unique(owner[element >= 0]):
        result.elements.extend(_elements(region, writes[seq], maps[seq], cubes[seq],
                                         np.unique(element[owner == seq]), exp, actual))
    return result


def _last_written_by(region, candidates: list[Write], layer: int) -> np.ndarray:
    """Mask of the region's bytes whose last write before the check came from ``layer``."""
    last = np.full(region.size, -2, dtype=np.int64)
    for w in candidates:  # in program order: later writes overwrite earlier ones
        lo, hi = max(w.addr, region.addr) - region.addr, min(w.end, region.end) - region.addr
        last[lo:hi] = -1 if w.layer is None else w.layer
    return last == layer


def _elements(region, w: Write, emap, cube_at, index: np.ndarray, exp, actual) -> list:
    """ElementDiffs of the elements ``index`` (into ``emap``) of write ``w``."""
    starts, coords = emap
    cube, w_off = cube_at
    start = w.addr + starts[index]
    bits = [np.zeros(index.size, dtype=np.int64), np.zeros(index.size, dtype=np.int64)]
    for b in range(w.layout.element_bytes):  # little-endian; bytes outside the region: 0
        off = start - region.addr + b
        inside = (off >= 0) & (off < exp.size)
        for out, buf in zip(bits, (exp, actual), strict=True):
            out[inside] |= buf[off[inside]].astype(np.int64) << (8 * b)
    n, c, h, x = (coords[index, i].tolist() for i in range(4))
    return [ElementDiff(cube, a, n_, c_, h_, x_ + w_off, e, v)
            for a, n_, c_, h_, x_, e, v in zip(start.tolist(), n, c, h, x, bits[0].tolist(),
                                               bits[1].tolist(), strict=True)]


# -- patterns -----------------------------------------------------------------------

def _counts(values) -> dict:
    return dict(sorted(Counter(values).items()))


def describe_pattern(cube: Cube, elements: list[ElementDiff]) -> list[str]:
    """What the differing elements of one cube have in common."""
    if not elements:
        return []
    n = len(elements)
    real = [e for e in elements if not e.pad_lane]
    lines = []
    key_sets = {
        "n": {e.n for e in elements}, "c": {e.c for e in elements}, "h": {e.h for e in elements},
        "w": {e.w for e in elements}, "s": {e.surface for e in elements},
    }
    one = {k: len(v) == 1 for k, v in key_sets.items()}
    hw = cube.height * cube.width
    if n == 1:
        e = elements[0]
        lines.append(f"one element: n{e.n} s{e.surface} h{e.h} w{e.w} c{e.c}")
    elif one["n"] and one["s"] and one["h"] and one["w"]:
        e = elements[0]
        lines.append(f"one atom: n{e.n} s{e.surface} h{e.h} w{e.w} ({n} channels)")
    elif one["n"] and one["c"]:
        e = elements[0]
        whole = "whole channel" if n == hw else f"part of channel ({n} of {hw} elements)"
        lines.append(f"{whole}: n{e.n} c{e.c}")
    elif one["n"] and one["h"]:
        e = elements[0]
        row = cube.width * cube.channels
        whole = "whole row" if len(real) == row else f"part of a row ({len(real)} of {row})"
        lines.append(f"{whole}: n{e.n} h{e.h}"
                     + (f" (channels {min(key_sets['c'])}..{max(key_sets['c'])})"
                        if not one["c"] else f" c{e.c}"))
    elif one["n"] and one["w"]:
        e = elements[0]
        lines.append(f"one column: n{e.n} w{e.w} ({n} elements)")
    elif one["n"] and one["s"]:
        e = elements[0]
        lanes = min(cube.group, cube.channels - e.surface * cube.group)
        size = hw * lanes
        whole = ("whole surface" if len(real) == size
                 else f"part of a surface ({len(real)} of {size})")
        lines.append(f"{whole}: n{e.n} s{e.surface}")
    else:
        lines.append(f"{n} elements over {len(key_sets['c'])} channels, {len(key_sets['h'])} "
                     f"rows, {len(key_sets['n'])} batches")
    xors = {e.expected ^ e.actual for e in elements}
    if len(xors) == 1:
        x = xors.pop()
        if x & (x - 1) == 0:
            lines.append(f"bit {x.bit_length() - 1} flipped in every differing element")
        else:
            lines.append(f"every differing element differs by xor {x:#x}")
    return lines


def bit_counts(elements: list[ElementDiff]) -> dict:
    """How many differing elements have each bit position flipped."""
    counts: Counter = Counter()
    for e in elements:
        x = e.expected ^ e.actual
        while x:
            low = x & -x
            counts[low.bit_length() - 1] += 1
            x ^= low
    return dict(sorted(counts.items()))


def summarise_cube(cube: Cube, elements: list[ElementDiff]) -> dict:
    return {
        "cube": cube.as_json(),
        "elements": len(elements),
        "pattern": describe_pattern(cube, elements),
        "per_channel": _counts(e.c for e in elements),
        "per_row": {f"n{n} h{h}": v for (n, h), v in _counts((e.n, e.h) for e in elements).items()},
        "per_surface": {f"n{n} s{s}": v
                        for (n, s), v in _counts((e.n, e.surface) for e in elements).items()},
        "bits": bit_counts(elements),
    }
