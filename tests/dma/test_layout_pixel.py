"""Pixel formats of Table 33: byte positions by hand, round trips, limits."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dma import LayoutError
from sim.dma.align import ceil_div
from sim.dma.pixel import (
    PIXEL_FORMATS,
    check_pixel_setting,
    msb_aligned,
    pack_pixels,
    pixel_format,
    read_pixels,
    unpack_pixels,
)


def test_table_33_is_complete():
    assert len(PIXEL_FORMATS) == 36
    assert pixel_format("t_r8").max_x_offset == 31
    assert pixel_format("T_Y16___V16U16_N444").planes == 2


# (format, memory bytes of one pixel (plane 0 [+ plane 1]), expected pipeline channels)
ONE_PIXEL = [
    ("T_A8B8G8R8", [1, 2, 3, 4], [1, 2, 3, 4]),  # R in the first byte
    ("T_A8R8G8B8", [1, 2, 3, 4], [3, 2, 1, 4]),  # B first
    ("T_B8G8R8A8", [1, 2, 3, 4], [2, 3, 4, 1]),  # A first
    ("T_R8G8B8A8", [1, 2, 3, 4], [4, 3, 2, 1]),  # A first, R last
    ("T_A8Y8U8V8", [1, 2, 3, 4], [3, 2, 1, 4]),  # V, U, Y, A in memory
    ("T_V16U16Y16A16", [1, 0, 2, 0, 3, 0, 4, 0], [2, 3, 4, 1]),
    ("T_Y8___U8V8_N444", [9, 5, 6], [9, 6, 5]),  # U8V8 word: V in the first byte
    ("T_Y8___V8U8_N444", [9, 5, 6], [9, 5, 6]),
]


@pytest.mark.parametrize("name,raw,channels", ONE_PIXEL)
def test_component_positions_by_hand(name, raw, channels):
    fmt = pixel_format(name)
    p0 = fmt.plane_bytes[0]
    planes = [bytes(raw[:p0])] + ([bytes(raw[p0:])] if fmt.planes == 2 else [])
    got = unpack_pixels(planes, fmt, 1, 1)
    assert got[:, 0, 0].astype(int).tolist() == channels


def test_packed_10bit_by_hand():
    # T_A2B10G10R10: R = bits 9:0, G = 19:10, B = 29:20, A = 31:30
    word = (3 << 30) | (0x155 << 20) | (0x2AA << 10) | 0x3FF
    got = unpack_pixels(np.array([word], "<u4").view(np.uint8), "T_A2B10G10R10", 1, 1)
    assert got[:, 0, 0].tolist() == [0x3FF, 0x2AA, 0x155, 3]
    assert msb_aligned(got, "T_A2B10G10R10")[:, 0, 0].tolist() == [0xFFC0, 0xAA80, 0x5540, 0xC000]
    # T_R10G10B10A2: R = bits 31:22, A = bits 1:0
    word = (0x3FF << 22) | 2
    got = unpack_pixels(np.array([word], "<u4").view(np.uint8), "T_R10G10B10A2", 1, 1)
    assert got[:, 0, 0].tolist() == [0x3FF, 0, 0, 2]


def test_x_offset_and_line_stride_by_hand():
    img = np.arange(2 * 3, dtype=np.uint8).reshape(1, 2, 3) + 1
    planes, layout = pack_pixels(img, "T_R8", line_strides=[64], x_offset=5)
    data = planes[0]
    assert layout.line_strides == (64,)
    assert data[5:8].tolist() == [1, 2, 3] and data[64 + 5 : 64 + 8].tolist() == [4, 5, 6]
    assert np.all(data[:5] == 0)


def _random_image(rng, fmt, h, w):
    shape = (fmt.channels, h, w)
    if fmt.dtype == np.float16:
        return rng.standard_normal(shape).astype(np.float16)
    out = np.empty(shape, dtype=fmt.dtype)
    for ch, field in enumerate(fmt.fields):
        bits = field.bits or 8 * field.size
        info = np.iinfo(fmt.dtype)
        hi = min(info.max, (1 << bits) - 1)
        out[ch] = rng.integers(info.min if not field.bits else 0, hi + 1, (h, w))
    return out


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(PIXEL_FORMATS)), h=st.integers(1, 5), w=st.integers(1, 40),
       x=st.integers(0, 31), gap=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_round_trip(name, h, w, x, gap, seed, flat_memory):
    fmt = pixel_format(name)
    x = min(x, fmt.max_x_offset)
    img = _random_image(np.random.default_rng(seed), fmt, h, w)
    strides = [(ceil_div((x + w) * b, 32) + gap) * 32 for b in fmt.plane_bytes]
    planes, layout = pack_pixels(img, fmt, strides, x, fill=0xAB)
    back = unpack_pixels(planes, fmt, w, h, strides, x)
    assert np.array_equal(back.view(np.uint8), img.view(np.uint8))
    mem = flat_memory(4096 * 2)
    addrs = [0, 4096][: fmt.planes]
    for addr, plane in zip(addrs, planes, strict=True):
        mem.write(addr, plane)
    got = read_pixels(mem, fmt, addrs, w, h, strides, x)
    assert np.array_equal(got.view(np.uint8), img.view(np.uint8))


LIMITS = [
    (dict(channels=3), "T_A8B8G8R8 takes 4 channel"),
    (dict(precision="int16"), "T_A8B8G8R8 needs input precision int8"),
    (dict(x_offset=8),
     r"X offset 8 is outside 0~7 \(the pixels of one 32-byte memory atom"),
]


@pytest.mark.parametrize("kwargs,message", LIMITS)
def test_table_33_limits(kwargs, message):
    with pytest.raises(LayoutError, match=message):
        check_pixel_setting(pixel_format("T_A8B8G8R8"), **kwargs)


def test_layout_errors():
    with pytest.raises(LayoutError, match="line stride 0x20 is smaller than a line"):
        pack_pixels(np.zeros((1, 2, 40), np.uint8), "T_R8", line_strides=[32])
    with pytest.raises(LayoutError, match="line stride 0x30 is not 32-byte aligned"):
        pack_pixels(np.zeros((1, 2, 4), np.uint8), "T_R8", line_strides=[48])
    with pytest.raises(LayoutError, match="start address 0x8 is not 32-byte aligned"):
        unpack_pixels(bytes(64), "T_R8", 4, 1, addrs=[8])
    with pytest.raises(LayoutError, match="exceed 10 bits"):
        pack_pixels(np.full((4, 1, 1), 1024, np.uint16), "T_A2B10G10R10")
    with pytest.raises(LayoutError, match="unknown pixel format"):
        pixel_format("T_RGB")
