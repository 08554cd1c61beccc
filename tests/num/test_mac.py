"""sim.num.mac (fp16 CMAC + CACC) and the C-model's rounding helpers, against exact references.

No golden vectors cover the MAC, so each primitive is checked against exact
integer arithmetic: the Booth multiplier per product (exact unshifted, within
one unit of the floor when shifted, exhaustive over small operands), the block
dot product and the 48-bit accumulator on values whose fp32 result is exact.
The fast block kernels (``fp16_tile_dots``; ``sim.num.mac_fc``'s, the fully connected
layers') are held to the plain definition of a block (``mac_reference.block_dot``).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from sim.jit import njit
from sim.num.booth import (
    ROW_BYTES,
    TABLE_ROWS,
    booth_data_table,
    booth_digits,
    booth_lane,
    booth_lane_table,
    booth_row_indices,
    booth_row_words,
)
from sim.num.mac import (
    CACC_NAN_EXP,
    MAC_NAN_EXP,
    ZERO_LANE_EXP,
    block_sum,
    cacc_accumulate,
    cacc_accumulate_finite,
    cacc_round_int32,
    cacc_round_is_identity,
    cacc_to_fp32,
    data_operands_bytes,
    first_nan_per_block,
    fp16_data_operands,
    fp16_mac_operands,
    fp16_tile_dots,
    fp16_weight_rows,
    mac_nan_block,
    tile_scratch,
    weight_rows_bytes,
)
from sim.num.mac_fc import CHUNK, fc_data, fc_scratch, fp16_fc_blocks
from sim.num.rounding import round_via_double, sign_extend, x86_int32
from sim.num.word32 import word32

from .mac_reference import (
    SIGN_COMPENSATION,
    block_dot,
    block_dots,
    booth_product,
    cmac_block,
    cmac_operand,
)


@njit
def _mismatches(neg, wt, dat, shift, table):
    """Lanes where the branch-free form and the C-model's table form differ, or where
    the table form is more than one unit from the floor of the exact shifted product."""
    bad = 0
    for j in range(neg.size):
        p = booth_product(neg[j], wt[j], dat[j], shift[j], table)
        if np.int32(booth_lane(neg[j], wt[j], dat[j], shift[j])) != p:
            bad += 1
            continue
        exact = (1 - 2 * neg[j]) * wt[j] * dat[j]
        floor = exact >> shift[j] if shift[j] < 32 else 0
        if shift[j] == 0 and p != exact:
            bad += 1
        elif abs(p - floor) > 1:
            bad += 1
    return bad


def _grid(*axes):
    return [a.ravel() for a in np.meshgrid(*axes, indexing="ij")]


@pytest.mark.parametrize("case", ["random", "exhaustive_small", "unshifted"])
def test_booth_product_against_exact_products(case):
    if case == "random":
        rng = np.random.default_rng(1)
        n = 200_000
        args = (rng.integers(0, 2, n), rng.integers(0, 1 << 14, n),
                rng.integers(0, 1 << 14, n), rng.integers(0, 16, n) * 4)
    elif case == "exhaustive_small":  # every 7-bit pair, both signs, every shift
        r = np.arange(1 << 7)
        args = _grid(np.arange(2), r << 7, r, np.arange(0, 64, 4))
    else:  # the largest magnitudes, unshifted: the exact product
        r = np.arange((1 << 14) - 128, 1 << 14)
        args = _grid(np.arange(2), r, r, np.array([0]))
    neg, wt, dat, shift = (np.asarray(a, np.int64) for a in args)
    assert _mismatches(neg, wt, dat, shift, SIGN_COMPENSATION) == 0


def fp16_bits(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def block_dot_reference(data_bits, weight_bits):
    """(block exponent, sum) of one block, lanes (lanes,) of fp16 bits."""
    exp, total = block_dot(np.asarray(data_bits, np.uint16), np.asarray(weight_bits, np.uint16))
    return int(exp), int(total)


def test_cmac_operands_are_the_definition_for_every_pattern():
    """The simulator's operand tables (fp16_mac_operands) against the reference's plain
    statement (cmac_operand), all 65536 patterns: Inf, denormals and both zeros included."""
    bits = np.arange(1 << 16)
    want = _operands(bits).T
    got = np.stack([a.astype(np.int64) for a in fp16_mac_operands(bits)], axis=1)
    np.testing.assert_array_equal(got, want)


@njit
def _operands(bits):
    out = np.zeros((3, bits.size), np.int64)
    for j in range(bits.size):
        out[0, j], out[1, j], out[2, j] = cmac_operand(bits[j])
    return out


def _edge_block(rng, kind: str, lanes: int) -> np.ndarray:
    """fp16 bits of one NaN-free block of a given character."""
    if kind == "random":
        bits = rng.integers(0, 1 << 16, lanes)
    elif kind == "same_exponent":  # every lane at one exponent: no shift at all
        bits = (rng.integers(0, 2, lanes) << 15) | (17 << 10) | rng.integers(0, 1024, lanes)
    elif kind == "widest_spread":  # Inf (2**16) beside denormals and zeros
        bits = rng.choice([0x7C00, 0xFC00, 0x0001, 0x83FF, 0x0000, 0x8000, 0x7BFF, 0x0400],
                          lanes)
    else:  # "denormal": all subnormal or zero
        bits = (rng.integers(0, 2, lanes) << 15) | rng.integers(0, 1024, lanes)
    bits = bits.astype(np.uint16)
    nan = ((bits >> 10) & 31 == 31) & (bits & 0x3FF != 0)
    bits[nan] = 0x7C00  # NaN blocks never reach the dot product
    return bits


# --- the fast forms: data rows tabulated, pixels vectorised (fp16_tile_dots), or
# weights decoded on the fly (sim.num.mac_fc) --------------------------------------
# Every shortcut is held to the C-model's table-driven multiplier (booth_product) or
# to the definition of a block (mac_reference.block_dot): the data table and the
# weights' row indices (every sign pair, exhaustive over small magnitudes and every
# shift, random over all), the sign compensation written as a shift, the window lookup
# of the Booth digits (all 2 x 2**16 weights), the skipped
# zero lanes and the two-word sums.


@njit
def _table_mismatches(d_neg, w_neg, wt, dat, shift, rows, table, comp):
    """Products where the tabulated multiplier differs from the C-model's (``table`` is
    scratch with a column per product)."""
    booth_data_table(d_neg, dat, table)
    bad = 0
    for p in range(dat.size):
        r = rows[p]
        got = booth_lane_table(table[r[0], p], table[r[1], p], table[r[2], p], table[r[3], p],
                               table[r[4], p], table[r[5], p], table[r[6], p], table[r[7], p],
                               table[r[8], p], table[r[9], p], word32(shift[p]))
        if np.int32(got) != booth_product(d_neg[p] ^ w_neg[p], wt[p], dat[p], shift[p], comp):
            bad += 1
    return bad


@pytest.mark.parametrize("case", ["exhaustive_small", "random", "largest"])
def test_tabulated_booth_is_the_c_model_multiplier(case):
    """Every data sign x weight sign; shifts 0 (the exact product) to 60 (nothing left)."""
    if case == "exhaustive_small":  # every 7-bit pair (placed high and low), every shift
        r = np.arange(1 << 7)
        d_neg, w_neg, wt, dat, shift = _grid(np.arange(2), np.arange(2), r << 7, r,
                                             np.arange(0, 64, 4))
        dat = np.concatenate([dat, dat << 7])
        d_neg, w_neg, wt, shift = (np.concatenate([a, a]) for a in (d_neg, w_neg, wt >> 7, shift))
    elif case == "random":
        rng = np.random.default_rng(5)
        n = 1_000_000
        d_neg, w_neg = rng.integers(0, 2, n), rng.integers(0, 2, n)
        wt, dat = rng.integers(0, 1 << 14, n), rng.integers(0, 1 << 14, n)
        shift = rng.integers(0, 17, n) * 4
    else:  # the largest magnitudes at the shifts that keep most bits
        r = np.arange((1 << 14) - 64, 1 << 14)
        d_neg, w_neg, wt, dat, shift = _grid(np.arange(2), np.arange(2), r, r,
                                             np.array([0, 4, 28]))
    d_neg, w_neg, wt, dat, shift = (np.asarray(a, np.int64) for a in (d_neg, w_neg, wt, dat,
                                                                       shift))
    rows = booth_row_indices(w_neg, wt)
    table = np.zeros((TABLE_ROWS, dat.size), np.uint32)
    assert _table_mismatches(d_neg.astype(np.uint32), w_neg, wt, dat.astype(np.uint32), shift,
                             rows, table, SIGN_COMPENSATION) == 0


def test_booth_digits_recode_every_weight():
    """For all 2 x 2**16 weights the eight digits are worth the weight (read as int16), negated
    for a negative product."""
    neg, wt = _grid(np.arange(2), np.arange(1 << 16))
    digits = booth_digits(neg, wt).astype(np.int64)
    signed = wt - ((wt >> 15) << 16)
    np.testing.assert_array_equal(digits @ (4 ** np.arange(8)), np.where(neg, -signed, signed))


def test_row_indices_are_the_recoding_of_every_weight():
    """The window lookup gives, for all 2 x 2**16 weights, the rows of booth_digits."""
    neg, wt = _grid(np.arange(2), np.arange(1 << 16))
    digits = booth_digits(neg, wt).astype(np.int64) + 2
    rows = booth_row_indices(neg, wt).astype(np.int64)
    for half, i in ((0, 0), (5, 4)):
        assert np.array_equal(rows[:, half], digits[:, i])
        for n in range(3):  # the same 25 pair words (the product shifts the 2nd and 3rd)
            assert np.array_equal(rows[:, half + 1 + n],
                                  5 + 5 * digits[:, i + n + 1] + digits[:, i + n])
        assert np.array_equal(rows[:, half + 4], 30 + digits[:, i + 3])


def test_data_operands_of_every_fp16_pattern():
    """The convolution's compiled data decode gives, for all 65536 fp16 patterns, the CMAC
    operands of the lookup tables, four times the exponent (4 * ZERO_LANE_EXP for zeros)."""
    bits = np.arange(1 << 16, dtype=np.uint16).reshape(16, 64, 64)
    want_sign, want_sig, want_exp = fp16_mac_operands(bits)
    scratch = np.full(data_operands_bytes(bits.size) + 4, 0xA5, np.uint8)  # stale bytes
    for sign, sig, exp4 in (fp16_data_operands(bits), fp16_data_operands(bits, scratch)):
        np.testing.assert_array_equal(sign, want_sign)
        np.testing.assert_array_equal(sig, want_sig)
        np.testing.assert_array_equal(exp4, 4 * want_exp)
        assert exp4.dtype == np.int32 and sig.dtype == np.uint32


def test_weight_rows_of_every_fp16_pattern():
    """The convolution's one-pass weight preparation gives, for all 65536 fp16 weights,
    the Booth rows of their CMAC sign and significand and four times their exponent."""
    bits = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    sign, sig, exp = fp16_mac_operands(bits)
    scratch = np.full(weight_rows_bytes(bits.size) + 8, 0xA5, np.uint8)  # stale bytes
    for rows, exp4 in (fp16_weight_rows(bits), fp16_weight_rows(bits, scratch)):
        assert rows.shape == (256, 256, ROW_BYTES) and exp4.dtype == np.int32
        np.testing.assert_array_equal(rows[..., :10], booth_row_indices(sign, sig))
        signed = np.where(sign == 1, -sig.astype(np.int64), sig)
        np.testing.assert_array_equal(rows[..., 10:12].copy().view(np.int16)[..., 0], signed)
        assert not rows[..., 12:].any()
        np.testing.assert_array_equal(exp4, 4 * exp)


@njit
def _row_words(neg, wt, out):
    for i in range(wt.size):
        out[i, 0], out[i, 1] = booth_row_words(neg[i], wt[i])


def test_row_words_are_the_row_indices_of_every_weight():
    """The word-wise recoding gives, for all 2 x 2**16 weights (magnitudes past fp16's 14
    bits too), the rows of booth_row_indices in bytes 0-9, zeros in 10-15."""
    neg, wt = (a.astype(np.uint32) for a in _grid(np.arange(2), np.arange(1 << 16)))
    words = np.zeros((wt.size, 2), np.uint64)
    _row_words(neg, wt, words)
    rows = words.view(np.uint8).reshape(wt.size, 16)
    np.testing.assert_array_equal(rows[:, :10], booth_row_indices(neg, wt))
    assert not rows[:, 10:].any()


@njit
def _lanes(neg, wt, dat, shift):
    out = np.zeros(neg.size, np.int64)
    for j in range(neg.size):
        out[j] = np.int32(booth_lane(neg[j], wt[j], dat[j], word32(shift[j])))
    return out


def test_sign_compensation_is_a_rounded_up_shift():
    """The compensation table is 0xAAAB0000 / 2**shift rounded up: -(0x55550000 >> shift)."""
    for i, comp in enumerate(SIGN_COMPENSATION.tolist()):
        assert comp == (-(0x55550000 >> (4 * i))) & 0xFFFFFFFF
    # and the branch-free lane (which uses it) is the table's, at every shift and both signs
    neg, wt, dat, shift = (a.astype(np.int64) for a in _grid(
        np.arange(2), np.array([1, 0x2AAA, 0x3FFF]), np.array([1, 0x1555, 0x3FFF]),
        np.arange(0, 68, 4)))
    want = [booth_product(*args, SIGN_COMPENSATION) for args in zip(neg, wt, dat, shift,
                                                                  strict=True)]
    assert _lanes(neg, wt, dat, shift).tolist() == want


@njit
def _tiled(d_sign, d_sig, d_exp4, w_rows, w_exp4, table, block_exp4, high, low):
    fp16_tile_dots(d_sign, d_sig, d_exp4, w_rows, w_exp4, table, block_exp4, high, low,
                   (0, high.shape[0]))
    sums = np.zeros(high.shape, np.int64)
    for k in range(high.shape[0]):
        for p in range(high.shape[1]):
            sums[k, p] = block_sum(high[k, p], low[k, p])
    return sums


def tile_dots(data, weights, width=None):
    """fp16_tile_dots of data (lanes, P) against weights (K, lanes): (exponents, sums) (K, P),
    with scratch arrays ``width`` >= P wide."""
    width = width or data.shape[1]
    d_sign, d_sig, d_exp = fp16_mac_operands(data)
    w = np.ascontiguousarray(weights.T)
    w_rows, w_exp4 = fp16_weight_rows(w)
    n_k = w.shape[1]
    block_exp4 = np.full((n_k, width), -1, np.int32)
    high, low = np.full((n_k, width), 7, np.uint32), np.full((n_k, width), 7, np.uint32)
    sums = _tiled(d_sign, d_sig, 4 * d_exp, w_rows, w_exp4, tile_scratch(width), block_exp4,
                  high, low)
    n_p = data.shape[1]
    return block_exp4[:, :n_p] // 4, sums[:, :n_p]


@pytest.mark.parametrize("kind", ["random", "same_exponent", "widest_spread", "denormal"])
@pytest.mark.parametrize("lanes,kernels,pixels", [(1, 3, 5), (8, 1, 33), (12, 40, 16),
                                                  (64, 17, 9), (200, 2, 3)])
def test_tile_dots_are_the_block_definition(kind, lanes, kernels, pixels):
    """Zero lanes (some pixels' data, whole lanes of data, zero weights) are skipped: the sums
    and exponents stay those of every lane's product."""
    rng = np.random.default_rng(lanes * 7 + pixels)
    for _ in range(4):
        data = np.stack([_edge_block(rng, kind, lanes) for _ in range(pixels)], axis=1)
        data[rng.integers(0, lanes), :] &= 0x8000  # a lane whose data are all zero
        w = np.stack([_edge_block(rng, kind, lanes) for _ in range(kernels)])
        w[:, rng.integers(0, lanes)] = 0  # a lane dead in every kernel
        want = block_dots(data, w)
        got = tile_dots(data, w, width=pixels + 3)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@njit
def _fc_dots(data, w_bits, lanes):
    n_k = w_bits.shape[0]
    scratch = fc_scratch(max(lanes, CHUNK))
    exps, sums = np.zeros((n_k, 1), np.int32), np.zeros((n_k, 1), np.int64)
    nans = np.zeros(n_k, np.bool_)
    for k in range(n_k):
        nans[k] = fp16_fc_blocks(data, w_bits[k], lanes, 1, scratch, exps[k], sums[k])
    return exps[:, 0] // 4, sums[:, 0], nans


def lane_dots(data, weights):
    """The fully connected layers' blocks (sim.num.mac_fc) of one data vector (lanes,)
    against each kernel's weights (K, lanes), all lanes one block, given as fp16 bits:
    (exponents, sums, whether a weight is a NaN) (K,)."""
    d_sign, d_sig, d_exp = fp16_mac_operands(data)
    return _fc_dots(fc_data(d_sign, d_sig, 4 * d_exp), np.ascontiguousarray(weights), data.size)


@pytest.mark.parametrize("kind", ["random", "same_exponent", "widest_spread", "denormal"])
@pytest.mark.parametrize("lanes,kernels", [(1, 3), (8, 1), (12, 40), (64, 17), (200, 2)])
def test_lane_dots_are_the_block_definition(kind, lanes, kernels):
    """Weights decoded on the fly (the fully connected layers' form, sim.num.mac_fc) give
    the exponents and sums of the block's definition, zero data lanes and zero weights
    included."""
    rng = np.random.default_rng(lanes * 11 + kernels)
    for trial in range(6):
        d = _edge_block(rng, kind, lanes)
        if trial % 2:
            d[rng.integers(0, lanes, max(1, lanes // 3))] &= 0x8000  # zero data lanes
        w = np.stack([_edge_block(rng, kind, lanes) for _ in range(kernels)])
        w[rng.integers(0, kernels), rng.integers(0, lanes)] &= 0x8000  # a zero weight
        exps, sums, nans = lane_dots(d, w)
        want = block_dots(d[:, None], w)
        np.testing.assert_array_equal(exps, want[0][:, 0])
        np.testing.assert_array_equal(sums, want[1][:, 0])
        assert not nans.any()


def test_lane_dots_decode_every_weight_pattern():
    """Every finite fp16 weight pattern against data of every exponent class: the weight
    decoded in the kernel is fp16_mac_operands' (significand, exponent, zero)."""
    w = np.arange(1 << 16, dtype=np.uint32)
    w = w[~(((w >> 10) & 31 == 31) & (w & 0x3FF != 0))].astype(np.uint16)  # NaNs never reach it
    for d in (0x3C00, 0x0001, 0x83FF, 0x7C00, 0xB555):
        data = np.array([d], np.uint16)
        exps, sums, _ = lane_dots(data, w[:, None])
        want = block_dots(data[:, None], w[:, None])
        np.testing.assert_array_equal(exps, want[0][:, 0])
        np.testing.assert_array_equal(sums, want[1][:, 0])


def test_lane_dots_flag_a_nan_weight():
    """A NaN among a kernel's weights is flagged (the layer then makes the block the first
    NaN in lane order, weights before data: tests/conv/test_fp16.py); a data NaN is not."""
    d = np.full(10, 0x3C00, np.uint16)
    d[2] = 0x7C11
    w = np.full((3, 10), 0x3C00, np.uint16)
    w[1, [4, 7]] = [0xFE05, 0x7E01]
    w[2, 9] = 0x7C01
    assert lane_dots(d, w)[2].tolist() == [False, True, True]
    assert [cmac_block(d, wk) for wk in w] == [
        (MAC_NAN_EXP, mac_nan_block(nan)) for nan in (0x7C11, 0xFE05, 0x7C01)]


def test_tile_dots_extremes_do_not_overflow_the_32_bit_words():
    """The largest products of one sign, 200 lanes: sums far beyond int32."""
    for sign in (0, 0x8000):
        data = np.full((200, 2), 0x7C00, np.uint16)  # Inf: significand 0x400 << 3
        w = np.full((1, 200), 0x7BFF | sign, np.uint16)
        exps, sums = tile_dots(data, w)
        assert (int(exps[0, 0]), int(sums[0, 0])) == block_dot_reference(data[:, 0], w[0])
        assert abs(int(sums[0, 0])) > 1 << 33
        exps, sums, _ = lane_dots(data[:, 0], w)
        assert (int(exps[0]), int(sums[0])) == block_dot_reference(data[:, 0], w[0])


def test_zero_lane_exponent_keeps_every_shift_out_of_reach():
    """A lane with a zero operand sits >= 32 bits below any block: its product is dropped."""
    top = 4 * (0x7BFF >> 10 >> 2) * 2  # the largest block exponent, times four
    assert top - 4 * (ZERO_LANE_EXP + 7) >= 32


def test_first_nan_per_block_finds_the_first_nan_in_lane_order():
    bits = np.zeros((2, 10), np.uint16)
    bits[0, [3, 5]] = [0x7E01, 0xFE02]
    bits[1, 9] = 0x7C01
    nan = ((bits >> 10) & 31 == 31) & (bits & 0x3FF != 0)
    assert first_nan_per_block(bits, nan, 4).tolist() == [[0x7E01, 0xFE02, -1], [-1, -1, 0x7C01]]


@pytest.mark.parametrize("seed", range(4))
def test_block_dot_is_exact_when_lanes_share_the_block_exponent(seed):
    """Integers 4..7 have exponent field 17 (17 >> 2 = 4): no lane is shifted."""
    rng = np.random.default_rng(seed)
    d = rng.integers(4, 8, 32) * rng.choice([-1, 1], 32)
    w = rng.integers(4, 8, 32) * rng.choice([-1, 1], 32)
    d[rng.random(32) < 0.2] = 0  # zero lanes contribute nothing
    block_exp, total = block_dot(fp16_bits(d), fp16_bits(w))
    assert block_exp == 8
    # value = total * 2**(4E - 50); each product is d*w = sig_d*sig_w * 2**(e_d+e_w-30)
    assert Fraction(int(total)) * Fraction(2) ** (4 * block_exp - 50) == int(np.dot(d, w))


def accumulate(blocks):
    exp = man = 0
    for e, m in blocks:
        exp, man = cacc_accumulate(exp, man, e, m)
    return cacc_to_fp32(exp, man)


@pytest.mark.parametrize("seed", range(6))
def test_cacc_gives_the_fp32_of_exact_sums(seed):
    """Blocks of small sums at two exponents (a 21-bit total): the fp32 result is exact."""
    rng = np.random.default_rng(seed)
    blocks = [(int(4 * rng.integers(10, 12)), int(rng.integers(-(1 << 12), 1 << 12)))
              for _ in range(8)]
    want = sum(Fraction(m) * Fraction(2) ** (e - 50) for e, m in blocks)
    got = np.array([accumulate(blocks)], np.uint32).view(np.float32)[0]
    assert Fraction(float(got)) == want


def fp32_value(bits) -> Fraction:
    return Fraction(float(np.array([bits], np.uint32).view(np.float32)[0]))


@pytest.mark.parametrize("sign", [1, -1])
def test_cacc_normalises_every_block_magnitude(sign):
    """A single block +/-2**k (every normalisation shift) and its neighbours are exact in fp32."""
    for k in range(38):
        for m in {1 << k, (1 << k) + (1 << max(k - 5, 0))}:
            m = sign * m
            if not -(1 << 37) <= m < 1 << 37:
                continue
            assert fp32_value(accumulate([(40, m)])) == Fraction(m) * Fraction(2) ** -10


def test_cacc_renormalises_after_cancellation():
    """Two blocks that nearly cancel leave a few low bits: the sum's renormalisation shift."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        big = int(rng.integers(1 << 20, 1 << 36)) * int(rng.choice([-1, 1]))
        rest = int(rng.integers(-(1 << 12), 1 << 12))
        blocks = [(44, big), (44, -big + rest)]
        want = Fraction(rest) * Fraction(2) ** (44 - 50)
        assert fp32_value(accumulate(blocks)) == want


@njit
def _both_caccs(acc_exp, acc_man, mac_exp, mac_man, chained, want, got):
    """Each step by cacc_accumulate and by cacc_accumulate_finite; ``chained``: each step
    adds to the previous result instead of to its own accumulator."""
    e1, m1, e2, m2 = acc_exp[0], acc_man[0], acc_exp[0], acc_man[0]
    for i in range(mac_man.size):
        if not chained:
            e1, m1, e2, m2 = acc_exp[i], acc_man[i], acc_exp[i], acc_man[i]
        e1, m1 = cacc_accumulate(e1, m1, mac_exp[i], mac_man[i])
        e2, m2 = cacc_accumulate_finite(e2, m2, mac_exp[i], mac_man[i])
        want[i, 0], want[i, 1], got[i, 0], got[i, 1] = e1, m1, e2, m2


def _sext(x, bits):
    return (np.asarray(x, np.int64) << (64 - bits)) >> (64 - bits)


def _cacc_cases(rng, n):
    """Accumulators (normalised, or anything 40-bit) and blocks around every alignment edge."""
    acc_man = _sext(rng.integers(0, 1 << 40, n), 40) >> rng.integers(0, 41, n)
    mac_man = _sext(rng.integers(0, 1 << 38, n), 38) >> rng.integers(0, 39, n)
    mac_exp = 4 * rng.integers(0, 15, n)
    # exponent differences from -45 to +45 around the block's, and anything
    acc_exp = np.where(rng.random(n) < 0.7, mac_exp + 49 - rng.integers(-45, 46, n),
                       rng.integers(0, 255, n)).clip(0, 254)
    edges = np.array([0, 1, -1, (1 << 37) - 1, -(1 << 37), 1 << 36, -(1 << 36), 3, -3])
    acc_edges = np.array([0, (1 << 39) - 1, -(1 << 39), 1 << 38, -(1 << 38), (1 << 38) + 1, -1])
    pick = rng.random(n) < 0.2
    mac_man[pick] = rng.choice(edges, pick.sum())
    pick = rng.random(n) < 0.2
    acc_man[pick] = rng.choice(acc_edges, pick.sum())
    return acc_exp, acc_man, mac_exp, mac_man


@pytest.mark.parametrize("chained", [False, True], ids=["single", "chained"])
def test_cacc_accumulate_finite_is_cacc_accumulate(chained):
    """The branch-free add (what the convolution kernels vectorise) against the reference:
    every alignment (equal exponents, 40 and 41 apart, far), overflow, cancellation, the
    rounding carry, zero blocks and zero accumulators."""
    rng = np.random.default_rng(int(chained))
    n = 300_000
    cases = _cacc_cases(rng, n)
    want, got = np.zeros((n, 2), np.int64), np.zeros((n, 2), np.int64)
    _both_caccs(*cases, chained, want, got)
    bad = np.flatnonzero((want != got).any(axis=1))
    assert not bad.size, [tuple(int(c[i]) for c in cases) for i in bad[:3]]


def test_nan_block_wins_and_keeps_sign_and_fraction():
    nan = 0xFE01  # negative NaN, fraction 0x201
    bits = accumulate([(40, 1000), (MAC_NAN_EXP, mac_nan_block(nan)), (44, -5)])
    assert bits == (1 << 31) | (0xFF << 23) | 0x201
    exp, _ = cacc_accumulate(0, 0, MAC_NAN_EXP, mac_nan_block(0x7E00))
    assert exp == CACC_NAN_EXP


def round_half_away(q: Fraction) -> int:
    return int(q + Fraction(1, 2)) if q >= 0 else -int(-q + Fraction(1, 2))


@pytest.mark.parametrize("truncate", [0, 1, 5, 16])
def test_cacc_round_int32_rounds_half_away_and_saturates(truncate):
    rng = np.random.default_rng(truncate)
    acc = np.concatenate([rng.integers(-(1 << 47), 1 << 47, 500), np.array([
        3 << max(truncate - 1, 0), -(3 << max(truncate - 1, 0)), (1 << 31) << truncate,
        -((1 << 31) << truncate) - 1, 0])]).astype(np.int64)
    out, saturated = cacc_round_int32(acc, truncate)
    want = [round_half_away(Fraction(int(a), 1 << truncate)) for a in acc]
    clipped = [min(max(v, -(1 << 31)), (1 << 31) - 1) for v in want]
    assert out.tolist() == clipped
    assert saturated == sum(v != c for v, c in zip(want, clipped, strict=True))


@pytest.mark.parametrize("bound,truncate", [(1, 0), ((1 << 24) - 1, 0), ((1 << 31) - 1, 0),
                                            (1 << 31, 0), ((1 << 24) - 1, 1), (3, 2)])
def test_cacc_round_is_identity_says_what_the_delivery_does(bound, truncate):
    """The predicate holds exactly when cacc_round_int32 returns sums within the bound
    (both ends and values around a half) unchanged with no saturation."""
    acc = np.array([-bound, -bound + 1, -1, 0, 1, 2, 3, bound - 1, bound], np.int64)
    out, saturated = cacc_round_int32(acc, truncate)
    unchanged = saturated == 0 and out.astype(np.int64).tolist() == acc.tolist()
    assert cacc_round_is_identity(bound, truncate) == unchanged


@pytest.mark.parametrize("value,shift,bits,want", [
    (5, 1, 16, 3), (-5, 1, 16, -3), (4, 1, 16, 2), (3, -2, 16, 12),
    (1 << 40, 0, 16, 32767), (-(1 << 40), 0, 16, -32768),
    ((1 << 53) + 1, 0, 60, 1 << 53),  # the C-model rounds through a double
    ((1 << 61) * 3, -4, 56, (1 << 55) - 1),  # beyond 2**63 saturates
])
def test_round_via_double(value, shift, bits, want):
    assert round_via_double(value, shift, bits) == want


def _through_double(value, shift, bits):
    """The C-model's steps in Python floats (IEEE doubles)."""
    vf = math.ldexp(float(value), -shift)
    if abs(vf) >= 2.0 ** 63:
        out = 1 << 64 if value > 0 else -(1 << 64)
    else:
        out = int(vf + 0.5) if vf > 0 else int(vf - 0.5)
    return min(max(out, -(1 << (bits - 1))), (1 << (bits - 1)) - 1)


def test_round_via_double_integer_shortcut_matches_the_double_steps():
    """Below 2**52 the kernel rounds in integers; at and around that edge (and the shift
    edges 0 and 52) it must still give exactly what the double steps give."""
    edges = [(1 << 52) + d for d in range(-3, 4)] + [(1 << 53) + d for d in range(-3, 4)]
    values = edges + [-v for v in edges] + [(3 << 50) + 1, (1 << 51) + (1 << 50) + 7, 1, -1, 0]
    for value in values:
        for shift in (-3, 0, 1, 2, 16, 50, 51, 52, 53, 60):
            for bits in (16, 56):
                assert round_via_double(value, shift, bits) == \
                    _through_double(value, shift, bits), (value, shift, bits)


def test_sign_extend_is_the_mac_field_reader():
    assert [sign_extend(x, 38) for x in (0, (1 << 37) - 1, 1 << 37, (1 << 38) - 1)] == [
        0, (1 << 37) - 1, -(1 << 37), -1]


@pytest.mark.parametrize("value,want", [
    (0, 0), ((1 << 31) - 1, (1 << 31) - 1), (-(1 << 31), -(1 << 31)),
    (1 << 31, -(1 << 31)), (-(1 << 31) - 1, -(1 << 31)), (1 << 40, -(1 << 31)),
])
def test_x86_int32(value, want):
    assert x86_int32(value) == want
