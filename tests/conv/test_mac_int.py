"""sim.conv.mac_int: every product type and chunking it picks gives the exact integer sums."""

from types import SimpleNamespace

import numpy as np
import pytest

from sim.conv import mac_int
from sim.conv.mac_int import conv_sum, im2col, magnitude, padded_input, sum_types


def _layer(h, w, r, s, stride=1, pad=0, dilation=1, pad_value=0, element_bytes=1):
    """The geometry conv_sum reads (a decoded ConvLayer's fields)."""
    out_h = (h + 2 * pad - ((r - 1) * dilation + 1)) // stride + 1
    out_w = (w + 2 * pad - ((s - 1) * dilation + 1)) // stride + 1
    return SimpleNamespace(pad_top=pad, pad_left=pad, out_height=out_h, out_width=out_w,
                           stride_y=stride, stride_x=stride, dilation_y=dilation,
                           dilation_x=dilation, kernel_height=r, kernel_width=s,
                           pad_value=pad_value, element_bytes=element_bytes)


def _exact(cube, weights, layer):
    """The sums in Python integers (object arrays): no float, no overflow."""
    xp, _, _ = padded_input(cube, layer, mac_int.pad_value_of(layer))
    cols = im2col(xp, layer).astype(object)
    k = weights.shape[0]
    w = weights.reshape(k, -1).astype(object)
    n, crs = cube.shape[0], w.shape[1]
    out = [w.dot(cols[b].reshape(crs, -1)) for b in range(n)]
    return np.array(out, dtype=object).reshape(n, k, layer.out_height, layer.out_width)


def _exact_int64(cube, weights, layer):
    """The sums as an int64 matrix product (numpy's integer loops: no float; exact, as
    every sum is below 2**47), without the simulator's plan, chunks or threads."""
    xp, _, _ = padded_input(cube, layer, mac_int.pad_value_of(layer))
    cols = im2col(xp, layer).astype(np.int64)
    k = weights.shape[0]
    w = weights.reshape(k, -1).astype(np.int64)
    n, crs = cube.shape[0], w.shape[1]
    out = [w @ cols[b].reshape(crs, -1) for b in range(n)]
    return np.array(out).reshape(n, k, layer.out_height, layer.out_width)


def _check(cube, weights, layer):
    got = conv_sum(cube, weights, layer)
    assert got.dtype == np.int64
    assert (got.astype(object) == _exact(cube, weights, layer)).all()


def test_magnitude_of_the_most_negative_element():
    """np.abs(int8 -128) wraps to -128: the bound must still see 128."""
    assert magnitude(np.array([-128, 5], np.int8)) == 128
    assert magnitude(np.array([-32768, 7], np.int16)) == 32768
    assert magnitude(np.zeros(0, np.int8)) == 0


def test_minus_128_inputs_are_not_summed_in_float32():
    """Mostly -128 data and a few 1s: the sums pass 2**24 and are odd, which float32
    would round; a bound that took |-128| for 0 (or -128) would pick float32."""
    rng = np.random.default_rng(5)
    c, k = 160, 3
    cube = np.full((1, c, 4, 4), -128, np.int8)
    cube[0, ::7, 1, 2] = 1
    weights = rng.integers(100, 128, (k, c, 3, 3)).astype(np.int8) | 1
    layer = _layer(4, 4, 3, 3)
    got = conv_sum(cube, weights, layer)
    assert np.abs(got).max() >= 1 << 24 and (got & 1).any()
    _check(cube, weights, layer)


def test_float32_chunks_are_exact_at_their_bound():
    """Every term at the largest magnitude int8 allows: 1023 terms a chunk (128 * 128 *
    1023 < 2**24), five chunks, each sum at its limit."""
    c, k, hw = 512, 4, 32
    cube = np.full((1, c, hw + 2, hw + 2), -128, np.int8)
    cube[0, :, ::3, ::2] = 127
    weights = np.full((k, c, 3, 3), -128, np.int8)
    weights[1, ::5] = 127
    weights[2, :, 1] = 1
    layer = _layer(hw + 2, hw + 2, 3, 3)
    dtype, chunks = sum_types(weights.reshape(k, -1), 128, hw * hw)
    assert dtype is np.float32 and len(chunks) == 5 and chunks[0] == (0, 1023)
    assert [a for a, _ in chunks[1:]] == [b for _, b in chunks[:-1]] and chunks[-1][1] == c * 9
    _check(cube, weights, layer)


CASES = [  # (C, H, W, K, R, S, stride, pad, dilation, batches, data range, weight range)
    (64, 9, 11, 8, 3, 3, 1, 1, 1, 1, 128, 128),  # float32 whole
    (300, 40, 40, 6, 3, 3, 1, 1, 1, 1, 128, 128),  # float32 chunks
    (300, 12, 12, 6, 3, 3, 2, 1, 1, 2, 128, 128),  # few pixels: float64
    (16, 8, 8, 5, 3, 2, 1, 2, 2, 1, 32768, 32768),  # int16 terms: float64
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("case", CASES, ids=["f32", "f32-chunks", "f64", "int16"])
def test_random_layers_are_exact(case, threads, monkeypatch):
    """Also with the kernels shared among threads (every share worth a thread)."""
    monkeypatch.setattr(mac_int, "PARALLEL_MACS", 1)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    c, h, w, k, r, s, stride, pad, dilation, batches, xr, wr = case
    rng = np.random.default_rng(c * h + k)
    dtype = np.int8 if xr == 128 else np.int16
    cube = rng.integers(-xr, xr, (batches, c, h, w)).astype(dtype)
    weights = rng.integers(-wr, wr, (k, c, r, s)).astype(dtype)
    layer = _layer(h, w, r, s, stride, pad, dilation, pad_value=int(cube.min()),
                   element_bytes=dtype().itemsize)
    layer.pad_value &= 0xFFFF
    _check(cube, weights, layer)


def test_the_product_types_each_case_picks():
    """The cases above reach the paths they are named after."""
    picked = []
    for c, h, w, k, r, s, stride, pad, dilation, batches, xr, wr in CASES:
        wmat = np.full((k, c * r * s), wr - 1)
        layer = _layer(h, w, r, s, stride, pad, dilation)
        dtype, chunks = sum_types(wmat, xr, batches * layer.out_height * layer.out_width)
        picked.append((dtype, len(chunks) > 1))
    assert picked == [(np.float32, False), (np.float32, True), (np.float64, False),
                      (np.float64, False)]


def test_kernel_abs_sums_of_the_most_negative_weights():
    """|-128| and |-32768| are summed as 128 and 32768 (np.abs wraps them to themselves)."""
    w8 = np.array([[-128, -128, 127, 0], [-1, 2, -3, 4]], np.int8)
    assert mac_int.kernel_abs_sums(w8).tolist() == [383, 10]
    w16 = np.array([[-32768, 32767, -32768]], np.int16)
    assert mac_int.kernel_abs_sums(w16).tolist() == [98303]
    assert mac_int.kernel_abs_sums(np.array([[-5, 7]])).tolist() == [12]


CACC_CASES = [  # (C, H, W, K, R, S, stride, clip_truncate, data range, weights range)
    (16, 40, 40, 6, 3, 3, 1, 0, 128, 128),  # float32 products cast to int32 by the threads
    (16, 40, 40, 6, 3, 3, 1, 3, 128, 128),  # truncated: the int64 sums rounded
    (300, 40, 40, 6, 3, 3, 1, 0, 128, 128),  # float32 chunks: sums past 2**24
    (16, 5, 5, 70, 1, 1, 1, 0, 128, 128),  # few pixels: the kernels shared
    (8, 9, 9, 3, 3, 3, 1, 20, 32768, 32768),  # int16: saturates int32 unless truncated
    (8, 9, 9, 3, 3, 3, 1, 0, 32768, 32768),  # int16: saturated values counted
]


@pytest.mark.parametrize("prep", [False, True, "deferred"], ids=["", "prep", "deferred"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("case", CACC_CASES,
                         ids=["f32-int32", "truncate", "chunks", "kernels", "int16", "int16-sat"])
def test_conv_cacc_is_cacc_rounding_of_the_sums(case, threads, prep, monkeypatch):
    """conv_cacc gives what cacc_round_int32 makes of the exact sums: values,
    dtype int32 and saturation count, whichever path and split it takes, with the
    weights' WeightPrep made ahead or not, its float32 matrix made ahead or left to the
    threads (each converting its share of the kernels, when they share them)."""
    from sim.num.mac import cacc_round_int32

    monkeypatch.setattr(mac_int, "PARALLEL_MACS", 1)
    monkeypatch.setattr(mac_int, "ROW_SPLIT_PIXELS", 16)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    c, h, w, k, r, s, stride, truncate, xr, wr = case
    rng = np.random.default_rng(c * h + k + truncate)
    dtype = np.int8 if xr == 128 else np.int16
    cube = rng.integers(-xr, xr, (1, c, h, w)).astype(dtype)
    weights = rng.integers(-wr, wr, (k, c, r, s)).astype(dtype)
    if xr == 128 and c == 300:  # large terms, so that the sums pass 2**24
        cube[:] = np.where(cube < 0, -128, 127)
        weights[:] = np.where(weights < 0, -128, 127)
    layer = _layer(h, w, r, s, stride, 1, 1, pad_value=0, element_bytes=dtype().itemsize)
    layer.clip_truncate = truncate
    want, want_sat = cacc_round_int32(_exact_int64(cube, weights, layer), truncate)
    made = mac_int.WeightPrep(weights, float32=prep is True) if prep else None
    got, sat = mac_int.conv_cacc(cube, weights, layer, made)
    assert got.dtype == np.int32 and np.array_equal(got, want) and sat == want_sat
    if case[-3:] == (0, 32768, 32768):
        assert sat > 0


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CACC_CASES,
                         ids=["f32-int32", "truncate", "chunks", "kernels", "int16", "int16-sat"])
def test_channels_last_weights_sum_alike(case, threads, monkeypatch):
    """Weights stored (K, R, S, C) (the CDMA's unpack) go into the products in that order
    without a copy, the im2col rows following: the same CACC output on every path, for
    kernels of one and several positions, strides and dilations."""
    monkeypatch.setattr(mac_int, "PARALLEL_MACS", 1)
    monkeypatch.setattr(mac_int, "ROW_SPLIT_PIXELS", 16)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    c, h, w, k, r, s, stride, truncate, xr, wr = case
    rng = np.random.default_rng(7 * c + h + k)
    dtype = np.int8 if xr == 128 else np.int16
    cube = rng.integers(-xr, xr, (1, c, h, w)).astype(dtype)
    for kernel, dilation in (((r, s), 1), ((2, 3), 2), ((1, 1), 1)):
        weights = rng.integers(-wr, wr, (k, c, *kernel)).astype(dtype)
        if xr == 128 and c == 300:
            cube[:] = np.where(cube < 0, -128, 127)
            weights[:] = np.where(weights < 0, -128, 127)
        last = np.ascontiguousarray(weights.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        layer = _layer(h, w, *kernel, stride, 1, dilation, element_bytes=dtype().itemsize)
        layer.clip_truncate = truncate
        prep = mac_int.WeightPrep(last)
        assert prep.channels_last == (kernel != (1, 1)) and prep.wmat.base is not None
        want = mac_int.conv_cacc(cube, weights, layer, mac_int.WeightPrep(weights))
        got = mac_int.conv_cacc(cube, last, layer, prep)
        assert got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0])
        assert got[1] == want[1]


def test_the_paths_each_cacc_case_takes():
    """The cases above reach what they are named after: the int32 cast (float32 whole,
    no truncation), the chunks, and a row split for many pixels only."""
    picked = []
    for c, h, w, k, r, s, stride, truncate, xr, wr in CACC_CASES[:4]:
        layer = _layer(h, w, r, s, stride, 1)
        big = 127 if c == 300 else wr - 1
        dtype, chunks = sum_types(np.full((k, c * r * s), big), xr,
                                  layer.out_height * layer.out_width)
        picked.append((dtype, len(chunks) > 1, truncate))
    assert picked == [(np.float32, False, 0), (np.float32, False, 3), (np.float32, True, 0),
                      (np.float32, False, 0)]


def test_chunked_sums_past_int32_are_saturated_not_cast(monkeypatch):
    """float32 chunks bound each chunk, not the sum: sums past 2**31 (15000 channels of
    -128 * -128 at the centre pixel) must go through CACC's saturation."""
    monkeypatch.setattr(mac_int, "MIN_CHUNK_PIXELS", 1)
    monkeypatch.setattr(mac_int, "MIN_CHUNK_ROWS", 1)
    c = 15000
    cube = np.full((1, c, 3, 3), -128, np.int8)
    weights = np.full((1, c, 3, 3), -128, np.int8)
    layer = _layer(3, 3, 3, 3, 1, 1)
    layer.clip_truncate = 0
    dtype, chunks = sum_types(weights.reshape(1, -1), 128, 9)
    assert dtype is np.float32 and len(chunks) > 1
    got, sat = mac_int.conv_cacc(cube, weights, layer)
    assert got[0, 0, 1, 1] == (1 << 31) - 1 and sat == 1


def test_weight_prep_sums_what_sum_types_would():
    """WeightPrep's magnitude and largest |w| sum (made ahead, or when first asked) are
    sum_types' own; its float32 matrix is the weights'."""
    rng = np.random.default_rng(11)
    for dtype, k, crs in ((np.int8, 5, 40), (np.int8, 7, 3000), (np.int16, 3, 50)):
        info = np.iinfo(dtype)
        weights = rng.integers(info.min, info.max + 1, (k, crs, 1, 1)).astype(dtype)
        weights[0, 0] = info.min
        prep = mac_int.WeightPrep(weights)
        wmat = weights.reshape(k, -1)
        assert prep.magnitude == magnitude(wmat)
        assert prep.abs_sum_max == int(mac_int.kernel_abs_sums(wmat).max())
        for xmax in (1, 127, 128, 3000):
            assert sum_types(wmat, xmax, 4096, prep) == sum_types(wmat, xmax, 4096)
        if dtype == np.int8:
            assert np.array_equal(prep.float32, wmat.astype(np.float32))


@pytest.mark.parametrize("stride", [1, 2])
def test_a_layer_reading_no_pad_element_sums_its_cube_uncopied(stride):
    """1x1 kernels without padding (most of ResNet's layers) read the cube itself."""
    rng = np.random.default_rng(stride)
    cube = rng.integers(-128, 128, (1, 24, 9, 9)).astype(np.int8)
    weights = rng.integers(-128, 128, (6, 24, 1, 1)).astype(np.int8)
    layer = _layer(9, 9, 1, 1, stride, 0, pad_value=77)
    assert padded_input(cube, layer, 77)[0] is cube
    _check(cube, weights, layer)
    layer.clip_truncate = 0
    got, _ = mac_int.conv_cacc(cube, weights, layer)
    assert np.array_equal(got, conv_sum(cube, weights, layer))


# (data dtype, data magnitude, weight magnitude, C*R*S, pad): around the float32 edge
# 2**24 of dtype max * max|w| * C*R*S, where data_sum_types decides without the data
DATA_TYPE_CASES = [
    (np.int8, 128, 127, 1033, 0),  # 128*127*1033 > 2**24: looks at the data
    (np.int8, 128, 127, 1032, -128),  # below: float32 whole, data unseen
    (np.int8, 3, 127, 4608, 0),  # small data: float32 by the data's own magnitude
    (np.int8, 128, 128, 1024, 5),  # 2**24 exactly is not below it: looks, chunks
    (np.int8, 100, 100, 1000, 0),
    (np.int16, 32768, 127, 4, -32768),
    (np.int16, 32768, 127, 5, 0),  # 32768*127*5 > 2**24
    (np.int16, 200, 30000, 64, 7),
    (np.int64, 128, 127, 64, 0),  # no dtype bound of use: the data's
]


@pytest.mark.parametrize("case", DATA_TYPE_CASES)
def test_data_sum_types_is_sum_types_of_the_data_magnitude(case):
    dtype, xmax, wmax, crs, pad = case
    rng = np.random.default_rng(crs + xmax)
    xp = rng.integers(-xmax + 1, xmax, (1, 3, 37, 41)).astype(dtype)
    xp[0, 0, 0, 0] = -xmax
    wmat = rng.integers(-wmax + 1, wmax, (5, crs)).astype(np.int16)
    wmat[2, crs - 1] = -wmax
    pixels = 4096
    expect = sum_types(wmat, max(magnitude(xp), abs(pad)), pixels)
    assert mac_int.data_sum_types(wmat, xp, pad, pixels) == expect
    prep = mac_int.WeightPrep(wmat.reshape(5, crs, 1, 1), float32=False)
    assert mac_int.data_sum_types(prep.wmat, xp, pad, pixels, prep) == expect


def test_data_sum_types_skips_the_data_only_when_its_dtype_settles_it(monkeypatch):
    seen = []
    monkeypatch.setattr(mac_int, "magnitude", lambda a: seen.append(a.shape) or 127)
    wmat = np.ones((2, 1032), np.int8)
    xp = np.zeros((1, 1, 4, 4), np.int8)
    assert mac_int.data_sum_types(wmat, xp, 0, 16) == (np.float32, [(0, 1032)])
    assert seen == [(2, 1032)]  # the weights' only
    mac_int.data_sum_types(np.ones((2, 1033), np.int8), xp, 0, 16)
    assert (1, 1, 4, 4) in seen[1:]


# (piece bytes, least piece pixels, output rows of a float32 piece of the layer below:
# its columns take 300*9*40*4 = 432000 bytes a row)
PIECE_CASES = [(1, 1, 1), (1, 40, 1), (1, 100, 3), (432000 * 3, 1, 3), (432000 * 3 - 1, 1, 2),
               (1 << 40, 1, None)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("piece", PIECE_CASES, ids=["row", "row-by-pixels", "3-rows",
                                                    "3-rows-by-bytes", "2-rows", "whole"])
def test_output_rows_in_pieces_sum_alike(piece, threads, monkeypatch):
    """The threads' output rows made a piece of columns at a time: the same sums and
    saturation for whole float32, chunked float32 and float64 products."""
    from sim.num.mac import cacc_round_int32

    piece_bytes, piece_pixels, rows = piece
    monkeypatch.setattr(mac_int, "PARALLEL_MACS", 1)
    monkeypatch.setattr(mac_int, "ROW_SPLIT_PIXELS", 16)
    monkeypatch.setattr(mac_int, "COLUMN_PIECE_BYTES", piece_bytes)
    monkeypatch.setattr(mac_int, "MIN_PIECE_PIXELS", piece_pixels)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    pixels = []  # of each product
    plain = mac_int._kernel_sums
    monkeypatch.setattr(mac_int, "_kernel_sums",
                        lambda wf, col, chunks, out: pixels.append(out.shape[1]) or
                        plain(wf, col, chunks, out))
    rng = np.random.default_rng(piece_bytes % 1000 + threads)
    for xr, wr in ((128, 128), (128, 2), (1 << 12, 1 << 12)):  # f32 chunks, f32, f64
        dtype = np.int8 if xr == 128 else np.int16
        cube = rng.integers(-xr, xr, (1, 300, 40, 40)).astype(dtype)
        weights = rng.integers(-wr, wr, (6, 300, 3, 3)).astype(dtype)
        layer = _layer(40, 40, 3, 3, 1, 1, 1, pad_value=3, element_bytes=dtype().itemsize)
        layer.clip_truncate = 2
        want = cacc_round_int32(_exact_int64(cube, weights, layer), 2)
        pixels.clear()
        got = mac_int.conv_cacc(cube, weights, layer, mac_int.WeightPrep(weights))
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
        assert sum(pixels) == 1600
        if wr == 2 and rows is not None:  # float32 whole: pieces of ``rows`` rows
            assert max(pixels) == rows * 40
