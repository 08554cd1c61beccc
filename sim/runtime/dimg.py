"""NVIDIA's ``.dimg`` image files, as its runtime test application writes outputs.

A file is ``DIMG``, a 32-bit version (0), the image metadata (surface
format, width, height, channels, line stride, surface stride, buffer size:
seven little-endian uint32) and the elements in channel, line, pixel order
(the "stable hash" packing: padding dropped).  Feature tensors are
channel-interleaved surfaces of ``group`` channels.

Two conventions (:data:`CONVENTIONS`):

* ``regression`` (the default): the runtime that produced NVIDIA's regression goldens
  (before the int8 x8 format was inserted into the enum): int8 features are
  ``D_F8_CxHWx_x32_I`` = 40, int16 ``D_F16_CxHWx_x16_I`` = 41, fp16
  ``D_F16_CxHWx_x16_F`` = 42, whatever the configuration's atom size.  The shared
  networks' expected outputs (nv_small's int8 too) are packed so.
* ``current``: NVIDIA's current runtime (nvdla/sw ``umd/apps/runtime``), whose enum has
  ``D_F8_CxHWx_x8_I`` = 41 (int16 42, fp16 43) and which reads an int8 ``FEATURE_X8``
  tensor (nv_small's outputs) in groups of 8 channels, as it lies in memory: groups
  of 32 read other channels' bytes there, or past the buffer.
"""

from __future__ import annotations

import struct

import numpy as np

from ..dma.feature import FeatureLayout
from ..errors import SimError
from ..num.host import half_from_float32, stable_half_bits
from ..records import record

MAGIC, VERSION = b"DIMG", 0
DATA_TYPE_HALF, DATA_TYPE_INT16, DATA_TYPE_INT8 = 2, 3, 4
PIXEL_FORMAT_FEATURE, PIXEL_FORMAT_FEATURE_X8 = 36, 37

# data type -> (surface format code, bytes per element, channels per group, IEEE?)
FEATURE_FORMATS = {
    DATA_TYPE_INT8: (40, 1, 32, False),
    DATA_TYPE_INT16: (41, 2, 16, False),
    DATA_TYPE_HALF: (42, 2, 16, True),
}
# the current runtime's: (pixel format, data type) -> the same
_CURRENT_FORMATS = {
    **{(pf, DATA_TYPE_INT16): (42, 2, 16, False) for pf in (PIXEL_FORMAT_FEATURE,
                                                            PIXEL_FORMAT_FEATURE_X8)},
    **{(pf, DATA_TYPE_HALF): (43, 2, 16, True) for pf in (PIXEL_FORMAT_FEATURE,
                                                          PIXEL_FORMAT_FEATURE_X8)},
    (PIXEL_FORMAT_FEATURE, DATA_TYPE_INT8): (40, 1, 32, False),
    (PIXEL_FORMAT_FEATURE_X8, DATA_TYPE_INT8): (41, 1, 8, False),
}
REGRESSION, CURRENT = "regression", "current"
CONVENTIONS = (REGRESSION, CURRENT)


@record
class DimgMeta:
    surface_format: int
    width: int
    height: int
    channels: int
    line_stride: int
    surface_stride: int
    size: int


def feature_meta(tensor, convention: str = REGRESSION) -> tuple[DimgMeta, int, int, bool]:
    """(metadata, bytes per element, channel group, IEEE) of a loadable tensor, packed by
    the runtime of ``convention``."""
    if tensor.pixel_format not in (PIXEL_FORMAT_FEATURE, PIXEL_FORMAT_FEATURE_X8):
        raise SimError(f"tensor {tensor.name!r}: pixel format {tensor.pixel_format} has no "
                       f".dimg writer (feature tensors only)")
    if tensor.data_type not in FEATURE_FORMATS:
        raise SimError(f"tensor {tensor.name!r}: data type {tensor.data_type} is not int8, "
                       f"int16 or fp16")
    if convention == CURRENT:
        code, bpe, group, ieee = _CURRENT_FORMATS[tensor.pixel_format, tensor.data_type]
    else:
        code, bpe, group, ieee = FEATURE_FORMATS[tensor.data_type]
    _, c, h, w = tensor.dims
    meta = DimgMeta(code, w, h, c, tensor.strides[1], tensor.strides[2], tensor.size)
    return meta, bpe, group, ieee


def element_offsets(meta: DimgMeta, bpe: int, group: int) -> np.ndarray:
    """Byte offset of every element, in the file's (channel, line, pixel) order."""
    layout = FeatureLayout(meta.channels, meta.height, meta.width, group, bpe,
                           meta.line_stride, meta.surface_stride)
    return layout.element_offsets().reshape(-1)


def pack_dimg(buffer: bytes, tensor, convention: str = REGRESSION) -> bytes:
    """The ``.dimg`` file NVIDIA's runtime of ``convention`` writes for output ``tensor``
    held in ``buffer``."""
    meta, bpe, group, ieee = feature_meta(tensor, convention)
    offsets = element_offsets(meta, bpe, group)
    if offsets.size and offsets.max() + bpe > meta.size:
        hint = ""
        if convention == REGRESSION and group != feature_meta(tensor, CURRENT)[2]:
            hint = (f" in groups of {group} channels (NVIDIA's current runtime reads it in "
                    f"groups of {feature_meta(tensor, CURRENT)[2]}: --dimg current)")
        raise SimError(f"tensor {tensor.name!r}: element at byte {int(offsets.max())} is past "
                       f"its {meta.size}-byte buffer{hint}")
    data = np.frombuffer(bytes(buffer[: meta.size]).ljust(meta.size, b"\0"), np.uint8)
    index = offsets[:, None] + np.arange(bpe)
    elements = data[index].reshape(-1)
    if ieee:
        elements = stable_half_bits(elements.view("<u2")).view(np.uint8)
    header = MAGIC + struct.pack("<I", VERSION) + struct.pack(
        "<7I", meta.surface_format, meta.width, meta.height, meta.channels, meta.line_stride,
        meta.surface_stride, meta.size)
    return header + elements.tobytes()


def unpack_dimg(data: bytes) -> tuple[DimgMeta, bytes]:
    """(metadata, packed elements) of a ``.dimg`` file."""
    if len(data) < 36 or data[:4] != MAGIC:
        raise SimError("not a .dimg file (no DIMG header)")
    meta = DimgMeta(*struct.unpack("<7I", data[8:36]))
    return meta, data[36:]


__all__ = ["pack_dimg", "unpack_dimg", "feature_meta", "element_offsets", "half_from_float32",
           "CONVENTIONS"]
