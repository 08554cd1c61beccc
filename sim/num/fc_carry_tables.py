"""Per-data-value carry tables of the fully connected layers' column kernel.

:mod:`sim.num.fc_carries` bounds the carry of a lane's shifted product ``(P >> s) - c``
(:func:`sim.num.mac.aligned_product_from_sum`) from ``P``'s low bits alone, the same
bound for every data value.  Where one data value meets 16 weights at once
(:mod:`sim.num.fc_columns`), a bound of that data value's own is as cheap, and much
tighter:

* at ``s = 8`` the carry depends only on the product's sign and the low bytes of the two
  CMAC significands (the tree's low 8 bits come from its first four rows, whose low bits
  read only those bytes): :func:`carry8_rows` holds it for every case, 512 bits (one
  vector register) per data sign and low byte, so the carry is looked up, never flagged;
* at ``s = 12`` a carry occurs only where ``P``'s low 12 bits are below a bound that
  depends on the data's CMAC significand (:func:`carry_bounds`): found by
  going through every pair of CMAC magnitudes and both signs (:func:`scan_carry_bounds`,
  a few seconds, so the bounds are generated data, :mod:`sim.num.fc_carry_bounds`, made
  by ``tools/make_fc_carry_bounds.py``; ``tests/num/test_fc_carry_tables.py`` proves
  them sufficient and tight, and the table of ``s = 8``, over every case).  (At ``s = 16``
  such bounds exist too, but lanes at 16 are rare (0.25% of AlexNet fc6's): the kernel
  flags them all, which costs fewer instructions than a second compare on every lane.)
"""

from __future__ import annotations

import base64
import functools
import zlib

import numpy as np

from sim.jit import njit
from sim.num.booth import booth_sum_low16
from sim.num.mac import fp16_mac_operands, signed_product, sum_word_carry
from sim.num.word32 import and32, word32

#: CMAC significands are below this (14 bits): the bounds' table is indexed by them.
SIGNIFICANDS = 1 << 14


def cmac_magnitudes() -> np.ndarray:
    """Every significand the CMAC multiplies (int64, sorted): those of all 65536 fp16
    patterns (:func:`sim.num.mac.fp16_mac_operands`; Inf's and NaN's included)."""
    return np.unique(fp16_mac_operands(np.arange(1 << 16))[1]).astype(np.int64)


@njit(inline="always")
def _carry(negative, weight, data, shift):
    """The 16-bit tree's carry (0 or 1) of a product shifted by ``shift``."""
    w, d = word32(weight), word32(data)
    return sum_word_carry(signed_product(word32(negative), w, d),
                          booth_sum_low16(word32(negative), w, d), word32(shift))


@njit
def _carry8_cube():
    """The carry at shift 8 by (product sign, weight low byte, data low byte)."""
    cube = np.zeros((2, 256, 256), np.uint8)
    for negative in range(2):
        for w in range(256):
            for d in range(256):
                cube[negative, w, d] = _carry(negative, w, d, 8)
    return cube


@functools.cache
def carry8_rows() -> np.ndarray:
    """The carries at shift 8 as bit rows (512, 32) uint16, row ``data sign * 256 + data
    low byte``, bit ``weight sign * 256 + weight low byte`` (word ``bit >> 4``, bit
    ``bit & 15``): the product's sign (the two signs' xor) folded in, so a row is all a
    data value needs.  Built at first use (2 x 256 x 256 trees: milliseconds); starts on
    a 64-byte line (a row a 512-bit load)."""
    cube = _carry8_cube()
    bits = np.zeros((2, 256, 512), np.uint32)
    for d_sign in range(2):
        for w_sign in range(2):
            bits[d_sign, :, w_sign * 256:(w_sign + 1) * 256] = cube[w_sign ^ d_sign].T
    words = (bits.reshape(512, 32, 16) << np.arange(16, dtype=np.uint32)).sum(axis=2)
    return aligned_copy(words.astype(np.uint16))


def aligned_copy(array: np.ndarray, line: int = 64) -> np.ndarray:
    """A C-contiguous copy of ``array`` whose data starts on a ``line``-byte boundary."""
    buf = np.zeros(array.nbytes + line, np.uint8)
    offset = -buf.ctypes.data % line
    out = buf[offset:offset + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


@njit
def scan_carry_bounds(magnitudes):
    """Per data magnitude (``magnitudes``' order): one more than the largest low 12 bits
    of a product whose carry at shift 12 is 1, over every weight magnitude and both signs
    (0 where none carries).  Every carry's product lies below its bound, and one lies at
    bound - 1: sufficient and tight by construction."""
    bounds = np.zeros(magnitudes.size, np.int64)
    for negative in range(2):
        for i in range(magnitudes.size):
            d = word32(magnitudes[i])
            for wt in magnitudes:
                w = word32(wt)
                product = signed_product(word32(negative), w, d)
                tree = booth_sum_low16(word32(negative), w, d)
                if sum_word_carry(product, tree, word32(12)):
                    bounds[i] = max(bounds[i], np.int64(and32(product, 0xFFF)) + 1)
    return bounds


@functools.cache
def carry_bounds() -> np.ndarray:
    """(``SIGNIFICANDS``,) uint16: a carry at shift 12 of a product with a data
    significand ``d`` is possible only if the product's low 12 bits are below
    ``bounds[d]`` (at most 4096).  uint16, not wider: a fully connected layer's data call
    reads it at random, once a live datum, with the caches cold (the layer's weights just
    went through them): 32 KB rather than 128 took AlexNet's FC layers' call 20-40 us
    less a layer."""
    from sim.num.fc_carry_bounds import BOUNDS, MAGNITUDES

    bounds = decode_bounds(BOUNDS, MAGNITUDES)
    if bounds.max() > 1 << 12:
        raise ValueError("fc_carry_bounds: a bound above 2**12")
    table = np.zeros(SIGNIFICANDS, np.uint16)
    table[cmac_magnitudes()] = bounds
    return table


def encode_bounds(bounds) -> str:
    """:func:`scan_carry_bounds`' table as the text :mod:`sim.num.fc_carry_bounds` keeps
    (little-endian uint32 words, deflated, base64)."""
    words = np.asarray(bounds).astype("<u4")
    return base64.b64encode(zlib.compress(words.tobytes(), 9)).decode("ascii")


def decode_bounds(text: str, magnitudes: int) -> np.ndarray:
    """:func:`encode_bounds`' inverse: (``magnitudes``,) int64."""
    words = np.frombuffer(zlib.decompress(base64.b64decode(text)), "<u4")
    return words.reshape(magnitudes).astype(np.int64)
