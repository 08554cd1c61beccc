"""Weight formats: hand-computed streams and round trips for every mapping."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.configs import get_config
from sim.dma import LayoutError
from sim.dma.elements import element_dtype
from sim.dma.weights import (
    compress_weights,
    decompress_weights,
    group_bytes,
    merge_deconv_weights,
    pack_weight_dc,
    pack_weight_deconv,
    pack_weight_image,
    pack_weight_winograd,
    pre_extend_image,
    split_deconv_weights,
    undo_pre_extend_image,
    unpack_weight_dc,
    unpack_weight_image,
    unpack_weight_winograd,
    weight_group_size,
    winograd_extend,
    winograd_inverse,
    winograd_transform,
    winograd_weights,
)

NV_FULL, NV_SMALL = get_config("nv_full"), get_config("nv_small")
PRECISIONS = ["int8", "int16", "fp16"]


def random_weights(rng, shape, precision):
    if precision == "fp16":
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    info = np.iinfo(element_dtype(precision))
    return rng.integers(info.min, info.max + 1, shape).astype(element_dtype(precision))


def test_group_size_follows_mac_atomic_k():
    assert weight_group_size("int8", NV_FULL) == 32
    assert weight_group_size("int16", NV_FULL) == 16
    assert weight_group_size("fp16", NV_FULL) == 16
    assert weight_group_size("int8", NV_SMALL) == 8


def test_dc_scan_order_by_hand():
    # K=2, C=3, R=1, S=2, int8: C' -> K -> W: k0 s0, k1 s0, k0 s1, k1 s1
    w = np.arange(12, dtype=np.int8).reshape(2, 3, 1, 2)
    data = pack_weight_dc(w, "int8", NV_FULL)
    assert data.size == 128
    expected = [w[0, :, 0, 0], w[1, :, 0, 0], w[0, :, 0, 1], w[1, :, 0, 1]]
    assert data[:12].view(np.int8).tolist() == np.concatenate(expected).tolist()
    assert np.all(data[12:] == 0)


def test_dc_partial_channel_cube_not_zero_filled():
    # C = 70 on nv_full: a 64-element cube then a 6-element cube, no zeros between
    w = np.arange(2 * 70, dtype=np.int16).reshape(2, 70, 1, 1).astype(np.int8)
    data = pack_weight_dc(w, "int8", NV_FULL)[:140].view(np.int8)
    expected = [w[0, :64, 0, 0], w[1, :64, 0, 0], w[0, 64:, 0, 0], w[1, 64:, 0, 0]]
    assert data.tolist() == np.concatenate(expected).tolist()


def test_dc_kernel_groups_fp16():
    # 17 fp16 kernels: a group of 16 then a group of 1, mapped compactly
    w = np.arange(17 * 2, dtype=np.uint16).reshape(17, 2, 1, 1)
    stream = pack_weight_dc(w, "fp16", NV_FULL).view("<u2")
    assert stream[:32].tolist() == w[:16, :, 0, 0].ravel().tolist()
    assert stream[32:34].tolist() == w[16, :, 0, 0].tolist()
    assert stream.size * 2 == 128


def test_dc_h_outside_w():
    # K=1, C=1, R=2, S=2: W scans before H
    w = np.array([[[[1, 2], [3, 4]]]], dtype=np.int8)
    assert pack_weight_dc(w, "int8", NV_FULL)[:4].view(np.int8).tolist() == [1, 2, 3, 4]


def test_deconv_reverse_raster():
    w = np.array([[[[1, 2], [3, 4]]]], dtype=np.int8)
    streams = pack_weight_deconv(w, "int8", NV_FULL)
    assert streams[0][:4].view(np.int8).tolist() == [4, 3, 2, 1]


def test_deconv_split_by_hand():
    w = np.arange(1 * 1 * 3 * 3, dtype=np.int8).reshape(1, 1, 3, 3)
    parts = split_deconv_weights(w, 2, 2)
    assert [p.shape for p in parts] == [(1, 1, 2, 2)] * 4
    assert parts[0][0, 0].tolist() == [[0, 2], [6, 8]]
    assert parts[1][0, 0].tolist() == [[1, 0], [7, 0]]
    assert parts[2][0, 0].tolist() == [[3, 5], [0, 0]]
    assert np.array_equal(merge_deconv_weights(parts, w.shape, 2, 2), w)


def test_image_pre_extension_by_hand():
    # channel s*C + c: a 3-channel image weight of width 2 becomes 6 channels of width 1
    w = np.arange(1 * 3 * 1 * 2, dtype=np.int16).reshape(1, 3, 1, 2)
    ext = pre_extend_image(w)
    assert ext.shape == (1, 6, 1, 1)
    assert ext[0, :, 0, 0].tolist() == [w[0, 0, 0, 0], w[0, 1, 0, 0], w[0, 2, 0, 0],
                                        w[0, 0, 0, 1], w[0, 1, 0, 1], w[0, 2, 0, 1]]
    assert np.array_equal(undo_pre_extend_image(ext, 3), w)


def test_image_post_extension_two_lines_by_hand():
    # K=1, C=1, R=3, S=2, post-extension 2: rows (0,1) merged, row 2 alone (no zeros)
    w = np.arange(6, dtype=np.int8).reshape(1, 1, 3, 2)
    data = pack_weight_image(w, "int8", NV_FULL, post_extension=2)[:6].view(np.int8)
    assert data.tolist() == [0, 1, 2, 3, 4, 5]
    w2 = np.arange(12, dtype=np.int8).reshape(2, 1, 3, 2)
    got = pack_weight_image(w2, "int8", NV_FULL, post_extension=2)[:12].view(np.int8)
    assert got.tolist() == [0, 1, 2, 3, 6, 7, 8, 9, 4, 5, 10, 11]


def test_winograd_transform_by_hand():
    g = np.arange(9, dtype=np.float64).reshape(3, 3)
    m = winograd_transform(g)
    assert m[0, 0] == g[0, 0]
    assert m[1, 1] == g.sum() / 4
    assert m[3, 3] == g[2, 2]
    assert np.allclose(winograd_inverse(m), g)
    assert np.allclose(winograd_inverse(winograd_transform(g, 4.0), 4.0), g)


def test_winograd_extension_stride2():
    # 6x6 kernel with stride 2 -> 3x3 with 4x the channels (padded to 32 bytes first)
    w = np.arange(1 * 1 * 6 * 6, dtype=np.int16).reshape(1, 1, 6, 6).astype(np.int8)
    ext = winograd_extend(w, 2, "int8")
    assert ext.shape == (1, 4 * 32, 3, 3)
    # extended channel (py*2 + px)*32 + c holds w[c, 2y + py, 2x + px]
    assert ext[0, 0].tolist() == w[0, 0, 0::2, 0::2].tolist()
    assert ext[0, 32].tolist() == w[0, 0, 0::2, 1::2].tolist()
    assert ext[0, 64].tolist() == w[0, 0, 1::2, 0::2].tolist()
    with pytest.raises(LayoutError, match="does not extend to 3x3"):
        winograd_extend(np.zeros((1, 1, 5, 5), np.int8), 1, "int8")


def test_winograd_small_cube_order_by_hand():
    # K=2 int16, C=4: cube of K0 (c fastest, then W, then H), then cube of K1
    w = np.arange(2 * 4 * 16, dtype=np.int16).reshape(2, 4, 4, 4)
    stream = pack_weight_winograd(w, "int16", NV_FULL).view("<i2")
    assert stream.size == 128  # 2 x 64 elements x 2 bytes = 256 bytes
    assert stream[:8].tolist() == [w[0, 0, 0, 0], w[0, 1, 0, 0], w[0, 2, 0, 0], w[0, 3, 0, 0],
                                   w[0, 0, 0, 1], w[0, 1, 0, 1], w[0, 2, 0, 1], w[0, 3, 0, 1]]
    assert stream[64] == w[1, 0, 0, 0]


def test_winograd_weights_fp16_and_int():
    g = np.arange(9, dtype=np.float16).reshape(1, 1, 3, 3)
    bits = winograd_weights(g, "fp16")
    assert bits.shape == (1, 16, 4, 4)  # channels padded to a 32-byte atom
    assert bits.view(np.float16)[0, 0, 1, 1] == np.float16(9.0)  # 36 / 4
    ints = winograd_weights(np.arange(9, dtype=np.int8).reshape(1, 1, 3, 3), "int8", scale=4)
    assert ints[0, 0, 1, 1] == 36


def test_compression_by_hand():
    # int8, two groups of 4 bytes: [0, 5, 0, 7] [1, 0, 0, 0]
    stream = np.array([0, 5, 0, 7, 1, 0, 0, 0], dtype=np.int8).view(np.uint8)
    comp = compress_weights(stream, "int8", [4, 4])
    assert comp.wmb[0] == 0b00011010  # bit i = element i, little-endian
    assert comp.wgs[:8].view("<u4").tolist() == [2, 1]
    assert comp.data[:3].view(np.int8).tolist() == [5, 7, 1]
    assert comp.data.size == comp.wmb.size == comp.wgs.size == 128
    assert np.array_equal(decompress_weights(comp, "int8", [4, 4]), stream)


def test_compression_keeps_negative_zero_fp16():
    stream = np.array([0x8000, 0, 0x3C00], dtype="<u2").view(np.uint8)
    comp = compress_weights(stream, "fp16", [6])
    assert comp.wgs[:4].view("<u4")[0] == 4
    assert np.array_equal(decompress_weights(comp, "fp16", [6]), stream)


def _sparse(rng, shape, precision):
    w = random_weights(rng, shape, precision)
    w[rng.random(shape) < 0.5] = 0
    return w


@settings(max_examples=25, deadline=None)
@given(precision=st.sampled_from(PRECISIONS), k=st.integers(1, 40), c=st.integers(1, 80),
       r=st.integers(1, 3), s=st.integers(1, 3), reverse=st.booleans(),
       cfg=st.sampled_from([NV_FULL, NV_SMALL]), seed=st.integers(0, 2**32 - 1))
def test_dc_round_trip_and_compression(precision, k, c, r, s, reverse, cfg, seed):
    w = _sparse(np.random.default_rng(seed), (k, c, r, s), precision)
    data = pack_weight_dc(w, precision, cfg, reverse=reverse)
    assert data.size % 128 == 0 and data.size - w.nbytes < 128
    assert np.array_equal(unpack_weight_dc(data, w.shape, precision, cfg, reverse=reverse), w)
    groups = group_bytes(k, c * r * s * w.itemsize, weight_group_size(precision, cfg))
    comp = compress_weights(data, precision, groups)
    back = decompress_weights(comp, precision, groups)
    assert np.array_equal(back, data[: w.nbytes])


@settings(max_examples=20, deadline=None)
@given(precision=st.sampled_from(PRECISIONS), k=st.integers(1, 20), c=st.integers(1, 4),
       r=st.integers(1, 7), s=st.integers(1, 4), post=st.sampled_from([1, 2, 4]),
       seed=st.integers(0, 2**32 - 1))
def test_image_round_trip(precision, k, c, r, s, post, seed):
    w = random_weights(np.random.default_rng(seed), (k, c, r, s), precision)
    data = pack_weight_image(w, precision, NV_FULL, post_extension=post)
    assert np.array_equal(unpack_weight_image(data, w.shape, precision, NV_FULL,
                                              post_extension=post), w)
    if post == 1:  # pre-extension then plain DC mapping
        assert np.array_equal(data, pack_weight_dc(pre_extend_image(w), precision, NV_FULL))


@settings(max_examples=20, deadline=None)
@given(precision=st.sampled_from(PRECISIONS), k=st.integers(1, 40), c4=st.integers(1, 20),
       seed=st.integers(0, 2**32 - 1))
def test_winograd_round_trip(precision, k, c4, seed):
    w = random_weights(np.random.default_rng(seed), (k, 4 * c4, 4, 4), precision)
    data = pack_weight_winograd(w, precision, NV_FULL)
    assert np.array_equal(unpack_weight_winograd(data, w.shape, precision, NV_FULL), w)


@settings(max_examples=20, deadline=None)
@given(k=st.integers(1, 3), c=st.integers(1, 3), r=st.integers(1, 7), s=st.integers(1, 7),
       sx=st.integers(1, 3), sy=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_deconv_split_round_trip(k, c, r, s, sx, sy, seed):
    w = random_weights(np.random.default_rng(seed), (k, c, r, s), "int16")
    assert np.array_equal(merge_deconv_weights(split_deconv_weights(w, sx, sy), w.shape, sx, sy), w)


def test_errors():
    with pytest.raises(LayoutError, match="not a multiple of 4"):
        pack_weight_winograd(np.zeros((1, 6, 4, 4), np.int8), "int8", NV_FULL)
    with pytest.raises(LayoutError, match="post-extension 4 of 32 channels exceeds"):
        pack_weight_image(np.zeros((1, 4, 4, 8), np.int8), "int8", NV_FULL, post_extension=4)
    with pytest.raises(LayoutError, match="post-extension 3 must be 1, 2 or 4"):
        pack_weight_image(np.zeros((1, 1, 4, 1), np.int8), "int8", NV_FULL, post_extension=3)
    with pytest.raises(LayoutError, match="int8 data out of range"):
        pack_weight_dc(np.full((1, 1, 1, 1), 300), "int8", NV_FULL)


def test_winograd_fp16_transform_past_the_range_is_inf_quietly():
    """G W G^T of weights at fp16's largest value passes 65504: those elements are Inf (as an
    fp16 conversion gives), the others exact, and no overflow warning reaches the user."""
    import warnings

    w = np.zeros((1, 8, 3, 3), np.float16)
    w[0, 0] = 65504.0  # every tap: the centre element of the transform is 65504 * 9 / 4
    w[0, 1, 0, 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = winograd_weights(w.view(np.uint16), "fp16").view(np.float16)
    plane0, plane1 = out[0, 0].astype(np.float64), out[0, 1].astype(np.float64)
    assert np.isposinf(plane0).any()
    expected = winograd_transform(w[0, 1].astype(np.float64))
    np.testing.assert_array_equal(plane1, expected.astype(np.float16))
