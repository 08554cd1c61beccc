"""The fp16 tile kernel's shortcuts (sim.num.mac.fp16_tile_dots), each held to the form it
replaces.

The kernel takes a lane's shifted product as ``((P - a) >> s) + (a >> s)`` (``P`` the
exact product, ``a`` the low 8 or 16 bits of the tree's sum word) from narrow copies of the
data's Booth table, and corrects the lanes shifted beyond the narrow tree's reach from the
whole tree.  Checked here: the narrow tables are the 32-bit table's low bits (every data
value), the narrow trees from them are the sum word's low bits (every data value against
a set of weights, every weight against a set of data), the product formula is the C-model
multiplier's for shifts up to 16, and whole tiles (random, every shift from 0 past 32 in one
tile, zero lanes, subnormals, Inf, the largest magnitudes, odd lane counts, pixel counts off
the vector widths, kernel spans not starting at 0) give what the previous kernel (the whole
tree for every product, kept below as the reference) and the block's definition give.
"""

import numpy as np
import pytest

from sim.jit import njit
from sim.num.booth import (
    TABLE_ROWS,
    booth_data_table,
    booth_data_table_low,
    booth_lane,
    booth_lane_table,
    booth_row_indices,
    booth_sum_low8,
    booth_sum_low8_table,
    booth_sum_low16,
    booth_sum_low16_table,
)
from sim.num.mac import (
    _ZERO_ROWS,
    ZERO_LANE_EXP,
    _fast_product,
    block_sum,
    fp16_mac_operands,
    fp16_padded_tile_dots,
    fp16_tile_dots,
    fp16_weight_rows,
    tile_scratch,
)
from sim.num.word32 import add32, sar32, sub32, word32

from .mac_reference import block_dots


def test_narrow_tables_are_the_low_bits_of_every_data_value():
    """booth_data_table_low is booth_data_table's low 16 and 8 bits, for both signs of every
    14-bit magnitude, but 0 for a zero magnitude."""
    dat = np.tile(np.arange(1 << 14, dtype=np.uint32), 2)
    neg = np.repeat(np.arange(2, dtype=np.uint32), 1 << 14)
    whole = np.zeros((TABLE_ROWS, dat.size), np.uint32)
    t16 = np.full((TABLE_ROWS, dat.size), 0xA5A5, np.uint16)
    t8 = np.full((TABLE_ROWS, dat.size), 0xA5, np.uint8)
    _tables(neg, dat, whole, t16, t8)
    live = dat != 0
    np.testing.assert_array_equal(t16[:, live], (whole[:, live] & 0xFFFF).astype(np.uint16))
    np.testing.assert_array_equal(t8[:, live], (whole[:, live] & 0xFF).astype(np.uint8))
    assert not t16[:, ~live].any() and not t8[:, ~live].any()


@njit
def _tables(neg, dat, whole, t16, t8):
    booth_data_table(neg, dat, whole)
    booth_data_table_low(neg, dat, t16, t8)


@njit
def _narrow_mismatches(d_neg, dat, w_neg, wt, rows, t16, t8):
    """Products whose narrow trees (from the tables) differ from the sum word's low bits
    (booth_sum_low16, booth_sum_low8): data ``p`` against weight ``p``."""
    booth_data_table_low(d_neg, dat, t16, t8)
    bad = 0
    for p in range(dat.size):
        r = rows[p]
        got16 = booth_sum_low16_table(t16[r[0], p], t16[r[1], p], t16[r[2], p], t16[r[3], p],
                                      t16[r[4], p], t16[r[5], p], t16[r[6], p], t16[r[7], p],
                                      t16[r[8], p], t16[r[9], p])
        got8 = booth_sum_low8_table(t8[r[0], p], t8[r[1], p], t8[r[2], p], t8[r[3], p],
                                    t8[r[4], p])
        negative = d_neg[p] ^ w_neg[p]
        want16 = booth_sum_low16(negative, wt[p], dat[p]) if dat[p] else 0
        want8 = booth_sum_low8(negative, wt[p] & 0xFF, dat[p] & 0xFF) if dat[p] else 0
        bad += (got16 != want16) + (got8 != want8)
    return bad


@pytest.mark.parametrize("sweep", ["every_data", "every_weight"])
def test_narrow_trees_are_the_sum_words_low_bits(sweep):
    """Every magnitude and sign of one operand against edge and random values of the other."""
    every = np.arange(1 << 15, dtype=np.int64)  # sign at bit 14
    rng = np.random.default_rng(11)
    some = np.concatenate([[0, 1, 2, 3, 0x1555, 0x2AAA, 0x3FFF, 0x3FFE, 0x2000],
                           rng.integers(0, 1 << 14, 23)])
    some = np.concatenate([some, some | (1 << 14)])
    first, second = np.meshgrid(every, some, indexing="ij")
    d_bits, w_bits = (first, second) if sweep == "every_data" else (second, first)
    d_bits, w_bits = d_bits.ravel(), w_bits.ravel()
    dat, d_neg = (d_bits & 0x3FFF).astype(np.uint32), (d_bits >> 14).astype(np.uint32)
    wt, w_neg = w_bits & 0x3FFF, w_bits >> 14
    rows = booth_row_indices(w_neg, wt)
    t16 = np.zeros((TABLE_ROWS, dat.size), np.uint16)
    t8 = np.zeros((TABLE_ROWS, dat.size), np.uint8)
    assert _narrow_mismatches(d_neg, dat, w_neg, wt, rows, t16, t8) == 0


def test_zero_rows_are_a_zero_weights():
    """The rows a group's missing lane reads are those of both zero weights."""
    for bits in (0x0000, 0x8000):
        rows, _ = fp16_weight_rows(np.array([bits], np.uint16))
        assert tuple(rows[0, :10]) == _ZERO_ROWS[:10] and not rows[0, 10:].any()


@njit
def _product_mismatches(neg, wt, dat, shift, reach):
    bad = 0
    for i in range(wt.size):
        a = booth_sum_low16(neg[i], wt[i], dat[i])
        if reach == 8:
            a = booth_sum_low8(neg[i], wt[i] & 0xFF, dat[i] & 0xFF)
        # the kernel multiplies signed significands: here the data's carries the sign
        sd = np.int16(-np.int32(dat[i]) if neg[i] else np.int32(dat[i]))
        got, _ = _fast_product(word32(shift[i]), word32(0), sd, np.int16(wt[i]), a)
        bad += np.int32(got) != np.int32(booth_lane(neg[i], wt[i], dat[i], word32(shift[i])))
    return bad


@pytest.mark.parametrize("reach", [8, 16])
def test_product_from_the_narrow_tree_is_the_multipliers(reach):
    """((P - a) >> s) + (a >> s) is booth_lane for every shift the narrow tree reaches:
    every 7-bit pair placed high and low, random 14-bit pairs, the largest magnitudes."""
    r = np.arange(1 << 7)
    small = np.concatenate([r, r << 7])
    wt, dat = (a.ravel() for a in np.meshgrid(small, small))
    rng = np.random.default_rng(reach)
    big = np.arange((1 << 14) - 32, 1 << 14)
    w_big, d_big = (a.ravel() for a in np.meshgrid(big, big))
    wt = np.concatenate([wt, rng.integers(0, 1 << 14, 200_000), w_big])
    dat = np.concatenate([dat, rng.integers(0, 1 << 14, 200_000), d_big])
    for neg in (0, 1):
        for shift in range(0, reach + 1, 4):
            n = np.full(wt.size, neg, np.int64)
            s = np.full(wt.size, shift, np.int64)
            assert _product_mismatches(n, wt.astype(np.int64), dat.astype(np.int64), s,
                                       reach) == 0


# --- whole tiles against the previous kernel (every product from the whole tree) --------

@njit
def _reference_tile_dots(d_sign, d_sig, d_exp4, w_rows, w_exp4, table, block_exp4, high,
                         low, kernels):
    """The tile kernel before the narrow trees: every product booth_lane_table's, in the
    same two sum words."""
    lanes, n_p = d_exp4.shape
    k0, k1 = kernels
    zero = 4 * ZERO_LANE_EXP
    block_exp4[k0:k1, :n_p] = 0
    high[k0:k1, :n_p] = 0
    low[k0:k1, :n_p] = 0
    for j in range(lanes):
        for k in range(k0, k1):
            if w_exp4[j, k] == zero:
                continue
            for p in range(n_p):
                if d_exp4[j, p] != zero:
                    block_exp4[k, p] = max(block_exp4[k, p], d_exp4[j, p] + w_exp4[j, k])
    for j in range(lanes):
        booth_data_table(d_sign[j], d_sig[j], table)
        for k in range(k0, k1):
            r = w_rows[j, k]
            for p in range(n_p):
                v = booth_lane_table(table[r[0], p], table[r[1], p], table[r[2], p],
                                     table[r[3], p], table[r[4], p], table[r[5], p],
                                     table[r[6], p], table[r[7], p], table[r[8], p],
                                     table[r[9], p],
                                     sub32(block_exp4[k, p], add32(d_exp4[j, p], w_exp4[j, k])))
                high[k, p] = add32(high[k, p], sar32(v, 16))
                low[k, p] = add32(low[k, p], v)


@njit
def _sums(high, low):
    out = np.zeros(high.shape, np.int64)
    for k in range(high.shape[0]):
        for p in range(high.shape[1]):
            out[k, p] = block_sum(high[k, p], low[k, p])
    return out


def _both(data, weights, kernels):
    """(exponents, sums) (K, P) of the new and the reference kernel, data (lanes, P) fp16
    bits against weights (K, lanes), kernels ``kernels`` only (the other rows hold what
    the arrays held before: a sentinel)."""
    d_sign, d_sig, d_exp = fp16_mac_operands(data)
    w_rows, w_exp4 = fp16_weight_rows(np.ascontiguousarray(weights.T))
    n_k, n_p = weights.shape[0], data.shape[1]
    width = n_p + 5
    results = []
    for kernel, scratch in ((fp16_tile_dots, tile_scratch(width)),
                            (_reference_tile_dots, np.zeros((TABLE_ROWS, width), np.uint32))):
        block_exp4 = np.full((n_k, width), -1, np.int32)
        high, low = np.full((n_k, width), 7, np.uint32), np.full((n_k, width), 7, np.uint32)
        kernel(d_sign, d_sig, 4 * d_exp, w_rows, w_exp4, scratch, block_exp4, high, low,
               kernels)
        results.append((block_exp4, _sums(high, low)))
    return results


def _every_shift(rng, lanes, count):
    """fp16 values of every exponent (0-31 but NaN's), both signs, subnormals and zeros
    among them: in one tile, lane shifts from 0 past 32."""
    e = rng.integers(0, 32, (lanes, count))
    bits = (rng.integers(0, 2, (lanes, count)) << 15) | (e << 10) | rng.integers(0, 1024,
                                                                                 (lanes, count))
    bits[e == 31] &= 0xFC00  # Inf, never NaN
    bits[rng.random((lanes, count)) < 0.1] &= 0x8000  # zeros
    return bits.astype(np.uint16)


TILES = {  # name: (lanes, kernels, pixels, kernel span)
    "odd_lanes_few_pixels": (5, 6, 17, (0, 6)),
    "one_lane": (1, 3, 33, (1, 3)),
    "full_block": (64, 9, 100, (2, 7)),
    "seven_lanes_one_pixel": (7, 4, 1, (0, 4)),
    "many_lanes": (130, 5, 65, (0, 5)),
}


@pytest.mark.parametrize("kind", ["random_normal", "every_shift", "narrow_spread", "edges"])
@pytest.mark.parametrize("tile", sorted(TILES))
def test_tiles_are_the_reference_kernels(kind, tile):
    """The new kernel's exponents and sums are the reference's in the span, and the other
    kernels' rows stay as they were; small tiles are also held to the block's definition."""
    lanes, n_k, n_p, span = TILES[tile]
    rng = np.random.default_rng(lanes * 131 + n_p)
    for _ in range(3):
        if kind == "random_normal":  # the benchmark's kind: shifts up to 20 or so
            data = rng.standard_normal((lanes, n_p)).astype(np.float16).view(np.uint16)
            weights = (rng.standard_normal((n_k, lanes)) * 0.1).astype(np.float16)
            weights = weights.view(np.uint16)
        elif kind == "every_shift":
            data, weights = _every_shift(rng, lanes, n_p), _every_shift(rng, n_k, lanes)
        elif kind == "narrow_spread":  # exponents within 8 of each other: the 8-bit tree
            data = ((rng.integers(0, 2, (lanes, n_p)) << 15) | (rng.integers(12, 15, (lanes, n_p))
                                                              << 10)
                    | rng.integers(0, 1024, (lanes, n_p))).astype(np.uint16)
            weights = ((rng.integers(0, 2, (n_k, lanes)) << 15) | (13 << 10)
                       | rng.integers(0, 1024, (n_k, lanes))).astype(np.uint16)
        else:  # the largest magnitudes, Inf, subnormals, zeros: whole lanes and kernels
            choice = np.array([0x7C00, 0xFC00, 0x7BFF, 0xFBFF, 0x03FF, 0x8001, 0x0000, 0x8000,
                               0x3C00], np.uint16)
            data = rng.choice(choice, (lanes, n_p))
            weights = rng.choice(choice, (n_k, lanes))
        data[rng.integers(0, lanes)] &= 0x8000  # a lane whose data are all zero
        weights[:, rng.integers(0, lanes)] = 0  # a lane dead in every kernel
        weights[rng.integers(0, n_k)] = 0x8000  # a kernel of zeros
        (got_exp, got_sum), (want_exp, want_sum) = _both(data, weights, span)
        k0, k1 = span
        np.testing.assert_array_equal(got_exp[k0:k1, :n_p], want_exp[k0:k1, :n_p])
        np.testing.assert_array_equal(got_sum[k0:k1, :n_p], want_sum[k0:k1, :n_p])
        assert (got_exp[:k0] == -1).all() and (got_exp[k1:] == -1).all()
        if lanes * n_k * n_p <= 6000:
            exps, sums = block_dots(data, weights)
            np.testing.assert_array_equal(got_exp[k0:k1, :n_p] // 4, exps[k0:k1])
            np.testing.assert_array_equal(got_sum[k0:k1, :n_p], sums[k0:k1])


@pytest.mark.parametrize("pad", [1, 16, 23])
@pytest.mark.parametrize("tile", sorted(TILES))
def test_padded_rows_are_the_packed_ones(tile, pad):
    """fp16_padded_tile_dots of data rows ``pad`` words longer than the pixels (the tiles'
    padded strides), the extra words garbage (Inf, the largest magnitudes, zeros), is
    fp16_tile_dots of the packed rows: the same exponents and sums, and no word written past
    the pixels (the sentinels there stay)."""
    lanes, n_k, n_p, span = TILES[tile]
    rng = np.random.default_rng(lanes * 7 + n_p + pad)
    data = _every_shift(rng, lanes, n_p + pad)
    data[:, n_p:] = rng.choice(np.array([0x7C00, 0xFBFF, 0x0000, 0x0001], np.uint16),
                               (lanes, pad))
    weights = _every_shift(rng, n_k, lanes)
    w_rows, w_exp4 = fp16_weight_rows(np.ascontiguousarray(weights.T))
    width = n_p + pad + 5
    results = []
    for padded in (False, True):
        d_sign, d_sig, d_exp = fp16_mac_operands(data if padded else data[:, :n_p].copy())
        block_exp4 = np.full((n_k, width), -1, np.int32)
        high, low = np.full((n_k, width), 7, np.uint32), np.full((n_k, width), 7, np.uint32)
        operands = (w_rows, w_exp4, tile_scratch(width), block_exp4, high, low, span)
        if padded:
            fp16_padded_tile_dots(d_sign, d_sig, 4 * d_exp, n_p, *operands)
        else:
            fp16_tile_dots(d_sign, d_sig, 4 * d_exp, *operands)
        results.append((block_exp4, high, low))
    for got, want in zip(*results, strict=True):
        np.testing.assert_array_equal(got, want)


# --- the corrections: lanes the 8-bit tree missed, pixels beyond the 16-bit tree's reach ----

def _placed_far(rng, lanes, n_p, spread, far_pixels):
    """Data of exponents within ``spread`` exponent groups (of four) of the largest, and at
    ``far_pixels`` of a few lanes values 5 or more groups below (shifts of 20 to 28, or past
    32 for the smallest): the flagged lanes' far pixels at run edges and alone in a run."""
    e = rng.integers(28 - 4 * spread, 29, (lanes, n_p))
    for p in far_pixels:
        e[rng.integers(0, lanes, 2), p] = rng.choice([1, 4, 6, 8, 10])
    bits = (rng.integers(0, 2, (lanes, n_p)) << 15) | (e << 10) | rng.integers(0, 1024,
                                                                            (lanes, n_p))
    return bits.astype(np.uint16)


@pytest.mark.parametrize("spread", [1, 2, 3])  # the 8-bit tree fits, misses, both miss
@pytest.mark.parametrize("lanes, n_p", [(3, 17), (4, 16), (9, 40), (8, 128), (6, 100)])
def test_corrections_are_the_reference_kernels(lanes, n_p, spread):
    """Tiles whose lanes miss the 8-bit tree (redone from the 16-bit one) and hold a few
    pixels beyond the 16-bit tree's reach (corrected from the multiplier one by one: the
    first and last pixel of a run, a run's only one, the tile's last, partial run)."""
    rng = np.random.default_rng(lanes * 1000 + n_p * 10 + spread)
    far = sorted({0, 15, 16, 31, n_p // 2, n_p - 1} & set(range(n_p)))
    for _ in range(3):
        data = _placed_far(rng, lanes, n_p, spread, far)
        weights = ((rng.integers(0, 2, (12, lanes)) << 15) | (rng.integers(12, 16, (12, lanes))
                                                             << 10)
                   | rng.integers(0, 1024, (12, lanes))).astype(np.uint16)
        (got_exp, got_sum), (want_exp, want_sum) = _both(data, weights, (1, 12))
        np.testing.assert_array_equal(got_exp[1:12, :n_p], want_exp[1:12, :n_p])
        np.testing.assert_array_equal(got_sum[1:12, :n_p], want_sum[1:12, :n_p])


def _exponent_bits(rng, exponents):
    """fp16 values of the given exponents, random signs and fractions."""
    shape = np.shape(exponents)
    return ((rng.integers(0, 2, shape) << 15) | (np.asarray(exponents) << 10)
            | rng.integers(0, 1024, shape)).astype(np.uint16)


@pytest.mark.parametrize("n_p", [64, 100])
def test_lanes_within_reach_of_a_wide_group(n_p):
    """A group on the 16-bit tree (some lane shifted by 12 to 20 in every kernel) whose other
    lanes the exponents bound by 8, by 4, by exactly 12 (which must stay on the 16-bit
    tree: its shifts of 12 carry), or which are dead: the per-lane choice of tree."""
    rng = np.random.default_rng(n_p)
    # exponent groups (e >> 2) per lane: 7 sets every block's exponent; 5 is 8 below, 6 is 4
    # below, 4 is 12 below; the spread lanes reach 20 below and beyond
    groups = [7, 5, None, 6, 4, 5, 7, None]
    data = np.empty((len(groups), n_p), np.uint16)
    for lane, g in enumerate(groups):
        e = rng.integers(8, 30, n_p) if g is None else 4 * g + rng.integers(0, 4, n_p)
        data[lane] = _exponent_bits(rng, e)
    weights = _exponent_bits(rng, rng.integers(12, 16, (24, len(groups))))
    weights[rng.integers(0, 24, 4), 3] = 0  # a lane within reach, dead in some kernels
    (got_exp, got_sum), (want_exp, want_sum) = _both(data, weights, (0, 24))
    np.testing.assert_array_equal(got_exp[:, :n_p], want_exp[:, :n_p])
    np.testing.assert_array_equal(got_sum[:, :n_p], want_sum[:, :n_p])
