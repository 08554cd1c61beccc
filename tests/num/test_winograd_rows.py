"""The CSC's Winograd input transform (sim.num.blocks._winograd): its stacked rows (one
subtraction and one addition per step) against Bt * D * B entry by entry."""

import numpy as np
import pytest

from sim.num import blocks
from sim.num import vector_fp as fp
from sim.num.blocks import _WINOGRAD_BT, FP17


def _by_entry(tiles, combine):
    rows = [combine(tiles[i], tiles[j], sub) for i, j, sub in _WINOGRAD_BT]
    return np.stack([np.stack([combine(r[i], r[j], sub) for i, j, sub in _WINOGRAD_BT])
                     for r in rows])


def test_the_rows_are_bt():
    bt = np.zeros((4, 4), np.int64)
    for row, (i, j, sub) in enumerate(_WINOGRAD_BT):
        bt[row, i], bt[row, j] = 1, -1 if sub else 1
    assert bt.tolist() == [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    d = np.random.default_rng(1).integers(-99, 99, (4, 4, 7))
    got = blocks._winograd(d, np.subtract, np.add)
    assert np.array_equal(got, np.einsum("ai,ijt,bj->abt", bt, d, bt))


@pytest.mark.parametrize("seed", range(4))
def test_fp17_stacked_rows_equal_entry_by_entry(seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 16, (4, 4, 300), dtype=np.int64)
    bits[:, :, :20] = rng.choice([0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8000, 0x7BFF], (4, 4, 20))
    x17 = fp.fp16_to_fp17(bits)
    want = _by_entry(x17, lambda a, b, sub: (fp.fp_sub if sub else fp.fp_add)(a, b, *FP17))
    got = blocks._winograd(x17, blocks._fp17_sub, blocks._fp17_add)
    assert got.dtype == want.dtype and np.array_equal(got, want)
