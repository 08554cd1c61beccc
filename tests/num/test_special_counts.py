"""The units' NaN and Inf input counts, counted in pieces, against the masks' plain sums."""

import numpy as np
import pytest

from sim.num import specials
from sim.num.specials import count_nans_and_infs, inf_mask, nan_mask
from sim.num.vector_fp import FP16, FP32

SPECIALS = {FP16: (np.uint16, [0x7C00, 0xFC00, 0x7C01, 0xFE00, 0xFFFF, 0x7BFF, 0x8000]),
            FP32: (np.uint32, [0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF])}


@pytest.mark.parametrize("fmt", [FP16, FP32])
@pytest.mark.parametrize("size,piece", [(0, 8), (5, 8), (64, 8), (1001, 64), (3000, 1 << 16)])
def test_counts_match_the_masks(fmt, size, piece, monkeypatch):
    """Pieces of any size, the last one short, a (..., C) cube: the same counts."""
    monkeypatch.setattr(specials, "COUNT_PIECE", piece)
    dtype, values = SPECIALS[fmt]
    rng = np.random.default_rng(size)
    bits = rng.integers(0, np.iinfo(dtype).max, size, dtype=dtype, endpoint=True)
    if size:
        bits[rng.integers(0, size, size // 3 + 1)] = rng.choice(values, size // 3 + 1)
    cube = bits.reshape(-1, 1) if size % 2 else bits
    want = (int(nan_mask(cube, fmt).sum()), int(inf_mask(cube, fmt).sum()))
    assert count_nans_and_infs(cube, fmt) == want
    assert size < 64 or min(want) > 0  # the large cases hold both kinds


@pytest.mark.parametrize("size,special", [(0, None), (70, None), (70, 0x7C00), (70, 0xFC01),
                                           (4096, 0xFFFF), (4096, 0x7BFF), (333, 0xFE00)])
def test_compiled_fp16_counts_match_the_masks(size, special):
    """fp16_nans_and_infs (compiled kernels' count: a screen by the largest magnitude first)
    against the masks: rows with no special, one planted (Inf, NaN, the largest finite
    value, which the screen must pass over), and rows of random patterns."""
    rng = np.random.default_rng(size)
    bits = (rng.integers(0, 0x7BFF, size, dtype=np.uint16)
            | (rng.integers(0, 2, size, dtype=np.uint16) << 15))
    if size == 4096:  # every pattern's top 12 bits
        bits = (np.arange(size, dtype=np.uint32) << 4).astype(np.uint16) | bits & 15
    if special is not None:
        bits[rng.integers(0, size, 3)] = special
    want = (int(nan_mask(bits).sum()), int(inf_mask(bits).sum()))
    assert specials.fp16_nans_and_infs(bits) == want
