"""The CDMA's fp16 weight NaN/Inf counts of a large fetch are taken in slices over the cores
(sim.conv.cdma._count_split): the sums of the slices are the whole stream's counts."""

import numpy as np
import pytest

from sim.conv.cdma import _count_split
from sim.num.specials import count_nans_and_infs


@pytest.mark.parametrize("size", [2, 3, 7, 1000, 65537])
@pytest.mark.parametrize("split", [False, True])
def test_split_counts_are_the_whole_counts(size, split, monkeypatch):
    monkeypatch.setattr("sim.jit.cores", lambda: 2)
    monkeypatch.setattr("sim.conv.cdma.SPLIT_UNPACK_ELEMENTS", 1 if split else 1 << 62)
    rng = np.random.default_rng(size)
    words = rng.integers(0, 1 << 16, size, dtype=np.uint16)
    # make NaNs and Infs common, at both ends too
    special = rng.random(size) < 0.2
    words[special] |= 0x7C00
    words[0] = 0x7C00
    words[-1] = 0xFE01
    want = count_nans_and_infs(words)
    assert want[0] and want[1]
    assert _count_split(words) == want
