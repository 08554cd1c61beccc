"""Pixel formats for image input (format.rst Table 33), pitch linear.

Each line of a plane starts at ``addr + y * line_stride`` (both aligned to
the memory atom); the first ``x_offset`` pixels of a line are skipped (the
X offset, in pixels, lets an image start between atoms).  Semi-planar N444
formats have a Y plane and an interleaved chroma plane with their own
address and line stride.

Arrays are (C, H, W) with the channels in the order the convolution pipeline
receives them -- R, G, B, A for RGB formats, Y, U, V, A for YUV formats
(X channels are kept as channel 3) -- whatever their order in memory.  A
format's name lists components from the most significant end of a pixel word
(T_A8B8G8R8 has R in its first byte; T_A2B10G10R10 has R in bits 9:0 of a
little-endian 32-bit word).

Component dtypes: ``uint8`` for 8-bit formats, ``uint16`` for unsigned
16-bit containers (T_R10/T_R12 keep the raw 16-bit container), ``int16`` for
signed ones (T_R16_I, T_A16Y16U16V16), ``float16`` for _F formats and, for the
10:10:10:2 packed formats, ``uint16`` field values (0..1023, alpha 0..3);
:func:`msb_aligned` gives the 16-bit values the CDMA works on (fields moved
to the top bits).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..configs import FP16, INT8, INT16
from ..dram import STREAMED, check_extent
from ..records import record
from .align import LayoutError, align_up, check_alignment


@record
class Field:
    """Where one pipeline channel lives: plane, byte offset in the pixel, bit field."""

    plane: int
    offset: int  # byte offset of the container inside the plane's pixel
    size: int  # container bytes: 1, 2 or 4
    shift: int = 0
    bits: int = 0  # 0: the whole container

    @property
    def width(self) -> int:
        return self.bits or 8 * self.size


@record
class PixelFormat:
    """One row of Table 33 plus where each channel sits in memory."""

    name: str
    precision: str  # valid input precision setting
    max_x_offset: int
    plane_bytes: tuple[int, ...]  # bytes per pixel in each plane
    fields: tuple[Field, ...]  # one per channel, pipeline order
    dtype: np.dtype

    @property
    def planes(self) -> int:
        return len(self.plane_bytes)

    @property
    def channels(self) -> int:
        return len(self.fields)

    @property
    def packed(self) -> bool:
        """True for the 10:10:10:2 formats packed in 32-bit words."""
        return any(f.bits for f in self.fields)

    @property
    def container_bits(self) -> int:
        """The width of a component's container value: 16 for the packed formats (a
        component's bits at the top of 16), else its bytes (every component of a format is
        as wide)."""
        return 16 if self.packed else 8 * self.fields[0].size


def _bytes_fields(size: int, order) -> tuple[Field, ...]:
    """Channels taken from whole containers; ``order[i]`` = container index of channel i."""
    return tuple(Field(0, i * size, size) for i in order)


def _word_fields(shifts) -> tuple[Field, ...]:
    """R/Y, G/U, B/V (10 bits) and A (2 bits) at ``shifts`` inside a 32-bit word."""
    return tuple(Field(0, 0, 4, s, 2 if i == 3 else 10) for i, s in enumerate(shifts))


def _semi_planar(size: int, swap: bool) -> tuple[Field, ...]:
    first, second = (1, 0) if swap else (0, 1)
    return (Field(0, 0, size), Field(1, first * size, size), Field(1, second * size, size))


_U8, _U16, _I16, _F16 = (np.dtype(np.uint8), np.dtype("<u2"), np.dtype("<i2"),
                         np.dtype(np.float16))
_RGBA, _BGRA, _ARGB, _ABGR = (0, 1, 2, 3), (2, 1, 0, 3), (1, 2, 3, 0), (3, 2, 1, 0)


def _table() -> dict[str, PixelFormat]:
    rows = [
        ("T_R8", INT8, 31, (1,), _bytes_fields(1, (0,)), _U8),
        ("T_R10", INT16, 15, (2,), _bytes_fields(2, (0,)), _U16),
        ("T_R12", INT16, 15, (2,), _bytes_fields(2, (0,)), _U16),
        ("T_R16", INT16, 15, (2,), _bytes_fields(2, (0,)), _U16),
        ("T_R16_I", INT16, 15, (2,), _bytes_fields(2, (0,)), _I16),
        ("T_R16_F", INT16, 15, (2,), _bytes_fields(2, (0,)), _F16),
        ("T_A16B16G16R16", INT16, 3, (8,), _bytes_fields(2, _RGBA), _U16),
        ("T_X16B16G16R16", INT16, 3, (8,), _bytes_fields(2, _RGBA), _U16),
        ("T_A16B16G16R16_F", FP16, 3, (8,), _bytes_fields(2, _RGBA), _F16),
        ("T_A16Y16U16V16", INT16, 3, (8,), _bytes_fields(2, _BGRA), _I16),
        ("T_V16U16Y16A16", INT16, 3, (8,), _bytes_fields(2, _ARGB), _U16),
        ("T_A16Y16U16V16_F", FP16, 3, (8,), _bytes_fields(2, _BGRA), _F16),
        ("T_A8B8G8R8", INT8, 7, (4,), _bytes_fields(1, _RGBA), _U8),
        ("T_A8R8G8B8", INT8, 7, (4,), _bytes_fields(1, _BGRA), _U8),
        ("T_B8G8R8A8", INT8, 7, (4,), _bytes_fields(1, _ARGB), _U8),
        ("T_R8G8B8A8", INT8, 7, (4,), _bytes_fields(1, _ABGR), _U8),
        ("T_X8B8G8R8", INT8, 7, (4,), _bytes_fields(1, _RGBA), _U8),
        ("T_X8R8G8B8", INT8, 7, (4,), _bytes_fields(1, _BGRA), _U8),
        ("T_B8G8R8X8", INT8, 7, (4,), _bytes_fields(1, _ARGB), _U8),
        ("T_R8G8B8X8", INT8, 7, (4,), _bytes_fields(1, _ABGR), _U8),
        ("T_A2B10G10R10", INT16, 7, (4,), _word_fields((0, 10, 20, 30)), _U16),
        ("T_A2R10G10B10", INT16, 7, (4,), _word_fields((20, 10, 0, 30)), _U16),
        ("T_B10G10R10A2", INT16, 7, (4,), _word_fields((2, 12, 22, 0)), _U16),
        ("T_R10G10B10A2", INT16, 7, (4,), _word_fields((22, 12, 2, 0)), _U16),
        ("T_A2Y10U10V10", INT16, 7, (4,), _word_fields((20, 10, 0, 30)), _U16),
        ("T_V10U10Y10A2", INT16, 7, (4,), _word_fields((2, 12, 22, 0)), _U16),
        ("T_A8Y8U8V8", INT8, 7, (4,), _bytes_fields(1, _BGRA), _U8),
        ("T_V8U8Y8A8", INT8, 7, (4,), _bytes_fields(1, _ARGB), _U8),
        ("T_Y8___U8V8_N444", INT8, 31, (1, 2), _semi_planar(1, True), _U8),
        ("T_Y8___V8U8_N444", INT8, 31, (1, 2), _semi_planar(1, False), _U8),
    ]
    for bits in (10, 12, 16):
        rows.append((f"T_Y{bits}___U{bits}V{bits}_N444", INT16, 15, (2, 4),
                     _semi_planar(2, True), _U16))
        rows.append((f"T_Y{bits}___V{bits}U{bits}_N444", INT16, 15, (2, 4),
                     _semi_planar(2, False), _U16))
    return {row[0]: PixelFormat(*row) for row in rows}


PIXEL_FORMATS: dict[str, PixelFormat] = _table()


def pixel_format(name: str) -> PixelFormat:
    """The :class:`PixelFormat` called ``name`` (e.g. ``"T_A8B8G8R8"``)."""
    try:
        return PIXEL_FORMATS[name.upper()]
    except KeyError:
        raise LayoutError(f"unknown pixel format {name!r} (format.rst Table 33)") from None


def max_x_offset(fmt: PixelFormat, atom_bytes: int = 32) -> int:
    """The largest X offset: the pixels of plane 0 in one memory atom, less one (Table 33's
    column is the 32-byte atom's; NVIDIA's RTL asserts an offset outside the atom's pixel
    mask, and nv_small's 8-byte-atom RTL reads other pixels beyond it)."""
    return min(fmt.max_x_offset, atom_bytes // fmt.plane_bytes[0] - 1)


def check_pixel_setting(fmt: PixelFormat, channels: int | None = None,
                        precision: str | None = None, x_offset: int = 0, what: str = "",
                        atom_bytes: int = 32) -> None:
    """Table 33 limits: channel count, input precision and X offset range."""
    prefix = f"{what}: " if what else ""
    if channels is not None and channels != fmt.channels:
        raise LayoutError(f"{prefix}{fmt.name} takes {fmt.channels} channel(s), not {channels} "
                          "(format.rst Table 33)")
    if precision is not None and precision != fmt.precision:
        raise LayoutError(f"{prefix}{fmt.name} needs input precision {fmt.precision}, not "
                          f"{precision} (format.rst Table 33)")
    top = max_x_offset(fmt, atom_bytes)
    if not 0 <= x_offset <= top:
        raise LayoutError(f"{prefix}{fmt.name} X offset {x_offset} is outside 0~{top} "
                          f"(the pixels of one {atom_bytes}-byte memory atom; format.rst Table 33 "
                          "gives the 32-byte atom's)")


@record
class PixelLayout:
    """Geometry of a pitch-linear image: per plane line stride and extent."""

    fmt: PixelFormat
    width: int
    height: int
    x_offset: int
    line_strides: tuple[int, ...]
    # per-plane X offsets when they differ (the CDMA's chroma plane); () = x_offset everywhere
    plane_x_offsets: tuple[int, ...] = ()

    def plane_x_offset(self, plane: int) -> int:
        return self.plane_x_offsets[plane] if self.plane_x_offsets else self.x_offset

    def line_bytes(self, plane: int) -> int:
        """Bytes from a line's start to its last pixel's end (X offset included)."""
        return (self.plane_x_offset(plane) + self.width) * self.fmt.plane_bytes[plane]

    def extent(self, plane: int) -> int:
        return (self.height - 1) * self.line_strides[plane] + self.line_bytes(plane)


def pixel_layout(fmt: PixelFormat, width: int, height: int, line_strides=None, x_offset: int = 0,
                 atom_bytes: int = 32, what: str = "", plane_x_offsets=None) -> PixelLayout:
    """A validated layout; line strides left None are the line rounded up to an atom.

    ``plane_x_offsets`` (one per plane) overrides ``x_offset`` plane by plane.
    """
    check_pixel_setting(fmt, x_offset=x_offset, what=what, atom_bytes=atom_bytes)
    offsets = tuple(int(o) for o in plane_x_offsets) if plane_x_offsets is not None else ()
    if width < 1 or height < 1:
        raise LayoutError(f"{what + ': ' if what else ''}image size {width}x{height} is empty")
    strides = list(line_strides) if line_strides is not None else [None] * fmt.planes
    strides += [None] * (fmt.planes - len(strides))
    layout = PixelLayout(fmt, width, height, x_offset, tuple(
        align_up(((offsets[p] if offsets else x_offset) + width) * fmt.plane_bytes[p], atom_bytes)
        if s is None else int(s)
        for p, s in enumerate(strides[: fmt.planes])), offsets)
    for plane, stride in enumerate(layout.line_strides):
        check_alignment("pixel", atom_bytes, what, line_stride=stride)
        if height > 1 and stride < layout.line_bytes(plane):
            raise LayoutError(f"{what + ': ' if what else ''}plane {plane} line stride "
                              f"{stride:#x} is smaller than a line "
                              f"({layout.line_bytes(plane):#x} bytes)")
        check_extent(layout.extent(plane), f"{what or fmt.name}: plane {plane}")
    return layout


def _plane_pixels(buf: np.ndarray, base: int, layout: PixelLayout, plane: int,
                  writeable: bool) -> np.ndarray:
    """(H, W, bytes per pixel) view of a plane's pixels (X offset skipped)."""
    bpp = layout.fmt.plane_bytes[plane]
    if base < 0 or base + layout.extent(plane) > buf.size:
        raise LayoutError(f"plane {plane} of {layout.extent(plane):#x} bytes at {base:#x} does not "
                          f"fit in a buffer of {buf.size:#x} bytes")
    start = buf[base + layout.plane_x_offset(plane) * bpp:]
    return as_strided(start, shape=(layout.height, layout.width, bpp),
                      strides=(layout.line_strides[plane], bpp, 1), writeable=writeable)


def _containers(pixels: np.ndarray, field: Field) -> np.ndarray:
    raw = np.ascontiguousarray(pixels[..., field.offset : field.offset + field.size])
    return raw.view({1: np.uint8, 2: "<u2", 4: "<u4"}[field.size])[..., 0]


def gather_pixels(buffers, bases, layout: PixelLayout) -> np.ndarray:
    """(C, H, W) channels from flat uint8 buffers (one per plane) at indices ``bases``."""
    fmt = layout.fmt
    pixels = [_plane_pixels(np.asarray(buffers[p], dtype=np.uint8), int(bases[p]), layout, p,
                            False) for p in range(fmt.planes)]
    out = np.empty((fmt.channels, layout.height, layout.width), dtype=fmt.dtype)
    for ch, field in enumerate(fmt.fields):
        value = _containers(pixels[field.plane], field)
        if field.bits:
            out[ch] = ((value >> field.shift) & ((1 << field.bits) - 1)).astype(np.uint16)
        else:
            out[ch] = value.view(fmt.dtype)
    return out


def _to_components(array, fmt: PixelFormat) -> np.ndarray:
    arr = np.asarray(array)
    if arr.ndim != 3:
        raise LayoutError(f"{fmt.name}: image must be (C, H, W), got {arr.shape}")
    check_pixel_setting(fmt, channels=arr.shape[0])
    if arr.dtype != fmt.dtype:
        if fmt.dtype == _F16 or arr.dtype.kind not in "iu":
            raise LayoutError(f"{fmt.name}: components must be {fmt.dtype}, not {arr.dtype}")
        info = np.iinfo(fmt.dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise LayoutError(f"{fmt.name}: component values out of range for {fmt.dtype}")
        arr = arr.astype(fmt.dtype)
    for ch, field in enumerate(fmt.fields):
        if field.bits and arr[ch].size and int(arr[ch].max()) >> field.bits:
            raise LayoutError(f"{fmt.name}: channel {ch} values exceed {field.bits} bits")
    return arr


def scatter_pixels(buffers, bases, layout: PixelLayout, array) -> None:
    """Store (C, H, W) channels into flat uint8 buffers; bytes outside pixels untouched."""
    fmt = layout.fmt
    arr = _to_components(array, fmt)
    for plane in range(fmt.planes):
        view = _plane_pixels(buffers[plane], int(bases[plane]), layout, plane, True)
        pixels = np.ascontiguousarray(view)
        words: dict[int, np.ndarray] = {}
        for ch, field in enumerate(fmt.fields):
            if field.plane != plane:
                continue
            if field.bits:
                word = words.setdefault(field.offset, np.zeros(arr.shape[1:], dtype=np.uint32))
                word |= arr[ch].astype(np.uint32) << field.shift
            else:
                raw = np.ascontiguousarray(arr[ch]).view(np.uint8)
                pixels[..., field.offset : field.offset + field.size] = raw.reshape(
                    arr.shape[1:] + (field.size,))
        for offset, word in words.items():
            pixels[..., offset : offset + 4] = word.astype("<u4").view(np.uint8).reshape(
                word.shape + (4,))
        view[...] = pixels


def pack_pixels(array, fmt, line_strides=None, x_offset: int = 0, atom_bytes: int = 32,
                fill: int = 0):
    """Memory images of an image: returns ``(planes, layout)``.

    ``planes`` holds one uint8 array per plane, starting at the (aligned) line
    start, so it includes the X offset bytes; bytes that are not pixels are
    ``fill``.
    """
    fmt = fmt if isinstance(fmt, PixelFormat) else pixel_format(fmt)
    arr = np.asarray(array)
    if arr.ndim != 3:
        raise LayoutError(f"{fmt.name}: image must be (C, H, W), got {arr.shape}")
    layout = pixel_layout(fmt, arr.shape[2], arr.shape[1], line_strides, x_offset, atom_bytes)
    planes = [np.full(layout.extent(p), fill, dtype=np.uint8) for p in range(fmt.planes)]
    scatter_pixels(planes, [0] * fmt.planes, layout, arr)
    return planes, layout


def unpack_pixels(planes, fmt, width: int, height: int, line_strides=None, x_offset: int = 0,
                  addrs=None, atom_bytes: int = 32) -> np.ndarray:
    """(C, H, W) channels from plane images (bytes or uint8 arrays), at offsets ``addrs``."""
    fmt = fmt if isinstance(fmt, PixelFormat) else pixel_format(fmt)
    if isinstance(planes, (bytes, bytearray, np.ndarray)):
        planes = [planes]
    bufs = [np.frombuffer(p, np.uint8) if isinstance(p, (bytes, bytearray)) else np.asarray(p)
            for p in planes]
    if len(bufs) != fmt.planes:
        raise LayoutError(f"{fmt.name} has {fmt.planes} plane(s), got {len(bufs)} buffer(s)")
    addrs = [0] * fmt.planes if addrs is None else list(addrs)
    for addr in addrs:
        check_alignment("pixel", atom_bytes, start=addr)
    layout = pixel_layout(fmt, width, height, line_strides, x_offset, atom_bytes)
    return gather_pixels(bufs, addrs, layout)


def read_pixels(mem, fmt, addrs, width: int, height: int, line_strides, x_offset: int = 0,
                atom_bytes: int = 32, what: str = "", plane_x_offsets=None,
                mode: str = STREAMED) -> np.ndarray:
    """(C, H, W) channels read through ``mem.read_array`` (the CDMA image reader).

    ``addrs`` and ``line_strides`` give one value per plane; ``plane_x_offsets``
    (optional, one per plane) overrides ``x_offset`` plane by plane.
    """
    fmt = fmt if isinstance(fmt, PixelFormat) else pixel_format(fmt)
    addrs = [addrs] if isinstance(addrs, int) else list(addrs)
    layout = pixel_layout(fmt, width, height, line_strides, x_offset, atom_bytes, what,
                          plane_x_offsets)
    windows = []
    for plane in range(fmt.planes):
        check_alignment("pixel", atom_bytes, what, start=addrs[plane])
        windows.append(mem.read_array(addrs[plane], layout.extent(plane), what, mode=mode))
    return gather_pixels(windows, [0] * fmt.planes, layout)


def msb_aligned(array: np.ndarray, fmt) -> np.ndarray:
    """Packed-format fields moved to the top of 16 bits (as the CDMA sees them)."""
    fmt = fmt if isinstance(fmt, PixelFormat) else pixel_format(fmt)
    out = np.asarray(array).copy()
    for ch, field in enumerate(fmt.fields):
        if field.bits:
            out[ch] = out[ch].astype(np.uint16) << (16 - field.bits)
    return out
