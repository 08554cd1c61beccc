"""The CMAC blocks of a fully connected fp16 layer: every weight meets one data value.

The numbers of the definition of a block (``tests/num/mac_reference.py``), by a route
that needs the Booth tree only in its low bits. Let ``P`` be a lane's exact signed
product (``|P| < 2**28``) and ``s`` its shift (a multiple of 4). The tree's two words
add up to ``P + 0x55550000`` without a carry out of bit 31, so for ``s <= 16`` the
shifted product is ``(P >> s) - c``, ``c`` whether the low ``s`` bits of the tree's sum
word exceed those of ``P`` (:func:`sim.num.mac.aligned_product_from_sum`). Shifts of 32
or more give 0. So a block is, in passes over a kernel's lanes (each a vectorised loop
over hundreds of lanes):

1. the lane exponents in 16-bit words, and the block exponents (their maximum);
2. ``P >> s`` in 32-bit words: ``c`` is 0 for shifts of 0 and 4, and for shifts of 8 but
   where ``P``'s low byte is small (:mod:`sim.num.fc_carries`);
3. the block sums.

The lanes that may carry (shifts of 12 or 16, and the few of 8 with such a low byte: a
few in a hundred) take ``c`` from the 16-bit tree (:func:`sim.num.booth.booth_sum_low16`),
lanes shifted by 20 to 28 (rarer still) their product from the whole tree
(:func:`sim.num.booth.booth_lane`), each in a pass over the lanes flagged (their carries
subtracted there).  Weights are decoded twice (exponents,
then significands): a few word operations, cheaper than storing and loading them.

Whole 64-lane blocks of one position (nv_full's fully connected layers) take pass 2 in
float32 arithmetic (:mod:`sim.num.fc_float`: exact, a third of the integer loop's
instructions), their flagged lanes' packed words made in the same loop for the flagged
lanes only; a chunk with an Inf or NaN weight (exponent field 31) takes the integer loop,
which stays the reference.
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit, prefer_wide_vectors
from sim.num.booth import booth_lane, booth_sum_low16
from sim.num.borrowed import borrowed
from sim.num.compress import COMPRESS_LANES, compress_flagged, compress_nonzero
from sim.num.fc_carries import may_carry
from sim.num.fc_float import FLOAT_LANES, data_value, float_data, float_run
from sim.num.fc_pieces import (
    HALF_PIECE,
    PIECE,
    half_piece_or,
    half_piece_wide_sum,
    piece_fill,
    piece_max,
    prefetch,
)
from sim.num.mac import (
    ZERO_LANE_EXP,
    fp16_weight_operand,
    signed_product,
)
from sim.num.narrow import (
    add16,
    and16,
    mul16,
    or16,
    shl16,
    shr16,
    sub16,
    word8,
    word16,
    xor16,
)
from sim.num.specials import FP16_INF
from sim.num.word32 import add32, and32, or32, sar32, shl32, shr32, sub32, word32

#: Lane exponents (four times) are kept biased by this in unsigned 16-bit words: a zero
#: data value's (4 * ZERO_LANE_EXP) plus the bias stays above 0, which is a zero weight's.
EXP_BIAS = 512
#: Shifts up to this take their carries, where they may have one
#: (:func:`sim.num.fc_carries.may_carry`), from the tree's low 16 bits; longer ones, below
#: 32, their products from the whole tree.
NEAR_SHIFT = 16
#: Lanes a pass runs over at most (a layer with one kernel position: whole blocks): the
#: scratch stays in the second-level cache, a 4096-lane kernel (AlexNet's 1x1 layers) is
#: one chunk; 4096 ran the 1x1x4096 benchmark layer's blocks 3-9% faster than 2048 (one
#: thread, two alternating runs of 30 in one process).
CHUNK = 4096
#: The block width (MAC atomic C of nv_full, the fp16 configuration) whose passes are
#: compiled for it (:func:`_blocks`).
FC_BLOCK = 64
#: What a flagged lane's (P >> s) needs (:func:`_mid_lanes`): a carry of 1 subtracted, or
#: (shifted beyond NEAR_SHIFT: it is 0 so far) the product from the whole tree.
NEEDS_CARRY, NEEDS_TREE = 1, 2
#: What pass 1 says of a chunk's weights (:func:`_lane_exponents`): a NaN, an exponent
#: field of 31 (Inf or NaN: the chunk takes the integer loop, not the float one).
NAN_WEIGHT, EXP31_WEIGHT = 1, 2
FC_BLOCK_BITS = FC_BLOCK.bit_length() - 1  # a lane's block: lane >> FC_BLOCK_BITS
#: Lanes of 32-bit words in a 512-bit vector: the products' loops keep a block's sums and
#: flags in one such vector (:func:`_block_products`, :func:`sim.num.fc_live._live_products`).
SLOT_LANES = HALF_PIECE
#: Vectors whose shifted products a lane of those loops adds up in an int32 word before
#: they go to the block's sum: each is below 2**28 in magnitude, so eight of them stay
#: below 2**31.
SLOT_VECTORS = 8
#: Lanes of 16-bit words in a 512-bit vector: the 16-bit tree's loop runs in whole ones.
MID_VECTOR = 32
#: The most lanes a block may have: the block sums add the low halves of ``P >> s`` (at most
#: 0xFFFF each) in 32-bit words (:func:`_block_sums`).  MAC atomic C is 64 at most.
MAX_BLOCK_LANES = 2**15 - 1


@njit
def fc_scratch(lanes):
    """Scratch for :func:`fp16_fc_blocks` of chunks of up to ``lanes`` lanes (each pass's
    results, kept for the next)."""
    return (np.zeros(lanes, np.uint16), np.zeros(lanes, np.uint16),  # lane, block exponents
            np.zeros(lanes, np.int32),  # (P >> s) - c
            # the lanes that may carry or are shifted by 20 to 28: their indices, packed
            # words, what each needs (_mid_lanes: a carry of 1, a product from the whole
            # tree, nothing), and the places of those that need something in the indices
            (np.zeros(lanes + MID_VECTOR, np.int32), np.zeros(lanes + MID_VECTOR, np.uint32),
             np.zeros(lanes + MID_VECTOR, np.uint8), np.zeros(lanes + MID_VECTOR, np.int32)),
            np.zeros(lanes, np.uint16),  # each lane's block exponent
            # each lane's packed operands (_unpack) if it may carry or is shifted by 20 to
            # 28, else 0
            np.zeros(lanes + COMPRESS_LANES, np.uint32),
            # each position's sums of the high and low halves (_block_sums), the first
            # also a block's int32 sums lane by lane of a vector (_block_products); the or
            # of the flagged words of each lane of a vector (_block_products)
            (np.zeros(max(lanes, SLOT_LANES), np.uint32), np.zeros(lanes, np.uint32),
             np.zeros(SLOT_LANES, np.uint32)),
            # the flagged lanes' packed words' low and high halves (_mid_lanes)
            (np.zeros(lanes + MID_VECTOR, np.uint16), np.zeros(lanes + MID_VECTOR, np.uint16)),
            # the float loop's flagged lanes (_float_products; their packed words' halves
            # in the halves above)
            np.zeros(lanes + MID_VECTOR, np.uint16))


def fc_data(sign, sig, exp4):
    """A pixel's data operands as :func:`fp16_fc_blocks` takes them (numpy arrays in the
    weights' lane order): (biased exponents uint16, signs uint8, significands uint16,
    values float32 (:func:`sim.num.fc_float.float_data`))."""
    return ((np.asarray(exp4, np.int32) + EXP_BIAS).astype(np.uint16),
            np.asarray(sign).astype(np.uint8), np.asarray(sig).astype(np.uint16),
            float_data(sign, sig, exp4))


@njit(inline="always")
def fc_data_lane(bits):
    """:func:`fc_data` of one fp16 data value ``bits`` (the CMAC's operands,
    :func:`sim.num.mac.fp16_weight_operand`): (biased exponent uint16, sign uint8,
    significand uint16, value float32): for kernels that decode a layer's few data
    values themselves."""
    sign, sig, e4, dead = fp16_weight_operand(word32(bits))
    exp4 = np.int64(4 * ZERO_LANE_EXP) if dead else np.int64(e4)
    return (np.uint16(exp4 + EXP_BIAS), np.uint8(sign), np.uint16(sig),
            data_value(sign, sig, exp4))


@njit(inline="always")
def pixel_data(data, p):
    """Pixel ``p``'s operands of a layer's :func:`fc_data` arrays (pixels, lanes): the
    ``data`` :func:`fp16_fc_blocks` and :func:`sim.num.fc_live.fp16_fc_live_blocks` take
    (what they hold is this module's)."""
    d_exp, d_sign, d_sig, d_float = data
    return d_exp[p], d_sign[p], d_sig[p], d_float[p]


@njit(inline="always")
def fp16_fc_blocks(data, w_bits, block, positions, scratch, block_exp4, sums):
    """Every CMAC block of one data vector against one kernel's weights ``w_bits`` (lanes,)
    fp16 bits, in the order a layer stores them: lane ``c * positions + pos`` is channel
    ``c`` at kernel position ``pos``; block ``g * positions + pos`` (CACC's order) takes
    channels ``g * block`` up to ``(g + 1) * block`` (fewer in the last group) at ``pos``.

    ``data`` is :func:`fc_data` of the data (lanes,), ``scratch`` :func:`fc_scratch`.
    Writes each block's exponent (times four) to ``block_exp4`` (int32) and its exact sum
    to ``sums`` (int64).
    Returns whether a weight is a NaN (the block sums then mean nothing: the caller
    decides the NaN blocks)."""
    # every array apart, borrowed (sim.num.borrowed): counting the references to the
    # 21 arrays cost 20 pairs of atomic operations a call, a sixth of a 4096-lane
    # kernel's time
    d_exp, d_sign, d_sig, d_float = data
    lane_exp, tops, shifted, compact, block_exp, packed, halves, halves16, flagged16 = scratch
    flagged, words, needs, need_at = compact
    # the float loop loads whole vectors: contiguous arrays (those are the same arrays; any
    # other, copied)
    d_sign, d_sig = np.ascontiguousarray(d_sign), np.ascontiguousarray(d_sig)
    d_float, w_bits = np.ascontiguousarray(d_float), np.ascontiguousarray(w_bits)
    return _blocks(borrowed(d_exp), borrowed(d_sign), borrowed(d_sig), borrowed(d_float),
                   borrowed(w_bits), block, positions, borrowed(lane_exp), borrowed(tops),
                   borrowed(shifted), borrowed(block_exp), borrowed(packed), borrowed(flagged),
                   borrowed(words), borrowed(needs), borrowed(need_at),
                   borrowed(halves[0]), borrowed(halves[1]), borrowed(halves[0].view(np.int32)),
                   borrowed(halves[2]), borrowed(halves16[0]), borrowed(halves16[1]),
                   borrowed(flagged16), borrowed(block_exp4), borrowed(sums))


@njit
def _blocks(d_exp, d_sign, d_sig, d_float, w_bits, block, positions, lane_exp, tops, shifted,
            block_exp, packed, flagged, words, needs, need_at, highs, lows, slots, ors,
            low16s, high16s, flagged16, block_exp4, sums):
    """:func:`fp16_fc_blocks` of the data's and scratch's arrays one by one."""
    if block > MAX_BLOCK_LANES:
        raise ValueError("fp16_fc_blocks: more lanes a block than MAX_BLOCK_LANES")
    n = w_bits.size
    chunk = max(block, CHUNK // block * block) if positions == 1 else block * positions
    if lane_exp.size < min(n, chunk):  # the passes index it unchecked
        raise ValueError("fp16_fc_blocks: scratch for fewer lanes than a chunk")
    # blocks of 64 lanes at one position (nv_full's fp16 layers): the passes' loops over
    # a block compiled for that width (a constant argument), whole vectors and no
    # remainder loops: the block exponents and their spread took 0.070 ns a lane for
    # a width known at run time, 0.020 for 64 known; the block sums 0.044 and 0.033
    known = block == FC_BLOCK and positions == 1
    nan = False
    for m0 in range(0, n, chunk):
        lanes = min(chunk, n - m0)
        first = m0 // block
        # the weights (read once, from memory) of the chunk after next asked for now, a
        # line (32 weights) at a time, past the kernel's end too (the next kernel's, in a
        # layer's weights; a hint never faults): the layers ran faster than on the
        # processor's own prefetching alone (4-5%)
        ahead = m0 + 2 * lanes
        for line in range(ahead, ahead + lanes, 32):
            prefetch(w_bits, line)
        # the passes index with unsigned integers or slices from index 0: numba's fix-ups
        # of negative indices kept LLVM from vectorising.  They take the arrays whole, the
        # data and weights from lane m0 on, the scratch from 0: a slice costs its array's
        # reference count twice (an atomic add each; the data's and weights' counts
        # shared by the threads), and a slice of each array per chunk took 6% of the
        # layer's time
        at, count = np.uint64(m0), np.uint64(lanes)
        specials = _lane_exponents(d_exp, w_bits, at, count, lane_exp)
        nan |= (specials & NAN_WEIGHT) != 0
        if known:
            n_blocks = _block_exponents(lane_exp, count, FC_BLOCK, 1, tops, block_exp)
        else:
            n_blocks = _block_exponents(lane_exp, count, block, positions, tops, block_exp)
        for b in range(n_blocks):
            block_exp4[first + b] = np.int32(tops[b]) - EXP_BIAS
        if known and lanes % FC_BLOCK == 0 and not specials & EXP31_WEIGHT:
            n_flagged = _float_products(d_float, d_sign, d_sig, w_bits, at, count, lane_exp,
                                        tops, low16s, high16s, flagged16, sums, np.uint64(first))
            _float_mid_lanes(n_flagged, low16s, high16s, flagged16, needs, need_at, sums,
                             np.uint64(first))
            continue
        if known and lanes % FC_BLOCK == 0:
            if _block_products(d_sign, d_sig, w_bits, at, count, lane_exp, tops, packed,
                               sums, np.uint64(first), slots, ors):
                _mid_lanes(packed, count, flagged, words, needs, need_at, low16s, high16s,
                           sums, np.uint64(first), np.uint64(FC_BLOCK_BITS))
            continue
        else:
            _spread(tops, count, block, positions, block_exp)
            some_mid = _shifted_products(d_sign, d_sig, w_bits, at, count, lane_exp,
                                         block_exp, shifted, packed)
        if some_mid:
            _mid_lanes(packed, count, flagged, words, needs, need_at, low16s, high16s,
                       shifted, np.uint64(0), np.uint64(0))
        if known:
            _block_sums(shifted, count, FC_BLOCK, 1, highs, lows, sums, np.uint64(first),
                        np.uint64(n_blocks))
        else:
            _block_sums(shifted, count, block, positions, highs, lows, sums,
                        np.uint64(first), np.uint64(n_blocks))
    return nan


@njit(distinct_arrays=True)
def _lane_exponents(d_exp, w_bits, m0, lanes, lane_exp):
    """Pass 1: the exponent of each lane of ``m0:m0 + lanes`` (biased, 0 for a zero weight);
    whether a weight is NaN (``NAN_WEIGHT``), whether one has the exponent field 31 (Inf
    or NaN, ``EXP31_WEIGHT``: no float the integer path agrees with)."""
    prefer_wide_vectors()
    # the largest magnitude tells both (one maximum a vector: two flags or'd took longer)
    largest = word16(0)
    for i in range(lanes):
        w = word16(w_bits[m0 + i])
        live = sub16(0, word16(and16(w, 0x7FFF) != 0))
        lane_exp[i] = and16(add16(d_exp[m0 + i], and16(shr16(w, 10), 0x1C)), live)
        largest = max(largest, and16(w, 0x7FFF))
    return (np.uint8(largest > FP16_INF) * np.uint8(NAN_WEIGHT)
            | np.uint8(largest >= FP16_INF) * np.uint8(EXP31_WEIGHT))


@njit(distinct_arrays=True)
def _block_exponents(lane_exp, lanes, block, positions, tops, work):
    """The block exponents (biased; at least the bias: a block's exponent is at least 0)
    of ``lane_exp[:lanes]`` into ``tops``: of one position, block ``b``'s at ``b``; of one
    group, position ``pos``'s at ``pos``.  Returns the number of blocks.  ``work``: as
    many words as lanes, overwritten."""
    prefer_wide_vectors()
    if positions == 1:
        width = np.uint64(block)
        n_blocks = (lanes + width - np.uint64(1)) // width
        for b in range(n_blocks):  # a vector at a time (fc_pieces: a loop ran in 128 bits)
            base = b * width
            end = base + min(width, lanes - base)
            top = word16(EXP_BIAS)
            j = base
            while j + np.uint64(PIECE) <= end:
                top = max(top, piece_max(lane_exp, j))
                j += np.uint64(PIECE)
            for i in range(j, end):
                top = max(top, lane_exp[i])
            tops[b] = top
        return np.int64(n_blocks)
    # the rows (one a channel) folded in halves, the upper half onto the lower, down to
    # one: flat loops over whole rows vectorise but for one remainder each (a loop over a
    # row's positions, 36 of them in AlexNet's first layer, ran a ninth of them scalar)
    width = np.uint64(positions)
    rows = lanes // width
    half = rows // np.uint64(2)
    left = rows - half
    upper = left * width
    for i in range(half * width):
        work[i] = max(lane_exp[i], lane_exp[upper + i])
    for i in range(half * width, upper):  # the middle row of an odd number
        work[i] = lane_exp[i]
    while left > np.uint64(1):
        half = left // np.uint64(2)
        left -= half
        upper = left * width
        for i in range(half * width):
            work[i] = max(work[i], work[upper + i])
    for pos in range(width):
        tops[pos] = max(work[pos], word16(EXP_BIAS))
    return positions


@njit(distinct_arrays=True)
def _spread(tops, lanes, block, positions, block_exp):
    """Every lane's block exponent into ``block_exp[lane]`` (``lanes`` of them)."""
    prefer_wide_vectors()
    if positions == 1:
        width = np.uint64(block)
        for b in range((lanes + width - np.uint64(1)) // width):
            base, top = b * width, tops[b]
            end = base + min(width, lanes - base)
            j = base
            while j + np.uint64(PIECE) <= end:
                piece_fill(block_exp, j, top)
                j += np.uint64(PIECE)
            for i in range(j, end):
                block_exp[i] = top
        return
    # the first row, then the rows filled so far copied after them (doubling)
    width = np.uint64(positions)
    for pos in range(width):
        block_exp[pos] = tops[pos]
    filled = width
    while filled < lanes:
        count = min(filled, lanes - filled)
        for i in range(count):
            block_exp[filled + i] = block_exp[i]
        filled += count


@njit(distinct_arrays=True)
def _shifted_products(d_sign, d_sig, w_bits, m0, lanes, lane_exp, block_exp, shifted, packed):
    """Pass 2: ``P >> s`` (0 for shifts beyond ``NEAR_SHIFT``), exact but for the lanes
    that may carry (:func:`sim.num.fc_carries.may_carry`); packs what those and the lanes
    shifted by 20 to 28 need into one word each (:func:`_unpack`), the other lanes' words
    0 (a flagged lane's word is never 0).  Returns whether some are.  One loop over the
    lanes, each lane's block exponent spread to ``block_exp`` (a loop per block ran
    scalar)."""
    prefer_wide_vectors()
    some_mid = False
    for i in range(lanes):
        negative, sig, _, _ = fp16_weight_operand(word32(w_bits[m0 + i]))
        negative = and32(add32(negative, d_sign[m0 + i]), 1)
        product = signed_product(negative, sig, d_sig[m0 + i])
        shift = word32(sub16(block_exp[i], lane_exp[i]))
        near = shift <= NEAR_SHIFT
        shifted[i] = np.int32(and32(sar32(product, min(shift, word32(NEAR_SHIFT))),
                                    sub32(0, word32(near))))
        is_mid = may_carry(product, shift) & (shift < 32)
        packed[i] = and32(_pack(negative, sig, d_sig[m0 + i], shift), sub32(0, word32(is_mid)))
        some_mid |= is_mid
    return some_mid


@njit(distinct_arrays=True)
def _block_products(d_sign, d_sig, w_bits, m0, lanes, lane_exp, tops, packed, sums, first,
                    slots, ors):
    """Passes 2 and 3 of whole blocks of ``FC_BLOCK`` lanes in one loop a block (the width
    known: whole vectors), each block's exponent read once from ``tops``: its sum of
    ``P >> s`` to ``sums[first + b]``, the flagged lanes' packed words as
    :func:`_shifted_products`'s (their changes then go to the sums, :func:`_mid_lanes`).
    Returns whether some lanes are flagged.  A block's sum is kept lane by lane of a
    vector (``slots``: ``SLOT_LANES`` int32 words, in a register: ``FC_BLOCK /
    SLOT_LANES`` products each, at most ``SLOT_VECTORS``), then widened and added up once
    (kept as :func:`_block_sums`' halves, three more operations a vector); the flagged
    words or'd the same way (``ors``: a flag or'd into one bool was a scalar chain)."""
    prefer_wide_vectors()
    width = np.uint64(SLOT_LANES)
    vectors = np.uint64(FC_BLOCK // SLOT_LANES)
    for j in range(width):
        ors[j] = 0
    for b in range(lanes // np.uint64(FC_BLOCK)):
        top = tops[b]
        for j in range(width):
            slots[j] = 0
        for v in range(vectors):
            for j in range(width):
                i = (b * vectors + v) * width + j
                negative, sig, _, _ = fp16_weight_operand(word32(w_bits[m0 + i]))
                negative = and32(add32(negative, d_sign[m0 + i]), 1)
                product = signed_product(negative, sig, d_sig[m0 + i])
                shift = word32(sub16(top, lane_exp[i]))
                near = shift <= NEAR_SHIFT
                value = and32(sar32(product, min(shift, word32(NEAR_SHIFT))),
                              sub32(0, word32(near)))
                slots[j] = np.int32(add32(slots[j], value))
                is_mid = may_carry(product, shift) & (shift < 32)
                word = and32(_pack(negative, sig, d_sig[m0 + i], shift), sub32(0, word32(is_mid)))
                packed[i] = word
                ors[j] = or32(ors[j], word)
        sums[first + b] = half_piece_wide_sum(slots, 0)
    return half_piece_or(ors, 0) != 0


@njit(distinct_arrays=True)
def _float_products(d_float, d_sign, d_sig, w_bits, m0, lanes, lane_exp, tops, lows, highs,
                    flagged, sums, first):
    """:func:`_block_products` in float32 arithmetic (:func:`sim.num.fc_float.float_run`;
    no weight of the chunk has the exponent field 31): each block's sum of ``P >> s`` to
    ``sums[first + b]``; the flagged lanes' packed words' halves to ``lows`` and
    ``highs``, the lanes to ``flagged``.  Returns how many are flagged."""
    per_block = np.uint64(FC_BLOCK // FLOAT_LANES)
    n = 0
    for b in range(lanes // np.uint64(FC_BLOCK)):
        sums[first + b], n = float_run(w_bits, d_float, lane_exp, d_sign, d_sig, lows, highs,
                                       flagged, m0 + b * FC_BLOCK, b * FC_BLOCK, per_block,
                                       tops[b], n)
    return n


@njit(distinct_arrays=True)
def _float_mid_lanes(n, lows, highs, flagged, needs, need_at, sums, first):
    """:func:`_mid_lanes` of :func:`_float_products`' ``n`` flagged lanes: each one's change
    to its block's sum ``sums[first + lane // FC_BLOCK]``."""
    prefer_wide_vectors()
    n_set = halves_needs(n, lows, highs, needs, need_at)
    for t in range(n_set):
        at = need_at[t]
        send_change(needs[at], flagged_word(lows, highs, at), sums,
                    first + (np.uint64(flagged[at]) >> np.uint64(FC_BLOCK_BITS)))


@njit(inline="always")
def send_change(need, word, target, index):
    """A flagged lane's change (``need``: :data:`NEEDS_CARRY`, or its product from the
    whole tree, ``word`` its packed operands) to ``target[index]``: its block's sum or its
    own ``P >> s``."""
    if need == NEEDS_CARRY:
        target[index] -= 1
    else:  # its (P >> s) so far 0
        negative, wt, dat, shift = _unpack(word)
        target[index] += np.int32(booth_lane(negative, wt, dat, shift))


@njit(inline="always")
def flagged_word(lows, highs, at):
    """The packed word (:func:`_unpack`) of halves ``lows[at]``, ``highs[at]``."""
    return or32(word32(lows[at]), shl32(word32(highs[at]), 16))


@njit(distinct_arrays=True)
def _block_sums(shifted, lanes, block, positions, highs, lows, sums, first, n_blocks):
    """Pass 3: each block's sum of ``(P >> s) - c``.  Added in 32-bit words (16 lanes a
    vector, not 8), the high halves (``>> 16``, signed) apart from the low ones (``&
    0xFFFF``): each sum is exact for blocks of up to ``MAX_BLOCK_LANES`` lanes.  The
    ``n_blocks`` sums go to ``sums[first:]``; ``highs``, ``lows``: uint32 arrays of at
    least ``positions`` words."""
    prefer_wide_vectors()
    if positions == 1:
        width = np.uint64(block)
        for b in range(n_blocks):
            base = b * width
            high, low = word32(0), word32(0)
            for j in range(min(width, lanes - base)):
                value = word32(shifted[base + j])
                high = add32(high, sar32(value, 16))
                low = add32(low, and32(value, 0xFFFF))
            sums[first + b] = _from_halves(high, low)
        return
    width = np.uint64(positions)
    for pos in range(width):
        highs[pos] = 0
        lows[pos] = 0
    rows = lanes // width
    # four rows at a time: the sums' loads and stores were the most of the work
    for row in range(np.uint64(0), rows // np.uint64(4) * np.uint64(4), np.uint64(4)):
        r0, r1, r2, r3 = (row * width, (row + np.uint64(1)) * width,
                          (row + np.uint64(2)) * width, (row + np.uint64(3)) * width)
        for pos in range(width):
            v0, v1 = word32(shifted[r0 + pos]), word32(shifted[r1 + pos])
            v2, v3 = word32(shifted[r2 + pos]), word32(shifted[r3 + pos])
            high = add32(add32(sar32(v0, 16), sar32(v1, 16)), add32(sar32(v2, 16), sar32(v3, 16)))
            low = add32(add32(and32(v0, 0xFFFF), and32(v1, 0xFFFF)),
                        add32(and32(v2, 0xFFFF), and32(v3, 0xFFFF)))
            highs[pos] = add32(highs[pos], high)
            lows[pos] = add32(lows[pos], low)
    for row in range(rows // np.uint64(4) * np.uint64(4), rows):
        base = row * width
        for pos in range(width):
            value = word32(shifted[base + pos])
            highs[pos] = add32(highs[pos], sar32(value, 16))
            lows[pos] = add32(lows[pos], and32(value, 0xFFFF))
    for pos in range(width):
        sums[first + pos] = _from_halves(highs[pos], lows[pos])


@njit(inline="always")
def _from_halves(high, low):
    """A sum from its high halves' sum (``>> 16``) and its low halves' (int32 words)."""
    return (np.int64(np.int32(high)) << 16) + np.int64(np.int32(low))


@njit(inline="always")
def _unpack(word):
    """A flagged lane's (sign, weight and data significands, shift) from its packed word:
    the weight's significand (14 bits) at bit 0, the shift (8 to 28) as ``shift / 4`` at
    14-16, the data's significand at 17, the sign at 31 (:func:`_mid_lanes` reads each
    half of the word as a 16-bit word).  The shift's field is never 0: a flagged lane's
    word is not 0, its own flag (:func:`sim.num.compress.compress_nonzero`)."""
    return (shr32(word, 31), and32(word, 0x3FFF), and32(shr32(word, 17), 0x3FFF),
            shl32(and32(shr32(word, 14), 7), 2))


@njit(inline="always")
def _pack(negative, wt, dat, shift):
    """:func:`_unpack`'s word of a lane (``shift`` 8 to 28, a multiple of 4: ``shift << 12``
    is its field, no mask needed)."""
    return or32(or32(wt, shl32(shift, 12)), or32(shl32(dat, 17), shl32(negative, 31)))


@njit(distinct_arrays=True)
def _mid_lanes(packed, lanes, flagged, words, needs, need_at, lows, highs, target, first,
               lane_bits):
    """The lanes of pass 2's packed words that are not 0 (those that may carry, shifts of
    20 to 28), the words and their indices gathered with the compressing store
    (:func:`sim.num.compress.compress_nonzero`): shifts of 8 to 16 get their carries
    from the 16-bit tree, in one vectorised loop over their words; longer ones (rarer
    still) their products from the whole tree.  Each lane's change goes to
    ``target[first + (lane >> lane_bits)]``: its ``(P >> s)`` (``shifted``, ``lane_bits``
    0) or its block's sum (``sums``, ``lane_bits`` log2 of the block's lanes); a lane
    shifted beyond ``NEAR_SHIFT`` counted 0 there so far.  ``needs`` gets
    each flagged lane's change (``NEEDS_CARRY``, ``NEEDS_TREE`` or 0), ``need_at`` the
    places of those that have one."""
    prefer_wide_vectors()
    n_set = flagged_changes(packed, lanes, flagged, words, needs, need_at, lows, highs)
    for t in range(n_set):
        at = need_at[t]
        send_change(needs[at], words[at], target, first + (np.uint64(flagged[at]) >> lane_bits))


@njit(inline="always")
def flagged_changes(packed, lanes, flagged, words, needs, need_at, lows, highs):
    """:func:`_mid_lanes` up to the changes: returns how many lanes have one (their places
    among the flagged in ``need_at``, the lanes in ``flagged``, what each needs in
    ``needs``, their packed words in ``words``)."""
    lanes = np.int64(lanes)
    whole = (lanes + COMPRESS_LANES - 1) // COMPRESS_LANES * COMPRESS_LANES
    packed[lanes:whole] = 0
    n = 0
    for i in range(0, whole, COMPRESS_LANES):
        n = compress_nonzero(packed, i, words, flagged, n)
    # whole vectors (the words past n are 0, whose lanes are never stored back): a loop's
    # scalar remainder took as long as its vectors
    width = np.uint64(MID_VECTOR)
    rows = (np.uint64(n) + width - np.uint64(1)) // width
    words[n:rows * width] = 0
    # the words' halves apart first, so that the tree's loop has no word wider than 16
    # bits and runs 32 lanes a vector (LLVM's vectors take as many lanes as the widest
    # word's: 16 with the words read whole); the carry needs only the low 16 bits of the
    # product and of the tree's sum word (sum_word_carry)
    for j in range(rows * width):
        lows[j] = word16(words[j])
        highs[j] = word16(shr32(words[j], 16))
    return halves_needs(n, lows, highs, needs, need_at)


@njit(inline="always")
def halves_needs(n, lows, highs, needs, need_at):
    """:func:`flagged_changes` from the ``n`` flagged lanes' packed words' halves ``lows``,
    ``highs`` (room for ``MID_VECTOR`` more; 0s set after them up to whole vectors)."""
    width = np.uint64(MID_VECTOR)
    rows = (np.uint64(n) + width - np.uint64(1)) // width
    lows[n:rows * width] = 0
    highs[n:rows * width] = 0
    for row in range(rows):
        base = row * width
        for j in range(width):
            low, high = lows[base + j], highs[base + j]
            negative, wt, dat = shr16(high, 15), and16(low, 0x3FFF), and16(shr16(high, 1), 0x3FFF)
            code = or16(shr16(low, 14), shl16(and16(high, 1), 2))  # _unpack's shift / 4
            near = code <= NEAR_SHIFT // 4
            # the low ``shift`` bits (shifts 8, 12, 16)
            bits = shr16(0xFFFF, sub16(16, shl16(min(code, word16(NEAR_SHIFT // 4)), 2)))
            product = sub16(xor16(mul16(wt, dat), sub16(0, negative)), sub16(0, negative))
            carry = word8(near & (and16(booth_sum_low16(negative, wt, dat), bits)
                                  > and16(product, bits)))
            needs[base + j] = or16(carry, and16(sub16(0, word16(code > NEAR_SHIFT // 4)),
                                                NEEDS_TREE))
    # the lanes to change (a carry of 1, or shifted beyond NEAR_SHIFT) by their places
    # among the flagged, gathered as those were: subtracting every flagged lane's
    # carry, 0 or 1, in a scalar loop took longer than finding those of 1 (the kernel
    # 4-5% faster, 4096 and 9216 lanes, normal data)
    needs[n:rows * width] = 0
    n_set = 0
    for j in range(0, n, COMPRESS_LANES):
        n_set = compress_flagged(needs, j, need_at, n_set)
    return n_set
