"""The fully connected layers' CMAC blocks (sim.num.mac_fc) and the shortcuts they rest on.

Every shortcut is held to the definitional multiplier (``booth.booth_lane``, itself held
to the C-model's table in test_mac.py) exhaustively, in numba: the tree's two words add up
to the exact product plus the sign compensation with no carry out; a shifted product (every
shift up to 16) is the exact product shifted, less the carry out of the sum word's low bits;
the 16-bit and 8-bit trees give the low bits of the 32-bit tree's sum word.  Then whole
kernels' blocks (one position and several, lane counts not multiples of the block, shifts
of every range, zeros, denormals, Inf, NaN) against the definition.
"""

import numpy as np
import pytest

from num.mac_reference import block_dot
from sim.jit import njit
from sim.num.booth import _booth_tree32, booth_lane, booth_sum_low8, booth_sum_low16
from sim.num.compress import COMPRESS_LANES, compress_flagged, compress_nonzero
from sim.num.mac import (
    aligned_product_from_sum,
    fp16_mac_operands,
    signed_product,
)
from sim.num.mac_fc import (
    CHUNK,
    MAX_BLOCK_LANES,
    _mid_lanes,
    _pack,
    fc_data,
    fc_scratch,
    fp16_fc_blocks,
)
from sim.num.word32 import sar32, word32

COMPENSATION = 0x55550000
MAGNITUDES = 1 << 14  # every CMAC significand (0x3FF8, Inf's 0x2000, ...) is below


@njit
def _formula_mismatches(negative):
    """Over every pair of magnitudes of one product sign: (tree sums that differ from the
    exact product plus the compensation, shifted products (shifts 0-16) that differ from
    the formula, 16-bit tree sums that differ from the 32-bit one's low bits, 8-bit ones
    that differ from its low byte)."""
    not_exact, formula, low16, low8 = 0, 0, 0, 0
    for wt in range(MAGNITUDES):
        for dat in range(MAGNITUDES):
            a, b = _booth_tree32(word32(negative), word32(wt), word32(dat))
            exact = np.int64(wt * dat) * (1 - 2 * negative)
            not_exact += np.int64(a) + np.int64(b) != exact + COMPENSATION
            sum16 = booth_sum_low16(negative, wt, dat)
            low16 += np.int64(sum16) != (np.int64(a) & 0xFFFF)
            sum8 = booth_sum_low8(negative, wt & 0xFF, dat & 0xFF)
            low8 += np.int64(sum8) != (np.int64(a) & 0xFF)
            product = signed_product(word32(negative), word32(wt), word32(dat))
            for shift in range(0, 17, 4):
                got = aligned_product_from_sum(product, sum16, word32(shift))
                formula += got != booth_lane(word32(negative), word32(wt), word32(dat),
                                             word32(shift))
    return not_exact, formula, low16, low8


@pytest.mark.parametrize("negative", [0, 1])
def test_products_from_the_low_bits_of_the_sum_word(negative):
    """Exhaustive over both magnitudes (every CMAC significand: zero, one, denormals, Inf's
    0x2000, the largest 0x3FF8, powers of two, all-ones patterns) for one product sign."""
    assert _formula_mismatches(negative) == (0, 0, 0, 0)


@njit
def _flagged_lane_mismatches(weights, weight_error):
    """The shifted products the flagged lanes' pass (``_mid_lanes``) leaves, against the
    definitional multiplier: for each weight magnitude of ``weights``, every data
    magnitude, both signs and every shift of 8 to 28, each lane flagged (its packed word,
    with ``weight_error`` added to its weight, and ``P >> s``, or 0 beyond 16, where the
    products' pass leaves them).  How many differ."""
    shifts = (8, 12, 16, 20, 24, 28)
    lanes = 2 * len(shifts) * MAGNITUDES
    room = lanes + 64
    packed, shifted = np.zeros(room, np.uint32), np.zeros(lanes, np.int32)
    flagged, words, need_at = np.zeros(room, np.int32), np.zeros(room, np.uint32), np.zeros(
        room, np.int32)
    needs = np.zeros(room, np.uint8)
    lows, highs = np.zeros(room, np.uint16), np.zeros(room, np.uint16)
    want = np.zeros(lanes, np.int32)
    wrong = 0
    for wt in weights:
        i = 0
        for negative in range(2):
            for shift in shifts:
                for dat in range(MAGNITUDES):
                    neg, w, d, s = word32(negative), word32(wt), word32(dat), word32(shift)
                    product = signed_product(neg, w, d)
                    shifted[i] = np.int32(sar32(product, s)) if shift <= 16 else 0
                    packed[i] = _pack(neg, w + word32(weight_error), d, s)
                    want[i] = np.int32(booth_lane(neg, w, d, s))
                    i += 1
        _mid_lanes(packed, np.uint64(lanes), flagged, words, needs, need_at, lows, highs,
                   shifted, np.uint64(0), np.uint64(0))
        wrong += (shifted != want).sum()
    return wrong


def test_flagged_lanes_are_the_definition():
    """The flagged lanes' pass (the 16-bit tree's carries of shifts 8 to 16, read from the
    packed words' 16-bit halves; the whole tree beyond) over every data magnitude and a
    spread of weight magnitudes (zero, one, the largest 0x3FF8 and 0x3FFF)."""
    weights = np.unique(np.r_[np.arange(0, MAGNITUDES, 61), 1, 0x3FF8, MAGNITUDES - 1])
    assert _flagged_lane_mismatches(weights, 0) == 0


def test_flagged_lanes_check_can_fail():
    """The comparison above sees a wrong word: each packed weight one off."""
    assert _flagged_lane_mismatches(np.array([1234, 77]), 1) > 0


@njit
def _wrong_carries(negative):
    """Shifted products (shift 12) that differ from the formula's with the sum word's low
    bits inverted, over a sample of magnitudes."""
    wrong = 0
    for wt in range(0, MAGNITUDES, 97):
        for dat in range(0, MAGNITUDES, 89):
            inverted = booth_sum_low16(negative, wt, dat) ^ 0xFFFF
            product = signed_product(word32(negative), word32(wt), word32(dat))
            wrong += aligned_product_from_sum(product, inverted, word32(12)) != booth_lane(
                word32(negative), word32(wt), word32(dat), word32(12))
    return wrong


def test_the_formula_can_fail():
    """The comparison above sees a wrong carry: with other low bits, products differ."""
    assert _wrong_carries(0) > 0 and _wrong_carries(1) > 0


@njit
def _compressed(flags, out):
    n = 0
    for i in range(0, flags.size - COMPRESS_LANES + 1, COMPRESS_LANES):
        n = compress_flagged(flags, i, out, n)
    return n


@pytest.mark.parametrize("density", [0.0, 0.03, 0.5, 1.0])
def test_compress_flagged_gathers_the_flagged_lanes_in_order(density):
    rng = np.random.default_rng(int(density * 100))
    flags = (rng.random(4096) < density) * rng.integers(1, 256, 4096)
    out = np.full(4096 + COMPRESS_LANES, -1, np.int32)
    n = _compressed(flags.astype(np.uint8), out)
    np.testing.assert_array_equal(out[:n], np.flatnonzero(flags))
    # each call stores a whole vector (0s after its flagged lanes), within the room asked
    assert (out[n + COMPRESS_LANES:] == -1).all()


@njit
def _compressed_words(words, out_words, out_indices):
    n = 0
    for i in range(0, words.size - COMPRESS_LANES + 1, COMPRESS_LANES):
        n = compress_nonzero(words, i, out_words, out_indices, n)
    return n


@pytest.mark.parametrize("density", [0.0, 0.03, 0.5, 1.0])
def test_compress_nonzero_gathers_the_words_that_are_not_0_and_their_indices(density):
    rng = np.random.default_rng(int(density * 100) + 1)
    # words with a single bit set anywhere (the top one too): all are "not 0"
    words = (rng.random(4096) < density) * (np.uint32(1) << rng.integers(0, 32, 4096, np.uint32))
    out_words = np.full(4096 + COMPRESS_LANES, 7, np.uint32)
    out_indices = np.full(4096 + COMPRESS_LANES, -1, np.int32)
    n = _compressed_words(words.astype(np.uint32), out_words, out_indices)
    np.testing.assert_array_equal(out_indices[:n], np.flatnonzero(words))
    np.testing.assert_array_equal(out_words[:n], words[words != 0])
    assert (out_words[n + COMPRESS_LANES:] == 7).all()
    assert (out_indices[n + COMPRESS_LANES:] == -1).all()


# --- whole kernels' blocks ---------------------------------------------------------

def _bits(rng, kind, shape):
    """fp16 bits of a kind of operand: shifts of every range, or few."""
    if kind == "random":  # every exponent: shifts far beyond 32, zeros, Inf
        bits = rng.integers(0, 1 << 16, shape)
    elif kind == "network":  # a trained layer's: a few exponents around 2**-6
        bits = np.asarray(rng.standard_normal(shape) * 0.02, np.float16).view(np.uint16)
    elif kind == "spread":  # exponents 0..20 apart: every shift 0..28 occurs
        bits = ((rng.integers(0, 2, shape) << 15) | (rng.integers(5, 26, shape) << 10)
                | rng.integers(0, 1024, shape))
    elif kind == "largest":  # the largest significand (0x3FF8), one exponent and one sign
        # a kernel (or data vector): every shift 0, the block sums near 2**34 (beyond
        # 32-bit words)
        shape = tuple(np.atleast_1d(shape))
        bits = np.broadcast_to((rng.integers(0, 2, shape[:-1]) << 15)[..., None] | 0x6FFF, shape)
    else:  # "edges": zeros, denormals, Inf, the largest, powers of two
        bits = rng.choice([0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7BFF, 0x0400,
                           0x3C00, 0xBFFF, 0x03FF, 0x4000], shape)
    bits = np.asarray(bits).astype(np.uint16)
    bits[((bits >> 10) & 31 == 31) & (bits & 0x3FF != 0)] = 0x7C00  # NaNs: separately
    return bits


@njit
def _fc_blocks(data, weights, block, positions, n_blocks):
    scratch = fc_scratch(max(block * positions, CHUNK))
    exps = np.zeros((weights.shape[0], n_blocks), np.int32)
    sums = np.zeros((weights.shape[0], n_blocks), np.int64)
    nans = np.zeros(weights.shape[0], np.bool_)
    for k in range(weights.shape[0]):
        nans[k] = fp16_fc_blocks(data, weights[k], block, positions, scratch, exps[k], sums[k])
    return exps, sums, nans


@njit
def _definition_blocks(x, weights, block, positions, n_blocks):
    """mac_reference.block_dot of every block (exponents times four, sums), its lanes
    taken at a stride of ``positions``."""
    n_k, lanes = weights.shape
    exps = np.zeros((n_k, n_blocks), np.int32)
    sums = np.zeros((n_k, n_blocks), np.int64)
    for k in range(n_k):
        for g in range((lanes // positions + block - 1) // block):
            for pos in range(positions):
                start = g * block * positions + pos
                stop = min(lanes, (g + 1) * block * positions)
                e, total = block_dot(x[start:stop:positions].copy(),
                                     weights[k, start:stop:positions].copy())
                exps[k, g * positions + pos] = 4 * e
                sums[k, g * positions + pos] = total
    return exps, sums


CASES = [  # (kind of data, kind of weights, channels, positions, block, kernels)
    ("network", "network", 256, 1, 64, 9),
    ("random", "random", 150, 1, 64, 5),
    ("spread", "spread", 4100, 1, 64, 3),  # two chunks, a partial last block
    ("spread", "network", 64, 36, 64, 4),
    ("edges", "spread", 70, 9, 64, 6),
    ("network", "edges", 37, 4, 32, 7),
    ("spread", "random", 20, 3, 8, 11),
    ("edges", "edges", 8, 1, 8, 2),
    ("largest", "largest", 200, 1, 64, 3),  # sums of 64 products near 2**28 each
    ("largest", "largest", 67, 5, 64, 2),  # and by position: rows not a multiple of four
    ("spread", "spread", 65, 7, 64, 3),  # a last group of one row (channel), one of 64
    ("spread", "network", 66, 2, 64, 3),  # a last group of two rows
    ("random", "spread", 7 * 16 + 3, 3, 16, 4),  # groups of 16 rows, a last one of 3
    # whole 64-lane blocks of one position (their products a loop a block, the block's
    # exponent read once): every exponent, the edge values, the largest sums
    ("random", "random", 256, 1, 64, 5),
    ("edges", "edges", 128, 1, 64, 4),
    ("largest", "largest", 192, 1, 64, 3),
    ("random", "edges", 64, 1, 64, 6),
]


@pytest.mark.parametrize("d_kind,w_kind,channels,positions,block,kernels", CASES)
def test_fc_blocks_are_the_definition(d_kind, w_kind, channels, positions, block, kernels):
    """Every block's exponent and sum as the definition gives them (lanes in the weights'
    order: channel-major, the blocks over channels at each position), a zero data lane and
    a zero weight lane included; the NaN flag says whether a weight is a NaN."""
    rng = np.random.default_rng(channels * 31 + positions)
    lanes = channels * positions
    x = _bits(rng, d_kind, lanes)
    w = _bits(rng, w_kind, (kernels, lanes))
    x[rng.integers(0, lanes)] &= 0x8000
    w[:, rng.integers(0, lanes)] &= 0x8000
    sign, sig, exp = fp16_mac_operands(x)
    n_blocks = -(-channels // block) * positions
    exps, sums, nans = _fc_blocks(fc_data(sign, sig, 4 * exp), w, block, positions, n_blocks)
    want_exps, want_sums = _definition_blocks(x, w, block, positions, n_blocks)
    np.testing.assert_array_equal(exps, want_exps)
    np.testing.assert_array_equal(sums, want_sums)
    assert not nans.any()
    w[-1, rng.integers(0, lanes)] = 0xFE01
    assert _fc_blocks(fc_data(sign, sig, 4 * exp), w, block, positions, n_blocks)[2][-1]


@njit
def _blocks_in_scratch(data, w_bits, block, positions, scratch_lanes):
    scratch = fc_scratch(scratch_lanes)
    return fp16_fc_blocks(data, w_bits, block, positions, scratch,
                          np.zeros(w_bits.size, np.int32), np.zeros(w_bits.size, np.int64))


@pytest.mark.parametrize("lanes,positions,scratch_lanes,fits", [
    (2 * CHUNK, 1, CHUNK, True), (2 * CHUNK, 1, CHUNK - 1, False), (100, 1, 100, True),
    (100, 1, 99, False), (64 * 9 * 2, 9, 64 * 9, True), (64 * 9 * 2, 9, 64 * 9 - 1, False)])
def test_scratch_smaller_than_a_chunk_is_refused(lanes, positions, scratch_lanes, fits):
    """The passes index the scratch unchecked: one too small for a chunk raises."""
    x = np.full(lanes, 0x3C00, np.uint16)
    sign, sig, exp = fp16_mac_operands(x)
    data = fc_data(sign, sig, 4 * exp)
    if fits:
        _blocks_in_scratch(data, x, 64, positions, scratch_lanes)
    else:
        with pytest.raises(ValueError, match="scratch"):
            _blocks_in_scratch(data, x, 64, positions, scratch_lanes)


def test_blocks_beyond_the_32_bit_sums_are_refused():
    """A block of more lanes than the 32-bit block sums hold exactly raises, never wraps."""
    lanes = MAX_BLOCK_LANES + 1
    x = np.full(lanes, 0x3C00, np.uint16)  # 1.0: every lane live
    sign, sig, exp = fp16_mac_operands(x)
    with pytest.raises(ValueError, match="MAX_BLOCK_LANES"):
        _fc_blocks(fc_data(sign, sig, 4 * exp), x[None, :], lanes, 1, 1)
