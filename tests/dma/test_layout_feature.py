"""Feature cubes: hand-computed offsets, round trips, strides and errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.configs import get_config
from sim.dma import (
    LayoutError,
    feature_layout,
    fold_1x1,
    pack_feature,
    read_feature,
    unpack_feature,
    write_feature,
)
from sim.dma.align import ceil_div
from sim.dma.elements import element_dtype, float_to_fp16_bits, fp16_bits_to_float

NV_FULL, NV_SMALL = get_config("nv_full"), get_config("nv_small")


def random_cube(rng, shape, precision):
    if precision == "fp16":
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    info = np.iinfo(element_dtype(precision))
    return rng.integers(info.min, info.max + 1, shape).astype(element_dtype(precision))


# (config, precision, shape C,H,W, element c,h,w, expected byte offset), worked by hand
OFFSETS = [
    # nv_full int8: 32 channels per atom; packed line 3*32=96, surface 2*96=192
    (NV_FULL, "int8", (40, 2, 3), (35, 1, 2), 192 + 96 + 2 * 32 + 3),
    # nv_full int16: 16 channels per atom of 32 bytes; element 2 bytes
    (NV_FULL, "int16", (40, 3, 5), (17, 1, 2), 480 + 160 + 64 + 2),
    # nv_small int8: 8-byte atom, 8 channels per atom; line 4*8=32, surface 2*32=64
    (NV_SMALL, "int8", (10, 2, 4), (9, 1, 3), 64 + 32 + 24 + 1),
]


@pytest.mark.parametrize("cfg,precision,shape,index,expected", OFFSETS)
def test_packed_offset_by_hand(cfg, precision, shape, index, expected):
    rng = np.random.default_rng(1)
    cube = random_cube(rng, shape, precision)
    data, layout = pack_feature(cube, cfg, precision=precision)
    assert layout.offset(*index) == expected
    bpe = element_dtype(precision).itemsize
    got = data[expected : expected + bpe].view(element_dtype(precision))[0]
    assert got == cube[index]


def test_unpacked_strides_leave_gaps():
    cube = np.arange(2 * 3 * 20, dtype=np.int8).reshape(20, 2, 3)  # one surface
    data, layout = pack_feature(cube, NV_FULL, line_stride=128, fill=0x55)
    assert layout.line_stride == 128 and layout.surface_stride == 256
    assert layout.extent == 128 + 96
    assert np.all(data[96:128] == 0x55)  # gap after line 0
    assert np.all(data[20:32] == 0)  # channel padding inside an atom
    assert data[128 + 32 + 5] == cube[5, 1, 1]


def test_channel_pad_value():
    cube = np.ones((3, 1, 1), dtype=np.int8)
    data, _ = pack_feature(cube, NV_FULL, pad_value=-2)
    assert list(data[:5].view(np.int8)) == [1, 1, 1, -2, -2]


def test_batch_layout():
    rng = np.random.default_rng(2)
    cube = random_cube(rng, (2, 20, 2, 2), "int8")
    data, layout = pack_feature(cube, NV_FULL, batch_stride=512)
    assert layout.batch == 2 and layout.extent == 512 + 128
    assert data[512 + 32 + 7:].view(np.int8)[0] == cube[1, 7, 0, 1]
    back = unpack_feature(data, 0, (20, 2, 2), layout, precision="int8", atom_bytes=32)
    assert np.array_equal(back, cube)


def test_fold_1x1_matches_surface_packed_cube():
    rng = np.random.default_rng(3)
    cube = random_cube(rng, (70, 1, 1), "int16")
    folded = fold_1x1(cube, "int16", 32)
    assert folded.shape == (16, 1, 5)
    a, _ = pack_feature(cube, NV_FULL)
    b, _ = pack_feature(folded, NV_FULL)
    assert np.array_equal(a, b)


def test_fp16_bits_round_trip_through_float16():
    values = np.array([1.0, -0.0, 65504.0, np.inf], dtype=np.float16).reshape(4, 1, 1)
    data, layout = pack_feature(values, NV_FULL)  # float16 input means fp16
    bits = unpack_feature(data, 0, values.shape, layout, precision="fp16", atom_bytes=32)
    assert bits.dtype == np.uint16
    assert np.array_equal(bits, float_to_fp16_bits(values))
    assert np.array_equal(fp16_bits_to_float(bits), values)


@settings(max_examples=40, deadline=None)
@given(
    cfg=st.sampled_from([NV_FULL, NV_SMALL, get_config("nv_medium_512")]),
    precision=st.sampled_from(["int8", "int16", "fp16"]),
    c=st.integers(1, 70), h=st.integers(1, 5), w=st.integers(1, 6),
    batch=st.integers(1, 3),
    line_gap=st.integers(0, 3), surface_gap=st.integers(0, 3), batch_gap=st.integers(0, 2),
    packed=st.booleans(), seed=st.integers(0, 2**32 - 1),
)
def test_round_trip(cfg, precision, c, h, w, batch, line_gap, surface_gap, batch_gap, packed,
                    seed, flat_memory):
    atom = cfg.atom_bytes
    shape = (c, h, w) if batch == 1 else (batch, c, h, w)
    cube = random_cube(np.random.default_rng(seed), shape, precision)
    if packed:
        strides = {}
    else:
        ls = (w + line_gap) * atom
        ss = h * ls + surface_gap * atom
        surfaces = ceil_div(c * element_dtype(precision).itemsize, atom)
        strides = dict(line_stride=ls, surface_stride=ss,
                       batch_stride=surfaces * ss + batch_gap * atom)
    data, layout = pack_feature(cube, cfg, precision=precision, **strides)
    assert data.size == layout.extent
    back = unpack_feature(data, 0, (c, h, w), layout, precision=precision, atom_bytes=atom)
    assert np.array_equal(back, cube)
    # the same bytes through the memory-object helpers, at an aligned address
    mem = flat_memory(4 * atom + layout.extent + 64)
    write_feature(mem, 4 * atom, cube, precision, atom, layout.line_stride,
                  layout.surface_stride, layout.batch_stride)
    got = read_feature(mem, 4 * atom, (c, h, w), precision, atom, layout.line_stride,
                       layout.surface_stride, layout.batch_stride, batch)
    assert np.array_equal(got, cube)
    assert np.all(mem.buf[: 4 * atom] == 0xEE)
    # written atoms equal the packed image; gaps keep the old memory contents
    offsets = layout.atom_offsets().ravel()
    window = mem.buf[4 * atom : 4 * atom + layout.extent]
    for off in offsets[:8]:
        assert np.array_equal(window[off : off + atom], data[off : off + atom])


def test_large_cube_is_vectorised():
    rng = np.random.default_rng(4)
    cube = random_cube(rng, (64, 256, 256), "int8")
    data, layout = pack_feature(cube, NV_FULL)
    back = unpack_feature(data, 0, cube.shape, layout, precision="int8", atom_bytes=32)
    assert np.array_equal(back, cube)


ERRORS = [
    (dict(line_stride=48), "line stride 0x30 is not 32-byte aligned"),
    (dict(line_stride=64), "line stride 0x40 is smaller than a line"),
    (dict(line_stride=96, surface_stride=160), "surface stride 0xa0 is smaller than a surface"),
]


@pytest.mark.parametrize("strides,message", ERRORS)
def test_invalid_strides(strides, message):
    cube = np.zeros((40, 2, 3), dtype=np.int8)
    with pytest.raises(LayoutError, match=message):
        pack_feature(cube, NV_FULL, **strides)


def test_misaligned_address(flat_memory):
    mem = flat_memory(1024)
    with pytest.raises(LayoutError, match=r"start address 0x10 is not 32-byte aligned.*Table 35"):
        read_feature(mem, 16, (8, 1, 1), "int8", 32, 32, 32)
    with pytest.raises(LayoutError, match="NVDLA_SDP.D_DST_BASE_ADDR_LOW_0: feature data cube"):
        write_feature(mem, 8, np.zeros((8, 1, 1), np.int8), "int8", 32, 32, 32,
                      what="NVDLA_SDP.D_DST_BASE_ADDR_LOW_0")


def test_errors_are_one_line():
    with pytest.raises(LayoutError) as info:
        feature_layout((3, 2, 2), "int8", 32, line_stride=33)
    assert "\n" not in str(info.value)


def test_overlapping_batches_rejected():
    cube = np.zeros((2, 8, 2, 2), dtype=np.int8)
    with pytest.raises(LayoutError, match="batches overlap"):
        pack_feature(cube, NV_FULL, batch_stride=32)


def test_interleaved_batches_allowed():
    rng = np.random.default_rng(5)
    cube = random_cube(rng, (2, 40, 1, 2), "int8")
    # batch 1 sits in the gap after each line of batch 0
    data, layout = pack_feature(cube, NV_FULL, line_stride=128, surface_stride=128,
                                batch_stride=64)
    back = unpack_feature(data, 0, (40, 1, 2), layout, precision="int8", atom_bytes=32)
    assert np.array_equal(back, cube)


def test_padded_channels():
    from sim.dma import padded_channels

    assert padded_channels(40, "int8", 32) == 64
    assert padded_channels(40, "int16", 32) == 48
    assert padded_channels(9, "int8", 8) == 16
    assert feature_layout((40, 1, 1), "fp16", 32).padded_channels == 48


@pytest.mark.parametrize("plain_bytes", [1 << 21, 0])  # one copy; words then tiles (large)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("m,a,b", [(1, 32, 64), (2, 32, 13), (3, 16, 7), (2, 5, 8), (1, 4, 0)])
def test_swap_last_axes_is_a_transpose(dtype, m, a, b, plain_bytes, monkeypatch):
    """Small arrays in one transposing copy; large ones words first, then tiles, with any
    tail of elements that fills no word on its own."""
    from sim.dma import feature
    from sim.dma.feature import swap_last_axes

    monkeypatch.setattr(feature, "PLAIN_SWAP_BYTES", plain_bytes)

    src = np.random.default_rng(a * b).integers(0, 1 << 8, (m, a, b)).astype(dtype) \
        * np.array(0x0101010101010101, np.uint64).astype(dtype)  # every byte of a lane set
    src += np.arange(src.size, dtype=dtype).reshape(src.shape)
    dst = np.zeros((m, b, a), dtype)
    swap_last_axes(src, dst)
    np.testing.assert_array_equal(dst, src.transpose(0, 2, 1))
