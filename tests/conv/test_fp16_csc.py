"""The fp16 tiles' data columns (sim.conv.mac_fp16: the CSC's gather into rows of a padded
stride, _row_stride), held to the definition in tiles of every step count a tile can
have, on work arrays of garbage (the words past a tile's pixels in each row are never
written: a tile must never read them)."""

import numpy as np
import pytest

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import STEP, TILE, VECTOR, conv_fp16

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
