"""The column kernel's carry tables (sim.num.fc_carry_tables), held to the 16-bit tree.

One pass over every pair of CMAC magnitudes and both product signs (about 42 million
products) checks that the carry at shift 8 is the bit :func:`carry8_rows` holds for the
pair's signs and low bytes, and that the saved bounds at 12 are sufficient (no carry at
or above its data value's bound) and tight (for every data value with a bound, a carry
just below it).
"""

import functools

import numpy as np

from sim.jit import njit
from sim.num.booth import booth_sum_low16
from sim.num.fc_carry_tables import (
    SIGNIFICANDS,
    carry8_rows,
    carry_bounds,
    cmac_magnitudes,
    decode_bounds,
    encode_bounds,
)
from sim.num.mac import signed_product, sum_word_carry
from sim.num.word32 import and32, word32


@njit(inline="always")
def _table_bit(rows, d_sign, d_low, w_sign, w_low):
    bit = w_sign * 256 + w_low
    return (np.int64(rows[d_sign * 256 + d_low, bit >> 4]) >> (bit & 15)) & 1


@njit
def _census(rows, bounds, magnitudes):
    """(s=8 lookups that differ from the tree, carries of 1 at 8; carries at 12 at or above
    the bound; data values whose bound has no carry at bound - 1; carries at 12)."""
    wrong8, ones8, over, ones = 0, 0, 0, 0
    at_edge = np.zeros(SIGNIFICANDS, np.bool_)
    for negative in range(2):
        n = word32(negative)
        for dat in magnitudes:
            d = word32(dat)
            for wt in magnitudes:
                w = word32(wt)
                product = signed_product(n, w, d)
                tree = booth_sum_low16(n, w, d)
                c8 = sum_word_carry(product, tree, word32(8))
                ones8 += c8
                # the data's sign 0, the weight's the product's: every sign pair reduces to it
                wrong8 += c8 != _table_bit(rows, 0, dat & 255, negative, wt & 255)
                wrong8 += c8 != _table_bit(rows, 1, dat & 255, 1 - negative, wt & 255)
                if sum_word_carry(product, tree, word32(12)):
                    ones += 1
                    low = np.int64(and32(product, 0xFFF))
                    over += low >= bounds[dat]
                    at_edge[dat] |= low == bounds[dat] - 1
    loose = 0
    for dat in magnitudes:
        loose += bounds[dat] > 0 and not at_edge[dat]
    return wrong8, ones8, over, loose, ones


@functools.cache
def _results():
    return _census(carry8_rows(), carry_bounds(), cmac_magnitudes())


def test_carry8_table_is_the_tree():
    wrong8, ones8, *_ = _results()
    assert wrong8 == 0
    assert ones8 > 10**5  # the table is not all zeros


def test_bounds_are_sufficient():
    _, _, over, _, ones = _results()
    assert over == 0
    assert ones > 10**4


def test_bounds_are_tight():
    _, _, _, loose, _ = _results()
    assert loose == 0


def test_bounds_only_at_cmac_magnitudes():
    """Values no CMAC significand takes have no bound (the table is indexed by them)."""
    bounds = carry_bounds()
    others = np.setdiff1d(np.arange(SIGNIFICANDS), cmac_magnitudes())
    assert bounds[others].max() == 0
    assert 0 < bounds.max() <= 1 << 12


def test_bounds_encoding_round_trips():
    rng = np.random.default_rng(7)
    table = rng.integers(0, 1 << 16, 33)
    assert (decode_bounds(encode_bounds(table), 33) == table).all()


def test_cmac_magnitudes():
    magnitudes = cmac_magnitudes()
    assert magnitudes.size == 4608  # the distinct values of 2**15 fp16 magnitudes
    assert magnitudes[0] == 0 and magnitudes[-1] == 0x7FF << 3
    assert (np.diff(magnitudes) > 0).all()
