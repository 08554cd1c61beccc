"""An image-input convolution's pixels and CDMA settings from its spec keys.

``pixel_format`` (any of format.rst Table 33's 36), ``pixel_cvt`` ([offset, scale,
truncate] or false), ``pixel_offset`` (the X offset, in pixels), ``mean`` ([ry, gu,
bv, ax]) and ``pixel_sign_override``; ``data`` bounds the pixel values (fp16
pixels: also its specials).  Each default keeps what gen did for 8-bit formats.
"""

from __future__ import annotations

import numpy as np

from ..dma.align import align_up
from ..errors import SimError
from ..records import record
from .data import random_cube
from .spec import FP16_MAX, finite, integer

IMAGE_KEYS = ("pixel_cvt", "pixel_offset", "mean", "pixel_sign_override")


@record
class ImageSetting:
    fmt: object  # sim.dma.pixel.PixelFormat
    cvt: tuple | None  # (offset, scale, truncate) of the CDMA convertor, or off
    x_offset: int
    mean: tuple | None  # (ry, gu, bv, ax) 16-bit patterns, or off
    sign_override: bool


def image_setting(layer, proc: str, channels: int, cfg=None) -> ImageSetting:
    """The validated image keys of an image-mode ``layer`` processing in ``proc`` on ``cfg``."""
    from ..dma.pixel import max_x_offset, pixel_format

    name = layer.get("pixel_format", "T_A8B8G8R8")
    if not isinstance(name, str):
        raise layer.fail("pixel_format", f"expected a format name such as \"T_R8\", got "
                         f"{name!r}")
    try:
        fmt = pixel_format(name)
    except SimError as exc:
        raise layer.fail("pixel_format", str(exc)) from None
    if channels != fmt.channels:
        raise layer.fail("input", f"{fmt.name} has {fmt.channels} channels, not {channels}")
    if cfg is not None and not cfg.supports(fmt.precision):
        # the master RTL's CDMA image control (NV_NVDLA_CDMA_IMG_ctrl) builds the 10/12/16-bit
        # formats only without FEATURE_DATA_TYPE_INT8, which every master project sets: on
        # nv_small's RTL such a format reads wrong pixels, and the master C-model stops (SIGFPE)
        raise layer.fail("pixel_format", f"{fmt.name} has {fmt.precision} pixels, which "
                         f"{cfg.name}'s CDMA cannot read: it takes 8-bit formats only")
    fp16_pixels = fmt.dtype == np.float16
    if fmt.precision == "fp16" and proc != "fp16":
        raise layer.fail("precision", f"{fmt.name} holds fp16 pixels: the CDMA takes them "
                         "into fp16 processing only (format.rst Table 30)")
    if fp16_pixels and proc == "int8":
        raise layer.fail("precision", f"{fmt.name}'s fp16 pixels converted to int8: NVIDIA's "
                         "C-model writes zeros, and the simulator refuses it (sim.conv.image): "
                         "process them in int16 or fp16")
    # T_R16_F: fp16 pixels of Table 33 input precision int16 go into fp16 processing as
    # they are; through the convertor the C-model writes zeros (sim.conv.image)
    raw_fp16 = fp16_pixels and proc == "fp16" and fmt.precision != "fp16"
    value = layer.get("pixel_cvt")
    if value is None:
        cvt = None if fp16_pixels else _default_cvt(fmt, proc)
    elif value is False:
        cvt = None
    else:
        if not isinstance(value, list) or len(value) != 3:
            raise layer.fail("pixel_cvt", f"expected [offset, scale, truncate] or false, got "
                             f"{value!r}")
        cvt = (integer(layer, "pixel_cvt[0]", value[0], -(1 << 15), (1 << 16) - 1) & 0xFFFF,
               integer(layer, "pixel_cvt[1]", value[1], -(1 << 15), (1 << 15) - 1) & 0xFFFF,
               integer(layer, "pixel_cvt[2]", value[2], 0, 63))
    if cvt is None and fmt.precision != proc and not raw_fp16:
        raise layer.fail("pixel_cvt", f"converting {fmt.precision} pixels to {proc} needs the "
                         "convertor (CDMA CVT_EN)")
    if cvt is not None and raw_fp16:
        raise layer.fail("pixel_cvt", f"{fmt.name}'s fp16 pixels go into fp16 unconverted "
                         "(the C-model's convertor writes zeros for them): pixel_cvt = false")
    # the pixels of one memory atom (8 bytes on nv_small: 1 for a 4-byte pixel)
    x_offset = integer(layer, "pixel_offset", layer.get("pixel_offset", 0), 0,
                       max_x_offset(fmt, cfg.atom_bytes if cfg is not None else 32))
    mean = layer.get("mean")
    if mean is not None:
        if not isinstance(mean, list) or len(mean) != 4:
            raise layer.fail("mean", f"expected [ry, gu, bv, ax], got {mean!r}")
        mean = tuple(_mean(layer, f"mean[{i}]", v, fp16_pixels) for i, v in enumerate(mean))
        if cvt is None:  # the convertor subtracts the mean (in place of its offset)
            raise layer.fail("mean", "the mean is subtracted by the CDMA convertor, off here "
                             "(pixel_cvt = false, or fp16 pixels into fp16): drop mean")
    _check_pixel_bounds(layer, fmt, layer.get("data") or {})
    if (layer.get("data") or {}).get("specials") and not fp16_pixels:
        raise layer.fail("data.specials", f"{fmt.name}'s pixels are integers: NaN/Inf/denormal "
                         "specials need fp16 pixels")
    sign = layer.get("pixel_sign_override", False)
    if not isinstance(sign, bool):
        raise layer.fail("pixel_sign_override", f"expected true or false, got {sign!r}")
    return ImageSetting(fmt, cvt, x_offset, mean, sign)


def pixel_range(fmt) -> tuple[float, float]:
    """The values a format's pixels can hold: its widest field (a packed format's 10-bit
    colour; its 2-bit alpha keeps what fits) or fp16's finite range."""
    if fmt.dtype == np.float16:
        return -FP16_MAX, FP16_MAX
    return np.iinfo(fmt.dtype).min, max(_field_top(fmt, f) for f in fmt.fields)


def _field_top(fmt, field) -> int:
    """The largest value a component field holds (a packed field's bits, else its dtype's)."""
    return (1 << field.bits) - 1 if field.bits else int(np.iinfo(fmt.dtype).max)


def _check_pixel_bounds(layer, fmt, data: dict) -> None:
    """``data.low``/``high`` within the pixels' range: outside it a draw would wrap (8 bits)
    or be clipped out of the field, and the bounds would not be what the pixels hold."""
    lo, hi = pixel_range(fmt)
    for name in ("low", "high"):
        value = data.get(name)
        if value is not None and not lo <= value <= hi:
            raise layer.fail(f"data.{name}", f"{value} is outside {fmt.name}'s pixel range "
                             f"{lo:g}..{hi:g}")


def _default_cvt(fmt, proc: str) -> tuple[int, int, int]:
    """Unsigned pixels centred on 0 (8-bit: gen's historical 128, 1, 0), 16-bit ones into
    int8 shifted down by 8."""
    if fmt.dtype == np.uint8:
        return (128, 1, 0)
    offset = 0 if fmt.dtype == np.int16 else 1 << 15
    return (offset, 1, 8 if proc == "int8" else 0)


def _mean(layer, key: str, value, fp16: bool) -> int:
    if fp16:
        value = finite(layer, key, value, FP16_MAX, "expected a finite fp16 number, got {}")
        return int(np.float16(value).view(np.uint16))
    return integer(layer, key, value, -(1 << 15), (1 << 16) - 1) & 0xFFFF


def random_pixels(rng, fmt, shape, data: dict | None) -> np.ndarray:
    """Pixels (C, H, W) in the format's component dtype over each component's range (a
    packed format's 10-bit colour and 2-bit alpha fields), within ``data``'s low/high."""
    data = data or {}
    if fmt.dtype == np.float16:
        return random_cube(rng, shape, "fp16", data, "feature").view(np.float16)
    if fmt.dtype == np.uint8 and data.get("low") is None and data.get("high") is None:
        return rng.integers(0, 256, shape).astype(np.uint8)  # gen's historical draw
    info = np.iinfo(fmt.dtype)
    out = np.empty(shape, fmt.dtype)
    for ch in range(shape[0]):
        top = _field_top(fmt, fmt.fields[ch])
        lo = info.min if data.get("low") is None else max(int(data["low"]), info.min)
        hi = top if data.get("high") is None else min(int(data["high"]), top)
        out[ch] = rng.integers(min(lo, hi), hi + 1, shape[1:])
    return out


def image_extent(fmt, plane: int, height: int, width: int, x_offset: int, atom: int) -> int:
    """Bytes a plane takes, with room to spare: lines of the X offset and the pixels (a
    chroma plane's own offset within an atom), atom-aligned."""
    line = align_up((x_offset + width + atom) * fmt.plane_bytes[plane], atom)
    return height * line + atom
