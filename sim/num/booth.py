"""The CMAC's fp16 multiplier: a radix-4 Booth multiplier with a carry-save tree, bit-exact.

Each lane multiplies two <= 14-bit magnitudes (:mod:`sim.num.mac` gives the
operands).  The weight is Booth-recoded (all digits inverted for a negative
product) into eight partial products, which a carry-save tree reduces to two
32-bit words.  To align the product to its block's exponent, NVIDIA's C-model
shifts the two words right *separately* before adding them with a sign
compensation constant, so a shifted product may be one unit below the floor of
the exact one; that is why the tree is emulated gate by gate.

:func:`booth_lane` is the definition, branch-free and table-free in 32-bit words
(:mod:`sim.num.word32`), so a loop over lanes vectorises; the tests hold it to the
C-model's form (``tests/num/mac_reference.py``).  The fp16 convolution tabulates the
data's possible tree words and takes the weight as ten indices into them
(:func:`booth_lane_table`: a loop over pixels); it needs the tree only in the low 8 or 16
bits of its sum word, from narrow copies of the table (:func:`booth_data_table_low`,
:func:`booth_sum_low8_table`, :func:`booth_sum_low16_table`), but for the few products
shifted further.  The fully connected layers need only those low bits too
(:mod:`sim.num.mac_fc`): :func:`booth_sum_low16` for the few lanes whose carry may be 1
(:mod:`sim.num.fc_carries`).
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit
from sim.num.narrow import (
    and8,
    and16,
    or8,
    or16,
    sar16,
    shl8,
    shl16,
    shr8,
    shr16,
    sub8,
    sub16,
    xor8,
    xor16,
)
from sim.num.word32 import add32, and32, or32, shl32, shr32, sub32, word32, xor32

M32 = 0xFFFFFFFF


@njit(inline="always")
def _csa32(a, b, c):
    """One 3:2 carry-save adder on 32-bit words: (sum, carry << 1)."""
    # the majority as "c where a and b differ, else a" (((a ^ c) & (b ^ c)) ^ c): LLVM makes
    # it one bit-select, sharing a ^ c with the sum; the and/or form took two ternary ops
    return xor32(xor32(a, b), c), shl32(xor32(and32(xor32(a, c), xor32(b, c)), c), 1)


@njit(inline="always")
def _booth_row32(digit, dat):
    """Partial product and negate bit of one radix-4 Booth digit (3 bits), branch-free.

    Digits 1, 2 (5, 6) select +1 (-1) times the multiplicand, 3 (4) select
    +2 (-2) times, 0 and 7 select zero.  A positive row carries a leading one
    at bit 16; a negative row is the 16-bit ones' complement with the negate
    bit set (added one position below the next row).
    """
    b0 = and32(digit, 1)
    b1 = and32(shr32(digit, 1), 1)
    b2 = shr32(digit, 2)
    one = xor32(b0, b1)
    two = and32(xor32(one, 1), xor32(b2, b1))
    neg = and32(b2, xor32(and32(b1, b0), 1))
    v = or32(and32(dat, sub32(0, one)), and32(shl32(dat, 1), sub32(0, two)))
    return or32(xor32(v, and32(sub32(0, neg), 0xFFFF)), shl32(xor32(neg, 1), 16)), neg


@njit(inline="always")
def _booth_tree32(negative, wt, dat):
    """The two carry-save words of the Booth multiplier for |wt| * |dat| (<= 14 bits).

    The weight is Booth-recoded (radix 4: digit ``i`` is bits ``2i-1..2i+1`` of
    the weight, bit -1 being 0; all digits inverted for a negative product) into
    eight partial products; a carry-save tree reduces them (:func:`_reduce32`).
    """
    rev = and32(sub32(0, negative), 7)
    w = shl32(wt, 1)
    p0, i0 = _booth_row32(xor32(and32(w, 7), rev), dat)
    p1, i1 = _booth_row32(xor32(and32(shr32(w, 2), 7), rev), dat)
    p2, i2 = _booth_row32(xor32(and32(shr32(w, 4), 7), rev), dat)
    p3, i3 = _booth_row32(xor32(and32(shr32(w, 6), 7), rev), dat)
    p4, i4 = _booth_row32(xor32(and32(shr32(w, 8), 7), rev), dat)
    p5, i5 = _booth_row32(xor32(and32(shr32(w, 10), 7), rev), dat)
    p6, i6 = _booth_row32(xor32(and32(shr32(w, 12), 7), rev), dat)
    p7, i7 = _booth_row32(xor32(and32(shr32(w, 14), 7), rev), dat)
    return _reduce32(p0, p1, p2, p3, p4, p5, p6, p7, i0, i1, i2, i3, i4, i5, i6, i7)


@njit(inline="always")
def _reduce32(p0, p1, p2, p3, p4, p5, p6, p7, i0, i1, i2, i3, i4, i5, i6, i7):
    """The carry-save tree on the rows ``p`` and negate bits ``i``: each row shifted into
    place with the negate bit of the row below, rows 0-3 and rows 4-7 reduced to two words
    each, then those four to two (:func:`_reduce_words`)."""
    return _reduce_words(p0, or32(shl32(p1, 2), i0), or32(shl32(p2, 4), shl32(i1, 2)),
                         or32(shl32(p3, 6), shl32(i2, 4)), shl32(i3, 6), shl32(p4, 8),
                         or32(shl32(p5, 10), shl32(i4, 8)), or32(shl32(p6, 12), shl32(i5, 10)),
                         or32(shl32(p7, 14), shl32(i6, 12)), shl32(i7, 14), 0)


@njit(inline="always")
def _reduce_words(w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, upper):
    """The tree on its ten input words: rows 0-3 with the negate bits of rows 0-3
    (``w0``-``w4``), then rows 4-7 with theirs (``w5``-``w9``), whose two words are
    shifted left by ``upper`` before the last two adders.  A carry-save adder is bitwise
    but for its carry's left shift, so shifting its inputs shifts its outputs: rows 4-7
    may come at the positions of rows 0-3 with ``upper`` 8."""
    a, b = _csa32(w0, w1, w2)
    a, b = _csa32(a, b, w3)
    a, b = _csa32(a, b, w4)
    c, d = _csa32(w5, w6, w7)
    c, d = _csa32(c, d, w8)
    c, d = _csa32(c, d, w9)
    a, b = _csa32(a, b, shl32(c, upper))
    return _csa32(a, b, shl32(d, upper))


@njit(inline="always")
def _shifted_sum32(a, b, shift):
    """The two words shifted right separately, added with the sign compensation.

    ``shift`` is any non-negative integer below 2**32 (32 or more gives 0).
    The C-model's compensation table, ``0xAAAB0000`` (read as int32) divided by
    ``2**shift`` and rounded up, is ``-(0x55550000 >> shift)``.
    """
    return sub32(add32(_shr_or_zero(a, shift), _shr_or_zero(b, shift)),
                 _shr_or_zero(0x55550000, shift))


@njit(inline="always")
def _shr_or_zero(word, shift):
    """``word >> shift``, 0 for shifts of 32 or more: the processors' own variable shift
    (LLVM makes this select one instruction; a mask and a select took three more)."""
    return shr32(word, shift) if shift < 32 else word32(0)


@njit(inline="always")
def booth_lane(negative, wt, dat, shift):
    """The CMAC's shifted product of two <= 14-bit magnitudes, as a uint32 word (read it
    as int32), without branches or tables: the product of sign ``negative`` (0 or 1) of
    ``wt`` and ``dat``, each of its carry-save words shifted right by ``shift`` (a multiple
    of 4) before they are added with the sign compensation; 0 for shifts of 32 or more."""
    a, b = _booth_tree32(word32(negative), word32(wt), word32(dat))
    return _shifted_sum32(a, b, shift)


# --- the multiplier with the data's rows tabulated --------------------------------
# Every row of the tree is the data magnitude times a Booth digit -2..2: a positive
# (or zero) digit gives ``|digit| * dat | 1 << 16``, a negative one ``|digit| * dat ^
# 0xFFFF`` and a negate bit.  Inverting a digit (a negative product) negates its value,
# so a row depends only on the digit's value times the data's sign, and a data value
# has only a few possible tree words: the five rows, the 25 words "row << 2 | negate
# bit of the row below", and the five negate bits shifted by 6 (:func:`booth_data_table`,
# :data:`TABLE_ROWS` of them).  The tree also takes two of the pair words shifted by 2
# and 4; the product shifts them itself, which keeps a value's table small (a group of
# four lanes' 16-bit tables at a tile's 256 pixels: about 72 KB; a group mixing trees
# reads the 8-bit ones too, about 108 KB).  The tree's
# second half (rows 4-7) is the first half's pattern shifted by 8, so both halves
# read the same words.  A weight is ten indices into that table
# (:func:`booth_row_indices`, recoded once per layer), and a product is ten table
# reads and the tree (:func:`booth_lane_table`).

DIGITS = 5  # Booth digit values -2..2, stored as value + 2
_ROW = 0  # row(t)
_PAIR = _ROW + DIGITS  # row(t) << 2 | neg(u) at _PAIR + 5 * t + u
_NEG6 = _PAIR + DIGITS * DIGITS  # neg(t) << 6
TABLE_ROWS = _NEG6 + DIGITS


def booth_digits(negative, wt) -> np.ndarray:
    """The eight radix-4 Booth digits (..., 8) int8 of magnitudes ``wt`` (< 2**16) for
    product sign ``negative``, as the tree's rows take them (the definition of the
    recoding): digit ``i`` is the window ``b2 b1 b0`` of bits ``2i+1, 2i, 2i-1`` of the
    magnitude (bit -1 being 0), all three inverted for a negative product, worth ``b1 +
    b0 - 2 * b2`` (-2..2; inverting the window negates it)."""
    w = np.asarray(wt, np.int64) << 1
    rev = 7 * np.asarray(negative, np.int64)
    digits = np.empty((*np.broadcast_shapes(w.shape, rev.shape), 8), np.int8)
    for i in range(8):
        window = ((w >> (2 * i)) & 7) ^ rev
        digits[..., i] = ((window >> 1) & 1) + (window & 1) - 2 * (window >> 2)
    return digits


def _row_indices(negative, wt) -> np.ndarray:
    """:func:`booth_row_indices` from :func:`booth_digits` (the definition)."""
    t = booth_digits(negative, wt).astype(np.int16) + 2
    rows = np.empty((*t.shape[:-1], 10), np.uint8)
    for half, i in ((0, 0), (5, 4)):
        rows[..., half] = _ROW + t[..., i]
        for n in range(3):
            rows[..., half + 1 + n] = _PAIR + DIGITS * t[..., i + n + 1] + t[..., i + n]
        rows[..., half + 4] = _NEG6 + t[..., i + 3]
    return rows


#: The ten rows of a zero weight (every Booth digit 0, of either sign).
ZERO_WEIGHT_ROWS = tuple(int(r) for r in _row_indices(0, 0))

# Rows 0-3 (digits of bits -1..7 of the magnitude) and rows 4-7 (bits 7..15) are recoded
# apart: the five indices of each half, by sign and those bits.
_LOW_ROWS = _row_indices(np.arange(2)[:, None], np.arange(1 << 8)[None, :])[..., :5].reshape(-1, 5)
_HIGH_ROWS = (_row_indices(np.arange(2)[:, None], np.arange(1 << 9)[None, :] << 7)[..., 5:]
              .reshape(-1, 5))


def booth_row_indices(negative, wt) -> np.ndarray:
    """The ten table rows (..., 10) uint8 a weight of sign ``negative`` and magnitude ``wt``
    (< 2**16) reads from a data value's :func:`booth_data_table` (whose sign completes the
    product's): rows 0-3 then rows 4-7, each half as (row, pair, pair, pair, negate << 6),
    the second and third pairs to be shifted by 2 and 4.  Each half is looked up by the
    sign and the magnitude's bits it recodes (:func:`booth_rows_into`); kernels compute the
    same rows in words (:func:`booth_row_words`)."""
    w = np.asarray(wt).astype(np.int64)
    sign = (np.asarray(negative) != 0).astype(np.int64)
    shape = np.broadcast_shapes(w.shape, sign.shape)
    rows = np.empty((int(np.prod(shape)), 10), np.uint8)
    _rows_of(np.broadcast_to(sign, shape).ravel(), np.broadcast_to(w, shape).ravel(), rows,
             _LOW_ROWS, _HIGH_ROWS)
    return rows.reshape(*shape, 10)


@njit
def _rows_of(sign, wt, rows, low_rows, high_rows):
    for i in range(wt.size):
        booth_rows_into(sign[i], wt[i], rows[i], low_rows, high_rows)


@njit(inline="always")
def booth_rows_into(negative, wt, rows, low_rows, high_rows):
    """:func:`booth_row_indices` of one weight into ``rows`` (10,) uint8 from the half
    tables ``low_rows``, ``high_rows``."""
    low = (negative << 8) | (wt & 0xFF)
    high = (negative << 9) | ((wt >> 7) & 0x1FF)
    for j in range(5):
        rows[j] = low_rows[low, j]
        rows[5 + j] = high_rows[high, j]


# --- the same ten rows computed in 64-bit words, for a loop over weights ------------
# The table lookups above load and store byte by byte; a layer has millions of weights.
# In a 64-bit word the eight windows of bits 2i-1..2i+1 spread to bytes (window i to
# byte i), each byte's digit + 2 = b0 + b1 + 2 - 2 * b2 is a few byte-parallel steps, and
# a half's five rows (row t0, pairs 5 + 5 * t(i+1) + t(i), 30 + t3) are constants plus
# the digit bytes shifted and masked: no byte carries into the next (rows < 35), so a
# loop of it vectorises.
ROW_BYTES = 16  #: a weight's rows (10 bytes) padded to two 64-bit words
_U64 = np.uint64
_BYTE_ONES = _U64(0x0101010101010101)
_WINDOW_MASKS = tuple(_U64(7 << 8 * i) for i in range(8))
_WINDOW_SHIFTS = tuple(_U64(6 * i) for i in range(8))  # bit 2i of the window to bit 8i
_HALF_BASE = _U64(_ROW | _PAIR << 8 | _PAIR << 16 | _PAIR << 24 | _NEG6 << 32)
_HALF_DIGITS, _LOW_DIGIT, _PAIR_HIGH = _U64(0xFFFFFFFF), _U64(0xFF), _U64(0xFFFFFF00)


@njit(inline="always")
def booth_row_words(negative, wt):
    """:func:`booth_row_indices` of one weight (magnitude ``wt`` < 2**16, sign ``negative``)
    as two little-endian 64-bit words: rows 0-7, then rows 8-9 (the upper six bytes 0)."""
    u1, u2 = _U64(1), _U64(2)
    # bit 2i - 1 of the magnitude at bit 2i, all bits inverted for a negative product
    x = (_U64(wt) << u1) ^ (_U64(0x1FFFF) * (_U64(negative) & u1))
    windows = _U64(0)
    for i in range(8):
        windows |= (x << _WINDOW_SHIFTS[i]) & _WINDOW_MASKS[i]
    # each byte: b0 + b1 + 2 - 2 * b2 (2 - 2 * b2 >= 0: no byte borrows)
    digits = ((windows & _BYTE_ONES) + ((windows >> u1) & _BYTE_ONES)
              + ((_BYTE_ONES << u1) - (((windows >> u2) & _BYTE_ONES) << u1)))
    low = _half_rows(digits & _HALF_DIGITS)
    high = _half_rows(digits >> _U64(32))
    return low | (high << _U64(40)), high >> _U64(24)


@njit(inline="always")
def _half_rows(d):
    """A half's five rows (bytes 0-4) from its four digits + 2 (bytes 0-3 of ``d``): row t0,
    the pairs 5 + 5 * t(i+1) + t(i), the negate row 30 + t3."""
    high = d & _PAIR_HIGH
    return _HALF_BASE + ((d << _U64(8)) | (d & _LOW_DIGIT)) + (high << _U64(2)) + high


@njit(inline="always")
def booth_data_table(negative, dat, table):
    """The tree words of data magnitudes ``dat`` (n,) with signs ``negative`` (n,) into
    ``table`` (TABLE_ROWS, >= n) uint32, one column per data value."""
    n = dat.size
    for t in range(DIGITS):
        row, neg6 = table[_ROW + t], table[_NEG6 + t]
        for p in range(n):
            row[p], neg = _row_word(t, negative[p], dat[p])
            neg6[p] = shl32(neg, 6)
    for t in range(DIGITS):
        row = table[_ROW + t]
        for u in range(DIGITS):
            neg6 = table[_NEG6 + u]
            pair = table[_PAIR + DIGITS * t + u]
            for p in range(n):
                pair[p] = _pair_word(row[p], neg6[p])


@njit(inline="always")
def _row_word(t, negative, dat):
    """The row of digit ``t - 2`` (``t`` 0..4) times the data ``dat`` of sign ``negative``,
    and its negate bit (whether the digit's value is negative), as 32-bit words."""
    neg = and32(xor32(word32(t < 2), negative), word32(t != 2))
    return xor32(word32(dat * abs(t - 2)), sub32(0x10000, neg)), neg


@njit(inline="always")
def _pair_word(row, neg6):
    """A pair word: a row shifted by 2 with the negate bit of the row below (``neg6``, the
    bit at 6) at bit 0."""
    return or32(shl32(row, 2), shr32(neg6, 6))


@njit(inline="always")
def _pair_word16(row16, neg6):
    """:func:`_pair_word` in 16-bit words (its low bits: the shift and or carry nothing
    across), twice the pixels a vector of the 32-bit form."""
    return or16(shl16(row16, 2), shr16(neg6, 6))


@njit(inline="always")
def booth_lane_table(w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, shift):
    """:func:`booth_lane` from the ten table words a weight's :func:`booth_row_indices` pick
    (of each half, the second and third pair words go in shifted by 2 and 4)."""
    a, b = _reduce_words(w0, w1, shl32(w2, 2), shl32(w3, 4), w4,
                         w5, w6, shl32(w7, 2), shl32(w8, 4), w9, 8)
    return _shifted_sum32(a, b, shift)


# --- the low half of the tree's sum word, in 16-bit words -------------------------
# The shifted product depends on the tree only through the low ``shift`` bits of the sum
# word (:func:`sim.num.mac.aligned_product_from_sum`).  A carry-save adder carries only
# upward, so the low 16 bits of its outputs depend only on the low 16 bits of its
# inputs: the tree run on 16-bit words (32 lanes a 512-bit vector instead of 16; each
# row's leading one at bit 16 drops out) gives them exactly.

@njit(inline="always")
def booth_sum_low16(negative, wt, dat):
    """The low 16 bits of the carry-save tree's sum word (the first of
    :func:`_booth_tree32`'s two) for magnitudes ``wt``, ``dat`` (< 2**14) and product sign
    ``negative`` (0 or 1), as a uint16, computed in 16-bit words."""
    neg_word = sub16(0, negative)
    # the Booth recoding of all eight digits at once (booth_digits' windows): bit 2i of
    # x, x >> 1 and x >> 2 make row i's window, and of one, two and neg whether row i
    # selects the data, twice the data, and is negated.  Row 7's window reaches bit 16
    # of x (wt << 1, inverted for a negative product), which a 16-bit word lacks: it is
    # the sign (the magnitude is below 2**14)
    x = xor16(shl16(wt, 1), neg_word)
    x1 = shr16(x, 1)
    x2 = or16(shr16(x, 2), shl16(negative, 14))
    one = xor16(x, x1)
    two = and16(xor16(one, 0xFFFF), xor16(x1, x2))
    neg = and16(x2, xor16(and16(x, x1), 0xFFFF))
    dat2 = shl16(dat, 1)
    w0, n0 = _row16(one, two, neg, 0, dat, dat2)
    w1, n1 = _row16(one, two, neg, 1, dat, dat2)
    w2, n2 = _row16(one, two, neg, 2, dat, dat2)
    w3, n3 = _row16(one, two, neg, 3, dat, dat2)
    w4, n4 = _row16(one, two, neg, 4, dat, dat2)
    w5, n5 = _row16(one, two, neg, 5, dat, dat2)
    w6, n6 = _row16(one, two, neg, 6, dat, dat2)
    w7, n7 = _row16(one, two, neg, 7, dat, dat2)
    # the ten words of _reduce32 (row i at bit 2i, the negate bit of row i - 1 below it)
    a, b = _csa16(w0, or16(w1, n0), or16(w2, n1))
    a, b = _csa16(a, b, or16(w3, n2))
    a, b = _csa16(a, b, n3)
    c, d = _csa16(w4, or16(w5, n4), or16(w6, n5))
    c, d = _csa16(c, d, or16(w7, n6))
    c, d = _csa16(c, d, n7)
    a, b = _csa16(a, b, c)
    return xor16(xor16(a, b), d)  # the last adder's sum word


@njit(inline="always")
def _row16(one, two, neg, i, dat, dat2):
    """Row ``i`` of the tree at its place (bit ``2 i``) in a 16-bit word, and its negate
    bit at the same place (the next row's word takes it, as in :func:`_reduce32`)."""
    top = 15 - 2 * i  # bit 2i of the masks to the sign bit, spread over the word
    o = sar16(shl16(one, top), 15)
    t = sar16(shl16(two, top), 15)
    n = sar16(shl16(neg, top), 15)
    row = shl16(xor16(or16(and16(dat, o), and16(dat2, t)), n), 2 * i)
    return row, shl16(and16(n, 1), 2 * i)


@njit(inline="always")
def _csa16(a, b, c):
    """:func:`_csa32` on 16-bit words."""
    return xor16(xor16(a, b), c), shl16(xor16(and16(xor16(a, c), xor16(b, c)), c), 1)


@njit(inline="always")
def booth_sum_low8(negative, wt_low, dat_low):
    """The low 8 bits of the carry-save tree's sum word (:func:`booth_sum_low16`'s low
    byte) from the low bytes of the magnitudes and the product sign ``negative`` (0 or 1),
    as a uint8, computed in 8-bit words (64 lanes a 512-bit vector).  The kernels use its
    table form (:func:`booth_sum_low8_table`); this plain form is the definition the
    tests hold that one to.

    Bits 0-7 of the tree's words hold rows 0-3 only (row ``i`` starts at bit ``2 i``), and
    rows 4-7 reduce to two words that are 0 there, so the last two adders add only the
    first half's sum ``a`` and carry ``b``: the sum word's low byte is ``a ^ b ^ (a & b) <<
    1``.  Row 3's window reaches bit 8 of ``wt << 1``, which is bit 7 of ``wt_low``."""
    x = xor8(shl8(wt_low, 1), sub8(0, negative))
    x1 = shr8(x, 1)
    x2 = or8(shr8(x, 2), shl8(xor8(shr8(wt_low, 7), negative), 6))
    one = xor8(x, x1)
    two = and8(xor8(one, 0xFF), xor8(x1, x2))
    neg = and8(x2, xor8(and8(x, x1), 0xFF))
    dat2 = shl8(dat_low, 1)
    w0, n0 = _row8(one, two, neg, 0, dat_low, dat2)
    w1, n1 = _row8(one, two, neg, 1, dat_low, dat2)
    w2, n2 = _row8(one, two, neg, 2, dat_low, dat2)
    w3, n3 = _row8(one, two, neg, 3, dat_low, dat2)
    a, b = _csa8(w0, or8(w1, n0), or8(w2, n1))
    a, b = _csa8(a, b, or8(w3, n2))
    a, b = _csa8(a, b, n3)
    return xor8(xor8(a, b), shl8(and8(a, b), 1))


@njit(inline="always")
def _row8(one, two, neg, i, dat, dat2):
    """:func:`_row16` in an 8-bit word (rows 0-3)."""
    o = sub8(0, and8(shr8(one, 2 * i), 1))
    t = sub8(0, and8(shr8(two, 2 * i), 1))
    n = and8(shr8(neg, 2 * i), 1)
    row = shl8(xor8(or8(and8(dat, o), and8(dat2, t)), sub8(0, n)), 2 * i)
    return row, shl8(n, 2 * i)


@njit(inline="always")
def _csa8(a, b, c):
    """:func:`_csa32` on 8-bit words."""
    return xor8(xor8(a, b), c), shl8(xor8(and8(xor8(a, c), xor8(b, c)), c), 1)


# --- the data's table in its low bits: the tile kernel's narrow trees ---------------
# The tile kernel needs the tree only through the low 16 (or 8) bits of its sum word
# (:func:`sim.num.mac.aligned_product_from_sum`), and a carry-save adder's low bits depend
# only on its inputs' low bits: the same table in 16- and 8-bit words gives them at two and
# four times the pixels a vector.  A zero data value's columns are 0 instead: its products
# are 0 and so must be its carries (its words' low bits need not be, a negative row of 0
# being 0xFFFF).

@njit(inline="always")
def booth_data_table_low(negative, dat, table16, table8):
    """:func:`booth_data_table`'s words in their low 16 bits (``table16`` (TABLE_ROWS, >= n)
    uint16) and low 8 bits (``table8``, uint8), the columns of zero magnitudes 0."""
    n = dat.size
    for t in range(DIGITS):
        row16, neg16 = table16[_ROW + t], table16[_NEG6 + t]
        row8, neg8 = table8[_ROW + t], table8[_NEG6 + t]
        for p in range(n):
            live = sub32(0, word32(dat[p] != 0))
            row, neg = _row_word(t, negative[p], dat[p])
            row, neg6 = and32(row, live), shl32(and32(neg, live), 6)
            row16[p] = row
            row8[p] = row
            neg16[p] = neg6
            neg8[p] = neg6
    # the pair words in 16-bit words (:func:`_pair_word16`)
    for t in range(DIGITS):
        row16 = table16[_ROW + t]
        for u in range(DIGITS):
            pair16, pair8 = table16[_PAIR + DIGITS * t + u], table8[_PAIR + DIGITS * t + u]
            neg6 = table16[_NEG6 + u]
            for p in range(n):
                pair = _pair_word16(row16[p], neg6[p])
                pair16[p] = pair
                pair8[p] = pair


@njit(inline="always")
def booth_sum_low16_table(w0, w1, w2, w3, w4, w5, w6, w7, w8, w9):
    """The low 16 bits of the tree's sum word (:func:`booth_sum_low16`) from the ten words a
    weight's rows pick of :func:`booth_data_table_low`'s 16-bit table (the second and third
    pair words of each half go in unshifted, as to :func:`booth_lane_table`), a uint16."""
    a, b = _csa16(w0, w1, shl16(w2, 2))
    a, b = _csa16(a, b, shl16(w3, 4))
    a, b = _csa16(a, b, w4)
    c, d = _csa16(w5, w6, shl16(w7, 2))
    c, d = _csa16(c, d, shl16(w8, 4))
    c, d = _csa16(c, d, w9)
    a, b = _csa16(a, b, shl16(c, 8))
    return xor16(xor16(a, b), shl16(d, 8))  # the last adder's sum word


@njit(inline="always")
def booth_sum_low8_table(w0, w1, w2, w3, w4):
    """The low 8 bits of the tree's sum word (:func:`booth_sum_low8`) from the first half's
    five words of :func:`booth_data_table_low`'s 8-bit table (rows 4-7 are 0 there), a
    uint8."""
    a, b = _csa8(w0, w1, shl8(w2, 2))
    a, b = _csa8(a, b, shl8(w3, 4))
    a, b = _csa8(a, b, w4)
    return xor8(xor8(a, b), shl8(and8(a, b), 1))
