"""Tensor layouts of other accelerators' toolchains: DV-SDK and Kneron.

These are not NVDLA formats.  They let users move tensors between
nvdla-sim and two foreign toolchains (``nvdla-sim layout pack dvsdk ...``).

DV-SDK (DMP DV700 network input/output)
---------------------------------------
fp16 tensors of shape (C, H, W), or (D, C, H, W) for D whole tensors stored
one after another.  The channels are cut into chunks of 8 (the last chunk
holds what is left and is *not* padded); the chunks follow each other.
Inside a chunk of ``n`` channels the pixels are ordered x outer, y inner
(DWHC, the default) or y outer, x inner (DHWC, ``transpose=True``), and each
pixel holds its ``n`` channels side by side.  With ``i = 8 * (c // 8)`` the
first channel of the chunk of channel ``c`` and ``n = min(8, C - i)``, element
(c, y, x) is the fp16 element::

    i*H*W + (x*H + y)*n + (c - i)      DWHC
    i*H*W + (y*W + x)*n + (c - i)      DHWC

(little-endian, two bytes each).  A tensor takes exactly 2*C*H*W bytes.

Kneron NPU (KL520/KL630/KL720)
------------------------------
int8 tensors of shape (C, H, W) in 16-byte entries:

=========  =====================================  ===============
layout     one entry                              (width, chan.)
=========  =====================================  ===============
4W4C8B     4 pixels x 4 channels, channel fastest  (4, 4)
1W16C8B    1 pixel x 16 channels                   (1, 16)
16W1C8B    16 pixels x 1 channel                   (16, 1)
=========  =====================================  ===============

The width is rounded up to the layout's width alignment (Wa) and the
channels are grouped into blocks of the channel alignment (cab).  Element
(c, y, x) is at byte::

    (c // cab) * H*Wa*cab + y * Wa*cab + x * cab + c % cab

The image holds ceil(C / cab) * H * Wa * cab bytes; padding pixels and
padding channels of the last block are zero.  4W4C8B is an input-only format
on the NPU (the layout itself converts both ways here); KL520 wants its
4W4C8B width aligned to 16 -- pass ``width_align=16``.

Errors (wrong dtype or rank, data too short, unknown layout, element out of
range) raise :class:`~sim.dma.align.LayoutError` naming the rule.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8
from ..records import record
from .align import LayoutError, align_up, ceil_div
from .elements import to_user

DVSDK_CHUNK = 8  # channels per DV-SDK chunk
KNERON_ENTRY_BYTES = 16


# -- shared checks ------------------------------------------------------------

def _dims(shape, ranks: tuple[int, ...], what: str, names: str) -> tuple[int, ...]:
    """``shape`` as a tuple of positive ints whose length is one of ``ranks``."""
    dims = tuple(int(v) for v in shape)
    if len(dims) not in ranks or min(dims) < 1:
        raise LayoutError(f"{what}: shape {dims} is not {names} with positive dimensions")
    return dims


def _raw_bytes(data, need: int, what: str) -> np.ndarray:
    """The first ``need`` bytes of ``data`` (bytes-like or uint8 array) as uint8."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(data, dtype=np.uint8)
    else:
        raw = np.asarray(data)
        if raw.dtype != np.uint8:
            raise LayoutError(f"{what}: memory data must be bytes or uint8, not {raw.dtype}")
        raw = raw.ravel()
    if raw.size < need:
        raise LayoutError(f"{what}: data has {raw.size} bytes, the shape needs {need}")
    return raw[:need]


def _check_index(dims: tuple[int, ...], index: tuple[int, ...], what: str) -> None:
    for size, value in zip(dims, index, strict=True):
        if not 0 <= value < size:
            raise LayoutError(f"{what}: element index {index} is outside the shape {dims}")


# -- DV-SDK -------------------------------------------------------------------

def _dvsdk_name(transpose: bool) -> str:
    return "dvsdk DHWC" if transpose else "dvsdk DWHC"


def _dvsdk_bits(array) -> np.ndarray:
    """fp16 bit patterns (uint16) of a float16 or uint16 (bit pattern) array."""
    arr = np.asarray(array)
    if arr.dtype == np.float16:
        return arr.view(np.uint16)
    if arr.dtype == np.uint16:
        return arr
    raise LayoutError(f"dvsdk: data must be float16 (or uint16 fp16 bit patterns), "
                      f"not {arr.dtype} (DV-SDK network I/O is fp16)")


def _dvsdk_dims(shape) -> tuple[int, int, int, int]:
    """(D, C, H, W) of a (C, H, W) or (D, C, H, W) shape."""
    dims = _dims(shape, (3, 4), "dvsdk", "(C, H, W) or (D, C, H, W)")
    return (1,) * (4 - len(dims)) + dims


def _chunks(channels: int):
    """(first channel, channel count) of each DV-SDK chunk."""
    for first in range(0, channels, DVSDK_CHUNK):
        yield first, min(DVSDK_CHUNK, channels - first)


def dvsdk_size(shape) -> int:
    """Bytes of a DV-SDK image of ``shape`` (no padding: 2 bytes per element)."""
    return 2 * int(np.prod(_dvsdk_dims(shape)))


def dvsdk_byte_offset(shape, c: int, y: int, x: int, *, d: int = 0,
                      transpose: bool = False) -> int:
    """Byte offset of element (c, y, x) of tensor ``d`` in a DV-SDK image of ``shape``."""
    depth, channels, height, width = _dvsdk_dims(shape)
    _check_index((depth, channels, height, width), (d, c, y, x), _dvsdk_name(transpose))
    first = c - c % DVSDK_CHUNK
    count = min(DVSDK_CHUNK, channels - first)
    pixel = y * width + x if transpose else x * height + y
    element = (d * channels + first) * height * width + pixel * count + (c - first)
    return 2 * element


def pack_dvsdk(array, transpose: bool = False) -> bytes:
    """DV-SDK image (DWHC, or DHWC with ``transpose``) of fp16 (C,H,W) / (D,C,H,W) data."""
    bits = _dvsdk_bits(array)
    dims = _dvsdk_dims(bits.shape)
    # a chunk (n, H, W) is stored as (W, H, n), or (H, W, n) when transposed
    axes = (1, 2, 0) if transpose else (2, 1, 0)
    tensors = bits.reshape(dims)
    parts = [tensor[first:first + count].transpose(axes).ravel()
             for tensor in tensors for first, count in _chunks(dims[1])]
    return np.concatenate(parts).astype("<u2").tobytes()


def unpack_dvsdk(data, shape, transpose: bool = False) -> np.ndarray:
    """float16 array of ``shape`` from a DV-SDK image (inverse of :func:`pack_dvsdk`)."""
    depth, channels, height, width = _dvsdk_dims(shape)
    words = _raw_bytes(data, dvsdk_size(shape), _dvsdk_name(transpose)).view("<u2")
    out = np.empty((depth, channels, height, width), dtype=np.uint16)
    pos = 0
    for d in range(depth):
        for first, count in _chunks(channels):
            block = words[pos:pos + count * height * width]
            if transpose:
                out[d, first:first + count] = block.reshape(height, width, count).transpose(2, 0, 1)
            else:
                out[d, first:first + count] = block.reshape(width, height, count).transpose(2, 1, 0)
            pos += block.size
    return to_user(out.reshape(tuple(int(v) for v in shape)), FP16)


# -- Kneron -------------------------------------------------------------------

@record
class KneronLayout:
    """One Kneron 8-bit layout: pixels and channels per 16-byte entry."""

    name: str
    width_align: int  # pixels of one entry along the width
    channel_align: int  # channels of one entry (the channel block)
    input_only: bool = False  # the NPU reads it but cannot write it

    def padded_width(self, width: int, width_align: int | None = None) -> int:
        return align_up(width, self.check_width_align(width_align))

    def check_width_align(self, width_align: int | None) -> int:
        """The width alignment to use: the layout's, or a multiple of it (KL520: 16)."""
        if width_align is None:
            return self.width_align
        if width_align < 1 or width_align % self.width_align:
            raise LayoutError(f"kneron {self.name}: width alignment {width_align} is not a "
                              f"positive multiple of {self.width_align}")
        return width_align


KNERON_LAYOUTS: dict[str, KneronLayout] = {
    layout.name: layout
    for layout in (
        KneronLayout("4W4C8B", 4, 4, input_only=True),
        KneronLayout("1W16C8B", 1, 16),
        KneronLayout("16W1C8B", 16, 1),
    )
}


def kneron_layout(layout: str | KneronLayout) -> KneronLayout:
    """A layout by name: ``4W4C8B``, ``kneron-1w16c8b`` ... (case-insensitive)."""
    if isinstance(layout, KneronLayout):
        return layout
    key = str(layout).upper().removeprefix("KNERON-")
    try:
        return KNERON_LAYOUTS[key]
    except KeyError:
        raise LayoutError(f"unknown Kneron layout {layout!r} (expected one of "
                          f"{', '.join(KNERON_LAYOUTS)})") from None


def _kneron_dims(shape, fmt: KneronLayout) -> tuple[int, int, int]:
    return _dims(shape, (3,), f"kneron {fmt.name}", "(C, H, W)")


def kneron_size(shape, layout, *, width_align: int | None = None) -> int:
    """Bytes of a Kneron image of a (C, H, W) tensor (whole 16-byte entries)."""
    fmt = kneron_layout(layout)
    channels, height, width = _kneron_dims(shape, fmt)
    return (align_up(channels, fmt.channel_align) * height
            * fmt.padded_width(width, width_align))


def kneron_byte_offset(shape, layout, c: int, y: int, x: int, *,
                       width_align: int | None = None) -> int:
    """Byte offset of element (c, y, x) of a (C, H, W) tensor in a Kneron image."""
    fmt = kneron_layout(layout)
    dims = _kneron_dims(shape, fmt)
    _check_index(dims, (c, y, x), f"kneron {fmt.name}")
    line = fmt.padded_width(dims[2], width_align) * fmt.channel_align
    block, lane = divmod(c, fmt.channel_align)
    return block * dims[1] * line + y * line + x * fmt.channel_align + lane


def _kneron_blocks(dims, fmt: KneronLayout, width_align: int | None) -> tuple[int, int, int, int]:
    """(channel blocks, cab, H, Wa): the shape of the stored cube before reordering."""
    channels, height, width = dims
    return (ceil_div(channels, fmt.channel_align), fmt.channel_align, height,
            fmt.padded_width(width, width_align))


def pack_kneron(array, layout, *, width_align: int | None = None) -> bytes:
    """Kneron image of an int8 (C, H, W) array; padding bytes are zero."""
    fmt = kneron_layout(layout)
    arr = np.asarray(array)
    if arr.dtype != np.int8:
        raise LayoutError(f"kneron {fmt.name}: data must be int8, not {arr.dtype} "
                          "(Kneron layouts hold 8-bit values)")
    channels, height, width = _kneron_dims(arr.shape, fmt)
    blocks, cab, _, padded = _kneron_blocks(arr.shape, fmt, width_align)
    full = np.zeros((blocks * cab, height, padded), dtype=np.int8)
    full[:channels, :, :width] = arr
    # block -> row -> pixel -> channel of the block (fastest)
    return full.reshape(blocks, cab, height, padded).transpose(0, 2, 3, 1).tobytes()


def unpack_kneron(data, shape, layout, *, width_align: int | None = None) -> np.ndarray:
    """int8 (C, H, W) array from a Kneron image (inverse of :func:`pack_kneron`)."""
    fmt = kneron_layout(layout)
    channels, height, width = _kneron_dims(shape, fmt)
    blocks, cab, _, padded = _kneron_blocks((channels, height, width), fmt, width_align)
    raw = _raw_bytes(data, blocks * cab * height * padded, f"kneron {fmt.name}").view(np.int8)
    full = raw.reshape(blocks, height, padded, cab).transpose(0, 3, 1, 2)
    return np.ascontiguousarray(full.reshape(blocks * cab, height, padded)[:channels, :, :width])


# -- by format name (the CLI) -------------------------------------------------

FOREIGN_PRECISION = {"dvsdk": FP16, **{f"kneron-{k.lower()}": INT8 for k in KNERON_LAYOUTS}}


def _foreign_name(name: str, transpose: bool) -> str:
    key = name.lower()
    if key not in FOREIGN_PRECISION:
        raise LayoutError(f"unknown foreign layout {name!r} (expected one of "
                          f"{', '.join(FOREIGN_PRECISION)})")
    if transpose and key != "dvsdk":
        raise LayoutError(f"{key}: --transpose (DHWC) applies to dvsdk only")
    return key


def pack_foreign(name: str, array, transpose: bool = False) -> bytes:
    """Pack ``array`` in the foreign layout ``name`` (``dvsdk``, ``kneron-4w4c8b`` ...)."""
    key = _foreign_name(name, transpose)
    if key == "dvsdk":
        return pack_dvsdk(array, transpose)
    return pack_kneron(array, key)


def unpack_foreign(name: str, data, shape, transpose: bool = False) -> np.ndarray:
    """Inverse of :func:`pack_foreign`."""
    key = _foreign_name(name, transpose)
    if key == "dvsdk":
        return unpack_dvsdk(data, shape, transpose)
    return unpack_kneron(data, shape, key)
