"""Which lanes' shifted products may carry: the rule that spares most lanes the tree.

A lane's shifted product is ``(P >> s) - c`` (:func:`sim.num.mac.aligned_product_from_sum`),
``c`` whether the low ``s`` bits of the Booth tree's sum word exceed those of the exact
product ``P``.  Going through every case (``tests/num/test_mac_fc_carries.py`` does, over
every pair of CMAC magnitudes and both signs, against the 16-bit tree):

* for ``s = 4`` the carry is never 1: the tree's low four bits are never above ``P``'s;
* for ``s = 8`` it is 1 in about 1% of the cases, and only where ``P``'s low byte is at
  most ``CARRY8_LOW_MAX`` and the weight's significand has a one in its low
  ``CARRY8_WEIGHT_BITS`` bits (a weight whose Booth digits of those bits are all 0: a
  product of low byte 0, the only one at most 8 such a weight makes, never carries).

So a lane shifted by 0 or 4, or by 8 but for those few, is ``P >> s`` and nothing
more, and only the few others need the tree.  That replaced a table of every case (16 KB,
a gather a vector in the products' loop): on the AMD EPYC this was measured on, the
gathers took about 0.36 ns a lane, two thirds of that loop.  The weight's low bits count
because real data have short significands: of AlexNet's fully connected lanes shifted by
8, a quarter have a product of low byte 0, two thirds of those with such a weight, and
those had been most of the lanes sent to the tree.
"""

from __future__ import annotations

from sim.jit import njit
from sim.num.word32 import and32

#: The largest low byte of a product whose shift by 8 carries (the test finds one of 8:
#: a smaller bound would be wrong).
CARRY8_LOW_MAX = 8
#: A shift by 8 carries only where the weight's significand has a one in these low bits
#: (the test finds a carry with a weight of three trailing zeros: fewer bits would be
#: wrong).
CARRY8_WEIGHT_BITS = 4


@njit(inline="always")
def may_carry(product, shift, wt):
    """Whether the carry of ``product`` (a uint32 signed product of the weight significand
    ``wt``) shifted by ``shift`` (a multiple of 4, up to 16) may be 1: a bool, exact
    where it says no."""
    return (shift > 8) | ((shift == 8) & (and32(product, 0xFF) <= CARRY8_LOW_MAX)
                          & (and32(wt, (1 << CARRY8_WEIGHT_BITS) - 1) != 0))
