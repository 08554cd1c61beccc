"""CSC + CMAC + CACC for fp16 direct convolution, in the C-model's order of operations.

Order (CSC): for each output pixel and kernel, the partial sums arrive one
*block* at a time, channel groups of ``mac_atomic_c`` channels outermost and
kernel positions (r, s) row-major inside; each block is one atomic MAC
operation over up to ``mac_atomic_c`` channels of one kernel position.  Lanes
outside the input read the CSC pad value (so direct convolution sees Inf as
the ordinary number +/-65536).

The arithmetic of a block (NaN priority, Booth products aligned to the block
exponent) and of CACC's 48-bit accumulator is :mod:`sim.num.mac`.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import numpy as np

from ..dma.align import align_up, ceil_div
from ..dma.weights import DcStream
from ..jit import cores, njit, prefer_wide_vectors, run_split
from ..num.compress import WORD_LANES, compress_words, nans_and_infs
from ..num.fc_carry_tables import carry_bounds
from ..num.fc_columns import BLOCK as COLUMN_BLOCK
from ..num.fc_columns import (
    KERNELS,
    cacc_block,
    column_work,
    columns_group,
    placed_columns,
    with_carry_rows,
    word_permutes,
)
from ..num.fc_live import VECTOR as LIVE_VECTOR
from ..num.fc_live import (
    fc_live_scratch,
    fp16_fc_live_blocks,
    layout_fits,
    live_operands,
    whole_layout,
)
from ..num.fc_pieces import prefetch
from ..num.mac import (
    MAC_BITS,
    MAC_NAN_EXP,
    ZERO_LANE_EXP,
    block_sum,
    cacc_accumulate,
    cacc_accumulate_finite,
    cacc_to_fp32,
    ceil_div_in_kernels,
    data_operands_bytes,
    first_nan_per_block,
    first_nan_strided,
    fp16_data_operands,
    fp16_padded_tile_dots,
    fp16_weight_rows,
    mac_nan_block,
    tile_scratch_layout,
    weight_rows_bytes,
)
from ..num.mac_fc import CHUNK, fc_data_lane, fc_scratch, fp16_fc_blocks, pixel_data
from ..num.rounding import sign_extend
from ..num.specials import (
    FP16_INF,
    count_nans_and_infs,
    fp16_nans_and_infs,
    is_nan_scalar,
    nan_mask,
)
from ..num.vector_fp import FP16
from .layer import ConvLayer

#: Output pixels computed together (at most): each weight meets this many data vectors
#: in a row (the pixels are the vectorised loop), and the data's Booth rows are reused
#: by every kernel.  Larger tiles spread a tile's fixed costs (the CSC's gather, the
#: data's tables, each lane and kernel's loop set-up) over more pixels: tiles of 12-14
#: vectors took 8-16% less processor time than tiles of 6-7 in ResNet's 56 x 56 and
#: 28 x 28 layers.
TILE = 256
#: Pixels in a vector of the widest processors (512 bits of 32-bit words): a tile's pixel
#: loops run in whole vectors, so tiles start at multiples of it and a tile of fewer
#: pixels is padded with zero data up to a multiple (a loop's last, partial vector runs
#: in narrow vectors and element by element: in the 28x28x64 benchmark layer, tiles of
#: 98 pixels took about 30% longer per pixel than tiles of 112).
VECTOR = 16
#: Pixels a step of the tiles' vectorised loops takes: they ran as if two vectors were
#: one iteration (LLVM interleaves), an odd last vector taking about as long as two
#: (one thread, 128 lanes and kernels: tiles of 13 vectors took 12% longer than tiles of
#: 14, of 3 vectors 20% longer than of 4).  So tiles are whole steps, the layer's last
#: filled up with zero data: 14 x 14 and 28 x 28 layers took 8-12% less processor time.
STEP = 2 * VECTOR
#: Fewer pixels than this do not fill the vectors: a layer that small (a fully
#: connected one has a single pixel) takes the products pixel by pixel, the loops over
#: a block's lanes (:func:`_conv_fp16_kernels`, the threads splitting the kernels).
MIN_TILE = 16
#: A thread of a layer that small takes at least this many kernels.
MIN_KERNELS = 64
#: Tiles of fewer vectors than this are not worth cutting a layer's pixels into: the loop
#: over a tile's pixels for one lane and kernel pays its set-up over a few vectors only
#: (in ResNet-50's 7x7 layers, tiles of two vectors ran at two thirds of the rate of
#: larger ones), so a layer of fewer tiles than threads gives each thread a share of its
#: kernels instead (:func:`tile_plan`), at least this many.
SPLIT_PIXELS_FROM = 4
MIN_GROUP_KERNELS = 8


@njit
def _block_width(lanes):
    """The most lanes of a block (``lanes[g]:lanes[g + 1]``)."""
    width = 0
    for g in range(lanes.size - 1):
        width = max(width, lanes[g + 1] - lanes[g])
    return width


@njit(inline="always")
def _input_at(geometry, q, r, s):
    """The input element output pixel ``q`` (counted over batches, lines and columns)
    reads at kernel position (r, s): (batch, line, column), outside the input where the
    padding is."""
    out_h, out_w, stride_y, stride_x, dil_y, dil_x, top, left, _, _ = geometry
    b, oy, ox = q // (out_h * out_w), (q // out_w) % out_h, q % out_w
    return b, oy * stride_y + r * dil_y - top, ox * stride_x + s * dil_x - left


@njit(inline="always")
def _csc_block(x, x_nan, pad, pad_nan, geometry, start, count, g, r, s, c0, c1,
               d_sign, d_sig, d_exp4, d_nan):
    """The CSC: the data of block ``g`` at kernel position (r, s) for output pixels
    ``start:start + count`` (pixel ``p`` in column ``p``; lanes outside the input read the
    pad value), their first NaNs into ``d_nan``; returns whether one has a NaN."""
    x_sign, x_sig, x_exp4 = x
    p_sign, p_sig, p_exp4 = pad
    _, in_h, in_w, _ = x_sig.shape
    nan_here = False
    for p in range(count):
        b, iy, ix = _input_at(geometry, start + p, r, s)
        if 0 <= iy < in_h and 0 <= ix < in_w:
            for j in range(c1 - c0):
                d_sign[j, p] = x_sign[b, iy, ix, c0 + j]
                d_sig[j, p] = x_sig[b, iy, ix, c0 + j]
                d_exp4[j, p] = x_exp4[b, iy, ix, c0 + j]
            d_nan[p] = x_nan[b, iy, ix, g]
        else:  # outside the input: the CSC's pad value in every lane
            for j in range(c1 - c0):
                d_sign[j, p] = p_sign[j]
                d_sig[j, p] = p_sig[j]
                d_exp4[j, p] = p_exp4[j]
            d_nan[p] = pad_nan
        nan_here |= d_nan[p] >= 0
    return nan_here


@njit(inline="always")
def _cacc_nan_block(acc_e, acc_m, w_nan, d_nan, block_exp4, high, low):
    """CACC of a block some of whose kernels or data hold a NaN (a NaN block makes its
    accumulator NaN, weights scanned before data), one accumulator."""
    nan_bits = w_nan if w_nan >= 0 else d_nan
    if nan_bits >= 0:
        return cacc_accumulate(acc_e, acc_m, MAC_NAN_EXP, mac_nan_block(nan_bits))
    total = block_sum(high, low)
    if total == 0:
        return acc_e, acc_m
    return cacc_accumulate(acc_e, acc_m, block_exp4, sign_extend(total, MAC_BITS))


@njit(inline="always")
def _row_stride(n_p):
    """The words between the rows of a tile's data columns (:func:`_conv_fp16_tiles`) of
    ``n_p`` pixels (whole vectors): an odd number of vectors (cache lines), so that the
    rows of a column fall in every set of the cache.  An even number shares them out: the
    rows of tiles of 128 pixels, 512 bytes apart, fell in an eighth of the L1's sets, and
    the CSC's gather of a pixel's lanes (a line of each row) ran 2.5-3.5 times as long a
    pixel as in tiles of 96 or 112."""
    vectors = n_p // VECTOR
    return (vectors | 1) * VECTOR


@njit
def _conv_fp16_tiles(x, x_nan, w, w_nan, w_nan_any, pad, pad_nan, lanes, geometry, out, tiles,
                     span, kernels, buffers):
    """CACC's fp32 bit patterns into ``out`` (N, K, H', W'), tiles ``span[0]:span[1]`` of the
    layer's ``tiles`` (:func:`tile_plan`), kernels ``kernels[0]:kernels[1]``.

    The output pixels, counted over batches, lines and columns, are cut into ``tiles``
    tiles of whole steps (``STEP`` pixels), as equal as steps allow: tile ``t`` is
    steps ``units * t // tiles`` up to ``units * (t + 1) // tiles`` of the ``units``;
    the last step of the layer may be partial, and is filled up with zero data.

    ``x`` = (sign, significand, four times the exponent) arrays (N, H, W, C') from
    :func:`fp16_data_operands` and ``w`` = (rows (R, S, C', K, ROW_BYTES) from
    :func:`fp16_weight_rows`, four times the exponents (R, S, C', K)), of the channels
    that matter: block ``g`` is channels ``lanes[g]:lanes[g + 1]``.  ``x_nan`` (N,
    H, W, groups) and ``w_nan`` (K, R, S, groups) hold the first NaN of each
    block, -1 if none, and ``w_nan_any`` (R, S, groups) whether some kernel's
    block has one; ``pad`` the operands of the pad value (one block of lanes)
    and ``pad_nan`` its NaN, -1 if none; ``geometry`` (H', W', strides, dilations,
    top and left padding, R, S); ``buffers`` the work arrays (:func:`_tile_buffers`).
    """
    prefer_wide_vectors()
    w_rows, w_exp4 = w
    n_r, n_s, _, n_k = w_exp4.shape
    k0, k1 = kernels
    groups = w_nan.shape[3]
    out_h, out_w = out.shape[2], out.shape[3]
    width = _block_width(lanes)
    scratch, (sign_buf, sig_buf, exp_buf, d_nan, block_exp4, high, low, acc_e, acc_m) = buffers
    total = out.shape[0] * out_h * out_w
    units = ceil_div_in_kernels(total, STEP)
    for tile in range(span[0], span[1]):
        start = STEP * (units * tile // tiles)
        count = min(total, STEP * (units * (tile + 1) // tiles)) - start
        n_p = ceil_div_in_kernels(count, STEP) * STEP
        # the data of the tile's pixels, a column each (contiguous rows: vectors, the
        # first n_p words of rows _row_stride apart); the columns from the last pixel to
        # n_p hold zeros (their products are 0, never read)
        stride = _row_stride(n_p)
        d_sign = sign_buf[:width * stride].reshape((width, stride))
        d_sig = sig_buf[:width * stride].reshape((width, stride))
        d_exp4 = exp_buf[:width * stride].reshape((width, stride))
        d_sign[:, count:n_p] = 0
        d_sig[:, count:n_p] = 0
        d_exp4[:, count:n_p] = 4 * ZERO_LANE_EXP
        d_nan[count:n_p] = -1
        acc_e[k0:k1, :n_p] = 0  # the tile's columns only: many kernels' whole rows are megabytes
        acc_m[k0:k1, :n_p] = 0
        nan_seen = False
        for g in range(groups):
            c0, c1 = lanes[g], lanes[g + 1]
            n_l = c1 - c0
            for r in range(n_r):
                for s in range(n_s):
                    nan_here = _csc_block(x, x_nan, pad, pad_nan, geometry, start, count, g, r,
                                          s, c0, c1, d_sign, d_sig, d_exp4, d_nan)
                    nan_here |= w_nan_any[r, s, g]
                    fp16_padded_tile_dots(d_sign[:n_l], d_sig[:n_l], d_exp4[:n_l], n_p,
                                          w_rows[r, s, c0:c1], w_exp4[r, s, c0:c1], scratch,
                                          block_exp4, high, low, kernels)
                    if not nan_here and not nan_seen:
                        for k in range(k0, k1):  # no NaN anywhere: vectorised over pixels
                            for p in range(n_p):
                                acc_e[k, p], acc_m[k, p] = cacc_accumulate_finite(
                                    acc_e[k, p], acc_m[k, p], block_exp4[k, p],
                                    sign_extend(block_sum(high[k, p], low[k, p]), MAC_BITS))
                        continue
                    nan_seen = True  # a NaN block makes its kernels' accumulators NaN
                    for k in range(k0, k1):
                        for p in range(count):
                            acc_e[k, p], acc_m[k, p] = _cacc_nan_block(
                                acc_e[k, p], acc_m[k, p], w_nan[k, r, s, g], d_nan[p],
                                block_exp4[k, p], high[k, p], low[k, p])
        for p in range(count):
            q = start + p
            b, oy, ox = q // (out_h * out_w), (q // out_w) % out_h, q % out_w
            for k in range(k0, k1):
                out[b, k, oy, ox] = cacc_to_fp32(acc_e[k, p], acc_m[k, p])


#: The weights a small layer's gathers (:func:`_gather_group`, :func:`_gather_live_group`)
#: ask the caches for ahead of the run they copy, a line (``STREAM_LINE`` weights) at a
#: time: the stream is read once, from memory, in order, and the processor's own
#: prefetching kept the gathers waiting for it (fc6's 9216-lane kernels' live lanes,
#: one thread: 0.110 ns a MAC without, 0.064 at 4 KB ahead, 0.042-0.044 at 16 KB,
#: 0.050 at 32 KB).
STREAM_AHEAD = 8192
STREAM_LINE = 32
#: Kernels whose blocks a thread of a small layer computes before it accumulates them:
#: CACC's steps for one kernel form a chain (each waits for the last), the kernels' chains
#: are independent and run side by side.
CACC_KERNELS = 16


@njit
def _conv_fp16_kernels(data, d_nan, weights, lanes, n_pos, out, kernels):
    """:func:`_conv_fp16_tiles` of a layer of fewer than ``MIN_TILE`` output pixels, every
    pixel for kernels ``kernels[0]:kernels[1]``: the weights ``weights`` (K, C * R * S) as
    the layer stores them, fp16 bits (each meets at most a few data values: nothing is
    computed ahead, and nothing moves them), one kernel at a time
    (:func:`sim.num.mac_fc.fp16_fc_blocks`), ``CACC_KERNELS`` kernels' blocks accumulated
    together.  ``data`` (:func:`sim.num.mac_fc.fc_data` arrays: :func:`_csc_fc_data`'s)
    and ``d_nan`` are the CSC's, every pixel's in a row in the weights' order;
    ``lanes`` are all the channels' blocks."""
    block = lanes[1] - lanes[0]
    work = _small_layer_work((lanes.size - 1) * n_pos, fc_scratch(max(block * n_pos, CHUNK)))
    data_nan = _pixels_with_nans(d_nan)
    for k0 in range(kernels[0], kernels[1], CACC_KERNELS):
        k1 = min(k0 + CACC_KERNELS, kernels[1])
        for p in range(data_nan.size):
            _pixel_of_kernels(p, data, d_nan, data_nan, weights, 0, k0, k1, block, n_pos, lanes,
                              work, out)


@njit(inline="always")
def _small_layer_work(n_blocks, scratch):
    """The work arrays of :func:`_pixel_of_kernels` for layers of ``n_blocks`` blocks a
    kernel: (the kernel's ``scratch``, ``CACC_KERNELS`` kernels' block exponents and
    sums, whether each has a NaN weight, their accumulators, and the blocks block-major
    for :func:`_cacc_kernels`)."""
    return (scratch, np.zeros((CACC_KERNELS, n_blocks), np.int32),
            np.zeros((CACC_KERNELS, n_blocks), np.int64), np.zeros(CACC_KERNELS, np.bool_),
            np.zeros(CACC_KERNELS, np.int64), np.zeros(CACC_KERNELS, np.int64),
            (np.zeros((n_blocks, CACC_KERNELS), np.int32),
             np.zeros((n_blocks, CACC_KERNELS), np.int64)))


@njit(inline="always")
def _pixels_with_nans(d_nan):
    """Whether each pixel's data has a NaN block (``d_nan``: first NaNs, -1 for none)."""
    data_nan = np.zeros(d_nan.shape[0], np.bool_)
    for p in range(d_nan.shape[0]):
        data_nan[p] = (d_nan[p] >= 0).any()
    return data_nan


@njit(inline="always")
def _pixel_of_kernels(p, data, d_nan, data_nan, weights, first, k0, k1, block, positions,
                      lanes, work, out):
    """Pixel ``p``'s outputs of kernels ``k0:k1`` (at most ``CACC_KERNELS``), kernel ``k``'s
    weights ``weights[k - first]``: each kernel's blocks (``positions`` kernel positions a
    channel group, :func:`sim.num.mac_fc.fp16_fc_blocks`), CACC of them together, then
    the kernels with a NaN weight, or data, block by block."""
    scratch, block_exp4, sums, w_nan, acc_e, acc_m, by_block = work
    for k in range(k0, k1):
        w_nan[k - k0] = fp16_fc_blocks(pixel_data(data, p), weights[k - first], block,
                                       positions, scratch, block_exp4[k - k0], sums[k - k0])
    _pixel_out(p, d_nan, data_nan, weights, first, k0, k1, positions, lanes, work, out)


@njit(inline="always")
def _pixel_out(p, d_nan, data_nan, weights, first, k0, k1, positions, lanes, work, out):
    """:func:`_pixel_of_kernels` once the kernels' blocks are in ``work``: CACC of them
    together, then the kernels with a NaN weight (``weights[k - first]`` whole), or data,
    block by block."""
    _, block_exp4, sums, w_nan, acc_e, acc_m, by_block = work
    # no NaN block: CACC without branches (the NaN kernels' results replaced below)
    _cacc_kernels(block_exp4, sums, by_block, acc_e, acc_m)
    out_h, out_w = out.shape[2], out.shape[3]
    for k in range(k0, k1):
        if w_nan[k - k0] or data_nan[p]:
            acc_e[k - k0], acc_m[k - k0] = _cacc_blocks_with_nans(
                weights[k - first], w_nan[k - k0], d_nan[p], lanes, positions,
                block_exp4[k - k0], sums[k - k0])
        out[p // (out_h * out_w), k, (p // out_w) % out_h, p % out_w] = cacc_to_fp32(
            acc_e[k - k0], acc_m[k - k0])


@njit
def _conv_fp16_runs(data, d_nan, elements, base, stride, specials, block, n_blocks, out,
                    kernels):
    """:func:`_conv_fp16_kernels` with the weights read from their DC stream ``elements``
    (:func:`sim.dma.weights.dc_kernel_runs`: kernel ``k``'s block ``b`` is the ``block``
    lanes from ``base[k] + b * stride[k]``), the data and ``d_nan`` (count, 1, n_blocks)
    in CACC's block order (:func:`_csc_fc_data` ``block_major``).  Each
    ``CACC_KERNELS`` kernels' blocks are gathered into rows of their own first (a run
    of a block's lanes at a time: the whole stream is read once, in order where the
    kernels are a weight group's), whole blocks of one position each; their NaNs and
    Infs counted on the way into ``specials[k]`` (:func:`_gather_runs`; runs of whole
    ``WORD_LANES`` halves by :func:`_gather_live_runs` with every lane live, one
    register copy and count a half: the copy and the count over the row took twice as
    long).  (Each
    pixel step, :func:`_pixel_of_kernels`, is :func:`_conv_fp16_kernels`'s.)  Returns the
    kernels' NaN and Inf weights (:func:`_range_totals`)."""
    lanes = np.arange(n_blocks + 1) * block
    work = _small_layer_work(n_blocks, fc_scratch(max(block, CHUNK)))
    data_nan = _pixels_with_nans(d_nan)
    # C-contiguous rows of the kernels' lanes exactly (a slice of wider ones, of any
    # layout, kept fp16_fc_blocks' passes from vectorising: 4x the time)
    rows = np.empty((CACC_KERNELS, block * n_blocks), np.uint16)
    by_halves = block % WORD_LANES == 0  # runs of whole halves: copied as every lane live
    every_lane = whole_layout(n_blocks, block if by_halves else WORD_LANES)
    for k0 in range(kernels[0], kernels[1], CACC_KERNELS):
        k1 = min(k0 + CACC_KERNELS, kernels[1])
        if by_halves:
            _gather_live_runs(elements, base, stride, k0, k1, block, n_blocks, every_lane,
                              rows, specials)
        else:
            _gather_runs(elements, base, stride, k0, k1, block, n_blocks, rows, specials)
        for p in range(data_nan.size):  # one position: block b is lanes b * block on, in a row
            _pixel_of_kernels(p, data, d_nan, data_nan, rows, k0, k0, k1, block, 1, lanes,
                              work, out)
    return _range_totals(specials, kernels[0], kernels[1])


@njit(inline="always")
def _group_end(base, stride, k, k1, block):
    """The kernel after the last of ``k:k1`` whose runs follow ``k``'s in a row (``block``
    lanes apart, the same stride: ``k``'s weight group's,
    :func:`sim.dma.weights.dc_kernel_runs`)."""
    end = k + 1
    while end < k1 and stride[end] == stride[k] and base[end] == base[k] + (end - k) * block:
        end += 1
    return end


@njit
def _gather_runs(elements, base, stride, k0, k1, block, n_blocks, rows, specials):
    """Kernels ``k0:k1``'s ``n_blocks`` runs of ``block`` lanes each (at ``base[k] + b *
    stride[k]`` in ``elements``) into ``rows[k - k0]``, run ``b`` at ``b * block``, and
    each kernel's NaN and Inf weights into ``specials[k]`` (two words): kernels of one
    weight group at a time (:func:`_gather_group`)."""
    k = k0
    while k < k1:
        end = _group_end(base, stride, k, k1, block)
        _gather_group(elements, base[k], stride[k], end - k, block, n_blocks, rows[k - k0:],
                      specials[k:end])
        k = end


@njit(distinct_arrays=True)
def _gather_group(elements, first, stride, kernels, block, n_blocks, rows, specials):
    """:func:`_gather_runs` of ``kernels`` kernels whose runs follow each other in the
    stream (the first's runs at ``first + b * stride``): a run of every kernel in turn,
    the stream read in order (the runs' addresses from ``first`` and ``stride`` alone:
    from each kernel's base and stride, loaded run by run, the gather took half as long
    again).  Then each kernel's NaNs and Infs (:func:`sim.num.specials.fp16_nans_and_infs`,
    a loop over the whole row: kept in the copy's loop over each run, the count took half
    as long again too)."""
    prefer_wide_vectors()
    width, step = np.uint64(block), np.uint64(stride)
    for b in range(np.uint64(n_blocks)):
        dst = b * width
        for row in range(np.uint64(kernels)):
            src = np.uint64(first) + b * step + row * width
            for line in range(np.uint64(0), width, np.uint64(STREAM_LINE)):
                prefetch(elements, src + line + np.uint64(STREAM_AHEAD))
            for j in range(width):
                rows[row, dst + j] = elements[src + j]
    for row in range(np.uint64(kernels)):
        specials[row, 0], specials[row, 1] = fp16_nans_and_infs(rows[row])


@njit
def _conv_fp16_live_runs(data, layout, d_nan, elements, base, stride, specials, block,
                         n_blocks, out, columns, kernels):
    """:func:`_conv_fp16_runs` of a layer whose data are zero in many lanes: only the live
    lanes (:func:`sim.num.fc_live.live_layout` ``layout``) of each kernel's runs are
    gathered (:func:`_gather_live_runs`) and multiplied
    (:func:`sim.num.fc_live.fp16_fc_live_blocks`), ``data`` the live lanes' (count, live
    lanes).  A kernel with a NaN weight (in a dead lane too: its block is NaN), or a pixel
    with a NaN datum, takes its NaN blocks from the whole runs, gathered for those
    kernels only then.  Whole weight groups of a layer the column kernel takes
    (``columns`` not empty) take the column kernel (:func:`_group_by_columns`).  Returns
    the kernels' NaN and Inf weights (:func:`_range_totals`)."""
    lanes = np.arange(n_blocks + 1) * block
    work = _small_layer_work(n_blocks, fc_live_scratch(layout))
    data_nan = _pixels_with_nans(d_nan)
    # the gather's runs, made when a group first takes it (the column kernel takes most
    # layers' every group: a fully connected layer's 0.6 MB made by each thread cost
    # 20 us); a compressing store writes past its live lanes only 0s, so the padding
    # lanes stay 0; what they hold adds nothing anyway (their data are 0, exponent far
    # below any block)
    rows = np.zeros((CACC_KERNELS, 0), np.uint16)
    whole = np.empty((CACC_KERNELS, 0), np.uint16)
    every_lane = whole_layout(n_blocks, block)
    scratch, block_exp4, sums, w_nan = work[0], work[1], work[2], work[3]
    by_columns = columns[0].size > 0
    column_scratch = column_work(columns[0][-1] if by_columns else 0)
    # the column kernel's groups' blocks, two sets: CACC accumulates one group's while
    # the kernel makes the next one's (_group_by_columns); ``pending`` is the first
    # kernel of the group whose blocks wait in ``kept[side]``, -1 for none
    kept = (work[6], (np.zeros_like(work[6][0]), np.zeros_like(work[6][1])))
    pending, side = -1, 0
    for k0 in range(kernels[0], kernels[1], CACC_KERNELS):
        k1 = min(k0 + CACC_KERNELS, kernels[1])
        if by_columns and k1 - k0 == KERNELS and _group_end(base, stride, k0, k1, block) == k1:
            if _group_by_columns(elements, base[k0], stride[k0], n_blocks, columns,
                                 column_scratch, kept[1 - side], kept[side], pending, work,
                                 out[0, :, 0, 0]):
                specials[k0:k1] = 0  # none: the group has no Inf or NaN weight
                pending, side = k0, 1 - side
                continue
            pending = -1
        else:
            _cacc_pending(kept[side], pending, work, out[0, :, 0, 0])
            pending = -1
        if rows.shape[1] == 0:
            rows = np.zeros((CACC_KERNELS, layout[0].size + WORD_LANES), np.uint16)
        _gather_live_runs(elements, base, stride, k0, k1, block, n_blocks, layout, rows,
                          specials)
        some_nan = data_nan.any()
        for k in range(k0, k1):
            w_nan[k - k0] = specials[k, 0] > 0
            some_nan |= w_nan[k - k0]
        if some_nan:
            if whole.shape[1] == 0:
                whole = np.empty((CACC_KERNELS, block * n_blocks), np.uint16)
            _gather_live_runs(elements, base, stride, k0, k1, block, n_blocks, every_lane,
                              whole, specials)
        for p in range(data_nan.size):
            for k in range(k0, k1):
                fp16_fc_live_blocks(pixel_data(data, p), rows[k - k0], layout, scratch,
                                    block_exp4[k - k0], sums[k - k0])
            _pixel_out(p, d_nan, data_nan, whole, k0, k0, k1, 1, lanes, work, out)
    _cacc_pending(kept[side], pending, work, out[0, :, 0, 0])
    return _range_totals(specials, kernels[0], kernels[1])


@njit(inline="always")
def _group_by_columns(elements, first, stride, n_blocks, columns, column_scratch, blocks,
                      earlier, pending, work, out):
    """A whole weight group's one pixel by :func:`sim.num.fc_columns.columns_group`, its
    blocks straight in CACC's block-major order into ``blocks``, while CACC accumulates
    the blocks (``earlier``) of the group of kernels from ``pending`` (-1 for none) and
    writes their outputs to ``out`` (a pixel's, by kernel).  Returns False for a group with an Inf
    or NaN weight (its blocks are not the CMAC's), which the other path takes (and
    counts): a group without one has none to count."""
    acc_e, acc_m = work[4], work[5]
    acc_e[:] = 0
    acc_m[:] = 0
    chained = n_blocks if pending >= 0 else 0
    largest = columns_group(elements, first, stride, n_blocks, columns, column_scratch,
                            blocks[0], blocks[1], (earlier[0], earlier[1], acc_e, acc_m),
                            chained)
    if pending >= 0:
        _cacc_out(acc_e, acc_m, out[pending:pending + KERNELS])
    return largest < FP16_INF


@njit(inline="always")
def _cacc_pending(blocks, pending, work, out):
    """CACC of the column kernel's group of kernels from ``pending`` (-1: none), its
    blocks ``blocks``, to ``out`` (a pixel's, by kernel)."""
    if pending >= 0:
        _cacc_by_block(blocks, work[4], work[5])
        _cacc_out(work[4], work[5], out[pending:pending + KERNELS])


@njit(inline="always")
def _cacc_out(acc_e, acc_m, out):
    """The accumulators (exponents, mantissas) as fp32 bit patterns to ``out``."""
    for k in range(acc_e.size):
        out[k] = cacc_to_fp32(acc_e[k], acc_m[k])


@njit
def _gather_live_runs(elements, base, stride, k0, k1, block, n_blocks, layout, rows,
                      specials):
    """:func:`_gather_runs` of the live lanes only (``layout``: each block's run of whole
    vectors in ``rows[k - k0]``), each kernel's NaN and Inf weights counted over its whole
    runs (:func:`_gather_live_group`)."""
    k = k0
    while k < k1:
        end = _group_end(base, stride, k, k1, block)
        _gather_live_group(elements, base[k], stride[k], end - k, block, n_blocks, layout[1],
                           layout[3], layout[4], rows[k - k0:], specials[k:end])
        k = end


@njit(distinct_arrays=True)
def _gather_live_group(elements, first, stride, kernels, block, n_blocks, starts, masks,
                       before, rows, specials):
    """:func:`_gather_group` of the live lanes: each ``WORD_LANES``-lane half of a run
    compressed to its live lanes (``masks``) and stored at its block's vectors
    (``starts``) after the live lanes of the halves before it (``before``), in one
    register compression and store (:func:`sim.num.compress.compress_words`), which
    counts the half's NaNs and Infs, dead lanes' too."""
    halves = np.uint64(block // WORD_LANES)
    width, step = np.uint64(block), np.uint64(stride)
    for row in range(np.uint64(kernels)):
        specials[row, 0] = 0
    for b in range(np.uint64(n_blocks)):
        dst = np.uint64(starts[b] * LIVE_VECTOR)
        for row in range(np.uint64(kernels)):
            src = np.uint64(first) + b * step + row * width
            found = np.int64(0)
            for h in range(halves):
                m = b * halves + h
                prefetch(elements, src + h * np.uint64(WORD_LANES) + np.uint64(STREAM_AHEAD))
                found += compress_words(elements, src + h * np.uint64(WORD_LANES), masks[m],
                                        rows[row], dst + np.uint64(before[m]))
            specials[row, 0] += found
    for row in range(np.uint64(kernels)):
        found = specials[row, 0]
        specials[row, 0], specials[row, 1] = nans_and_infs(found)


@njit(inline="always")
def _cacc_kernels(block_exp4, sums, by_block, acc_e, acc_m):
    """CACC of ``CACC_KERNELS`` kernels' blocks (``block_exp4`` and ``sums`` (CACC_KERNELS,
    blocks), none a NaN) into ``acc_e``/``acc_m``, each kernel's blocks in order, the
    blocks copied block-major first (``by_block``) so that the kernels' chains run as the
    lanes of vectors: read kernel-major, they took 4 ms of AlexNet's fc6 on one thread,
    1.1 ms so.  Every row, a whole vector's worth (a chunk of fewer kernels leaves an
    earlier chunk's blocks, or zeros, in the others: their accumulators are not read)."""
    exps, mans = by_block
    n_blocks = block_exp4.shape[1]
    for j in range(CACC_KERNELS):
        for b in range(n_blocks):
            exps[b, j] = block_exp4[j, b]
            mans[b, j] = sums[j, b]
    _cacc_by_block(by_block, acc_e, acc_m)


@njit(inline="always")
def _cacc_by_block(by_block, acc_e, acc_m):
    """:func:`_cacc_kernels` of blocks already block-major (``by_block``: (exponents,
    sums), each (blocks, CACC_KERNELS))."""
    acc_e[:] = 0
    acc_m[:] = 0
    for b in range(by_block[0].shape[0]):
        cacc_block((by_block[0], by_block[1], acc_e, acc_m), b)


@njit
def _cacc_blocks_with_nans(w_bits, w_nan, d_nan, lanes, n_pos, block_exp4, sums):
    """CACC of a pixel's blocks (group by group, position by position) where a weight or a
    data value is a NaN: a NaN block (weights scanned before data) makes the accumulator
    NaN.  Returns the accumulator (exponent, mantissa)."""
    acc_e, acc_m = np.int64(0), np.int64(0)
    for g in range(lanes.size - 1):
        m0, m1 = lanes[g] * n_pos, lanes[g + 1] * n_pos
        for pos in range(n_pos):
            nan_bits = first_nan_strided(w_bits[m0:m1], pos, n_pos) if w_nan else -1
            if nan_bits < 0:
                nan_bits = d_nan[pos, g]
            if nan_bits >= 0:
                acc_e, acc_m = cacc_accumulate(acc_e, acc_m, MAC_NAN_EXP, mac_nan_block(nan_bits))
            else:
                b = g * n_pos + pos
                acc_e, acc_m = cacc_accumulate(acc_e, acc_m, block_exp4[b],
                                               sign_extend(sums[b], MAC_BITS))
    return acc_e, acc_m


@njit
def _csc_fc_data(cube, pad_bits, lanes, geometry, count, block_major):
    """:func:`_csc_block`'s data for ``count`` pixels and every kernel position, in the
    order a layer stores its weights (lane ``c * R * S + pos``), straight from the layer's
    input ``cube`` (N, C, H, W) fp16 bits (every channel; ``pad_bits`` the CSC's pad
    value), its operands as :func:`sim.num.mac_fc.fc_data` arrays (count, lanes)
    (exponents, signs, significands, values), in one call: the lanes gathered in their
    order, their first NaN of each block taken on the way, then decoded in one loop over
    them all.  Also whether each lane is live (a value not zero in some pixel).  The
    first NaNs are (count, R * S, groups), or with ``block_major`` (count, 1, groups *
    R * S) in CACC's block order: the calls this replaces (the data's operands, NaNs, the
    CSC, fc_data) took a fully connected layer 0.25 ms with the caches cold (a large
    layer's weights had just gone through them)."""
    n_r, n_s = geometry[8], geometry[9]
    _, _, in_h, in_w = cube.shape
    n_pos = n_r * n_s
    groups = lanes.size - 1
    n_lanes = lanes[-1] * n_pos
    gathered = np.zeros((count, n_lanes), np.uint16)
    d_nan = np.empty((count, 1, groups * n_pos) if block_major else (count, n_pos, groups),
                     np.int64)
    pad_nan = np.int64(pad_bits) if is_nan_scalar(pad_bits, *FP16) else np.int64(-1)
    for p in range(count):
        row = gathered[p]
        for g in range(groups):
            c0, c1 = lanes[g], lanes[g + 1]
            for r in range(n_r):
                for s in range(n_s):
                    pos = r * n_s + s
                    b, iy, ix = _input_at(geometry, p, r, s)
                    first, step = ((g * n_pos + pos) * (c1 - c0), 1) if block_major \
                        else (c0 * n_pos + pos, n_pos)
                    if 0 <= iy < in_h and 0 <= ix < in_w:
                        most = np.uint16(0)
                        for j in range(c1 - c0):
                            bits = cube[b, c0 + j, iy, ix]
                            row[first + j * step] = bits
                            most = max(most, bits & np.uint16(0x7FFF))
                        nan = np.int64(-1)
                        if most > FP16_INF:  # a NaN: the block's first (rare)
                            for j in range(c1 - c0):
                                if is_nan_scalar(row[first + j * step], *FP16):
                                    nan = np.int64(row[first + j * step])
                                    break
                    else:  # outside the input: the CSC's pad value in every lane
                        for j in range(c1 - c0):
                            row[first + j * step] = pad_bits
                        nan = pad_nan
                    if block_major:
                        d_nan[p, 0, g * n_pos + pos] = nan
                    else:
                        d_nan[p, pos, g] = nan
    data = _decoded(gathered)
    return data, d_nan, _live_lanes(data[2])


@njit
def _decoded(bits):
    """:func:`sim.num.mac_fc.fc_data_lane`'s four arrays of the fp16 patterns ``bits``
    (pixels, lanes), in one loop without a branch."""
    d_exp = np.empty(bits.shape, np.uint16)
    d_sign = np.empty(bits.shape, np.uint8)
    d_sig = np.empty(bits.shape, np.uint16)
    d_float = np.empty(bits.shape, np.float32)
    flat, e, s, g, f = bits.reshape(-1), d_exp.reshape(-1), d_sign.reshape(-1), \
        d_sig.reshape(-1), d_float.reshape(-1)
    for i in range(flat.size):
        e[i], s[i], g[i], f[i] = fc_data_lane(flat[i])
    return d_exp, d_sign, d_sig, d_float


@njit
def _live_lanes(sig):
    """Whether each lane holds a value not zero in some pixel, from the decoded
    significands ``sig`` (pixels, lanes): a zero's is 0, every other value's is not."""
    live = np.zeros(sig.shape[1], np.bool_)
    for p in range(sig.shape[0]):
        for m in range(sig.shape[1]):
            live[m] |= sig[p, m] != 0
    return live


#: The weights are transposed in squares of this many kernels by as many (channel,
#: position) pairs: the square's rows of both the source and the result stay in the
#: caches and within the TLB's reach (a row per page).
SQUARE = 256


@njit
def _kernels_innermost(src, dst, lane_bits, lane_nan, squares):
    """The weights ``src`` (K, C, R*S) as ``dst`` (R*S, C, K) (kernels innermost: the loops
    over kernels read them in a row), kernels ``SQUARE * squares[0]:SQUARE * squares[1]``,
    in one pass that ORs each square's magnitudes per channel into ``lane_bits[square]``
    (C,) (all 0: a lane dead in every kernel) and flags its NaNs in ``lane_nan[square]``."""
    n_k, n_c, n_pos = src.shape
    flat = src.reshape((n_k, n_c * n_pos))
    for square in range(squares[0], squares[1]):
        k0 = square * SQUARE
        k1 = min(k0 + SQUARE, n_k)
        bits, nan = lane_bits[square], False
        for m0 in range(0, n_c * n_pos, SQUARE):
            for m in range(m0, min(m0 + SQUARE, n_c * n_pos)):
                c, pos = m // n_pos, m % n_pos
                row = dst[pos, c]
                ored = np.uint16(0)
                for k in range(k0, k1):
                    v = flat[k, m]
                    row[k] = v
                    ored |= v
                    nan |= (v & np.uint16(0x7FFF)) > 0x7C00
                bits[c] |= ored & np.uint16(0x7FFF)
        lane_nan[square] = nan


@njit
def _stream_innermost(elements, base, stride, block, group, dst, lane_bits, specials,
                      squares):
    """:func:`_kernels_innermost` of a DC weight stream (:class:`sim.dma.weights.DcStream`:
    kernel ``k``'s runs of ``block`` channels from ``base[k]``, ``stride[k]`` apart, run
    ``b`` at channels ``b // (R*S) * block`` on and position ``b % (R*S)``) into ``dst``
    (R*S, C, K), squares ``squares[0]:squares[1]`` of ``SQUARE`` kernels (whole groups of
    ``group``): the unpack and the transpose in one pass, each group's runs read where they
    lie (its kernels' runs follow each other).  Each square's magnitudes are ORed per
    channel into ``lane_bits[square]``, and its NaNs and Infs counted into
    ``specials[square]`` (a square's words are contiguous: groups follow each other)."""
    n_pos, n_c, n_k = dst.shape
    runs = n_pos * (n_c // block)
    for square in range(squares[0], squares[1]):
        k0 = square * SQUARE
        k1 = min(k0 + SQUARE, n_k)
        bits = lane_bits[square]
        most = np.uint16(0)
        for g0 in range(k0, k1, group):
            n_g = min(group, k1 - g0)
            for b in range(runs):
                # slices and 2-d indices from 0: no fix-ups for negative indices (with them
                # both loops stayed scalar, 3.5 times as long)
                start = base[g0] + b * stride[g0]
                runs_here = elements[start:start + n_g * block].reshape((n_g, block))
                c0 = b // n_pos * block
                ored = bits[c0:c0 + block]
                for kk in range(n_g):  # magnitudes: vectors over a run's channels
                    for j in range(block):
                        v = runs_here[kk, j] & np.uint16(0x7FFF)
                        ored[j] |= v
                        most = max(most, v)
                row = dst[b % n_pos]
                for j in range(block):
                    out = row[c0 + j, g0:g0 + n_g]
                    for kk in range(n_g):
                        out[kk] = runs_here[kk, j]
        if most >= FP16_INF:  # some NaN or Inf: counted where they are (rare)
            stop = base[k1] if k1 < n_k else elements.size
            specials[square, 0], specials[square, 1] = fp16_nans_and_infs(
                elements[base[k0]:stop])


def reads_stream(layer: ConvLayer, block: int) -> bool:
    """Whether :func:`conv_fp16` takes the layer's weights as their DC stream
    (:class:`sim.dma.weights.DcStream`, with MAC atomic C ``block``) as well as unpacked:
    a layer of fewer than ``MIN_TILE`` output pixels (each weight meets a few data values
    at most: unpacking them cost more than their products) and whole runs of channels."""
    return layer.batches * layer.out_height * layer.out_width < MIN_TILE \
        and layer.channels % block == 0


def conv_fp16(cube: np.ndarray, weights: np.ndarray | DcStream, layer: ConvLayer,
              block: int) -> np.ndarray:
    """fp32 bit patterns (N, K, H', W') as uint32: CACC's output for an fp16 layer.

    ``cube`` is (N, C, H, W) fp16 bits after the CDMA (NaN flush applied);
    ``weights`` (K, C, R, S) fp16 bits, or their DC stream (its NaNs and Infs counted as
    the products read it: ``DcStream.specials``), which a layer of :func:`reads_stream`
    reads as it is and the others unpack as they transpose it (:func:`_stream_innermost`);
    ``block`` is the MAC atomic C.
    """
    cube = np.asarray(cube, dtype=np.uint16)
    stream = weights if isinstance(weights, DcStream) else None
    tiles = cube.shape[0] * layer.out_height * layer.out_width >= MIN_TILE
    # the tiles read a stream's runs in one pass with the transpose (whole groups a square)
    if stream is not None and (stream.atomic_c != block or not (
            (tiles and SQUARE % stream.group == 0) or reads_stream(layer, block))):
        stream.specials[:] = 0
        stream.specials[0] = stream.totals[:] = count_nans_and_infs(stream.elements)
        weights, stream = stream.unpacked(), None
    if stream is None:
        weights = np.asarray(weights, dtype=np.uint16)
    n_k, c, n_r, n_s = weights.shape
    n, _, h, width = cube.shape
    groups = ceil_div(c, block)
    geometry = tuple(int(v) for v in (layer.out_height, layer.out_width, layer.stride_y,
                                      layer.stride_x, layer.dilation_y, layer.dilation_x,
                                      layer.pad_top, layer.pad_left, n_r, n_s))
    out = np.zeros((n, n_k, layer.out_height, layer.out_width), np.uint32)
    if n * layer.out_height * layer.out_width < MIN_TILE:
        # too few pixels for vectors over them: vectors over a kernel's lanes, the weights
        # as the layer stores them (each meets at most a few data values: the data are put
        # in their order instead), the threads splitting kernels
        lanes = np.minimum(np.arange(groups + 1) * block, c)
        count = n * layer.out_height * layer.out_width
        # blocks in CACC's order for the stream: block g * R * S + pos at column b
        pad_bits = np.uint16(layer.pad_value & 0xFFFF)
        if stream is not None:
            n_blocks = groups * n_r * n_s
            data, d_nan, placed, (taken, layout, live) = _fc_stream_data(
                cube, pad_bits, lanes, geometry, count, block,
                layout_fits(c * n_r * n_s, block), _columns_may_apply(count, block, n_blocks),
                carry_bounds())
            # the live lanes where many data are zero (ReLU), else every lane where the
            # column kernel takes the layer, else no layout
            if taken:
                operands = (live, layout, d_nan, stream.elements, stream.base, stream.stride,
                            stream.specials, block, n_blocks, out, with_carry_rows(placed))
                # whole weight groups a thread (the column kernel takes only those)
                found = []  # each thread's NaN and Inf weights
                run_split(lambda a, b: found.append(_conv_fp16_live_runs(
                    *operands, (a * KERNELS, min(b * KERNELS, n_k)))),
                    ceil_div(n_k, KERNELS), min_chunk=MIN_KERNELS // KERNELS)
                _keep_totals(stream, found)
                return out
            operands = (data, d_nan, stream.elements, stream.base, stream.stride,
                        stream.specials, block, groups * n_r * n_s, out)
            found = []
            run_split(lambda a, b: found.append(_conv_fp16_runs(*operands, (a, b))), n_k,
                      min_chunk=MIN_KERNELS)
            _keep_totals(stream, found)
            return out
        data, d_nan, _ = _csc_fc_data(cube, pad_bits, lanes, geometry, count, False)
        operands = (data, d_nan, np.ascontiguousarray(weights).reshape(n_k, c * n_r * n_s),
                    lanes, n_r * n_s, out)
        run_split(lambda a, b: _conv_fp16_kernels(*operands, (a, b)), n_k, min_chunk=MIN_KERNELS)
        return out
    pad = np.full(block, layer.pad_value & 0xFFFF, np.uint16)
    pad_ops = fp16_data_operands(pad)
    pad_nan = int(first_nan_per_block(pad, nan_mask(pad), block)[0])
    size = n_k * c * n_r * n_s
    with _scratch("transposed", 2 * size) as t_buf, \
            _scratch("weights", weight_rows_bytes(size)) as w_buf:
        # (R, S, C, K): kernels innermost
        w = t_buf[:2 * size].view(np.uint16).reshape(n_r, n_s, c, n_k)
        squares = ceil_div(n_k, SQUARE)
        lane_bits, lane_nan = np.zeros((squares, c), np.uint16), np.zeros(squares, np.bool_)
        if stream is not None:  # unpacked and transposed in one pass
            _transpose_stream(stream, w.reshape(n_r * n_s, c, n_k), lane_bits, lane_nan)
        else:
            src = np.ascontiguousarray(weights).reshape(n_k, c, n_r * n_s)
            run_split(lambda a, b: _kernels_innermost(src, w.reshape(n_r * n_s, c, n_k),
                                                      lane_bits, lane_nan, (a, b)),
                      squares)
        # Lanes whose weight is zero in every kernel contribute nothing to any block
        # (a NaN in them still decides its block): the products skip them.
        live = np.flatnonzero(lane_bits.any(axis=0))
        lanes = np.searchsorted(live, np.arange(groups + 1) * block)
        x, x_nans = _data_operands(cube, live, block)
        if lane_nan.any():
            in_lanes = w.transpose(3, 0, 1, 2)  # (K, R, S, C)
            w_nans = first_nan_per_block(in_lanes, nan_mask(in_lanes), block)
        else:
            w_nans = np.full((n_k, n_r, n_s, groups), -1, np.int64)
        if live.size < c:
            w = np.ascontiguousarray(w[:, :, live])
        with _scratch("data", data_operands_bytes(x.size)) as x_buf:
            operands = (fp16_data_operands(x, x_buf), x_nans, fp16_weight_rows(w, w_buf),
                        w_nans, (w_nans >= 0).any(axis=0), pad_ops, pad_nan, lanes, geometry,
                        out)
            _products(operands, n_k)
    return out


def _keep_totals(stream: DcStream, found: list) -> None:
    """The stream's NaN and Inf weights (``DcStream.totals``) from each thread's
    (:func:`_range_totals` of the kernels it read)."""
    stream.totals[0] = sum(nans for nans, _ in found)
    stream.totals[1] = sum(infs for _, infs in found)


@njit(inline="always")
def _range_totals(specials, k0, k1):
    """The NaN and Inf weights of kernels ``k0:k1`` (``specials``' rows): summed by the
    thread that counted them, from its own caches."""
    nans, infs = np.int64(0), np.int64(0)
    for k in range(k0, k1):
        nans += specials[k, 0]
        infs += specials[k, 1]
    return nans, infs


def _columns_may_apply(pixels: int, block: int, n_blocks: int) -> bool:
    """Whether the column kernel takes a layer whose data hold no NaN: one pixel, nv_full's
    blocks (``BLOCK`` lanes), at most 4096 of them (a flagged lane's place, block * 16 +
    kernel, is a 16-bit word), on a processor with its word permutations
    (:func:`_word_permutes`)."""
    return (pixels == 1 and block == COLUMN_BLOCK and n_blocks * KERNELS <= 1 << 16
            and _word_permutes())


@functools.cache
def _word_permutes() -> bool:
    """:func:`sim.num.fc_columns.word_permutes`, asked once (a kernel's call, each layer)."""
    return bool(word_permutes())


@njit
def _fc_stream_data(cube, pad_bits, lanes, geometry, count, block, fits, columns, bounds):
    """The data of a small layer whose products read its weights' stream, in one call:
    :func:`_csc_fc_data` in CACC's block order, whether the column kernel takes the layer
    (``columns``, :func:`_columns_may_apply`, and no NaN datum), and
    :func:`sim.num.fc_live.live_operands` (the live lanes' layout where they pay, ``fits``
    :func:`sim.num.fc_live.layout_fits`, else every lane's where the column kernel takes
    the layer, and the data over it), and the column kernel's operands but the carry rows
    (:func:`sim.num.fc_columns.placed_columns`; ``bounds`` its carry bounds; no column
    where it does not take the layer): the six calls and numpy passes they replace took a
    fully connected layer about 0.2 ms, with the caches cold."""
    data, d_nan, live = _csc_fc_data(cube, pad_bits, lanes, geometry, count, True)
    columns = columns and (d_nan < 0).all()
    taken, layout, live_data = live_operands(data, live, block, fits, columns)
    placed = placed_columns(live_data, layout[0], live.size // block, bounds, columns and taken)
    return data, d_nan, placed, (taken, layout, live_data)


def _transpose_stream(stream: DcStream, dst: np.ndarray, lane_bits: np.ndarray,
                      lane_nan: np.ndarray) -> None:
    """:func:`_stream_innermost` of the whole stream over the threads, and its NaNs and Infs
    into ``stream.specials`` (counted as the products read it: the CDMA's counters)."""
    squares = lane_bits.shape[0]
    specials = np.zeros((squares, 2), np.int64)
    run_split(lambda a, b: _stream_innermost(stream.elements, stream.base, stream.stride,
                                             stream.atomic_c, stream.group, dst, lane_bits,
                                             specials, (a, b)),
              squares)
    stream.specials[:] = 0
    stream.specials[0] = stream.totals[:] = specials.sum(axis=0)
    lane_nan[:] = specials[:, 0] > 0


def _products(operands: tuple, n_k: int) -> None:
    """:func:`_conv_fp16_tiles` of a layer over the threads, pieces as :func:`tile_plan` says."""
    out, lanes = operands[-1], operands[-3]
    pixels = out.shape[0] * out.shape[2] * out.shape[3]
    tiles, groups = tile_plan(pixels, n_k, cores())
    bounds = [n_k * g // groups for g in range(groups + 1)]
    # work arrays for the plan's largest tile, no larger: rows of a small layer's arrays
    # as long as a large layer's only spread its words over more lines
    widest = STEP * ceil_div(ceil_div(pixels, STEP), tiles)
    layout = _tile_layout(n_k, int(_block_width(lanes)), widest)
    nbytes = _layout_bytes(layout)
    with ExitStack() as kept:
        # each thread carves its work arrays once a layer, not once a piece: sizing,
        # carving and zeroing them took about 0.3 ms of interpreter time (holding the GIL)
        # a piece, 8 pieces a layer on two threads in the 28x28x64 benchmark
        own, lock = threading.local(), threading.Lock()

        def buffers() -> tuple[tuple, tuple]:
            if not hasattr(own, "buffers"):
                with lock:
                    buf = kept.enter_context(_scratch("tiles", nbytes))
                own.buffers = _tile_buffers(buf, layout)
            return own.buffers

        def pieces(first: int, stop: int) -> None:  # piece i: tile i // groups, group i % groups
            if groups == 1:
                _conv_fp16_tiles(*operands, tiles, (first, stop), (0, n_k), buffers())
                return
            for piece in range(first, stop):
                tile, group = divmod(piece, groups)
                _conv_fp16_tiles(*operands, tiles, (tile, tile + 1),
                                 (bounds[group], bounds[group + 1]), buffers())

        run_split(pieces, tiles * groups, pieces=tiles * groups)


#: The work arrays of :func:`_conv_fp16_tiles` start on cache lines: the kernel's 512-bit
#: loads and stores from arrays that start elsewhere touch two lines (numba places arrays
#: on 32 bytes, some on 64 by chance: with every array on 32 the 28x28x64 benchmark layer
#: took about 15% longer than with every one on 64, one thread).
LINE = 64


def _tile_layout(n_k: int, width: int, pixels: int = TILE) -> tuple[list, list]:
    """The (shape, dtype) of the work arrays of :func:`_conv_fp16_tiles` (tiles of up to
    ``pixels`` pixels, whole steps; ``n_k`` kernels, blocks of up to ``width`` lanes):
    the kernel's scratch (:func:`sim.num.mac.tile_scratch_layout`, first: a kept buffer's
    words under it are only ever the kernel's), then the tile's data in columns (signs,
    significands, four times the exponents, first NaNs), the kernels' block exponents
    and sum words, the accumulators (exponents, mantissas)."""
    per_kernel = (n_k, pixels)
    rows = width * _row_stride.py_func(pixels)  # the widest tile's rows, padded
    return (tile_scratch_layout(pixels),
            [((rows,), np.uint32), ((rows,), np.uint32), ((rows,), np.int32), ((pixels,), np.int64),
             (per_kernel, np.int32), (per_kernel, np.uint32), (per_kernel, np.uint32),
             (per_kernel, np.int64), (per_kernel, np.int64)])


def _layout_bytes(layout: tuple[list, list]) -> int:
    """Bytes a buffer needs for :func:`_tile_buffers` of ``layout``, whatever its start."""
    return LINE + sum(align_up(np.dtype(dtype).itemsize * math.prod(shape), LINE)
                      for part in layout for shape, dtype in part)


def _tile_buffers(buf: np.ndarray, layout: tuple[list, list]) -> tuple[tuple, tuple]:
    """The arrays of ``layout`` (:func:`_tile_layout`) in the uint8 buffer ``buf``, each
    starting on a cache line: the kernel's scratch zeroed (:func:`sim.num.mac.tile_scratch`:
    a group of fewer lanes than ``GROUP`` reads tables it never builds), the others
    uninitialised (the tiles write every word they read)."""
    offset = -buf.ctypes.data % LINE
    parts = []
    for part in layout:
        arrays = []
        for shape, dtype in part:
            nbytes = np.dtype(dtype).itemsize * math.prod(shape)
            arrays.append(buf[offset:offset + nbytes].view(dtype).reshape(shape))
            offset += align_up(nbytes, LINE)
        parts.append(tuple(arrays))
    for array in parts[0]:
        array[...] = 0
    return tuple(parts)


#: Buffers for a layer's operands (the weights' rows, the data's), kept between layers by
#: use: a layer's fresh 10-50 MB took about as long in page faults as filling them.
_SCRATCH: dict[str, list[np.ndarray]] = {}
_SCRATCH_LOCK = threading.Lock()


@contextmanager
def _scratch(use: str, nbytes: int) -> Iterator[np.ndarray]:
    """A kept uint8 buffer of at least ``nbytes`` bytes for ``use``, for the duration of a
    layer (layers running at the same time take one each)."""
    with _SCRATCH_LOCK:
        kept = _SCRATCH.setdefault(use, [])
        buf = kept.pop() if kept else None
    if buf is None or buf.size < nbytes:  # grow by half at least: layers grow in steps
        buf = np.empty(max(nbytes, 0 if buf is None else buf.size * 3 // 2), np.uint8)
    try:
        yield buf
    finally:
        with _SCRATCH_LOCK:
            _SCRATCH[use].append(buf)


def tile_plan(pixels: int, kernels: int, threads: int) -> tuple[int, int]:
    """How a layer's ``pixels`` output pixels and ``kernels`` kernels are cut into pieces
    for the threads (:func:`_conv_fp16_tiles`): (tiles, kernel groups), every piece one
    tile of one group.  Tiles are whole steps, at most ``TILE`` pixels, as few as that
    allows: a tile's fixed costs (the CSC's gather, the data's tables, a loop's set-up for
    each lane and kernel) are paid once per tile.  Where there are at least as many tiles
    as threads, their count is a multiple of ``threads`` (the threads take them one by
    one: equal shares on an idle machine, and a slowed core leaves its tiles to the
    others) and the kernels stay whole, unless that leaves tiles of fewer than
    ``SPLIT_PIXELS_FROM`` vectors; a layer of fewer tiles cuts its kernels into groups
    instead, so that every thread has a piece (at least ``MIN_GROUP_KERNELS`` kernels
    each): the tiles of a 14 x 14 layer cut in two by pixels would be of 3 and 4 steps,
    one thread waiting for the other."""
    units = ceil_div(pixels, STEP)
    tiles = ceil_div(units, TILE // STEP)
    rounded = ceil_div(tiles, threads) * threads
    if tiles >= threads and units // rounded * (STEP // VECTOR) >= SPLIT_PIXELS_FROM:
        return rounded, 1
    return tiles, max(1, min(ceil_div(threads, tiles), kernels // MIN_GROUP_KERNELS))


def _data_operands(cube: np.ndarray, live: np.ndarray, block: int):
    """The data (N, H, W, C') of channels ``live``, and the first NaN of every block of the
    whole cube (N, H, W, groups), -1 if none."""
    n, c, h, width = cube.shape
    if nan_mask(cube).any():  # first NaNs over whole blocks, dead lanes too
        x = np.ascontiguousarray(cube.transpose(0, 2, 3, 1))
        x_nans = first_nan_per_block(x, nan_mask(x), block)
        return (x[..., live] if live.size < c else x), x_nans
    x_nans = np.full((n, h, width, ceil_div(c, block)), -1, np.int64)
    x = np.ascontiguousarray((cube[:, live] if live.size < c else cube).transpose(0, 2, 3, 1))
    return x, x_nans
