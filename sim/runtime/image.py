"""Input tensors from images, as NVIDIA's runtime test application converts them.

A binary PGM (``P5``, maximum 255) is read line by line into an 8-bit image
whose line stride is the tensor's; each pixel then becomes the tensor's
element: fp16 ``(pixel - mean) / normalize`` (float32 arithmetic, stored with
the half library's rounding), or int8 ``floor(pixel * 127 / 255 + 0.5)``.
Channel ``c`` of a feature tensor lives in surface ``c // g`` at byte
``(c % g) * bpe`` of each ``g``-channel atom (``g`` = 16 for fp16, 32 for
int8, 8 for the x8 feature format).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import SimError
from ..num.host import half_from_float32
from .dimg import DATA_TYPE_HALF, DATA_TYPE_INT8, PIXEL_FORMAT_FEATURE, PIXEL_FORMAT_FEATURE_X8


def read_pgm(path: str | Path) -> np.ndarray:
    """(height, width) uint8 pixels of a binary PGM with maximum value 255."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    header, pos = [], 0
    while len(header) < 3:
        end = data.find(b"\n", pos)
        if end < 0:
            raise SimError(f"{path}: truncated PGM header")
        line = data[pos:end].decode("ascii", "replace")
        pos = end + 1
        if not line.startswith("#"):
            header.append(line.strip())
    try:
        width, height = (int(v) for v in header[1].split()[:2])
        maxval = int(header[2].split()[0])
    except (ValueError, IndexError):
        raise SimError(f"{path}: not a PGM header: {header!r}") from None
    if header[0] != "P5" or maxval != 255:
        raise SimError(f"{path}: only binary PGM (P5) with maximum 255 is supported")
    pixels = np.frombuffer(data, np.uint8, count=min(width * height, len(data) - pos),
                           offset=pos)
    if pixels.size < width * height:
        raise SimError(f"{path}: {pixels.size} pixel bytes, {width}x{height} needed")
    return pixels.reshape(height, width)


def image_to_tensor(pixels: np.ndarray, tensor, mean=(0.0, 0.0, 0.0, 0.0),
                    normalize: int = 1) -> bytes:
    """The input tensor buffer NVIDIA's runtime builds from an 8-bit single-channel image."""
    _, c, h, w = tensor.dims
    if pixels.shape != (h, w):
        raise SimError(f"image is {pixels.shape[1]}x{pixels.shape[0]}, the input tensor "
                       f"{tensor.name!r} is {w}x{h}")
    if tensor.pixel_format not in (PIXEL_FORMAT_FEATURE, PIXEL_FORMAT_FEATURE_X8):
        raise SimError(f"input tensor {tensor.name!r}: pixel format {tensor.pixel_format} is "
                       f"not a feature format")
    if tensor.data_type == DATA_TYPE_HALF and tensor.pixel_format == PIXEL_FORMAT_FEATURE:
        values = (pixels.astype(np.float32) - np.float32(mean[0])) / np.float32(normalize)
        elements, bpe, group = half_from_float32(values).view(np.uint8).reshape(h, w, 2), 2, 16
    elif tensor.data_type == DATA_TYPE_INT8:
        scaled = np.floor(pixels.astype(np.float64) * 127.0 / 255.0 + 0.5).astype(np.int8)
        elements, bpe = scaled.view(np.uint8).reshape(h, w, 1), 1
        group = 8 if tensor.pixel_format == PIXEL_FORMAT_FEATURE_X8 else 32
    else:
        raise SimError(f"input tensor {tensor.name!r}: images convert to fp16 or int8 features")
    buf = np.zeros(tensor.size, np.uint8)
    line, atom = tensor.strides[1], group * bpe
    for y in range(h):
        for x in range(w):
            at = y * line + x * atom  # channel 0 of surface 0
            buf[at : at + bpe] = elements[y, x]
    return buf.tobytes()
