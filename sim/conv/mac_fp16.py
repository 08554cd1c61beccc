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

import numpy as np

from ..jit import njit, run_split
from ..num.booth import TABLE_ROWS, booth_row_indices
from ..num.mac import (
    MAC_NAN_EXP,
    block_sum,
    cacc_accumulate,
    cacc_accumulate_finite,
    cacc_to_fp32,
    first_nan_per_block,
    fp16_block_dots,
    fp16_mac_operands,
    fp16_tile_dots,
    mac_nan_block,
    weight_plans,
)
from ..num.rounding import sign_extend
from ..num.specials import nan_mask
from .layer import ConvLayer

#: Output pixels computed together (at most): each weight meets this many data vectors
#: in a row (the pixels are the vectorised loop), and the data's Booth rows are reused
#: by every kernel.
TILE = 128
#: Fewer pixels than this do not fill the vectors: a layer that small (a fully
#: connected one has a single pixel) takes the products pixel by pixel, the loops over
#: kernels (:func:`fp16_block_dots`), and a thread takes at least this many.
MIN_TILE = 16


@njit
def _conv_fp16_rows(x, x_nan, w, w_nan, w_nan_any, pad, pad_nan, lanes, stride_y, stride_x,
                    dil_y, dil_x, top, left, out, rows):
    """CACC's fp32 bit patterns into ``out`` (N, K, H', W'), output rows ``rows[0]:rows[1]``.

    Rows count over batches and output lines (row = batch * H' + line); their
    pixels are taken in tiles of equal size, at most ``TILE``.

    ``x`` = (sign, significand, exponent) arrays (N, H, W, C') from
    :func:`fp16_mac_operands` and ``w`` = (Booth table rows (R, S, C', K, 10) from
    :func:`booth_row_indices`, four times the exponents (R, S, C', K), for layers of
    fewer than ``MIN_TILE`` pixels the Booth recodings (R, S, C', 2, K) of
    :func:`weight_plans` (else an empty array), the exponents), of the channels that
    matter: block ``g`` is channels ``lanes[g]:lanes[g + 1]``.  ``x_nan`` (N,
    H, W, groups) and ``w_nan`` (K, R, S, groups) hold the first NaN of each
    block, -1 if none, and ``w_nan_any`` (R, S, groups) whether some kernel's
    block has one; ``pad`` the operands of the pad value (one block of lanes)
    and ``pad_nan`` its NaN, -1 if none.
    """
    x_sign, x_sig, x_exp = x
    w_rows, w_exp4, w_plans, w_exp = w
    p_sign, p_sig, p_exp = pad
    _, in_h, in_w, _ = x_sig.shape
    n_r, n_s, _, n_k = w_exp.shape
    groups = w_nan.shape[3]
    out_h, out_w = out.shape[2], out.shape[3]
    width = 0
    for g in range(groups):
        width = max(width, lanes[g + 1] - lanes[g])
    sign_buf = np.zeros(width * TILE, np.uint32)
    sig_buf = np.zeros(width * TILE, np.uint32)
    exp_buf = np.zeros(width * TILE, np.int32)
    d_nan = np.zeros(TILE, np.int64)
    pixel_exp, pixel_high, pixel_low = (np.zeros(n_k, np.int64), np.zeros(n_k, np.uint32),
                                        np.zeros(n_k, np.uint32))
    table = np.zeros((TABLE_ROWS, TILE), np.uint32)
    block_exp4 = np.zeros((n_k, TILE), np.int32)
    high = np.zeros((n_k, TILE), np.uint32)
    low = np.zeros((n_k, TILE), np.uint32)
    acc_e = np.zeros((n_k, TILE), np.int64)
    acc_m = np.zeros((n_k, TILE), np.int64)
    first, total = rows[0] * out_w, (rows[1] - rows[0]) * out_w
    tiles = -(-total // TILE)
    for tile in range(tiles):
        start = first + total * tile // tiles
        count = first + total * (tile + 1) // tiles - start
        # the data of the tile's pixels, a column each (contiguous rows: vectors)
        d_sign = sign_buf[:width * count].reshape((width, count))
        d_sig = sig_buf[:width * count].reshape((width, count))
        d_exp4 = exp_buf[:width * count].reshape((width, count))
        acc_e[:] = 0
        acc_m[:] = 0
        nan_seen = False
        for g in range(groups):
            c0, c1 = lanes[g], lanes[g + 1]
            n_l = c1 - c0
            for r in range(n_r):
                for s in range(n_s):
                    nan_here = w_nan_any[r, s, g]
                    for p in range(count):  # the CSC: each pixel's data for this block
                        q = start + p
                        b, oy, ox = q // (out_h * out_w), (q // out_w) % out_h, q % out_w
                        iy = oy * stride_y + r * dil_y - top
                        ix = ox * stride_x + s * dil_x - left
                        if 0 <= iy < in_h and 0 <= ix < in_w:
                            for j in range(n_l):
                                d_sign[j, p] = x_sign[b, iy, ix, c0 + j]
                                d_sig[j, p] = x_sig[b, iy, ix, c0 + j]
                                d_exp4[j, p] = 4 * x_exp[b, iy, ix, c0 + j]
                            d_nan[p] = x_nan[b, iy, ix, g]
                        else:  # outside the input: the CSC's pad value in every lane
                            for j in range(n_l):
                                d_sign[j, p] = p_sign[j]
                                d_sig[j, p] = p_sig[j]
                                d_exp4[j, p] = 4 * p_exp[j]
                            d_nan[p] = pad_nan
                        nan_here |= d_nan[p] >= 0
                    if count >= MIN_TILE:
                        fp16_tile_dots(d_sign[:n_l], d_sig[:n_l], d_exp4[:n_l], w_rows[r, s, c0:c1],
                                       w_exp4[r, s, c0:c1], table, block_exp4, high, low)
                    else:  # too few pixels for vectors over them: vectors over kernels
                        for p in range(count):
                            fp16_block_dots(d_sign[:n_l, p], d_sig[:n_l, p],
                                            d_exp4[:n_l, p] >> 2, w_plans[r, s, c0:c1],
                                            w_exp[r, s, c0:c1], pixel_exp, pixel_high,
                                            pixel_low)
                            block_exp4[:, p] = 4 * pixel_exp
                            high[:, p] = pixel_high
                            low[:, p] = pixel_low
                    if not nan_here and not nan_seen:
                        for k in range(n_k):  # no NaN anywhere: vectorised over pixels
                            for p in range(count):
                                acc_e[k, p], acc_m[k, p] = cacc_accumulate_finite(
                                    acc_e[k, p], acc_m[k, p], block_exp4[k, p],
                                    sign_extend(block_sum(high[k, p], low[k, p]), 38))
                        continue
                    nan_seen = True  # a NaN block makes its kernels' accumulators NaN
                    for k in range(n_k):
                        for p in range(count):
                            nan_bits = w_nan[k, r, s, g]  # weights are scanned before data
                            if nan_bits < 0:
                                nan_bits = d_nan[p]
                            if nan_bits >= 0:
                                acc_e[k, p], acc_m[k, p] = cacc_accumulate(
                                    acc_e[k, p], acc_m[k, p], MAC_NAN_EXP,
                                    mac_nan_block(nan_bits))
                                continue
                            total = block_sum(high[k, p], low[k, p])
                            if total != 0:
                                acc_e[k, p], acc_m[k, p] = cacc_accumulate(
                                    acc_e[k, p], acc_m[k, p], block_exp4[k, p],
                                    sign_extend(total, 38))
        for p in range(count):
            q = start + p
            b, oy, ox = q // (out_h * out_w), (q // out_w) % out_h, q % out_w
            for k in range(n_k):
                out[b, k, oy, ox] = cacc_to_fp32(acc_e[k, p], acc_m[k, p])


def conv_fp16(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer, block: int) -> np.ndarray:
    """fp32 bit patterns (N, K, H', W') as uint32: CACC's output for an fp16 layer.

    ``cube`` is (N, C, H, W) fp16 bits after the CDMA (NaN flush applied);
    ``weights`` (K, C, R, S) fp16 bits; ``block`` is the MAC atomic C.
    """
    cube = np.asarray(cube, dtype=np.uint16)
    w = np.ascontiguousarray(np.asarray(weights, dtype=np.uint16).transpose(0, 2, 3, 1))
    pad = np.full(block, layer.pad_value & 0xFFFF, np.uint16)
    # Lanes whose weight is zero in every kernel contribute nothing to any block
    # (a NaN in them still decides its block): the products skip them.
    live = np.flatnonzero(np.any(w & 0x7FFF, axis=(0, 1, 2)))
    n, c, h, width = cube.shape
    groups = -(-c // block)
    lanes = np.searchsorted(live, np.arange(groups + 1) * block)
    if nan_mask(cube).any():  # first NaNs over whole blocks, dead lanes too
        x = np.ascontiguousarray(cube.transpose(0, 2, 3, 1))
        x_nans = first_nan_per_block(x, nan_mask(x), block)
        x = x[..., live] if live.size < c else x
    else:  # only the live lanes are moved
        x_nans = np.full((n, h, width, groups), -1, np.int64)
        x = np.ascontiguousarray((cube[:, live] if live.size < c else cube).transpose(0, 2, 3, 1))
    w_nans, pad_nans = (first_nan_per_block(a, nan_mask(a), block) for a in (w, pad))
    if live.size < c:
        w = w[..., live]
    w = np.ascontiguousarray(w.transpose(1, 2, 3, 0))  # (R, S, C', K): kernels innermost
    w_sign, w_sig, w_exp = fp16_mac_operands(w)
    out = np.zeros((x.shape[0], w.shape[-1], layer.out_height, layer.out_width), np.uint32)
    pixels = out.shape[0] * out.shape[2] * out.shape[3]
    if pixels >= MIN_TILE:  # the weights as the tiles read them, or as pixels do
        rows, plans = booth_row_indices(w_sign, w_sig), np.zeros((*w.shape[:3], 2, 0), np.uint32)
    else:
        rows, plans = np.zeros((*w.shape[:3], 0, 10), np.uint8), weight_plans(w_sign, w_sig)
    w_ops = (rows, 4 * w_exp, plans, w_exp)
    operands = (fp16_mac_operands(x), x_nans, w_ops, w_nans, (w_nans >= 0).any(axis=0),
                fp16_mac_operands(pad), int(pad_nans[0]), lanes, layer.stride_y, layer.stride_x,
                layer.dilation_y, layer.dilation_x, layer.pad_top, layer.pad_left)
    run_split(lambda a, b: _conv_fp16_rows(*operands, out, (a, b)), out.shape[0] * out.shape[2],
              min_chunk=-(-MIN_TILE // out.shape[3]))
    return out
