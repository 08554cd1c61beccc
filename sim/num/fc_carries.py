"""Which lanes' shifted products may carry: the rule that spares most lanes the tree.

A lane's shifted product is ``(P >> s) - c`` (:func:`sim.num.mac.aligned_product_from_sum`),
``c`` whether the low ``s`` bits of the Booth tree's sum word exceed those of the exact
product ``P``.  Going through every case (``tests/num/test_mac_fc_carries.py`` does, over
every pair of CMAC magnitudes and both signs, against the 16-bit tree):

* for ``s = 4`` the carry is never 1: the tree's low four bits are never above ``P``'s;
* for ``s = 8`` it is 1 in about 1% of the cases, and only where ``P``'s low byte is at
  most ``CARRY8_LOW_MAX``.

So a lane shifted by 0 or 4, or by 8 with a larger low byte, is ``P >> s`` and nothing
more, and only the few others need the tree.  That replaced a table of every case (16 KB,
a gather a vector in the products' loop): on the AMD EPYC this was measured on, the
gathers took about 0.36 ns a lane, two thirds of that loop.
"""

from __future__ import annotations

from sim.jit import njit
from sim.num.word32 import and32

#: The largest low byte of a product whose shift by 8 carries (the test finds one of 8:
#: a smaller bound would be wrong).
CARRY8_LOW_MAX = 8


@njit(inline="always")
def may_carry(product, shift):
    """Whether the carry of ``product`` (a uint32 signed product) shifted by ``shift`` (a
    multiple of 4, up to 16) may be 1: a bool, exact where it says no."""
    return (shift > 8) | ((shift == 8) & (and32(product, 0xFF) <= CARRY8_LOW_MAX))
