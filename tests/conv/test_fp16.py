"""fp16 direct convolution: exact sums, Inf as 65536, NaN priority, NaN flush, counters.

Values are chosen so the documented arithmetic is exact (same block exponent
for every lane, integer sums well inside fp32): the result must then be the
fp32 of the exact sum, whatever the internal order.  Random bit patterns are held
to the definition: every output pixel's window, block by block in the CSC's order
(``num.mac_reference.cmac_block``), accumulated by CACC.
"""

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest
from num.mac_reference import cmac_block

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import (
    MIN_GROUP_KERNELS,
    MIN_TILE,
    SPLIT_PIXELS_FROM,
    STEP,
    TILE,
    VECTOR,
    conv_fp16,
    tile_plan,
)
from sim.jit import njit
from sim.num.mac import cacc_accumulate, cacc_to_fp32
from sim.program.conv import run_conv

from .test_conv import reference_conv

CDMA = "NVDLA_CDMA"


def fp16(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def fp32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def small_ints(rng, shape):
    """fp16 integers 2..15 (exponents 16..18: one block exponent) with signs, some zeros."""
    mag = rng.integers(2, 16, shape).astype(np.float64)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    zero = rng.random(shape) < 0.1
    return np.where(zero, 0.0, mag * sign)


@pytest.mark.parametrize("c,k,r,s,pad", [(70, 5, 3, 3, (1, 1, 1, 1)), (16, 3, 2, 1, (0, 0, 0, 1)),
                                         (33, 17, 1, 3, (2, 0, 0, 0))])
def test_fp16_exact_sums(c, k, r, s, pad):
    rng = np.random.default_rng(c * 100 + k)
    x = small_ints(rng, (c, 5, 6))
    w = small_ints(rng, (k, c, r, s))
    out, counters = run_conv("nv_full", fp16(x), fp16(w), precision="fp16", pad=pad,
                             pad_value=int(fp16(2.0)))
    want = reference_conv(x, w, (1, 1), (1, 1), pad, 2.0, out.shape[1:]).astype(np.float64)
    np.testing.assert_array_equal(out, fp32_bits(want))
    assert counters[(CDMA, "D_NAN_INPUT_DATA_NUM_0")] == 0
    assert counters[(CDMA, "D_INF_INPUT_WEIGHT_NUM_0")] == 0


def test_fp16_inf_is_65536():
    x = np.zeros((4, 1, 2))
    x[0, 0, 0] = np.inf
    x[1, 0, 1] = -np.inf
    x[2] = 2.0
    w = np.zeros((2, 4, 1, 1))
    w[0, :, 0, 0] = [2.0, 2.0, 4.0, 0.0]
    w[1, :, 0, 0] = [0.0, 4.0, 2.0, 2.0]
    out, counters = run_conv("nv_full", fp16(x), fp16(w), precision="fp16")
    inf = 65536.0
    want = [[2 * inf + 8, -2 * inf + 8], [4, -4 * inf + 4]]
    np.testing.assert_array_equal(out[:, 0, :], fp32_bits(want))
    assert counters[(CDMA, "D_INF_INPUT_DATA_NUM_0")] == 2


@pytest.mark.parametrize("flush", [False, True])
def test_fp16_nan_priority_flush_and_counters(flush):
    x = np.full((20, 2, 2), 2.0)
    bits = fp16(x)
    bits[5, 0, 0] = 0x7E01  # a later channel
    bits[3, 0, 0] = 0xFD55  # the first NaN in channel order
    bits[7, 1, 1] = 0x7C00  # +Inf
    w = np.full((2, 20, 1, 1), 2.0)
    wbits = fp16(w)
    wbits[1, 10, 0, 0] = 0x7C01  # a weight NaN beats any data NaN
    out, counters = run_conv("nv_full", bits, wbits, precision="fp16", nan_to_zero=flush)
    k0 = out[0]
    if flush:
        assert k0[0, 0] == fp32_bits(2.0 * 2.0 * 18)  # both NaN lanes read as +0
    else:
        assert k0[0, 0] == 0xFF800155
    assert k0[0, 1] == fp32_bits(80.0)
    assert k0[1, 1] == fp32_bits(2.0 * 65536 + 2.0 * 2.0 * 19)
    assert np.all(out[1] == 0x7F800001)
    # raw counts, flush or not: the padding lanes of the 16-channel atoms hold zeros
    assert counters[(CDMA, "D_NAN_INPUT_DATA_NUM_0")] == 2
    assert counters[(CDMA, "D_INF_INPUT_DATA_NUM_0")] == 1
    assert counters[(CDMA, "D_NAN_INPUT_WEIGHT_NUM_0")] == 1
    assert counters[(CDMA, "D_INF_INPUT_WEIGHT_NUM_0")] == 0


@pytest.mark.parametrize("dead_weight", [0x0000, 0x8000])
def test_nan_in_a_lane_every_kernel_ignores_still_decides_its_blocks(dead_weight):
    """Lanes whose weights are all zero are skipped for the products, not for NaNs."""
    layer = SimpleNamespace(stride_y=1, stride_x=1, dilation_y=1, dilation_x=1, pad_top=1,
                            pad_left=1, pad_value=0, out_height=4, out_width=4)
    x = np.full((1, 8, 4, 4), 0x3C00, np.uint16)  # 1.0
    x[0, 3, 1, 2] = 0x7E05  # a NaN in channel 3
    w = np.full((2, 8, 3, 3), 0x3C00, np.uint16)
    w[:, 3] = dead_weight  # channel 3 is dead in every kernel
    out = conv_fp16(x, w, layer, 8)
    touched = np.zeros((4, 4), bool)
    touched[0:3, 1:4] = True  # outputs whose 3x3 window covers pixel (1, 2)
    for k in range(2):
        assert (out[0, k][touched] == 0x7F800205).all()
        assert (out[0, k][~touched] & 0x7F800000 != 0x7F800000).all()


def _pixel_windows(x, layer, r, s):
    """Each output pixel's input window (N * H' * W', C, R, S): the CSC's pad value outside."""
    n, c, h, w = x.shape
    oy, ox = np.meshgrid(np.arange(layer.out_height), np.arange(layer.out_width), indexing="ij")
    iy = oy[..., None, None] * layer.stride_y + np.arange(r)[:, None] * layer.dilation_y
    ix = ox[..., None, None] * layer.stride_x + np.arange(s)[None, :] * layer.dilation_x
    iy, ix = iy - layer.pad_top, ix - layer.pad_left
    inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    win = x[:, :, iy.clip(0, h - 1), ix.clip(0, w - 1)]  # (N, C, H', W', R, S)
    win = np.where(inside, win, np.uint16(layer.pad_value))
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(-1, c, r, s)


@njit
def _cmac_cacc(windows, weights, block):
    """CACC's fp32 bits (P, K) of each window (P, C, R, S) against each kernel (K, C, R, S),
    fp16 bits: the blocks in the CSC's order (channel groups of ``block`` outermost, kernel
    positions row-major inside), each as the definition states it (``cmac_block``)."""
    n_p, n_c, n_r, n_s = windows.shape
    n_k = weights.shape[0]
    out = np.zeros((n_p, n_k), np.uint32)
    for p in range(n_p):
        for k in range(n_k):
            acc_e, acc_m = 0, 0
            for c0 in range(0, n_c, block):
                c1 = min(c0 + block, n_c)
                for r in range(n_r):
                    for s in range(n_s):
                        exp, man = cmac_block(windows[p, c0:c1, r, s], weights[k, c0:c1, r, s])
                        acc_e, acc_m = cacc_accumulate(acc_e, acc_m, exp, man)
            out[p, k] = cacc_to_fp32(acc_e, acc_m)
    return out


def reference_fp16(x, wt, layer, block):
    """The definition of conv_fp16's output (N, K, H', W'): every output pixel's window."""
    k, _, r, s = wt.shape
    out = _cmac_cacc(_pixel_windows(x, layer, r, s), wt, block)
    return out.reshape(x.shape[0], layer.out_height, layer.out_width, k).transpose(0, 3, 1, 2)


def random_bits(rng, shape, zeros=0.2):
    """Random fp16 patterns (Inf, denormals, every exponent), a fraction of them zero,
    without NaNs (tests plant theirs)."""
    bits = rng.integers(0, 1 << 16, shape).astype(np.uint16)
    bits[rng.random(shape) < zeros] = 0
    bits[((bits >> 10) & 31 == 31) & (bits & 0x3FF != 0)] = 0x7C00
    return bits


def plant(rng, bits, values):
    bits.reshape(-1)[rng.choice(bits.size, len(values), replace=False)] = values


def make_layer(out_hw, stride=(1, 1), dil=(1, 1), pad=(0, 0), pad_value=0):
    return SimpleNamespace(stride_y=stride[0], stride_x=stride[1], dilation_y=dil[0],
                           dilation_x=dil[1], pad_top=pad[0], pad_left=pad[1],
                           pad_value=pad_value, out_height=out_hw[0], out_width=out_hw[1])


def padded_small_layer(rng, channels: int, kernels: int, nan_pad: bool):
    """(data, weights, layer) of a small padded, strided layer: 3 x 3 output pixels of a
    3 x 3 kernel, stride 2, padding 1, over a 5 x 5 input; the pad value a number, or a
    NaN."""
    x = random_bits(rng, (1, channels, 5, 5))
    wt = random_bits(rng, (kernels, channels, 3, 3))
    pad_value = 0xFE21 if nan_pad else int(fp16(-1.5)[()])
    return x, wt, make_layer((3, 3), (2, 2), (1, 1), (1, 1), pad_value)


@pytest.mark.parametrize("case", ["strided_dilated", "wide", "nans"])
def test_fp16_tiles_are_the_definition(case):
    """The tiled kernel (pixels vectorised, rows of the data tabulated) against the
    definition on every output pixel: random bit patterns (Inf, denormals, zeros, all
    exponents), dead lanes, two channel groups, batches, tiles of unequal pixel counts,
    pad values and NaNs."""
    rng = np.random.default_rng(len(case))
    n, c, k, r, s, h, w = {"strided_dilated": (2, 70, 5, 3, 2, 9, 11),
                           "wide": (1, 40, 33, 2, 2, 16, 19),
                           "nans": (1, 24, 7, 3, 3, 8, 8)}[case]
    stride, dil, pad = ((2, 1), (1, 2), (1, 2, 0, 1)) if case == "strided_dilated" else \
        ((1, 1), (1, 1), (1, 1, 1, 1))
    out_h = (h + pad[0] + pad[2] - (r - 1) * dil[0] - 1) // stride[0] + 1
    out_w = (w + pad[1] + pad[3] - (s - 1) * dil[1] - 1) // stride[1] + 1
    layer = make_layer((out_h, out_w), stride, dil, pad, int(fp16(-1.5)[()]))
    x = random_bits(rng, (n, c, h, w))
    wt = random_bits(rng, (k, c, r, s), zeros=0)
    wt[:, 3] = 0  # a dead lane
    if case == "nans":
        plant(rng, x, [0x7E01, 0xFC02, 0x7D55, 0xFFFF])
        plant(rng, wt, [0x7C07, 0xFE00])
    assert n * out_h * out_w >= MIN_TILE and (n * out_h * out_w) % TILE
    got = conv_fp16(x, wt, layer, 64)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, 64))
    assert ((got & 0x7F800000) == 0x7F800000).any() == (case == "nans")


@pytest.mark.parametrize("threads,plan", [(1, None), (2, None), (3, None), (2, (1, 1)),
                                         (2, (7, 1)), (2, (1, 2)), (3, (2, 3)), (2, (3, 5))])
def test_fp16_any_tiling_is_the_definition(threads, plan, monkeypatch):
    """However the output pixels are cut into tiles and the kernels into groups (tiles
    across lines and batches, one tile, pieces taken by several threads one by one, groups
    of one kernel), every pixel is the definition's."""
    rng = np.random.default_rng(threads)
    layer = make_layer((5, 6), (2, 1), (1, 2), (1, 2), int(fp16(-1.5)[()]))
    x = random_bits(rng, (2, 70, 9, 11))
    wt = random_bits(rng, (5, 70, 3, 2), zeros=0)
    plant(rng, x, [0x7E01])
    monkeypatch.setattr(mac_fp16, "cores", lambda: threads)
    if plan is not None:
        monkeypatch.setattr(mac_fp16, "tile_plan", lambda pixels, kernels, threads: plan)
    got = conv_fp16(x, wt, layer, 64)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, 64))


def test_fp16_layers_after_layers_and_side_by_side_are_the_definition():
    """The operands' buffers are kept between layers: a layer after a larger one (stale
    bytes past its own), after a smaller one (a grown buffer) and two layers at the same
    time (one buffer each) are each the definition's."""
    rng = np.random.default_rng(11)
    layers = []
    for c, k, hw in ((70, 5, 9), (24, 40, 16), (70, 5, 9), (33, 9, 12)):
        layer = make_layer((hw - 2, hw - 2), pad_value=int(fp16(-1.5)[()]))
        x, wt = random_bits(rng, (1, c, hw, hw)), random_bits(rng, (k, c, 3, 3), zeros=0.1)
        layers.append((x, wt, layer, reference_fp16(x, wt, layer, 64)))
    for x, wt, layer, want in layers:
        np.testing.assert_array_equal(conv_fp16(x, wt, layer, 64), want)
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda case: conv_fp16(*case[:3], 64), layers[:2]))
    for out, (*_, want) in zip(got, layers[:2], strict=True):
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("n_k,width,skew", [(5, 70, 0), (64, 64, 1), (33, 7, 17), (1, 1, 63)])
def test_tile_buffers_start_on_cache_lines_and_do_not_overlap(n_k, width, skew):
    """The tiles' work arrays (carved from a kept buffer that may start anywhere) each
    start on a cache line, have their layout's shapes and share no byte."""
    layout = mac_fp16._tile_layout(n_k, width)
    buf = np.zeros(mac_fp16._layout_bytes(layout) + skew, np.uint8)[skew:]
    arrays = [a for part in mac_fp16._tile_buffers(buf, layout) for a in part]
    specs = [spec for part in layout for spec in part]
    assert [(a.shape, a.dtype) for a in arrays] == [(s, np.dtype(t)) for s, t in specs]
    for i, a in enumerate(arrays):
        assert a.ctypes.data % mac_fp16.LINE == 0 and np.shares_memory(a, buf)
        a[...] = i + 1  # every byte its own: a later array would overwrite an earlier one
    for i, a in enumerate(arrays):
        assert (a == i + 1).all()


@pytest.mark.parametrize("channels", [70, 3])
def test_fp16_tiles_on_garbage_buffers_are_the_definition(channels):
    """The kept work arrays start with whatever bytes (the kernel's scratch is zeroed, the
    rest written before it is read): a layer whose buffers hold random bytes is the
    definition's, NaNs, pad and dead lanes included, and a layer of fewer lanes than a
    group of the kernel (3: the missing lanes read tables never built)."""
    rng = np.random.default_rng(5)
    layer = make_layer((7, 9), (1, 1), (1, 1), (1, 1), int(fp16(-1.5)[()]))
    x = random_bits(rng, (2, channels, 7, 9))
    wt = random_bits(rng, (9, channels, 3, 3), zeros=0.1)
    wt[:, 5 % channels] = 0
    plant(rng, x, [0x7E01])
    want = reference_fp16(x, wt, layer, 64)
    with mac_fp16._scratch("tiles", 1 << 20) as a, mac_fp16._scratch("tiles", 1 << 20) as b:
        a[:] = rng.integers(0, 256, a.size)
        b[:] = rng.integers(0, 256, b.size)
    np.testing.assert_array_equal(conv_fp16(x, wt, layer, 64), want)


def test_kept_buffers_are_one_per_layer_at_a_time():
    """Layers at the same time take distinct buffers; a later layer reuses a kept one."""
    with mac_fp16._scratch("test", 100) as kept:
        pass
    with mac_fp16._scratch("test", 100) as a, mac_fp16._scratch("test", 50) as b:
        assert a is kept and b.size >= 50 and not np.shares_memory(a, b)
    with mac_fp16._scratch("test", 10) as again:
        assert again is a or again is b
    with mac_fp16._scratch("test", 1000) as grown:
        assert grown.size >= 1000


@pytest.mark.parametrize("pixels,kernels,threads,want", [
    (784, 64, 2, (4, 1)), (784, 64, 1, (4, 1)), (784, 64, 4, (4, 1)), (257, 64, 2, (2, 1)),
    (3136, 64, 2, (14, 1)), (12544, 64, 2, (50, 1)),  # 13 and 49 tiles, rounded up
    (196, 256, 2, (1, 2)), (256, 64, 2, (1, 2)),   # one tile (of 7, 8 steps): kernels split
    (140, 64, 2, (1, 2)), (49, 64, 2, (1, 2)), (100, 64, 2, (1, 2)), (40, 64, 3, (1, 3)),
    (16, 64, 2, (1, 2)), (300, 64, 8, (2, 4)),     # fewer tiles than threads
    (1600, 64, 8, (7, 2)), (2000, 64, 16, (8, 2)),  # fewer tiles than threads: kernels too
    (2000, 64, 8, (8, 1)),                         # 8 tiles of 15-16 vectors
    (49, 12, 2, (1, 1)), (49, 20, 4, (1, 2)),      # too few kernels to share
    (49, 64, 1, (1, 1))])
def test_tile_plan(pixels, kernels, threads, want):
    """Tiles of whole steps, at most TILE pixels, as few as that allows; their count a
    multiple of the threads where they are at least as many and that keeps them
    SPLIT_PIXELS_FROM vectors or more, else the kernels cut into groups so that every
    thread has a piece (MIN_GROUP_KERNELS or more kernels each)."""
    tiles, groups = tile_plan(pixels, kernels, threads)
    assert (tiles, groups) == want
    units = -(-pixels // STEP)
    assert -(-units // tiles) * STEP <= TILE
    assert groups == 1 or kernels // groups >= MIN_GROUP_KERNELS
    if groups == 1 and threads > 1 and kernels // 2 >= MIN_GROUP_KERNELS:
        assert tiles % threads == 0 and units // tiles * STEP // VECTOR >= SPLIT_PIXELS_FROM
    if kernels // threads >= MIN_GROUP_KERNELS:
        assert tiles * groups >= threads


@pytest.mark.parametrize("case", ["one_position", "one_position_nans", "positions_nans",
                                  "padded", "padded_nan"])
def test_fp16_few_pixels_are_the_definition(case):
    """Layers of fewer than MIN_TILE output pixels (fully connected ones: the weights read
    as they are, the products over a block's lanes) against the definition: one kernel
    position (the lanes in a row) and several, a batch of pixels, NaNs in data and
    weights, zeros, Inf, denormals, three channel groups, dead lanes, and a small padded,
    strided layer (pad value a number, or a NaN)."""
    rng = np.random.default_rng(len(case))
    c, k = 150, 37
    if case.startswith("padded"):
        x, wt, layer = padded_small_layer(rng, c, k, case == "padded_nan")
    else:  # a batch of windows of the kernel's size: one output pixel each
        size = 2 if case == "positions_nans" else 1
        x = random_bits(rng, (7, c, size, size))
        wt = random_bits(rng, (k, c, size, size))
        layer = make_layer((1, 1))
        if case != "one_position":
            plant(rng, x, [0x7E01, 0xFC02, 0x7D55])
            plant(rng, wt, [0x7C07, 0xFE00])
    wt[:, 5] = 0  # a dead lane
    assert x.shape[0] * layer.out_height * layer.out_width < MIN_TILE
    got = conv_fp16(x, wt, layer, 64)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, 64))
    assert ((got & 0x7F800000) == 0x7F800000).any() == (case not in ("one_position",
                                                                     "padded"))


def network_bits(rng, shape, scale, zeros):
    """fp16 bits of a trained layer's values: a few exponents, a fraction zero (ReLU)."""
    bits = np.asarray(rng.standard_normal(shape) * scale, np.float16).view(np.uint16).copy()
    bits[rng.random(shape) < zeros] = 0
    return bits


@pytest.mark.parametrize("size,c,k,block,nans", [(1, 300, 70, 64, False), (6, 40, 9, 64, True),
                                                 (3, 45, 17, 32, False), (2, 21, 65, 8, True)])
def test_fully_connected_layers_are_the_definition(size, c, k, block, nans):
    """Fully connected layers (one output pixel, the kernel the input's size) of trained-like
    values (most lanes a few exponents apart, some 12 to 28 bits) and random patterns, the
    channels not a multiple of the block (64, 32 or 8), dead data lanes, against the
    definition; NaNs in a weight (one kernel's block) and in the data (every kernel's)."""
    rng = np.random.default_rng(size * 1000 + c)
    for trial in range(2):
        if trial == 0:
            x = network_bits(rng, (1, c, size, size), 1.0, 0.4)
            wt = network_bits(rng, (k, c, size, size), 0.02, 0.0)
        else:
            x, wt = random_bits(rng, (1, c, size, size)), random_bits(rng, (k, c, size, size))
        if nans:
            wt[k // 2, c // 3, 0, 0] = 0x7E05
            if trial:
                x[0, c - 1, size - 1, 0] = 0xFD11
        layer = make_layer((1, 1))
        got = conv_fp16(x, wt, layer, block)
        np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, block))
