"""The carries of products shifted by 4 or 8, looked up instead of computed.

A lane's shifted product is ``(P >> s) - c`` (:func:`sim.num.mac.aligned_product_from_sum`),
``c`` whether the low ``s`` bits of the Booth tree's sum word exceed those of the exact
product ``P``.  A carry-save adder carries only upward, so those low bits depend only on
the low bits of the tree's inputs: for ``s = 8`` on the product's sign and the low bytes
of the two magnitudes (:func:`sim.num.booth.booth_sum_low8`), 2**17 cases; for ``s = 4``
on the sign and the low four bits of each (rows 0 and 1 and the negate bit of row 1 reach
no higher), 2**9 cases.  Both fit one table of 4112 32-bit words (16 KB), a bit a case,
which the products' loop reads with one gather a vector: in a 6x6x256 layer that loop
took about 0.1 ns a lane more, and the 8-bit tree's pass over every lane (0.26 ns a
lane) and the four byte arrays it read went.  ``tests/num/test_mac_fc_carries.py``
holds the table to the trees exhaustively.
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit
from sim.num.booth import booth_sum_low8
from sim.num.mac import signed_product, sum_word_carry
from sim.num.word32 import and32, or32, shl32, shr32, word32

#: Where the cases of shift 4 start (in bits): after the 2**17 of shift 8.
SHIFT4_BASE = 1 << 17
#: The table's 32-bit words.
CARRY_WORDS = (SHIFT4_BASE + (1 << 9)) // 32


@njit(inline="always")
def carry_index(negative, wt, dat, shift):
    """The table bit of a lane's carry for ``shift`` 8 (any other shift: the case of
    shift 4): product sign ``negative`` (0 or 1), magnitudes ``wt``, ``dat`` (only their
    low bytes count), a uint32."""
    by8 = or32(or32(shl32(negative, 16), shl32(and32(wt, 0xFF), 8)), and32(dat, 0xFF))
    by4 = or32(or32(SHIFT4_BASE, shl32(negative, 8)),
               or32(shl32(and32(wt, 0xF), 4), and32(dat, 0xF)))
    return by8 if shift == 8 else by4


@njit(inline="always")
def low_carry(table, negative, wt, dat, shift):
    """The carry ``c`` of a lane shifted by ``shift`` (a multiple of 4), from
    :func:`carry_table`: 0 unless ``shift`` is 4 or 8, a uint32 (0 or 1)."""
    index = carry_index(negative, wt, dat, shift)
    bit = and32(shr32(table[shr32(index, 5)], and32(index, 31)), 1)
    return and32(bit, word32((shift == 4) | (shift == 8)))


@njit
def _fill_carry_table(table):
    """Every case's carry: whether the tree's low ``s`` bits exceed the exact product's."""
    table[:] = 0
    for negative in range(2):
        for wt in range(256):
            for dat in range(256):
                _set_case(table, negative, wt, dat, 8)
        for wt in range(16):
            for dat in range(16):
                _set_case(table, negative, wt, dat, 4)


@njit(inline="always")
def _set_case(table, negative, wt, dat, shift):
    negative, wt, dat, shift = word32(negative), word32(wt), word32(dat), word32(shift)
    # the tree's low byte is all the carry of a shift up to 8 reads
    if sum_word_carry(signed_product(negative, wt, dat), booth_sum_low8(negative, wt, dat),
                      shift):
        index = np.int64(carry_index(negative, wt, dat, shift))
        table[index >> 5] |= np.uint32(1) << np.uint32(index & 31)


_TABLE: list[np.ndarray] = []


def carry_table() -> np.ndarray:
    """The carries of shifts 4 and 8 (:data:`CARRY_WORDS` uint32, read-only), built once."""
    if not _TABLE:
        table = np.zeros(CARRY_WORDS, np.uint32)
        _fill_carry_table(table)
        table.flags.writeable = False
        _TABLE.append(table)
    return _TABLE[0]
