"""The carry rule of the fully connected layers (sim.num.fc_carries), held to the tree.

Exhaustive over both magnitudes (every CMAC significand: zero, denormals, Inf's 0x2000,
the largest 0x3FF8, ...) and both product signs: wherever the 16-bit tree's carry
(``sum_word_carry``, itself held to the definitional multiplier in test_mac_fc.py) of a
shift from 0 to 16 is 1, ``may_carry`` says it may be; and the bound it uses is tight.
"""

import functools

import numpy as np
import pytest

from sim.jit import njit
from sim.num.booth import booth_sum_low16
from sim.num.fc_carries import CARRY8_LOW_MAX, may_carry
from sim.num.mac import signed_product, sum_word_carry
from sim.num.word32 import and32, word32

MAGNITUDES = 1 << 14
SHIFTS = (0, 4, 8, 12, 16)


@njit
def _missed_carries(negative):
    """Over every pair of magnitudes of one product sign and each shift of ``SHIFTS``: how
    many carries of 1 ``may_carry`` says cannot be, how many carries are 1 (the comparison
    must see some), and the largest low byte of a product whose shift by 8 carries."""
    missed, ones, top = 0, 0, -1
    neg = word32(negative)
    for wt in range(MAGNITUDES):
        for dat in range(MAGNITUDES):
            w, d = word32(wt), word32(dat)
            product = signed_product(neg, w, d)
            tree = booth_sum_low16(neg, w, d)
            for shift in SHIFTS:
                carry = sum_word_carry(product, tree, word32(shift))
                ones += carry
                if carry and not may_carry(product, word32(shift)):
                    missed += 1
                if carry and shift == 8:
                    top = max(top, np.int64(and32(product, 0xFF)))
    return missed, ones, top


@njit
def _may_carry(product, shift):
    return bool(may_carry(product, shift))


@functools.cache
def _census(negative):
    return _missed_carries(negative)


@pytest.mark.parametrize("negative", [0, 1])
def test_rule_misses_no_carry(negative):
    missed, ones, top = _census(negative)
    assert missed == 0
    assert ones > MAGNITUDES  # many carries are 1: a rule that says "never" would fail
    assert top <= CARRY8_LOW_MAX


def test_bound_is_tight():
    """A carry of a product with the bound's low byte exists: a lower bound would miss it."""
    assert max(_census(0)[2], _census(1)[2]) == CARRY8_LOW_MAX


@pytest.mark.parametrize("shift", SHIFTS + (20, 28))
def test_may_carry_is_the_rule(shift):
    """``may_carry`` reads a product's low byte only, and of shifts up to 8 only 8's."""
    for low in range(256):
        for high in (0, 0x100, 0xFFFFFF00):
            product = np.uint32(high | low)
            want = shift > 8 or (shift == 8 and low <= CARRY8_LOW_MAX)
            assert _may_carry(product, np.uint32(shift)) == want
