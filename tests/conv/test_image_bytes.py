"""Image input: the byte-format conversion table (convert_byte_pixels) against the general
elementwise path (pixel_components + convert_pixels), over every whole-byte pixel format
and convertor settings, every byte value present."""

from types import SimpleNamespace

import numpy as np
import pytest

from sim.configs import FP16, INT8, INT16
from sim.conv.image import (
    byte_components,
    convert_byte_pixels,
    convert_pixels,
    pixel_components,
)
from sim.dma.pixel import PIXEL_FORMATS

BYTE_FORMATS = [name for name, fmt in PIXEL_FORMATS.items() if byte_components(fmt)]

# (cvt_enable, sign_override, means, offset, scale, truncate, processing precision)
SETTINGS = [
    (False, False, None, 0, 0, 0, INT8),
    (False, True, None, 0, 0, 0, INT8),
    (True, True, None, 0, 1, 0, INT8),  # the identity a compiler programs
    (True, False, None, 0, 1, 0, INT8),  # unsigned bytes past 127 saturate
    (True, False, None, 0x7F, 1, 0, INT8),
    (True, False, (0x7B, 0x75, 0x68, 0x0), 0, 0x4000, 14, INT8),
    (True, True, (0xFFF0, 0x10, 0x8000, 0x7FFF), 0x1234, 0xFFFE, 3, INT8),
    (True, False, None, 0xFF80, 0x7FFF, 0, INT16),
    (True, True, (1, 2, 3, 4), 0, 0x155, 2, INT16),
    (True, False, (0x80, 0x80, 0x80, 0x80), 0, 3, 1, FP16),
    (True, True, None, 5, 0x8001, 63, FP16),
]


def _layer(cvt, sign, means, offset, scale, truncate, proc):
    return SimpleNamespace(precision=proc, in_precision=INT8, cvt_enable=cvt,
                           sign_override=sign, means=means, cvt_offset=offset,
                           cvt_scale=scale, cvt_truncate=truncate)


def test_byte_formats_are_the_8_bit_ones():
    assert "T_A8B8G8R8" in BYTE_FORMATS and "T_R8" in BYTE_FORMATS
    assert "T_R16" not in BYTE_FORMATS and "T_A2B10G10R10" not in BYTE_FORMATS
    assert "T_R16_F" not in BYTE_FORMATS


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("name", BYTE_FORMATS)
def test_table_conversion_matches_the_elementwise_one(name, setting):
    fmt = PIXEL_FORMATS[name]
    rng = np.random.default_rng(BYTE_FORMATS.index(name) * 31 + SETTINGS.index(setting))
    h, w = 17, 23
    raw = rng.integers(0, 256, (fmt.channels, h, w), dtype=np.uint8)
    raw.reshape(fmt.channels, -1)[:, :256] = np.arange(256, dtype=np.uint8)  # every byte
    raw = raw.view(fmt.dtype)
    layer = _layer(*setting)
    values, bits = pixel_components(raw, fmt)
    expect = convert_pixels(values, bits, fmt, layer)
    got = convert_byte_pixels(raw, fmt, layer)
    assert got.dtype == expect.dtype
    np.testing.assert_array_equal(got, expect)
