"""The fp16 tiles' data columns (sim.conv.mac_fp16: the CSC's gather into rows of a padded
stride, _row_stride), held to the definition in tiles of every vector count a tile can
have, on work arrays of garbage (the words past a tile's pixels in each row are never
written: a tile must never read them)."""

import numpy as np
import pytest

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import TILE, VECTOR, conv_fp16

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


@pytest.mark.parametrize("tiles", [1, 2, 3, 5, 7])
def test_tiles_of_every_vector_count_on_garbage_are_the_definition(tiles, monkeypatch):
    """A layer of 16 x 16 output pixels in ``tiles`` tiles (of 256, 128, 80-96, 48-64, 32-48
    pixels: odd and even vector counts, padded strides and not, work arrays sized for the
    plan's widest tile), two channel groups, a dead lane, a pad value and a NaN, on work
    arrays holding random bytes, is the definition's."""
    rng = np.random.default_rng(tiles)
    layer = make_layer((16, 16), pad=(1, 1), pad_value=int(fp16(-1.5)[()]))
    x = random_bits(rng, (1, 70, 16, 16))
    wt = random_bits(rng, (3, 70, 3, 3), zeros=0.1)
    wt[:, 9] = 0
    plant(rng, x, [0x7E01])
    want = reference_fp16(x, wt, layer, 64)
    assert 16 * 16 == TILE and TILE % VECTOR == 0
    monkeypatch.setattr(mac_fp16, "tile_plan", lambda pixels, kernels, threads: (tiles, 1))
    with mac_fp16._scratch("tiles", 1 << 21) as a, mac_fp16._scratch("tiles", 1 << 21) as b:
        a[:] = rng.integers(0, 256, a.size)
        b[:] = rng.integers(0, 256, b.size)
    np.testing.assert_array_equal(conv_fp16(x, wt, layer, 64), want)
