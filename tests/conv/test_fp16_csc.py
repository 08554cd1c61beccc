"""The fp16 tiles' data columns (sim.conv.mac_fp16: the CSC's gather into rows of a padded
stride, _row_stride), held to the definition in tiles of every step count a tile can
have, on work arrays of garbage (the words past a tile's pixels in each row are never
written: a tile must never read them)."""

import numpy as np
import pytest

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import STEP, TILE, VECTOR, _block_width, _csc_block, conv_fp16
from sim.jit import njit

from .test_fp16 import fp16, make_layer, plant, random_bits, reference_fp16


@pytest.mark.parametrize("n_p,want", [(16, 16), (32, 48), (48, 48), (64, 80), (80, 80),
                                      (96, 112), (112, 112), (128, 144)])
def test_row_stride_is_an_odd_number_of_lines(n_p, want):
    """Rows an odd number of vectors (cache lines of 32-bit words) apart, the fewest that
    hold the pixels: a column's rows fall in every set of the cache."""
    assert mac_fp16._row_stride(n_p) == want


def test_layout_holds_the_widest_tile_at_its_stride():
    """The data arrays of the layout hold a block's lanes of TILE pixels at their stride."""
    width = 13
    layout = mac_fp16._tile_layout(4, width)
    stride = mac_fp16._row_stride(TILE)
    assert all(shape[0] >= width * stride for shape, _ in layout[1][:3])


@pytest.mark.parametrize("out_hw,tiles", [((16, 16), 1), ((16, 16), 2), ((16, 16), 3),
                                          ((16, 16), 5), ((16, 16), 7), ((6, 8), 1),
                                          ((6, 8), 2), ((7, 7), 1)])
def test_tiles_of_every_step_count_on_garbage_are_the_definition(out_hw, tiles, monkeypatch):
    """A layer of 16 x 16 output pixels in ``tiles`` tiles (of 256, 128, 64-96, 32-64
    pixels: odd and even step counts, padded strides and not, work arrays sized for the
    plan's widest tile), and layers whose last step holds a whole vector of no pixel (6 x
    8) or a vector of one (7 x 7), two channel groups, a dead lane, a pad value and a NaN,
    on work arrays holding random bytes, is the definition's."""
    rng = np.random.default_rng(tiles + out_hw[1])
    layer = make_layer(out_hw, pad=(1, 1), pad_value=int(fp16(-1.5)[()]))
    x = random_bits(rng, (1, 70, *out_hw))
    wt = random_bits(rng, (3, 70, 3, 3), zeros=0.1)
    wt[:, 9] = 0
    plant(rng, x, [0x7E01])
    want = reference_fp16(x, wt, layer, 64)
    assert 16 * 16 == TILE and STEP == 2 * VECTOR
    monkeypatch.setattr(mac_fp16, "tile_plan", lambda pixels, kernels, threads: (tiles, 1))
    with mac_fp16._scratch("tiles", 1 << 21) as a, mac_fp16._scratch("tiles", 1 << 21) as b:
        a[:] = rng.integers(0, 256, a.size)
        b[:] = rng.integers(0, 256, b.size)
    np.testing.assert_array_equal(conv_fp16(x, wt, layer, 64), want)


@njit
def _csc_in_weight_order(x, x_nan, pad, pad_nan, lanes, geometry, count, n_lanes,
                         block_major=False):
    """The plain path the small layers' one call (mac_fp16._csc_fc_data) stands in for:
    the CSC's data (mac_fp16._csc_block) for ``count`` pixels and every kernel position,
    in the order a layer stores its weights (lane ``c * R * S + pos``): signs and
    significands (count, n_lanes) uint16, four times the exponents int32, and the first
    NaN of every block (count, R * S, groups), -1 if none.  ``block_major`` (every group
    of ``lanes`` as wide): in CACC's block order instead, block ``g * R * S + pos``'s
    lanes in a run (lane ``(g * R * S + pos) * width + j``: channel ``lanes[g] + j``)."""
    n_r, n_s = geometry[8], geometry[9]
    n_pos = n_r * n_s
    groups = lanes.size - 1
    width = _block_width(lanes)
    d_sign = np.zeros((count, n_lanes), np.uint16)
    d_sig = np.zeros((count, n_lanes), np.uint16)
    d_exp4 = np.zeros((count, n_lanes), np.int32)
    d_nan = np.zeros((count, n_pos, groups), np.int64)
    b_sign = np.zeros((width, count), np.uint32)
    b_sig = np.zeros((width, count), np.uint32)
    b_exp4 = np.zeros((width, count), np.int32)
    b_nan = np.zeros(count, np.int64)
    for g in range(groups):
        c0, c1 = lanes[g], lanes[g + 1]
        for r in range(n_r):
            for s in range(n_s):
                _csc_block(x, x_nan, pad, pad_nan, geometry, 0, count, g, r, s, c0, c1,
                           b_sign, b_sig, b_exp4, b_nan)
                pos = r * n_s + s
                for p in range(count):
                    d_nan[p, pos, g] = b_nan[p]
                    for j in range(c1 - c0):
                        if block_major:
                            m = (g * n_pos + pos) * (c1 - c0) + j
                        else:
                            m = (c0 + j) * n_pos + pos
                        d_sign[p, m] = b_sign[j, p]
                        d_sig[p, m] = b_sig[j, p]
                        d_exp4[p, m] = b_exp4[j, p]
    return d_sign, d_sig, d_exp4, d_nan


@pytest.mark.parametrize("block_major", [False, True])
@pytest.mark.parametrize("batches,channels,in_hw,kernel,stride,dil,pad,pad_value", [
    (1, 64, (1, 1), (1, 1), (1, 1), (1, 1), (0, 0), 0),  # fully connected, 1 x 1
    (1, 128, (3, 3), (3, 3), (1, 1), (1, 1), (0, 0), 0),  # fully connected over 3 x 3
    (2, 64, (3, 3), (3, 3), (2, 2), (1, 1), (1, 1), 0xBE00),  # batches, padded, -1.5 pad
    (1, 96, (3, 5), (2, 3), (1, 2), (2, 1), (1, 2), 0xFE21),  # dilated, a NaN pad
    (1, 70, (3, 3), (3, 3), (1, 1), (1, 1), (1, 1), 0x7C00),  # a partial group, Inf pad
])
def test_fc_data_in_one_call_is_the_csc_then_fc_data(block_major, batches, channels, in_hw,
                                                     kernel, stride, dil, pad, pad_value):
    """The small layers' data in one call (sim.conv.mac_fp16._csc_fc_data: the gather,
    each lane decoded, the first NaNs and the live lanes) are those of the data's operands
    and NaNs, the CSC (_csc_in_weight_order), fc_data and the zero lanes one by one, in
    either lane order: NaNs (first of a block and later ones), Infs, zeros, subnormals and
    pads."""
    from sim.num.mac import ZERO_LANE_EXP, first_nan_per_block, fp16_data_operands
    from sim.num.mac_fc import fc_data
    from sim.num.specials import nan_mask

    block = 32
    if block_major and channels % block:
        pytest.skip("the block order takes whole groups only")
    rng = np.random.default_rng(channels + in_hw[1] + block_major)
    cube = random_bits(rng, (batches, channels, *in_hw))
    cube[:, 3] = 0  # a channel dead everywhere but in the pads
    plant(rng, cube, [0x7E01, 0xFD00, 0x7C01, 0x7E02, 0x7C01])
    out_hw = ((in_hw[0] + 2 * pad[0] - dil[0] * (kernel[0] - 1) - 1) // stride[0] + 1,
              (in_hw[1] + 2 * pad[1] - dil[1] * (kernel[1] - 1) - 1) // stride[1] + 1)
    count = batches * out_hw[0] * out_hw[1]
    assert count < mac_fp16.MIN_TILE
    geometry = (*out_hw, *stride, *dil, *pad, *kernel)
    groups = -(-channels // block)
    lanes = np.minimum(np.arange(groups + 1) * block, channels)
    n_lanes = channels * kernel[0] * kernel[1]

    x, x_nans = mac_fp16._data_operands(cube, np.arange(channels), block)
    pads = np.full(block, pad_value, np.uint16)
    pad_nan = int(first_nan_per_block(pads, nan_mask(pads), block)[0])
    d_sign, d_sig, d_exp4, d_nan = _csc_in_weight_order(
        fp16_data_operands(x), x_nans, fp16_data_operands(pads), pad_nan, lanes, geometry,
        count, n_lanes, block_major)
    if block_major:
        d_nan = np.ascontiguousarray(d_nan.transpose(0, 2, 1)).reshape(count, 1, -1)
    want = fc_data(d_sign, d_sig, d_exp4)

    got, got_nan, live = mac_fp16._csc_fc_data(cube, np.uint16(pad_value), lanes, geometry,
                                                count, block_major)
    assert (d_nan >= 0).any()
    np.testing.assert_array_equal(got_nan, d_nan)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))  # -0.0 apart
    np.testing.assert_array_equal(live, (d_exp4 != 4 * ZERO_LANE_EXP).any(axis=0))
    assert live.any() and (pad_value or not live.all())
