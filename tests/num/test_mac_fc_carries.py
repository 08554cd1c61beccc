"""The carries of shifts 4 and 8 from a table (sim.num.fc_carries), held to the trees.

Exhaustive over both magnitudes (every CMAC significand: zero, denormals, Inf's 0x2000,
the largest 0x3FF8, ...) and both product signs: the table's carry is the one the 16-bit
tree gives (``sum_word_carry``, itself held to the definitional multiplier in
test_mac_fc.py) for shifts 4 and 8, and 0 for every other shift.
"""

import numpy as np
import pytest

from sim.jit import njit
from sim.num.booth import booth_sum_low16
from sim.num.fc_carries import carry_table, low_carry
from sim.num.mac import signed_product, sum_word_carry
from sim.num.word32 import word32

MAGNITUDES = 1 << 14


@njit
def _table_mismatches(table, negative):
    """Over every pair of magnitudes of one product sign: carries of shifts 4 and 8 that
    differ from the tree's, carries of other shifts (0 to 28) that are not 0, and how many
    of the tree's carries were 1 (the comparison must see some)."""
    wrong, stray, ones = 0, 0, 0
    neg = word32(negative)
    for wt in range(MAGNITUDES):
        for dat in range(MAGNITUDES):
            w, d = word32(wt), word32(dat)
            product = signed_product(neg, w, d)
            tree = booth_sum_low16(neg, w, d)
            for shift in (4, 8):
                want = word32(sum_word_carry(product, tree, word32(shift)))
                ones += want
                wrong += low_carry(table, neg, w, d, word32(shift)) != want
            for shift in (0, 12, 16, 20, 24, 28):
                stray += low_carry(table, neg, w, d, word32(shift)) != 0
    return wrong, stray, ones


@pytest.mark.parametrize("negative", [0, 1])
def test_table_carries_are_the_trees(negative):
    wrong, stray, ones = _table_mismatches(carry_table(), negative)
    assert (wrong, stray) == (0, 0)
    assert ones > MAGNITUDES  # many carries are 1: a table of zeros would fail


def test_the_comparison_can_fail():
    """A table with one bit flipped gives a wrong carry somewhere."""
    table = carry_table().copy()
    table[len(table) // 3] ^= np.uint32(1 << 7)
    table[-1] ^= np.uint32(1)  # a case of shift 4
    assert _table_mismatches(table, 0)[0] + _table_mismatches(table, 1)[0] > 0
