"""The CMAC blocks of a fully connected fp16 layer over its live lanes only.

A lane whose data value is +0 or -0 adds nothing to any kernel's block: its lane
exponent (biased, at most ``4 * ZERO_LANE_EXP + 28`` above the bias) lies more than 32
bits below every block exponent (at least the bias, :mod:`sim.num.mac_fc`), so it is
shifted out whole, and it never raises the block's maximum.  The data are the same for
every kernel, so a layer's live lanes (those whose data are not zero in at least one of
its output pixels) are known once; ReLU'd inputs are a third to nine tenths zeros.

:func:`live_layout` packs each block's live lanes into whole ``VECTOR``-lane vectors,
the last filled up with dead lanes (weight 0: lane exponent 0, product 0; never flagged),
so the blocks become runs of whole vectors of various counts (none for a block without
a live lane: exponent 0, sum 0, as the full block's).  :func:`fp16_fc_live_blocks` runs
:mod:`sim.num.mac_fc`'s passes over them, the flagged lanes' changes sent to their
blocks through each vector's block (pass 2 in float32 arithmetic where the chunk's weights
allow it, as there: :mod:`sim.num.fc_float`).  A NaN weight in a dead lane still makes its block
NaN: the caller takes NaNs from the full weights (:func:`sim.num.compress.compress_words`
counts them on the way), not from the live lanes.
"""

from __future__ import annotations

import numpy as np

from sim.jit import njit, prefer_wide_vectors
from sim.num.borrowed import borrowed
from sim.num.compress import WORD_LANES
from sim.num.fc_carries import may_carry
from sim.num.fc_float import float_run
from sim.num.fc_pieces import HALF_PIECE, half_piece_or, half_piece_wide_sum, vectors_max
from sim.num.mac import ZERO_LANE_EXP, fp16_weight_operand, signed_product
from sim.num.mac_fc import (
    CHUNK,
    EXP31_WEIGHT,
    EXP_BIAS,
    MAX_BLOCK_LANES,
    NEAR_SHIFT,
    SLOT_VECTORS,
    _lane_exponents,
    _pack,
    fc_scratch,
    flagged_changes,
    flagged_word,
    halves_needs,
    send_change,
)
from sim.num.narrow import sub16
from sim.num.word32 import add32, and32, or32, sar32, sub32, word32

#: Lanes a block's live lanes are padded to a multiple of: a vector of 32-bit words (the
#: products' loop runs in whole ones, no remainder loop).
VECTOR = HALF_PIECE
VECTOR_BITS = VECTOR.bit_length() - 1
#: Layers whose padded live lanes are more than this fraction of all lanes take the
#: full blocks (:func:`sim.num.mac_fc.fp16_fc_blocks`): the gather and the shorter
#: passes did not pay for few zeros.
LIVE_AT_MOST = 0.8


def live_layout(d_exp4, block: int):
    """The live lanes of a layer's data ``d_exp4`` (pixels, lanes) (four times the lane
    exponents, :data:`ZERO_LANE_EXP` for a zero; lanes in CACC's block order, ``block`` a
    block, a multiple of ``WORD_LANES``), or None where they would not pay
    (:data:`LIVE_AT_MOST`).  Else (lanes: each live lane's place among all, -1 for a
    padding lane; the first vector of each block and the end (n_blocks + 1,) int64; each
    vector's block (int32); each ``WORD_LANES``-lane half's mask of live lanes (uint32);
    the live lanes before each half in its block (int64))."""
    d_exp4 = np.atleast_2d(np.asarray(d_exp4))
    return lanes_layout((d_exp4 != 4 * ZERO_LANE_EXP).any(axis=0), block)


def lanes_layout(live, block: int):
    """:func:`live_layout` of the lanes ``live`` (lanes,) marks (bool: not zero in some
    pixel)."""
    if not layout_fits(live.size, block):
        return None
    pays, layout = _paying_layout(live.reshape(-1, block), LIVE_AT_MOST * live.size)
    return layout if pays else None


def layout_fits(lanes: int, block: int) -> bool:
    """Whether :func:`live_layout` may take ``lanes`` lanes in blocks of ``block``."""
    return not (block % WORD_LANES or lanes % block or block > MAX_BLOCK_LANES)


@njit
def live_operands(data, live, block, fits, every_lane):
    """:func:`lanes_layout` of the lanes ``live`` and :func:`live_data` of ``data`` over it,
    in one call: (whether there is a layout, the layout, the data).  Where the live lanes
    do not pay (or ``fits`` is False: :func:`layout_fits`), ``every_lane`` says whether the
    layout is :func:`whole_layout`'s instead; else there is none (the data then empty)."""
    n_blocks = live.size // block
    pays, layout = False, _layout(live[:0].reshape((0, block)), np.zeros(1, np.int64))
    if fits:
        pays, layout = _paying_layout(live.reshape((n_blocks, block)),
                                      LIVE_AT_MOST * live.size)
    if not pays and every_lane:
        pays, layout = True, whole_layout(n_blocks, block)
    lanes = layout[0] if pays else layout[0][:0]
    return pays, layout, _at_lanes_all(data[0], data[1], data[2], data[3], lanes)


@njit
def _paying_layout(live, at_most):
    """(whether the padded live lanes of ``live`` (blocks, lanes) are at most ``at_most``,
    their :func:`_layout` (empty if not)), in one call."""
    starts = _block_vectors(live)
    if starts[-1] * VECTOR > at_most:
        return False, _layout(live[:0], starts[:1])
    return True, _layout(live, starts)


@njit
def _block_vectors(live):
    """The first vector of each block of ``live`` (blocks, lanes) and the end."""
    starts = np.zeros(live.shape[0] + 1, np.int64)
    for b in range(live.shape[0]):
        starts[b + 1] = starts[b] + (live[b].sum() + VECTOR - 1) // VECTOR
    return starts


@njit
def _layout(live, starts):
    """:func:`live_layout` of the blocks' live lanes ``live`` (blocks, lanes) (in numpy, a
    loop over the blocks took 0.4 ms of fc6's 18, whole arrays 0.07)."""
    n_blocks, block = live.shape
    halves = block // WORD_LANES
    lanes = np.full(starts[-1] * VECTOR, -1, np.int64)
    vector_block = np.zeros(starts[-1], np.int32)
    masks = np.zeros(n_blocks * halves, np.uint32)
    before = np.zeros(n_blocks * halves, np.int64)
    for b in range(n_blocks):
        vector_block[starts[b]:starts[b + 1]] = b
        at = starts[b] * VECTOR
        for h in range(halves):
            before[b * halves + h] = at - starts[b] * VECTOR
            for j in range(WORD_LANES):
                lane = h * WORD_LANES + j
                if live[b, lane]:
                    masks[b * halves + h] |= np.uint32(1) << np.uint32(j)
                    lanes[at] = b * block + lane
                    at += 1
    return lanes, starts, vector_block, masks, before


@njit
def whole_layout(n_blocks, block):
    """:func:`live_layout`'s tuple with every lane live (``block`` a multiple of
    ``WORD_LANES``): the live lanes' gather as a plain copy of whole runs that counts
    their NaNs and Infs in the same pass."""
    halves, vectors = block // WORD_LANES, block // VECTOR
    lanes = np.arange(n_blocks * block)
    starts = np.arange(n_blocks + 1) * vectors
    vector_block = np.zeros(n_blocks * vectors, np.int32)
    masks = np.full(n_blocks * halves, 0xFFFFFFFF, np.uint32)
    before = np.zeros(n_blocks * halves, np.int64)
    for b in range(n_blocks):
        vector_block[b * vectors:(b + 1) * vectors] = b
        for h in range(halves):
            before[b * halves + h] = h * WORD_LANES
    return lanes, starts, vector_block, masks, before


def live_data(data, lanes):
    """:func:`sim.num.mac_fc.fc_data` arrays (pixels, lanes) at the live ``lanes`` only
    (:func:`live_layout`), padding lanes 0 (their weight 0 makes them dead)."""
    return _at_lanes_all(*(np.ascontiguousarray(array) for array in data), lanes)


@njit
def _at_lanes_all(d_exp, d_sign, d_sig, d_float, lanes):
    """:func:`_at_lanes` of the four arrays in one call (four calls from Python cost a
    fully connected layer 20-25 us with the caches cold)."""
    return (_at_lanes(d_exp, lanes), _at_lanes(d_sign, lanes), _at_lanes(d_sig, lanes),
            _at_lanes(d_float, lanes))


@njit
def _at_lanes(array, lanes):
    """``array[:, lanes]``, 0 where a lane is -1 (numpy's fancy indexing took 4 times as
    long)."""
    out = np.zeros((array.shape[0], lanes.size), array.dtype)
    for p in range(array.shape[0]):
        for i in range(lanes.size):
            if lanes[i] >= 0:
                out[p, i] = array[p, lanes[i]]
    return out


@njit
def fc_live_scratch(layout):
    """Scratch for :func:`fp16_fc_live_blocks` of layers of ``layout``."""
    lanes, starts = layout[0], layout[1]
    widest = 1
    for b in range(starts.size - 1):  # a chunk is one block at least
        widest = max(widest, starts[b + 1] - starts[b])
    return fc_scratch(max(min(lanes.size, CHUNK), widest * VECTOR, starts.size))


@njit(inline="always")
def fp16_fc_live_blocks(data, w_live, layout, scratch, block_exp4, sums):
    """:func:`sim.num.mac_fc.fp16_fc_blocks` (one kernel position, whole blocks) of a
    kernel's live lanes ``w_live`` (gathered as :func:`live_layout` says, its dead lanes
    0), ``data`` the live lanes' (:func:`live_data`): each block's exponent (times four)
    into ``block_exp4`` and its sum into ``sums``.  NaN weights are the caller's (they may
    sit in dead lanes)."""
    d_exp, d_sign, d_sig, d_float = data
    lane_exp, tops, _, compact, _, packed, halves, halves16, flagged16 = scratch
    flagged, words, needs, need_at = compact
    # the float loop loads whole vectors: contiguous arrays (those are the same arrays; any
    # other, copied)
    d_sign, d_sig = np.ascontiguousarray(d_sign), np.ascontiguousarray(d_sig)
    d_float, w_live = np.ascontiguousarray(d_float), np.ascontiguousarray(w_live)
    _live_blocks(borrowed(d_exp), borrowed(d_sign), borrowed(d_sig), borrowed(d_float),
                 borrowed(w_live), borrowed(layout[1]), borrowed(layout[2]), borrowed(lane_exp),
                 borrowed(tops), borrowed(packed), borrowed(flagged),
                 borrowed(words), borrowed(needs), borrowed(need_at), borrowed(halves16[0]),
                 borrowed(halves16[1]), borrowed(halves[0].view(np.int32)),
                 borrowed(halves[2]), borrowed(flagged16), borrowed(block_exp4),
                 borrowed(sums))


@njit
def _live_blocks(d_exp, d_sign, d_sig, d_float, w_live, starts, vector_block, lane_exp, tops,
                 packed, flagged, words, needs, need_at, low16s, high16s, slots, ors,
                 flagged16, block_exp4, sums):
    """:func:`fp16_fc_live_blocks` of the arrays one by one: a chunk whose weights have no
    exponent field of 31 in float32 arithmetic (:mod:`sim.num.fc_float`), else in the
    integer loop."""
    n_blocks = starts.size - 1
    b0 = 0
    while b0 < n_blocks:  # chunks of whole blocks, up to CHUNK lanes (one block at least)
        b1 = b0 + 1
        while b1 < n_blocks and (starts[b1 + 1] - starts[b0]) * VECTOR <= CHUNK:
            b1 += 1
        v0 = starts[b0]
        count = np.uint64((starts[b1] - v0) * VECTOR)
        specials = _lane_exponents(d_exp, w_live, np.uint64(v0 * VECTOR), count, lane_exp)
        for b in range(b0, b1):
            tops[b] = vectors_max(lane_exp, starts[b] - v0, starts[b + 1] - v0, EXP_BIAS)
            block_exp4[b] = np.int32(tops[b]) - EXP_BIAS
        if not specials & EXP31_WEIGHT:
            n_flagged = _float_live_products(d_float, d_sign, d_sig, w_live, starts, b0, b1,
                                             lane_exp, tops, low16s, high16s, flagged16, sums)
            _float_live_mid_lanes(n_flagged, low16s, high16s, flagged16, needs, need_at,
                                  vector_block, v0, sums)
        elif _live_products(d_sign, d_sig, w_live, starts, b0, b1, lane_exp, tops, packed, sums,
                          slots, ors):
            _live_mid_lanes(packed, count, flagged, words, needs, need_at, low16s, high16s,
                            vector_block, v0, sums)
        b0 = b1


@njit(distinct_arrays=True)
def _float_live_products(d_float, d_sign, d_sig, w_live, starts, b0, b1, lane_exp, tops, lows,
                         highs, flagged, sums):
    """:func:`_live_products` in float32 arithmetic (:func:`sim.num.fc_float.float_run`, up
    to ``SLOT_VECTORS`` vectors a call): each block's sum of ``P >> s``; the flagged lanes'
    packed words' halves to ``lows`` and ``highs``, their lanes (from the chunk's first,
    ``starts[b0] * VECTOR``) to ``flagged``.  Returns how many are flagged."""
    first = np.uint64(starts[b0]) * np.uint64(VECTOR)
    n = 0
    for b in range(b0, b1):
        top = tops[b]
        total = np.int64(0)
        v, end = np.uint64(starts[b]), np.uint64(starts[b + 1])
        while v < end:
            stop = min(v + np.uint64(SLOT_VECTORS), end)
            at = v * np.uint64(VECTOR)
            run_sum, n = float_run(w_live, d_float, lane_exp, d_sign, d_sig, lows, highs,
                                   flagged, at, at - first, stop - v, top, n)
            total += run_sum
            v = stop
        sums[b] = total
    return n


@njit(distinct_arrays=True)
def _float_live_mid_lanes(n, lows, highs, flagged, needs, need_at, vector_block, v0, sums):
    """:func:`_live_mid_lanes` of :func:`_float_live_products`' ``n`` flagged lanes."""
    prefer_wide_vectors()
    n_set = halves_needs(n, lows, highs, needs, need_at)
    for t in range(n_set):
        at = need_at[t]
        send_change(needs[at], flagged_word(lows, highs, at), sums,
                    _block_of(flagged[at], vector_block, v0))


@njit(distinct_arrays=True)
def _live_mid_lanes(packed, lanes, flagged, words, needs, need_at, lows, highs, vector_block,
                    v0, sums):
    """:func:`sim.num.mac_fc._mid_lanes` of the live lanes: each flagged lane's change to
    its vector's block's sum."""
    prefer_wide_vectors()
    n_set = flagged_changes(packed, lanes, flagged, words, needs, need_at, lows, highs)
    for t in range(n_set):
        at = need_at[t]
        send_change(needs[at], words[at], sums, _block_of(flagged[at], vector_block, v0))


@njit(inline="always")
def _block_of(lane, vector_block, v0):
    """The block of a flagged ``lane`` (counted from the chunk's first, vector ``v0``)."""
    return vector_block[np.uint64(v0) + (np.uint64(lane) >> np.uint64(VECTOR_BITS))]


@njit(distinct_arrays=True)
def _live_products(d_sign, d_sig, w_live, starts, b0, b1, lane_exp, tops, packed, sums, slots,
                   ors):
    """:func:`sim.num.mac_fc._block_products` of blocks of whole ``VECTOR``-lane vectors
    (``starts``): each block's sum of ``P >> s``, the flagged lanes' packed words.
    Returns whether some lanes are flagged.  The sums are kept lane by lane (``slots``:
    ``VECTOR`` int32 words, kept in a register) over up to ``SLOT_VECTORS`` vectors, then
    widened and added up (added up every vector, they took a fifth of the loop; kept as
    :func:`sim.num.mac_fc._block_sums`' halves, three more operations a vector).  Whether
    some lane is flagged is kept the same way (``ors``: ``VECTOR`` words, each lane's
    flagged words or'd; a flag or'd into one bool was a scalar chain through every
    vector, a word or'd into one word a reduction every vector)."""
    prefer_wide_vectors()
    width = np.uint64(VECTOR)
    for j in range(width):
        ors[j] = 0
    first = np.uint64(starts[b0]) * width  # the chunk's first lane: the scratch's 0
    for b in range(b0, b1):
        top = tops[b]
        total = np.int64(0)
        v, end = np.uint64(starts[b]), np.uint64(starts[b + 1])
        while v < end:
            stop = min(v + np.uint64(SLOT_VECTORS), end)
            for j in range(width):
                slots[j] = 0
            for vector in range(v, stop):
                for j in range(width):
                    i = vector * width + j
                    negative, sig, _, _ = fp16_weight_operand(word32(w_live[i]))
                    negative = and32(add32(negative, d_sign[i]), 1)
                    product = signed_product(negative, sig, d_sig[i])
                    shift = word32(sub16(top, lane_exp[i - first]))
                    near = shift <= NEAR_SHIFT
                    value = and32(sar32(product, min(shift, word32(NEAR_SHIFT))),
                                  sub32(0, word32(near)))
                    slots[j] = np.int32(add32(slots[j], value))
                    is_mid = may_carry(product, shift) & (shift < 32)
                    word = and32(_pack(negative, sig, d_sig[i], shift), sub32(0, word32(is_mid)))
                    packed[i - first] = word
                    ors[j] = or32(ors[j], word)
            total += half_piece_wide_sum(slots, 0)
            v = stop
        sums[b] = total
    return half_piece_or(ors, 0) != 0
