"""The fully connected layers' blocks over their live lanes only (sim.num.fc_live) against
the full blocks (sim.num.mac_fc) and the definition: data with no zeros to all zeros (-0
too), whole blocks of zeros, shifts of every range, subnormals, Inf, blocks of 32 and 64
lanes; the layout and its refusals; the live lanes' gather (sim.num.compress.compress_words)."""

import numpy as np
import pytest

from sim.jit import njit
from sim.num.compress import WORD_LANES, compress_words, nans_and_infs
from sim.num.fc_live import (
    LIVE_AT_MOST,
    VECTOR,
    fc_live_scratch,
    fp16_fc_live_blocks,
    live_data,
    live_layout,
)
from sim.num.mac import fp16_mac_operands
from sim.num.mac_fc import CHUNK, FC_BLOCK, SLOT_LANES, SLOT_VECTORS, fc_data

from .test_mac_fc import _bits, _definition_blocks, _fc_blocks


@njit
def _live_blocks(data, w_live, layout, n_blocks):
    scratch = fc_live_scratch(layout)
    exps = np.zeros((w_live.shape[0], n_blocks), np.int32)
    sums = np.zeros((w_live.shape[0], n_blocks), np.int64)
    for k in range(w_live.shape[0]):
        fp16_fc_live_blocks(data, w_live[k], layout, scratch, exps[k], sums[k])
    return exps, sums


def _with_zeros(rng, x, zeros, dead_blocks, block):
    """``x`` with a fraction ``zeros`` of its lanes +0 or -0 and blocks ``dead_blocks``
    all zero."""
    x = x.copy()
    x[rng.random(x.shape) < zeros] = 0
    x[rng.random(x.shape) < 0.5 * (x == 0)] = 0x8000
    for b in dead_blocks:
        x[..., b * block:(b + 1) * block] = 0
    return x


def _gathered(w, lanes):
    """Each kernel's live lanes as the layer's gather leaves them (padding lanes 0)."""
    return np.where(lanes >= 0, w[:, np.maximum(lanes, 0)], 0).astype(np.uint16)


CASES = [  # (kind of data, kind of weights, fraction zero, blocks all zero, block, kernels)
    ("network", "network", 0.34, (), 64, 9),
    ("network", "network", 0.5, (1,), 64, 7),
    ("network", "network", 0.9, (0, 3), 64, 5),
    ("spread", "spread", 0.5, (), 64, 6),  # every shift 0..28: flagged lanes, the tree
    ("random", "random", 0.6, (2,), 64, 5),  # shifts far beyond 32, Inf, subnormals
    ("edges", "edges", 0.3, (), 64, 4),
    ("edges", "spread", 0.95, (), 32, 6),
    ("largest", "largest", 0.4, (), 64, 3),  # sums near 2**34
    ("spread", "random", 0.7, (1, 2), 32, 8),
    ("network", "network", 1.0, (), 64, 3),  # no live lane anywhere
    # blocks of more than SLOT_VECTORS vectors (their sums' lanes added up in int32 words
    # a run of vectors at a time), at the largest products and with flagged lanes
    ("largest", "largest", 0.4, (), 512, 3),
    ("spread", "spread", 0.35, (1,), 256, 4),
]


@pytest.mark.parametrize("d_kind,w_kind,zeros,dead_blocks,block,kernels", CASES)
def test_live_blocks_are_the_full_blocks_and_the_definition(d_kind, w_kind, zeros,
                                                            dead_blocks, block, kernels):
    rng = np.random.default_rng(int(zeros * 100) + block + kernels)
    lanes = 4 * block
    x = _with_zeros(rng, _bits(rng, d_kind, lanes), zeros, dead_blocks, block)
    w = _bits(rng, w_kind, (kernels, lanes))
    w[:, rng.integers(0, lanes)] &= 0x8000
    sign, sig, exp = fp16_mac_operands(x)
    data = fc_data(sign, sig, 4 * exp)
    layout = live_layout(4 * exp[None], block)
    assert layout is not None
    n_blocks = lanes // block
    got = _live_blocks(tuple(a[0] for a in live_data(tuple(a[None] for a in data), layout[0])),
                       _gathered(w, layout[0]), layout, n_blocks)
    want = _fc_blocks(data, w, block, 1, n_blocks)[:2]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got, _definition_blocks(x, w, block, 1, n_blocks))


def test_slot_words_hold_their_vectors_sums():
    """A lane's int32 word adds ``SLOT_VECTORS`` of the largest products exactly, and no
    more: the largest magnitude is the square of the largest significand of any fp16 value
    (NaNs aside)."""
    bits = np.arange(1 << 16).astype(np.uint16)
    largest = int(fp16_mac_operands(bits[(bits & 0x7FFF) <= 0x7C00])[1].max()) ** 2
    assert SLOT_VECTORS * largest < 2**31 <= (SLOT_VECTORS + 1) * largest
    assert FC_BLOCK // SLOT_LANES <= SLOT_VECTORS  # the full blocks' words (mac_fc)


def test_a_wrong_gather_is_seen():
    """The comparison above can fail: a live lane's weight left out changes a block."""
    rng = np.random.default_rng(3)
    x = _with_zeros(rng, _bits(rng, "network", 256), 0.5, (), 64)
    w = _bits(rng, "network", (4, 256))
    sign, sig, exp = fp16_mac_operands(x)
    layout = live_layout(4 * exp[None], 64)
    w_live = _gathered(w, layout[0])
    w_live[:, np.flatnonzero(layout[0] >= 0)[5]] = 0
    data = tuple(a[0] for a in live_data(tuple(a[None] for a in fc_data(sign, sig, 4 * exp)),
                                         layout[0]))
    got = _live_blocks(data, w_live, layout, 4)
    assert not np.array_equal(got[1], _fc_blocks(fc_data(sign, sig, 4 * exp), w, 64, 1, 4)[1])


def test_layout_of_several_pixels_keeps_the_lanes_live_in_any():
    """A lane is live where a pixel's data are not zero; each block's live lanes padded
    to whole vectors, in order; the halves' masks and counts before them."""
    rng = np.random.default_rng(5)
    exp4 = np.where(rng.random((3, 128)) < 0.7, -256, 4)
    lanes, starts, vector_block, masks, before = live_layout(exp4, 64)
    live = (exp4 != -256).any(axis=0)
    np.testing.assert_array_equal(lanes[lanes >= 0], np.flatnonzero(live))
    for b in range(2):
        run = lanes[starts[b] * VECTOR:starts[b + 1] * VECTOR]
        n = live[b * 64:(b + 1) * 64].sum()
        assert run.size == -(-n // VECTOR) * VECTOR and (run[n:] == -1).all()
        assert (vector_block[starts[b]:starts[b + 1]] == b).all()
    bits = (masks[:, None] >> np.arange(WORD_LANES, dtype=np.uint32)) & 1
    np.testing.assert_array_equal(bits.reshape(-1).astype(bool), live)
    np.testing.assert_array_equal(before, [0, live[:32].sum(), 0, live[64:96].sum()])


@pytest.mark.parametrize("exp4,block,takes", [
    (np.full(256, 4), 64, False),  # no zeros
    # padded live lanes just within LIVE_AT_MOST of all, and just beyond
    (np.r_[np.full(192, 4), np.full(64, -256)], 64, 192 <= LIVE_AT_MOST * 256),
    (np.r_[np.full(205, 4), np.full(51, -256)], 64, 208 <= LIVE_AT_MOST * 256),
    (np.full(256, -256), 64, True),  # all zero
    (np.full(64, -256), 8, False),  # blocks narrower than a half's mask
    (np.full(96, -256), 64, False),  # lanes not whole blocks
])
def test_layout_where_it_pays(exp4, block, takes):
    assert (live_layout(exp4, block) is not None) == takes


@njit
def _compress_all(words, masks, out):
    found = np.int64(0)
    at = last = 0
    for h in range(masks.size):
        found += compress_words(words, h * WORD_LANES, masks[h], out, at)
        last = at
        at += _popcount(masks[h])
    return found, at, last


@njit
def _popcount(mask):
    n = 0
    for j in range(WORD_LANES):
        n += (mask >> np.uint32(j)) & np.uint32(1)
    return n


@pytest.mark.parametrize("density", [0.0, 0.3, 0.9, 1.0])
def test_compress_words_keeps_the_masked_words_in_order_and_counts_every_special(density):
    rng = np.random.default_rng(int(density * 10))
    words = rng.integers(0, 1 << 16, 8 * WORD_LANES).astype(np.uint16)
    words[rng.choice(words.size, 12, replace=False)] = [0x7C00, 0xFC00, 0x7E00, 0xFE01,
                                                        0x7C01, 0xFFFF] * 2
    keep = rng.random(words.size) < density
    masks = (keep.reshape(-1, WORD_LANES).astype(np.uint64)
             << np.arange(WORD_LANES, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    out = np.full(words.size + WORD_LANES, 7, np.uint16)
    found, n, last = _compress_all(words, masks, out)
    np.testing.assert_array_equal(out[:n], words[keep])
    # each call stores a whole vector: 0s after the last one's words, within the room
    assert (out[n:last + WORD_LANES] == 0).all() and (out[last + WORD_LANES:] == 7).all()
    magnitude = words & 0x7FFF
    assert nans_and_infs(found) == ((magnitude > 0x7C00).sum(), (magnitude == 0x7C00).sum())


def test_more_live_lanes_than_a_chunk():
    """Chunks of whole blocks (CHUNK lanes at most), the flagged lanes' blocks found
    from each chunk's first vector: as the full blocks."""
    rng = np.random.default_rng(11)
    lanes = 130 * 64
    x = _with_zeros(rng, _bits(rng, "spread", lanes), 0.4, (), 64)
    w = _bits(rng, "spread", (3, lanes))
    sign, sig, exp = fp16_mac_operands(x)
    data = fc_data(sign, sig, 4 * exp)
    layout = live_layout(4 * exp[None], 64)
    assert layout is not None and layout[0].size > CHUNK
    got = _live_blocks(tuple(a[0] for a in live_data(tuple(a[None] for a in data), layout[0])),
                       _gathered(w, layout[0]), layout, 130)
    want = _fc_blocks(data, w, 64, 1, 130)[:2]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
