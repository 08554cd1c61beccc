"""fp16 multiply-accumulate of the convolution pipeline (CMAC + CACC), bit-exact.

Element kernels for numba; the convolution units loop over lanes, blocks and
outputs in the CSC's order and call them.  The arithmetic
follows NVIDIA's C-model of the CMAC (``calculation_fp16``) and CACC:

CMAC, per block (one atomic operation: up to ``mac_atomic_c`` lanes):

* NaN: the weights of the block are scanned first, then the data, in lane
  order; the first NaN found becomes the block result (its sign and 10
  fraction bits, :func:`mac_nan_block`).  A NaN is never skipped by the zero
  masks.
* Lanes whose data or weight is +0 or -0 contribute nothing.
* Every other lane splits each fp16 exponent ``e`` into ``4*(e>>2) + (e&3)``
  (:func:`fp16_mac_operands`): the significand (implicit bit unless e == 0;
  e == 0 counts as e == 1) is shifted left by ``e&3`` (0..3 bits, 14-bit
  result) and ``(ed>>2)+(ew>>2)`` is the lane's exponent.  Inf (e == 31,
  fraction 0) is an ordinary number 2**16.
* The block exponent ``E`` is the largest lane exponent; each lane's 28-bit
  product is computed by a radix-4 Booth multiplier with a carry-save tree
  whose two outputs are shifted right by ``4*(E - lane)`` *separately*
  before they are added with a sign-compensation constant -- so a shifted
  product may differ from the exact floor by one unit
  (:mod:`sim.num.booth`).  Lanes shifted by 32 or more give 0.
* The block result is the exact integer sum of the aligned lane products
  (:func:`aligned_product` at :func:`block_exponent`) with the 6-bit exponent
  ``4*E``: value ``sum * 2**(4E - 50)``.  ``tests/num/mac_reference.py`` states a
  block lane by lane (``block_dot``, ``cmac_block``); the convolution's kernels
  (:func:`fp16_tile_dots`; :mod:`sim.num.mac_fc` for the fully connected layers) take
  faster routes to the same sums and are tested against it.

CACC keeps one 48-bit float per output; its arithmetic is written from the
description below (design note), not from NVIDIA's code.

Design note: the 48-bit accumulator
-----------------------------------
*Format.*  An 8-bit exponent ``exp`` and a 40-bit two's-complement mantissa
``man`` (bit 39 the sign).  The binary point sits below bit 38, the leading
bit: value = ``man / 2**38 * 2**(exp - 63)`` = ``man * 2**(exp - ACC_SCALE)``
with ``ACC_SCALE = 63 + 38 = 101``.  Normalised, bit 38 differs from the
sign (``2**38 <= man < 2**39`` or ``-2**39 <= man < -2**38``); zero is
``(0, 0)``.  Exponent 255 is NaN, its sign and fp16 fraction in mantissa bits
39 and 38..29.

*A CMAC block* (6-bit exponent ``E4``, 38-bit mantissa ``m``) is worth
``m * 2**(E4 - 50)``: each fp16 operand is its significand times
``2**(e - 15 - 10)``, so a product carries ``2**-50``.  Placed in the
accumulator's field (``m << 2``: the field is 2 bits wider) its exponent is
``E4 + 101 - 50 - 2 = E4 + 49``; it is then normalised (shifted left while
bit 38 repeats the sign), which is exact.

*Alignment.*  The operand with the smaller exponent is shifted right by the
difference ``d``.  The bits shifted out are kept in a 40-bit field below the
mantissa, as wide as the mantissa itself, so for ``d <= 40`` nothing is lost:
the sum of the mantissa and that field is exact.  An operand more than 40
below is dropped whole; it adds nothing, not even to the rounding.  A zero
accumulator counts as exponent 0 (zero's packed exponent), below every block.

*Sum and normalisation.*  The exact sum ``whole + frac / 2**40`` (``whole``
41 bits, ``frac`` the 40 bits shifted out) at the larger exponent is brought
back to 40 bits: when ``whole`` needs 41 bits, one right shift (exponent + 1);
otherwise a left shift by the number of bits below the sign that repeat it,
bringing ``frac``'s top bits in.  That count looks at ``whole`` only, so the
left shift is at most 39 and a sum whose upper half is all sign (0 or -1)
may stay unnormalised.

*Rounding*: to nearest, ties away from zero, on the two's-complement value:
the bits below the new mantissa are compared with one half (a tie rounds a
positive mantissa up and leaves a negative one, which is further from zero).
Rounding up the largest positive mantissa carries into the sign bit; the
result then shifts right once (exponent + 1).  A negative mantissa never
carries (its largest value, -1, has no bits below it that round up), so a
rounded negative sum may be ``-2**38``: unnormalised, exact, kept as it is.
:func:`cacc_round_pack` is that one funnel (normalise, round, pack);
:func:`cacc_accumulate` is the whole add, :func:`cacc_accumulate_finite` the
same without NaN handling and without branches.

*NaN*: a NaN block makes the accumulator NaN with its sign and fraction; the
first NaN stays.  *Delivery*: :func:`cacc_to_fp32` rounds the magnitude to
fp32's 24 significant bits, to nearest with ties away from zero.

Integer layers: CACC delivers ``saturate_int32(round_half_away(acc /
2**CLIP_TRUNCATE))`` (:func:`cacc_round_int32`).
"""

from __future__ import annotations

import numpy as np

from sim.dma.align import ceil_div
from sim.jit import njit, prefer_wide_vectors, run_split
from sim.num.booth import (
    ROW_BYTES,
    TABLE_ROWS,
    ZERO_WEIGHT_ROWS,
    booth_data_table_low,
    booth_lane,
    booth_row_words,
    booth_sum_low8_table,
    booth_sum_low16_table,
)
from sim.num.rounding import sign_extend
from sim.num.vector_int import shift_right_round
from sim.num.widths import INT32_MAX, INT32_MIN
from sim.num.word32 import (
    add32,
    and32,
    leading_zeros64,
    mul32,
    or32,
    sar32,
    shl32,
    shr32,
    sub32,
    word32,
    xor32,
)

#: :func:`sim.dma.align.ceil_div` inside the kernels.
ceil_div_in_kernels = njit(inline="always")(ceil_div)

# --- the 48-bit accumulator: constants of the design note above -------------------
FP16_BIAS, FP16_FRAC_BITS = 15, 10
FP32_BIAS, FP32_FRAC_BITS = 127, 23
#: The accumulator: a 40-bit two's-complement mantissa (sign bit 39) with its
#: binary point below bit 38 (38 fraction bits), and an 8-bit exponent, bias 63.
ACC_BITS, ACC_POINT, ACC_EXP_BITS, ACC_EXP_BIAS = 40, 38, 8, 63
ACC_SIGN_BIT = ACC_BITS - 1
ACC_EXP_MASK = (1 << ACC_EXP_BITS) - 1
#: value = man * 2**(exp - ACC_SCALE): the bias plus the fraction bits (101).
ACC_SCALE = ACC_EXP_BIAS + ACC_POINT
M40 = (1 << ACC_BITS) - 1
#: One half of the 40-bit field of bits below the mantissa (its top bit).
HALF = 1 << (ACC_BITS - 1)
#: The alignment shifter keeps what it shifts out in a field as wide as the
#: mantissa: shifts up to this lose nothing; a longer one drops the operand.
ALIGN_LIMIT = ACC_BITS
#: The normaliser counts the sign's copies in the 40-bit upper half only.
MAX_LEFT_SHIFT = ACC_BITS - 1
#: A CMAC block: a 38-bit mantissa worth ``m * 2**(E4 - MAC_SCALE)``, each
#: fp16 operand carrying 2**-(bias + fraction bits): 2 * (15 + 10) = 50.
MAC_BITS = 38
MAC_SCALE = 2 * (FP16_BIAS + FP16_FRAC_BITS)
#: A block moved into the accumulator's field (``m << 2``) has the exponent
#: ``E4 + BLOCK_EXP_OFFSET``: 101 - 50 - 2 = 49.
BLOCK_EXP_OFFSET = ACC_SCALE - MAC_SCALE - (ACC_BITS - MAC_BITS)
MAC_NAN_EXP = 63  # block exponent of a NaN block (no finite block has it: 4*E <= 56)
CACC_NAN_EXP = ACC_EXP_MASK  # accumulator exponent of NaN: all ones
#: A NaN's fp16 sign and fraction sit at the top of the mantissa (bits 39 and
#: 38..29); in a block at 37 and 36..27 (:func:`mac_nan_block`).
NAN_FRAC_LSB = ACC_SIGN_BIT - FP16_FRAC_BITS
MAC_NAN_FRAC_LSB = MAC_BITS - 1 - FP16_FRAC_BITS
NAN_KEEP = ~((1 << NAN_FRAC_LSB) - 1)  # the bits a NaN keeps: sign and fraction
ZERO_LANE_EXP = -64  # a zero operand's exponent: its lanes sit >= 32 bits below any block


@njit(inline="always")
def _pick(condition, a, b):
    """``a if condition else b`` as a mask, so no branch is taken (``condition`` 0 or 1)."""
    mask = -np.int64(condition)
    return (a & mask) | (b & ~mask)


@njit(inline="always")
def _sign_copies(man):
    """How many of the ``MAX_LEFT_SHIFT`` bits below a 40-bit mantissa's sign repeat it."""
    below_sign = (np.int64(1) << MAX_LEFT_SHIFT) - 1
    return leading_zeros64((man ^ (man >> 63)) & below_sign) - (64 - MAX_LEFT_SHIFT)


@njit(inline="always")
def _block_operand(mac_exp, mac_man):
    """A finite CMAC block as a normalised accumulator operand (exponent, mantissa): exact."""
    man = mac_man << (ACC_BITS - MAC_BITS)
    shift = _sign_copies(man)
    return mac_exp + BLOCK_EXP_OFFSET - shift, man << shift


@njit(inline="always")
def _align_add(a_exp, a_man, b_exp, b_man):
    """The exact sum of two operands at the larger exponent: (exponent, whole, frac).

    The sum is ``whole + frac / 2**40`` units of that exponent: ``whole`` the
    41-bit sum of the larger operand and the aligned smaller one, ``frac`` the
    bits shifted out of the smaller one (none when it is dropped: more than
    ``ALIGN_LIMIT`` below).
    """
    b_larger = a_exp < b_exp
    exp = _pick(b_larger, b_exp, a_exp)
    large = _pick(b_larger, b_man, a_man)
    small = _pick(b_larger, a_man, b_man)
    d = np.abs(a_exp - b_exp)
    kept = d <= ALIGN_LIMIT
    d = _pick(kept, d, ALIGN_LIMIT)
    whole = large + _pick(kept, small >> d, 0)
    frac = _pick(kept, (small << (ACC_BITS - d)) & M40, 0)
    return exp, whole, frac


@njit(inline="always")
def cacc_round_pack(exp, whole, frac):
    """The accumulator (exponent, mantissa) nearest ``(whole + frac / 2**40) * 2**(exp - 101)``.

    ``whole`` is a 41-bit signed integer, ``frac`` 40 bits below it.  Normalise
    (one right shift if ``whole`` needs 41 bits, else up to 39 left), round to
    nearest with ties away from zero, absorb a carry out of the mantissa,
    pack (zero has exponent 0; the exponent field keeps 8 bits).  No branches.
    """
    wide = (whole >= HALF) | (whole < -HALF)
    # right shift by one: the bit shifted out leads the remainder, frac's last bit jams
    # into it (it only counts as non-zero)
    right_man = whole >> 1
    right_rest = ((whole & 1) << (ACC_BITS - 1)) | (frac >> 1) | (frac & 1)
    # left shift: frac's top bits follow whole's
    shift = _sign_copies(whole)
    left_man = (whole << shift) | (frac >> (ACC_BITS - shift))
    left_rest = (frac << shift) & M40
    man = _pick(wide, right_man, left_man)
    rest = _pick(wide, right_rest, left_rest)
    exp = exp + _pick(wide, 1, -shift)
    # to nearest, ties away from zero: a tie rounds positive mantissas up only
    man += (rest > HALF) | ((rest == HALF) & (man >= 0))
    carry = np.int64(man == HALF)  # 2**39: only a positive mantissa can carry out
    man >>= carry
    return _pick(man != 0, (exp + carry) & ACC_EXP_MASK, 0), man


@njit(inline="always")
def cacc_accumulate_finite(acc_exp, acc_man, mac_exp, mac_man):
    """:func:`cacc_accumulate` of a finite block onto a finite accumulator, without branches.

    Every step is computed and the right value picked by a mask, so a loop of it
    over kernels vectorises instead of mispredicting on every block.  Callers
    keep NaN blocks and NaN accumulators for :func:`cacc_accumulate`.
    """
    b_exp, b_man = _block_operand(mac_exp, mac_man)
    a_exp = _pick(acc_man != 0, acc_exp, 0)  # zero's exponent is 0
    exp, whole, frac = _align_add(a_exp, acc_man, b_exp, b_man)
    exp, man = cacc_round_pack(exp, whole, frac)
    unchanged = mac_man == 0
    return _pick(unchanged, acc_exp, exp), _pick(unchanged, acc_man, man)


@njit
def cacc_accumulate(acc_exp, acc_man, mac_exp, mac_man):
    """Add a CMAC block (6-bit exponent, 38-bit signed mantissa) to the 48-bit accumulator.

    ``acc_man`` and ``mac_man`` are signed values.  Returns (exponent, mantissa).
    A block exponent of ``MAC_NAN_EXP`` is a NaN block (:func:`mac_nan_block`).
    See the design note at the top of this module.
    """
    if mac_man == 0:
        return acc_exp, acc_man
    if acc_exp == CACC_NAN_EXP:  # the first NaN stays
        return acc_exp, acc_man & NAN_KEEP
    if mac_exp == MAC_NAN_EXP:
        return CACC_NAN_EXP, (mac_man << (ACC_BITS - MAC_BITS)) & NAN_KEEP
    return cacc_accumulate_finite(acc_exp, acc_man, mac_exp, mac_man)


@njit
def cacc_to_fp32(exp, man):
    """Round the CACC accumulator to an fp32 bit pattern (to nearest, ties away from zero)."""
    sign = np.int64(man < 0)
    if exp == CACC_NAN_EXP:
        return (sign << 31) | (0xFF << FP32_FRAC_BITS) | ((man >> NAN_FRAC_LSB) & 0x3FF)
    if man == 0:
        return 0
    mag = -man if sign else man
    top = 63 - leading_zeros64(mag)  # the leading one: 38 when normalised, 39 for -2**39
    out_exp = exp - ACC_SCALE + top + FP32_BIAS
    drop = top - FP32_FRAC_BITS  # bits below fp32's 24
    if drop > 0:
        sig = (mag + (np.int64(1) << (drop - 1))) >> drop  # a half rounds the magnitude up
    else:
        sig = mag << -drop
    if sig >> (FP32_FRAC_BITS + 1):  # rounded up to the next power of two
        sig >>= 1
        out_exp += 1
    return (sign << 31) | ((out_exp & 0xFF) << FP32_FRAC_BITS) | (sig & ((1 << FP32_FRAC_BITS) - 1))


def _operand_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fp16_mac_operands` of all 65536 fp16 patterns, computed once."""
    global _TABLES
    if _TABLES is None:
        b = np.arange(1 << 16, dtype=np.uint32)
        e = (b >> 10) & 0x1F
        f = b & 0x3FF
        sig = np.where(e == 0, f << 1, (f | 0x400) << (e & 3)).astype(np.uint32)
        exp = np.where((b & 0x7FFF) == 0, ZERO_LANE_EXP, e >> 2).astype(np.int32)
        _TABLES = (b >> 15).astype(np.uint32), sig, exp
    return _TABLES


_TABLES = None


def fp16_mac_operands(bits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CMAC's view of fp16 operands, per element of ``bits`` (numpy arrays).

    Returns (sign as uint32, significand shifted left by ``e & 3`` as uint32,
    ``e >> 2`` as int32); ``sim.num.specials.nan_mask`` tells the NaNs.  The exponent of a
    zero (+0 or -0) is ``ZERO_LANE_EXP``, so that a lane's exponent, the sum
    of its operands', puts any lane with a zero operand out of every block's
    reach.
    """
    index = np.asarray(bits, dtype=np.uint16)
    return tuple(table[index] for table in _operand_tables())


def fp16_data_operands(bits: np.ndarray, scratch: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fp16_mac_operands` of a data cube as the convolution's kernels read it: (sign
    uint32, significand uint32, four times the exponent int32), in one compiled pass over
    the threads (three table lookups per element took a tenth of an fp16 ResNet's time).

    ``scratch``: a uint8 buffer of at least :func:`data_operands_bytes` bytes, 4-aligned,
    to hold the three results (fresh arrays cost more in page faults than the pass)."""
    flat = np.ascontiguousarray(bits, dtype=np.uint16).reshape(-1)
    n = flat.size
    if scratch is None:
        scratch = np.empty(data_operands_bytes(n), np.uint8)
    sign = scratch[:4 * n].view(np.uint32)
    sig = scratch[4 * n:8 * n].view(np.uint32)
    exp4 = scratch[8 * n:12 * n].view(np.int32)
    run_split(lambda a, b: _data_operands(flat[a:b], sign[a:b], sig[a:b], exp4[a:b]),
              n, min_chunk=1 << 16)
    shape = np.shape(bits)
    return sign.reshape(shape), sig.reshape(shape), exp4.reshape(shape)


def data_operands_bytes(n: int) -> int:
    """Bytes of scratch :func:`fp16_data_operands` needs for ``n`` values."""
    return 12 * n


@njit(distinct_arrays=True)
def _data_operands(bits, sign, sig, exp4):
    # 1-d slices from index 0, as _weight_rows: a loop over span bounds stayed scalar
    prefer_wide_vectors()
    for i in range(bits.size):
        s, m, e4, dead = fp16_weight_operand(word32(bits[i]))
        sign[i] = s
        sig[i] = m
        exp4[i] = 4 * ZERO_LANE_EXP if dead else np.int32(e4)


def fp16_weight_rows(bits: np.ndarray, scratch: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The Booth table rows (..., ROW_BYTES) uint8 (the first 10 bytes
    :func:`sim.num.booth.booth_row_indices` of the weights' CMAC sign and significand, bytes
    10-11 the signed significand as a little-endian int16, the rest 0) and four times the
    exponents (...) int32 (``4 * ZERO_LANE_EXP`` for a zero) of fp16 weights ``bits``: what
    the convolution's tile kernel reads for each weight, in one compiled pass over the
    threads (a layer may have millions).

    ``scratch``: a uint8 buffer of at least :func:`weight_rows_bytes` bytes, 8-aligned, to
    hold both results (a layer's fresh arrays cost as much in page faults as the pass)."""
    flat = np.ascontiguousarray(bits, dtype=np.uint16).reshape(-1)
    n = flat.size
    if scratch is None:
        scratch = np.empty(weight_rows_bytes(n), np.uint8)
    rows = scratch[:n * ROW_BYTES].view(np.uint64)
    exp4 = scratch[n * ROW_BYTES:n * (ROW_BYTES + 4)].view(np.int32)
    words = ROW_BYTES // 8
    run_split(lambda a, b: _weight_rows(flat[a:b], rows[words * a:words * b], exp4[a:b]), n,
              min_chunk=1 << 16)
    shape = np.shape(bits)
    return rows.view(np.uint8).reshape(*shape, ROW_BYTES), exp4.reshape(shape)


def weight_rows_bytes(n: int) -> int:
    """Bytes of scratch :func:`fp16_weight_rows` needs for ``n`` weights."""
    return n * (ROW_BYTES + 4)


@njit(distinct_arrays=True)
def _weight_rows(bits, rows, exp4):
    # whole 1-d slices, indices from 0: a loop over span bounds kept numba's negative-index
    # fix-ups and the rows' strides, and LLVM left it scalar (a third slower than tables)
    prefer_wide_vectors()  # 64-bit words: eight weights a vector
    for i in range(bits.size):
        sign, sig, we, dead = fp16_weight_operand(word32(bits[i]))
        rows[2 * i], high = booth_row_words(sign, sig)
        signed = and32(signed_value(sign, sig), 0xFFFF)
        rows[2 * i + 1] = high | (np.uint64(signed) << np.uint64(16))
        exp4[i] = 4 * ZERO_LANE_EXP if dead else np.int32(we)


def first_nan_per_block(bits: np.ndarray, nan: np.ndarray, block: int) -> np.ndarray:
    """The first NaN (in lane order) of every ``block`` lanes of the last axis, -1 if none.

    ``bits`` (..., C) fp16 bits, ``nan`` their NaN mask; returns (..., ceil(C / block)) int64.
    """
    lanes = bits.shape[-1]
    groups = ceil_div(lanes, block)
    if not nan.any():
        return np.full((*bits.shape[:-1], groups), -1, np.int64)
    pad = [(0, 0)] * (bits.ndim - 1) + [(0, groups * block - lanes)]
    nan = np.pad(nan, pad).reshape(*bits.shape[:-1], groups, block)
    bits = np.pad(bits, pad).reshape(nan.shape).astype(np.int64)
    first = np.argmax(nan, axis=-1)[..., None]
    return np.where(nan.any(axis=-1), np.take_along_axis(bits, first, -1)[..., 0], -1)


@njit(inline="always")
def first_nan_strided(bits, start, step):
    """The first NaN among fp16 patterns ``bits[start::step]`` (a block's lanes in a layer's
    weight order: one kernel position's channels), -1 if none: :func:`first_nan_per_block`
    for one block, in a kernel."""
    for m in range(start, bits.size, step):
        if (bits[m] & 0x7FFF) > 0x7C00:
            return np.int64(bits[m])
    return np.int64(-1)


@njit
def mac_nan_block(bits):
    """The CMAC block result for a NaN input: its sign and fraction, 38-bit mantissa.

    It goes to :func:`cacc_accumulate` with the exponent ``MAC_NAN_EXP``.
    """
    b = np.int64(bits)
    return sign_extend((((b >> 15) & 1) << (MAC_BITS - 1)) | ((b & 0x3FF) << MAC_NAN_FRAC_LSB),
                       MAC_BITS)


@njit(inline="always")
def aligned_product(negative, wt, dat, lane_exp, block_exp):
    """One lane's product aligned to the block exponent: a uint32 word (read it as int32)."""
    return booth_lane(negative, wt, dat, word32((block_exp - lane_exp) * 4))


@njit(inline="always")
def block_exponent(d_exp, w_exp):
    """A block's exponent: the largest lane exponent, at least 0 (zero lanes are far below)."""
    block_exp = 0
    for j in range(d_exp.size):
        block_exp = max(block_exp, d_exp[j] + w_exp[j])
    return block_exp


@njit(inline="always")
def fp16_weight_operand(bits):
    """:func:`fp16_mac_operands` of one fp16 weight inside a kernel, in 32-bit words:
    (sign, significand, four times the exponent, 1 if the weight is zero else 0)."""
    e = and32(shr32(bits, 10), 31)
    subnormal = word32(e == 0)  # no implicit bit, and counts as exponent 1
    sig = shl32(or32(and32(bits, 0x3FF), shl32(xor32(subnormal, 1), 10)),
                or32(and32(e, 3), subnormal))
    return shr32(bits, 15), sig, and32(e, 0x1C), word32(and32(bits, 0x7FFF) == 0)


#: Lanes the tile kernel takes together: their aligned products are added before they go
#: to a block's two sum words (four products of magnitude below 2**28 stay within int32).
GROUP = 4
#: A live lane's shift is at most 4 * 14 (two largest exponents, one lane at 0): a zero
#: operand's lane is shifted by 200 or more (:data:`ZERO_LANE_EXP`).
LIVE_SHIFTS = 64
#: The rows and signed significand of a zero weight (:func:`_rows_of`: every Booth digit 0):
#: all the words they pick are 0 in the low bits the narrow trees read.
_ZERO_ROWS = (*ZERO_WEIGHT_ROWS, 0)


def tile_scratch_layout(pixels: int) -> list[tuple[tuple[int, ...], type]]:
    """The (shape, dtype) of each array of :func:`tile_scratch` for tiles of up to ``pixels``
    pixels: of the ``GROUP`` lanes at hand, the data tables in 16- and 8-bit words
    (:func:`sim.num.booth.booth_data_table_low`), the signed data significands, the low
    bits of the tree's sum word for one kernel, and the kernel's weight rows
    (:func:`_rows_of`).  The arrays start as zeros: a group of fewer than ``GROUP`` lanes
    reads its missing lanes' narrow tables, never built, at a zero weight's rows, where any
    built table is 0 too (the narrow loops also read stale words past a tile's pixels, whose
    sums are never read)."""
    return [((GROUP, TABLE_ROWS, pixels), np.uint16), ((GROUP, TABLE_ROWS, pixels), np.uint8),
            ((GROUP, pixels), np.int16), ((GROUP, pixels), np.uint16), ((GROUP, 11), np.uint64)]


def tile_scratch(pixels: int) -> tuple[np.ndarray, ...]:
    """Scratch for :func:`fp16_tile_dots` of tiles of up to ``pixels`` pixels
    (:func:`tile_scratch_layout`), zeros."""
    return tuple(np.zeros(shape, dtype) for shape, dtype in tile_scratch_layout(pixels))


@njit(distinct_arrays=True)
def fp16_tile_dots(d_sign, d_sig, d_exp4, w_rows, w_exp4, scratch, block_exp4, high, low,
                   kernels):
    """One CMAC block of a tile of data vectors against the same lanes of kernels
    ``kernels[0]:kernels[1]``.

    ``d_sign``, ``d_sig`` (lanes, P) are the CMAC operands of P data vectors
    (one column per output pixel) and ``d_exp4`` (lanes, P) int32 four times
    their exponents; ``w_rows`` (lanes, K, ROW_BYTES) the weights' rows from
    :func:`fp16_weight_rows` (Booth table rows and the signed significand) and
    ``w_exp4`` (lanes, K) int32 four times their exponents; ``scratch`` is
    :func:`tile_scratch` (>= P pixels); no two of the arrays may share memory (the kernel is
    compiled with ``distinct_arrays``).  Kernel ``k``'s block exponent for pixel ``p``,
    times four (the 6-bit exponent CACC takes), goes to ``block_exp4[k, p]``
    (int32) and the exact sum of its aligned lane products to ``high[k, p]``,
    ``low[k, p]`` (uint32, two words: :func:`block_sum`).  The sum goes to
    :func:`cacc_accumulate` as ``(block_exp4, sign_extend(sum, 38))``; a block
    with a NaN gives a meaningless sum (the caller knows the block is NaN).

    A lane's shifted product for shifts up to 16 is ``(P - (a & (2**s - 1))) >> s``, ``P``
    the exact product and ``a`` the tree's sum word (``(P >> s) - c`` of
    :func:`aligned_product_from_sum`: subtracting the low bits of ``a`` borrows from
    ``P >> s`` exactly when they exceed ``P``'s).  So for each kernel and ``GROUP`` lanes
    the innermost loops over the pixels are: the low bits of ``a`` from the data's table in
    narrow words (8 or 16 bits: :mod:`sim.num.booth`'s narrow tables), then
    ``P`` (one multiply) and the sum of the group's shifted products in 32-bit words (four
    products stay within int32), computed as ``((P - a) >> s) + (a >> s)``.  The 8-bit
    tree serves where the tile's exponents bound every live shift by 8, and is tried
    first elsewhere until it misses too often (:data:`WIDE_AFTER`).  A lane with a live
    shift beyond the narrow tree's is flagged on the way and corrected: after the 8-bit
    tree, from the 16-bit one; at its pixels shifted beyond 16, one by one from the whole
    multiplier (:func:`sim.num.booth.booth_lane`).
    Lanes whose data are all zero are skipped, and kernels whose weights in a group's lanes
    are all zero: a zero operand's lane is far below every block (its shifted product is 0)
    and never raises an exponent.
    """
    fp16_padded_tile_dots(d_sign, d_sig, d_exp4, d_exp4.shape[1], w_rows, w_exp4, scratch,
                          block_exp4, high, low, kernels)


@njit(distinct_arrays=True)
def fp16_padded_tile_dots(d_sign, d_sig, d_exp4, n_p, w_rows, w_exp4, scratch, block_exp4, high,
                          low, kernels):
    """:func:`fp16_tile_dots` of the first ``n_p`` columns of the data rows, which may be
    longer: a caller pads its rows' stride so that a column's words spread over the cache's
    sets (rows 512 bytes apart share an eighth of them)."""
    prefer_wide_vectors()
    lanes = d_exp4.shape[0]
    k0, k1 = kernels
    zero = 4 * ZERO_LANE_EXP
    block_exp4[k0:k1, :n_p] = 0
    high[k0:k1, :n_p] = 0
    low[k0:k1, :n_p] = 0
    live = np.empty(lanes, np.int64)  # the lanes with some data, in order
    low_exp = np.empty(lanes, np.int32)  # each one's smallest live data exponent
    n_live = 0
    for j in range(lanes):
        de = d_exp4[j]
        least = np.int32(LIVE_SHIFTS * 8)
        for p in range(n_p):
            least = min(least, np.int32(de[p] if de[p] != zero else LIVE_SHIFTS * 8))
        if least == LIVE_SHIFTS * 8:
            continue
        live[n_live] = j
        low_exp[n_live] = least
        n_live += 1
    # the block exponents, GROUP lanes at a time: one load and store of a kernel's row for
    # four lanes' (a lane missing from the last group, or with a zero weight, counts as a
    # zero operand: far below 0, where the exponents start)
    for i in range(0, n_live, GROUP):
        j0 = live[i]
        j1 = live[i + 1] if i + 1 < n_live else j0
        j2 = live[i + 2] if i + 2 < n_live else j0
        j3 = live[i + 3] if i + 3 < n_live else j0
        de0, de1, de2, de3 = d_exp4[j0], d_exp4[j1], d_exp4[j2], d_exp4[j3]
        for k in range(k0, k1):
            we0 = w_exp4[j0, k]
            we1 = w_exp4[j1, k] if i + 1 < n_live else zero
            we2 = w_exp4[j2, k] if i + 2 < n_live else zero
            we3 = w_exp4[j3, k] if i + 3 < n_live else zero
            if we0 == zero and we1 == zero and we2 == zero and we3 == zero:
                continue
            be = block_exp4[k]
            for p in range(n_p):
                be[p] = max(be[p], max(max(np.int32(de0[p] + we0), np.int32(de1[p] + we1)),
                                       max(np.int32(de2[p] + we2), np.int32(de3[p] + we3))))
    top = np.zeros(k1, np.int32)  # each kernel's largest block exponent in the tile
    for k in range(k0, k1):
        be = block_exp4[k]
        most = np.int32(0)
        for p in range(n_p):
            most = max(most, be[p])
        top[k] = most
    tables16, tables8, signed, sums16, rows = scratch
    for i in range(0, n_live, GROUP):
        n_g = min(GROUP, n_live - i)
        _tile_group(d_sign, d_sig, d_exp4, n_p, w_rows, w_exp4, tables16, tables8,
                    signed, sums16, rows, block_exp4, high, low, k0, k1, live[i:i + n_g],
                    low_exp[i:i + n_g], top)


@njit(distinct_arrays=True)
def _tile_group(d_sign, d_sig, d_exp4, n_p, w_rows, w_exp4, tables16, tables8, signed,
                sums16, rows, block_exp4, high, low, k0, k1, group, low_exp, top):
    """:func:`fp16_padded_tile_dots` of the lanes ``group`` (up to ``GROUP``; a missing lane reads
    as the first with a zero weight) for kernels ``k0:k1``.

    One kernel (not inlined: its loops over pixels are written out in its body rather than
    in inlined functions, whose array arguments cost atomic reference counts and whose
    calls cost their arguments' stores, for every kernel).  The narrow loops take a
    weight's row indices from ``w_rows`` where they are (bytes: unsigned, which numba
    indexes without a fix-up for negative indices); ``rows`` (GROUP, 11) uint64 receives a
    kernel's :func:`_rows_of` of the group's weights only for :func:`_correct_flagged` (a
    copy for every lane and kernel was a sixth of a 7 x 7 layer's time)."""
    prefer_wide_vectors()
    zero = 4 * ZERO_LANE_EXP
    n_g = group.size
    j0 = group[0]
    j1 = group[1] if n_g > 1 else j0
    j2 = group[2] if n_g > 2 else j0
    j3 = group[3] if n_g > 3 else j0
    for m in range(n_g):
        j = group[m]
        booth_data_table_low(d_sign[j, :n_p], d_sig[j, :n_p], tables16[m], tables8[m])
        for p in range(n_p):
            signed[m, p] = np.int16(signed_value(d_sign[j, p], d_sig[j, p]))
    # the narrow loops run in whole vectors of 8-bit words as far as the scratch allows (the
    # columns past n_p read stale table words; their sums are never read): a partial last
    # vector ran element by element
    n_narrow = min(ceil_div_in_kernels(n_p, NARROW_VECTOR) * NARROW_VECTOR,
                   tables8.shape[2])
    # the exponents bound the shifts loosely (by the tile's extremes): where they allow
    # more than 8, the 8-bit tree is tried first, until it has missed in more than one
    # kernel in WIDE_AFTER (its flagged lanes redone from the 16-bit tree): then the 16-bit one
    wide, misses = False, 0
    zero_rows = np.empty(ROW_BYTES, np.uint8)  # a missing lane's rows: a zero weight's
    for i in range(ROW_BYTES):
        zero_rows[i] = _ZERO_ROWS[i] if i < 10 else 0
    for k in range(k0, k1):
        we0 = w_exp4[j0, k]
        we1 = w_exp4[j1, k] if n_g > 1 else zero
        we2 = w_exp4[j2, k] if n_g > 2 else zero
        we3 = w_exp4[j3, k] if n_g > 3 else zero
        if we0 == zero and we1 == zero and we2 == zero and we3 == zero:
            continue
        bound = np.int32(-1)  # the largest live shift the exponents allow
        near8 = 0  # a bit for each lane whose own live shifts the exponents bound by 8
        for m in range(GROUP):
            real = m < n_g
            lane_bound = np.int32(-1)
            if real and w_exp4[group[m], k] != zero:
                lane_bound = np.int32(top[k] - low_exp[m] - w_exp4[group[m], k])
            bound = max(bound, lane_bound)
            near8 |= np.int64(lane_bound <= NARROW8) << m
        narrow8 = bound <= NARROW8 or not wide
        if narrow8:
            for m in range(GROUP):
                r = w_rows[group[m], k] if m < n_g else zero_rows
                i0, i1, i2, i3, i4 = r[0], r[1], r[2], r[3], r[4]
                for p in range(n_narrow):
                    sums16[m, p] = booth_sum_low8_table(
                        tables8[m, i0, p], tables8[m, i1, p], tables8[m, i2, p],
                        tables8[m, i3, p], tables8[m, i4, p])
        else:
            for m in range(GROUP):
                r = w_rows[group[m], k] if m < n_g else zero_rows
                i0, i1, i2, i3, i4 = r[0], r[1], r[2], r[3], r[4]
                if (near8 >> m) & 1:
                    # a lane within the 8-bit tree's reach (or with a zero weight, whose
                    # rows pick words 0) takes its cheaper tree: a quarter of the work
                    for p in range(n_narrow):
                        sums16[m, p] = booth_sum_low8_table(
                            tables8[m, i0, p], tables8[m, i1, p], tables8[m, i2, p],
                            tables8[m, i3, p], tables8[m, i4, p])
                    continue
                i5, i6, i7, i8, i9 = r[5], r[6], r[7], r[8], r[9]
                for p in range(n_narrow):
                    sums16[m, p] = booth_sum_low16_table(
                        tables16[m, i0, p], tables16[m, i1, p], tables16[m, i2, p],
                        tables16[m, i3, p], tables16[m, i4, p], tables16[m, i5, p],
                        tables16[m, i6, p], tables16[m, i7, p], tables16[m, i8, p],
                        tables16[m, i9, p])
        reach = NARROW8 if narrow8 else NARROW16
        sw0 = _signed_of(w_rows, j0, k)
        sw1 = _signed_of(w_rows, j1, k) if n_g > 1 else np.int16(0)
        sw2 = _signed_of(w_rows, j2, k) if n_g > 2 else np.int16(0)
        sw3 = _signed_of(w_rows, j3, k) if n_g > 3 else np.int16(0)
        we = (we0, we1, we2, we3)
        sw = (sw0, sw1, sw2, sw3)
        if bound <= reach:  # nothing to flag
            for p in range(n_p):
                v, _ = _group_sum(block_exp4[k, p], we, sw,
                                  (d_exp4[j0, p], d_exp4[j1, p], d_exp4[j2, p], d_exp4[j3, p]),
                                  (signed[0, p], signed[1, p], signed[2, p], signed[3, p]),
                                  (sums16[0, p], sums16[1, p], sums16[2, p], sums16[3, p]))
                high[k, p] = add32(high[k, p], sar32(v, 16))
                low[k, p] = add32(low[k, p], v)
            continue
        f0 = f1 = f2 = f3 = word32(0xFFFFFFFF)
        for p in range(n_p):
            v, (h0, h1, h2, h3) = _group_sum(
                block_exp4[k, p], we, sw,
                (d_exp4[j0, p], d_exp4[j1, p], d_exp4[j2, p], d_exp4[j3, p]),
                (signed[0, p], signed[1, p], signed[2, p], signed[3, p]),
                (sums16[0, p], sums16[1, p], sums16[2, p], sums16[3, p]))
            high[k, p] = add32(high[k, p], sar32(v, 16))
            low[k, p] = add32(low[k, p], v)
            f0 = min(f0, _beyond(h0, reach))
            f1 = min(f1, _beyond(h1, reach))
            f2 = min(f2, _beyond(h2, reach))
            f3 = min(f3, _beyond(h3, reach))
        limit = LIVE_SHIFTS - reach - 1
        flags = (np.int64(f0 < limit) | (np.int64(f1 < limit) << 1)
                 | (np.int64(f2 < limit) << 2) | (np.int64(f3 < limit) << 3))
        if flags:
            for m in range(GROUP):  # the flagged lanes' rows, for the wider tree
                r = _rows_of(w_rows, group[m] if m < n_g else j0, k, m < n_g)
                for i in range(11):
                    rows[m, i] = r[i]
            _correct_flagged(flags, group, k, reach, d_sign, d_sig, d_exp4, n_p, w_rows,
                             w_exp4, tables16, signed, sums16, rows, block_exp4, high, low)
            if narrow8:
                misses += 1
                wide = misses > (k - k0) // WIDE_AFTER


@njit(inline="always")
def _signed_of(w_rows, j, k):
    """Weight ``(j, k)``'s signed significand (bytes 10-11 of its rows), int16."""
    return np.int16(np.uint16(w_rows[j, k, 10]) | (np.uint16(w_rows[j, k, 11]) << np.uint16(8)))


@njit(inline="always")
def _rows_of(w_rows, j, k, real):
    """Weight ``(j, k)``'s ten table rows and signed significand (:func:`fp16_weight_rows`)
    as a tuple of int64, or a zero weight's (``real`` False: a group's missing lane)."""
    if not real:
        return _ZERO_ROWS
    return (np.int64(w_rows[j, k, 0]), np.int64(w_rows[j, k, 1]), np.int64(w_rows[j, k, 2]),
            np.int64(w_rows[j, k, 3]), np.int64(w_rows[j, k, 4]), np.int64(w_rows[j, k, 5]),
            np.int64(w_rows[j, k, 6]), np.int64(w_rows[j, k, 7]), np.int64(w_rows[j, k, 8]),
            np.int64(w_rows[j, k, 9]), np.int64(_signed_of(w_rows, j, k)))


@njit(distinct_arrays=True)
def _correct_flagged(flags, group, k, reach, d_sign, d_sig, d_exp4, n_p, w_rows, w_exp4,
                     tables16, signed, sums, rows, block_exp4, high, low):
    """Replace the shifted products :func:`_tile_group` added for kernel ``k`` of the
    group's lanes flagged in ``flags`` (a bit each: a live shift beyond the narrow tree's
    ``reach``) by the multiplier's.

    After the 8-bit tree, a flagged lane's products are first redone from the 16-bit tree
    (``rows`` holds the kernel's rows), whose low bits then stand in ``sums``; then, where
    a live shift goes beyond 16, from :func:`sim.num.booth.booth_lane` pixel by pixel
    (:func:`_correct_far`; elsewhere the 16-bit tree's product is the multiplier's already).
    Such lanes have few such pixels (in the benchmark's layer about one in six runs of 16):
    the multiplier from the operands there costs less than a table of the lane's 32-bit
    tree words for all its pixels."""
    prefer_wide_vectors()
    for m in range(group.size):
        if not (flags >> m) & 1:
            continue
        j = group[m]
        sw = _rows_of(w_rows, j, k, True)[10]
        we = w_exp4[j, k]
        if reach == NARROW8:
            i0, i1, i2, i3, i4 = rows[m, 0], rows[m, 1], rows[m, 2], rows[m, 3], rows[m, 4]
            i5, i6, i7, i8, i9 = rows[m, 5], rows[m, 6], rows[m, 7], rows[m, 8], rows[m, 9]
            far = word32(0xFFFFFFFF)
            for p in range(n_p):
                wide = booth_sum_low16_table(
                    tables16[m, i0, p], tables16[m, i1, p], tables16[m, i2, p],
                    tables16[m, i3, p], tables16[m, i4, p], tables16[m, i5, p],
                    tables16[m, i6, p], tables16[m, i7, p], tables16[m, i8, p],
                    tables16[m, i9, p])
                top = sub32(block_exp4[k, p], we)
                narrow, shift = _fast_product(top, d_exp4[j, p], signed[m, p], sw, sums[m, p])
                fast, _ = _fast_product(top, d_exp4[j, p], signed[m, p], sw, wide)
                sums[m, p] = wide
                d = sub32(fast, narrow)
                high[k, p] = add32(high[k, p], sar32(d, 16))
                low[k, p] = add32(low[k, p], d)
                far = min(far, _beyond(shift, NARROW16))
            if far >= LIVE_SHIFTS - NARROW16 - 1:
                continue
        _correct_far(j, m, k, sw, we, d_sign, d_sig, d_exp4, n_p, signed, sums, block_exp4,
                     high, low)


@njit(inline="always")
def _correct_far(j, m, k, sw, we, d_sign, d_sig, d_exp4, n_p, signed, sums, block_exp4, high,
                 low):
    """:func:`_correct_flagged`'s last step for lane ``j`` (``m`` of the group; its weight's
    signed significand ``sw`` and exponent ``we``), ``sums`` from the 16-bit tree: a run's
    pixels beyond the tree's reach found in a vector, as the bits of a word, then corrected
    one by one (in vectors over whole runs, the multiplier took four times as long)."""
    limit = word32(LIVE_SHIFTS - NARROW16 - 1)
    w_sign, w_sig = word32(sw < 0), word32(abs(sw))
    one = np.uint64(1)
    for start in range(0, n_p, CORRECT_RUN):
        # unsigned indices: numba's fix-up of negative ones made the loop gathers
        c0 = np.uint64(start)
        bits = np.uint64(0)
        for q in range(np.uint64(min(CORRECT_RUN, n_p - start))):
            shift = sub32(block_exp4[k, c0 + q], add32(d_exp4[j, c0 + q], we))
            bits |= np.uint64(_beyond(shift, NARROW16) < limit) << q
        while bits:
            lowest = bits & (~bits + one)
            bits ^= lowest
            p = c0 + np.uint64(63 - leading_zeros64(lowest))
            be = block_exp4[k, p]
            shift = sub32(be, add32(d_exp4[j, p], we))
            whole = booth_lane(xor32(d_sign[j, p], w_sign), w_sig, d_sig[j, p], shift)
            fast, _ = _fast_product(sub32(be, we), d_exp4[j, p], signed[m, p], sw, sums[m, p])
            d = sub32(whole, fast)
            high[k, p] = add32(high[k, p], sar32(d, 16))
            low[k, p] = add32(low[k, p], d)


#: Pixels :func:`_correct_far` looks over together: a 512-bit vector of 32-bit words.
CORRECT_RUN = 16
#: The narrow trees' reach: shifts up to these take their low bits from the 8-bit table
#: (rows 0-3) or from the 16-bit one.
NARROW8, NARROW16 = 8, 16
#: 8-bit words in a 512-bit vector.
NARROW_VECTOR = 64
#: A group of lanes turns to the 16-bit tree when the 8-bit one has missed (some lane
#: shifted beyond 8) in more than one kernel in this many.
WIDE_AFTER = 8


@njit(inline="always")
def _fast_product(top, de, sd, sw, sum_low):
    """A lane's shifted product (:func:`aligned_product_from_sum`: exact for shifts up to the
    narrow tree's width; 0 for a zero operand, whose ``P`` and ``a`` are 0) and its shift
    ``s`` (``top`` the block exponent less the weight's), uint32 words.  Shifts of 32 or
    more (a zero operand's, or a flagged lane's) are taken as 31.  ``sd`` and ``sw`` are the
    signed significands, int16: their product is one multiply-add of 16-bit words."""
    shift = sub32(top, de)
    return aligned_product_from_sum(mul32(np.int32(sd), np.int32(sw)), sum_low,
                                    min(shift, word32(31))), shift


@njit(inline="always")
def _group_sum(be, we, sw, de, sd, sums):
    """The sum of a group's four shifted products for one pixel (:func:`_fast_product` of
    each lane: block exponent ``be``; the lanes' weight exponents ``we`` and signed
    significands ``sw``, data exponents ``de`` and signed significands ``sd``, narrow sums
    ``sums``, 4-tuples), and the lanes' shifts."""
    v0, h0 = _fast_product(sub32(be, we[0]), de[0], sd[0], sw[0], sums[0])
    v1, h1 = _fast_product(sub32(be, we[1]), de[1], sd[1], sw[1], sums[1])
    v2, h2 = _fast_product(sub32(be, we[2]), de[2], sd[2], sw[2], sums[2])
    v3, h3 = _fast_product(sub32(be, we[3]), de[3], sd[3], sw[3], sums[3])
    return add32(add32(v0, v1), add32(v2, v3)), (h0, h1, h2, h3)


@njit(inline="always")
def _beyond(shift, reach):
    """A live shift (below ``LIVE_SHIFTS``) beyond ``reach`` makes this below
    ``LIVE_SHIFTS - reach - 1`` (unsigned): the flags keep its least value."""
    return sub32(shift, reach + 1)


@njit(inline="always")
def block_sum(high, low):
    """The block sum from its two 32-bit words (:func:`fp16_tile_dots`): ``high`` the sum
    of the products' upper halves (read as int32), ``low`` the products' sum modulo
    2**32.  The lower halves add up to ``low - high * 65536`` modulo 2**32, exactly for
    fewer than 65536 lanes."""
    return np.int64(np.int32(high)) * 65536 + np.int64(sub32(low, shl32(high, 16)))


STICKY_REACH = 16  # CACC's rounding sees this many bits below the result (guide + sticky)


def cacc_round_is_identity(bound: int, truncate: int) -> bool:
    """Whether :func:`cacc_round_int32` leaves sums within ``[-bound, bound]`` as they are,
    saturating none: no rounding shift, and the bound within int32."""
    return truncate == 0 and bound <= INT32_MAX


def cacc_round_int32(acc: np.ndarray, truncate: int) -> tuple[np.ndarray, int]:
    """CACC's integer delivery: round half away from zero by ``truncate`` bits, saturate to int32.

    ``acc`` holds the exact 48-bit sums (int64).  Returns the int32 cube and
    the number of saturated values (D_OUT_SATURATION).

    The RTL shifts the sum with 16 fraction bits appended, so it rounds from the bit
    below the result (guide) and the 15 bits under it (sticky) only: past 16 bits of
    truncation the sum's lowest ``truncate - 16`` bits are lost, and a negative sum just
    above a tie rounds as the tie, away from zero (nv_small's RTL, CLIP_TRUNCATE 17-31).
    Clearing those bits first keeps the guide, the sticky bits and the floor the RTL uses.
    """
    acc = np.asarray(acc, np.int64)
    if truncate > STICKY_REACH:
        acc = acc & ~np.int64((1 << (truncate - STICKY_REACH)) - 1)
    acc = shift_right_round(acc, truncate)
    if acc.size == 0 or (INT32_MIN <= acc.min() and acc.max() <= INT32_MAX):
        return acc.astype(np.int32), 0  # the usual case: nothing to saturate
    sat = int(np.count_nonzero((acc > INT32_MAX) | (acc < INT32_MIN)))
    return np.clip(acc, INT32_MIN, INT32_MAX).astype(np.int32), sat


# --- products from the tree's sum word: the fully connected layers' form ----------------
# Let P be a lane's exact signed product (|P| < 2**28) and K = 0x55550000 the sign
# compensation.  The carry-save tree's two words add up to P + K exactly (no carry out of
# bit 31), so the two words shifted right by s separately and added with the compensation
# give ((P + K) >> s) - (K >> s) - c, c the carry out of the low s bits of the words'
# sum: c = 1 exactly when the sum word's low s bits exceed those of P + K.  For s <= 16, K
# is a multiple of 2**s, so the shifted product is (P >> s) - c, c comparing low bits of
# P and of the sum word: the tree matters only through its low 16 bits, which a tree on
# 16-bit words gives (:func:`sim.num.booth.booth_sum_low16`) at twice the lanes a vector.

@njit(inline="always")
def signed_value(negative, magnitude):
    """``magnitude`` negated when ``negative`` (0 or 1), a uint32 word (read it as int32)."""
    return add32(xor32(magnitude, sub32(0, negative)), and32(negative, 1))


@njit(inline="always")
def signed_product(negative, wt, dat):
    """The exact product of magnitudes ``wt``, ``dat`` (< 2**14) with sign ``negative``
    (0 or 1), as a uint32 word (read it as int32)."""
    return signed_value(negative, mul32(wt, dat))


@njit(inline="always")
def aligned_product_from_sum(product, sum_low16, shift):
    """:func:`sim.num.booth.booth_lane` for shifts up to 16 from the exact signed product
    (:func:`signed_product`) and the low 16 bits of the tree's sum word
    (:func:`sim.num.booth.booth_sum_low16`): ``(product >> shift) - c``, ``c`` whether the
    sum word's low ``shift`` bits exceed the product's (:func:`sum_word_carry`).  Computed
    as ``((product - a) >> shift) + (a >> shift)``, ``a`` the sum word's low bits: the
    difference borrows from ``product >> shift`` exactly when ``a``'s low ``shift`` bits
    exceed the product's, and no compare is needed.  A uint32 word (read it as int32)."""
    return add32(sar32(sub32(product, sum_low16), shift), shr32(sum_low16, shift))


@njit(inline="always")
def sum_word_carry(product, sum_low16, shift):
    """The carry :func:`aligned_product_from_sum` subtracts: whether the low ``shift`` bits
    (``shift`` <= 16) of the tree's sum word exceed those of the exact product (a bool)."""
    low = sub32(shl32(1, shift), 1)
    return and32(sum_low16, low) > and32(product, low)

