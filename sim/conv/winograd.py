"""Winograd convolution F(2x2, 3x3) (D_MISC_CFG CONV_MODE = WINOGRAD, nv_full).

CDMA
    Reads the feature cube whole atoms at a time (C' = channels rounded up to
    an atom, lanes past the last channel as memory holds them), frames it with
    PAD_LEFT/RIGHT/TOP/BOTTOM lines of the pad value, and folds the
    convolution stride into channels: extended channel ``(py*sx + px)*C' + c``
    at (y, x) is padded element ``(c, y*sy + py, x*sx + px)``.  The framed
    size must be a multiple of 4*stride on each axis.  fp16 data: every
    framed element (padding included) is counted for D_NAN/INF_INPUT_DATA_NUM,
    then NaNs are cleared by D_NAN_FLUSH_TO_ZERO.
CSC
    For each 2x2 output block (oy2, ox2) it reads the 4x4 input tile at
    (2*oy2, 2*ox2) of the extended cube, four channels at a time, and applies
    the pre-addition ``Bt d B`` (:func:`sim.num.csc_cvt`: integers shifted
    right by D_PRA_CFG PRA_TRUNCATE and saturated to the precision, fp16
    computed in fp17).
CMAC
    Multiplies the 16 transformed elements of 4 channels by the weights (which
    are stored already transformed, 4x4 per channel, :mod:`sim.dma.weights`),
    adds the 4 channels per position and applies the post-transform
    ``At m A`` (:data:`WINOGRAD_AT`): exact for integers;
    for fp16 the 64 lanes of one operation share a block exponent as in
    direct convolution (:mod:`sim.conv.mac_fp16`) and the transform adds the
    shifted integer products; a NaN lane makes all four outputs NaN.
CACC
    Adds the operations of successive 4-channel groups per output
    (48-bit integers, truncation by D_CLIP_CFG and int32 saturation; fp16 in
    the 48-bit float accumulator, delivered as fp32) and hands the cube to the
    SDP (in Winograd output mode, D_FEATURE_MODE_CFG WINOGRAD).

Integer Winograd equals direct convolution with the 3x3 kernel ``G^-1 w'
G^-T`` when no pre-addition truncation or saturation occurs and the weights
are exactly transformable; fp16 differs by the rounding of the pre-addition
and the block alignment.  Batches are not supported in Winograd mode.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8, Precision
from ..dma.align import align_up
from ..dma.feature import read_feature
from ..dma.weights import pack_weight_dc, unpack_weight_winograd
from ..dram import HELD
from ..errors import ConfigurationError, NotImplementedFeature
from ..jit import PARALLEL_ELEMENTS, njit, run_split
from ..num import csc_cvt, flush_nans, inf_mask, nan_mask
from ..num.blocks import winograd_pre_add_int
from ..num.mac import (
    MAC_BITS,
    MAC_NAN_EXP,
    aligned_product,
    block_exponent,
    cacc_accumulate,
    cacc_accumulate_finite,
    cacc_round_int32,
    cacc_to_fp32,
    first_nan_per_block,
    fp16_mac_operands,
    mac_nan_block,
)
from ..num.rounding import sign_extend
from ..num.word32 import xor32
from ..records import record
from .cdma import fetch_weights
from .layer import (
    CACC,
    CDMA,
    CMAC_A,
    CMAC_B,
    CSC,
    WINOGRAD,
    ConvLayer,
    check_equal,
    check_proc_precision,
    check_rules,
    check_weight_bytes,
    layer_counters,
    pad_element,
    weight_layer,
)

#: The output transform of F(2x2, 3x3): a 4x4 tile of channel sums ``m`` gives the
#: 2x2 outputs ``At m A``.  The CSC's input transform is ``sim.num.blocks._WINOGRAD_BT``.
WINOGRAD_AT = np.array([[1, 1, 1, 0],
                        [0, 1, -1, -1]], dtype=np.int64)
#: The same as one (4, 16) table: output ``2*i + j`` from tile position ``4*r + c``
#: has the weight ``At[i, r] * At[j, c]`` (the Kronecker product of At with itself).
#: The fp16 CMAC keeps 38 bits (two's complement) after each of its two stages;
#: wrapping is modular, so wrapping the one-table sum once gives the same bits.
WINOGRAD_POST = np.kron(WINOGRAD_AT, WINOGRAD_AT)


@record
class WinogradLayer:
    precision: Precision
    width: int
    height: int
    channels: int
    padded_channels: int  # C': channels rounded up to an atom
    ram: int
    addr: int
    line_stride: int
    surf_stride: int
    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    pad_value: int
    stride_x: int
    stride_y: int
    ext_width: int
    ext_height: int
    ext_channels: int
    out_width: int
    out_height: int
    pra_truncate: int
    nan_to_zero: bool
    clip_truncate: int
    weights: ConvLayer  # (K, C_ext, 4, 4) transformed weight geometry

    @property
    def kernels(self) -> int:
        return self.weights.kernels


def decode_winograd_layer(ctx) -> WinogradLayer:
    """Decode and cross-check a Winograd layer's CDMA/CSC/CMAC/CACC registers."""
    cfg = ctx.config
    cdma, csc, cacc = ctx.regs(CDMA), ctx.regs(CSC), ctx.regs(CACC)
    units = ((cdma, CDMA), (csc, CSC), (ctx.regs(CMAC_A), CMAC_A), (ctx.regs(CMAC_B), CMAC_B),
             (cacc, CACC))
    first = next(unit for blk, unit in units if blk.conv_mode)
    cfg.require("winograd", f"{first}.D_MISC_CFG_0 CONV_MODE")
    for blk, unit in units:
        if blk.conv_mode != 1:
            raise ConfigurationError(f"{unit}.D_MISC_CFG_0: CONV_MODE DIRECT while {first} is "
                                     "in Winograd mode")
    if cdma.datain_format or csc.datain_format:
        raise ConfigurationError(f"{CDMA}.D_DATAIN_FORMAT_0: Winograd needs feature input")
    proc = cdma.precision("proc_precision")
    if cdma.precision("in_precision") != proc:
        raise ConfigurationError(f"{CDMA}.D_MISC_CFG_0: Winograd input must be in the "
                                 "processing precision")
    cfg.require_precision(proc, f"{CDMA}.D_MISC_CFG_0")
    check_proc_precision(ctx, proc)
    for blk, unit in ((cdma, CDMA), (csc, CSC), (cacc, CACC)):
        if blk.reg("D_BATCH_NUMBER_0").batches:
            raise ConfigurationError(f"{unit}.D_BATCH_NUMBER_0: Winograd has no batch mode")
    # D_CVT_CFG.CVT_EN is ignored in Winograd mode: NVDLA's C-model converts data only on
    # the direct and image paths (checked by running Winograd layers with the convertor on)

    bpe = proc.bytes
    per_atom = cfg.atom_bytes // bpe
    channels = cdma.datain_channel + 1
    padded = align_up(channels, per_atom)
    pad = cdma.reg("D_ZERO_PADDING_0")
    sx, sy = cdma.conv_x_stride + 1, cdma.conv_y_stride + 1
    width, height = cdma.datain_width + 1, cdma.datain_height + 1
    total_w = pad.pad_left + width + pad.pad_right
    total_h = pad.pad_top + height + pad.pad_bottom
    # padded input in 4*stride steps, output a multiple of 4, the CBUF holding the input
    # and a kernel group (sim.rules: the layers NVIDIA's C-model never completes)
    check_rules(ctx, WINOGRAD)
    ext_w, ext_h, ext_c = total_w // sx, total_h // sy, padded * sx * sy
    kernels = cdma.weight_kernel + 1
    out_w = csc.reg("D_DATAOUT_SIZE_0_0").dataout_width + 1
    out_h = csc.reg("D_DATAOUT_SIZE_0_0").dataout_height + 1
    check_equal((
        (f"{CDMA}.D_DATAIN_SIZE_EXT_0_0 DATAIN_WIDTH_EXT", cdma.datain_width_ext + 1, ext_w),
        (f"{CDMA}.D_DATAIN_SIZE_EXT_0_0 DATAIN_HEIGHT_EXT", cdma.datain_height_ext + 1, ext_h),
        (f"{CSC}.D_DATAIN_SIZE_EXT_0_0 DATAIN_WIDTH_EXT", csc.datain_width_ext + 1, ext_w),
        (f"{CSC}.D_DATAIN_SIZE_EXT_0_0 DATAIN_HEIGHT_EXT", csc.datain_height_ext + 1, ext_h),
        (f"{CSC}.D_DATAIN_SIZE_EXT_1_0 DATAIN_CHANNEL_EXT", csc.datain_channel_ext + 1, ext_c),
        (f"{CSC}.D_WEIGHT_SIZE_EXT_0_0 WEIGHT_WIDTH_EXT", csc.weight_width_ext + 1, 4),
        (f"{CSC}.D_WEIGHT_SIZE_EXT_0_0 WEIGHT_HEIGHT_EXT", csc.weight_height_ext + 1, 4),
        (f"{CSC}.D_WEIGHT_SIZE_EXT_1_0 WEIGHT_CHANNEL_EXT", csc.weight_channel_ext + 1, ext_c),
        (f"{CSC}.D_WEIGHT_SIZE_EXT_1_0 WEIGHT_KERNEL",
         csc.reg("D_WEIGHT_SIZE_EXT_1_0").weight_kernel + 1, kernels),
        (f"{CSC}.D_DATAOUT_SIZE_1_0 DATAOUT_CHANNEL",
         csc.reg("D_DATAOUT_SIZE_1_0").dataout_channel + 1, kernels),
        (f"{CACC}.D_DATAOUT_SIZE_0_0 DATAOUT_WIDTH", cacc.dataout_width + 1, out_w),
        (f"{CACC}.D_DATAOUT_SIZE_0_0 DATAOUT_HEIGHT", cacc.dataout_height + 1, out_h),
        (f"{CACC}.D_DATAOUT_SIZE_1_0 DATAOUT_CHANNEL", cacc.dataout_channel + 1, kernels),
        (f"{CDMA}.D_WEIGHT_SIZE_0_0 BYTE_PER_KERNEL", cdma.byte_per_kernel + 1, 16 * ext_c * bpe),
        (f"{CSC}.D_WEIGHT_BYTES_0", csc.reg("D_WEIGHT_BYTES_0").weight_bytes,
         cdma.reg("D_WEIGHT_BYTES_0").weight_bytes),
    ))
    if out_w + 4 > ext_w or out_h + 4 > ext_h:
        raise ConfigurationError(
            f"{CSC}.D_DATAOUT_SIZE_0_0: Winograd output {out_w}x{out_h} must leave room for "
            f"4x4 tiles in the {ext_w}x{ext_h} extended input (at most {ext_w - 4}x{ext_h - 4})")
    weights = weight_layer(ctx, proc, in_width=ext_w, in_height=ext_h, channels=ext_c,
                           kernel_width=4, kernel_height=4, out_width=out_w, out_height=out_h)
    check_weight_bytes(weights, weights.byte_per_kernel)
    return WinogradLayer(
        precision=proc, width=width, height=height, channels=channels, padded_channels=padded,
        ram=cdma.datain_ram_type, addr=(cdma.datain_addr_high_0 << 32) | cdma.datain_addr_low_0,
        line_stride=cdma.reg("D_LINE_STRIDE_0").line_stride, surf_stride=cdma.surf_stride,
        pad_left=pad.pad_left, pad_right=pad.pad_right, pad_top=pad.pad_top,
        pad_bottom=pad.pad_bottom, pad_value=cdma.reg("D_ZERO_PADDING_VALUE_0").pad_value,
        stride_x=sx, stride_y=sy, ext_width=ext_w, ext_height=ext_h, ext_channels=ext_c,
        out_width=out_w, out_height=out_h, pra_truncate=csc.pra_truncate,
        nan_to_zero=bool(cdma.nan_to_zero), clip_truncate=cacc.clip_truncate, weights=weights)


def extended_input(ctx, layer: WinogradLayer) -> tuple[np.ndarray, dict]:
    """The CDMA's framed, stride-folded cube (C_ext, H_ext, W_ext) and its data counters."""
    mem = ctx.memory(layer.ram, "NVDLA_CDMA.D_DAIN_RAM_TYPE_0.DATAIN_RAM_TYPE")
    cube = read_feature(mem, layer.addr, (layer.padded_channels, layer.height, layer.width),
                        layer.precision, ctx.config.atom_bytes, layer.line_stride,
                        layer.surf_stride, 0, 1, what=f"{CDMA}.D_DAIN_ADDR", mode=HELD)
    cp = layer.padded_channels
    th = layer.pad_top + layer.height + layer.pad_bottom
    tw = layer.pad_left + layer.width + layer.pad_right
    framed = np.empty((cp, th, tw), dtype=cube.dtype)
    framed[...] = pad_element(layer.pad_value, layer.precision)
    framed[:, layer.pad_top: layer.pad_top + layer.height,
           layer.pad_left: layer.pad_left + layer.width] = cube
    counters = {}
    if layer.precision == FP16:
        counters["D_NAN_INPUT_DATA_NUM_0"] = int(nan_mask(framed).sum())
        counters["D_INF_INPUT_DATA_NUM_0"] = int(inf_mask(framed).sum())
        if layer.nan_to_zero:
            framed = flush_nans(framed)
    sx, sy = layer.stride_x, layer.stride_y
    ext = framed.reshape(cp, th // sy, sy, tw // sx, sx).transpose(2, 4, 0, 1, 3)
    return np.ascontiguousarray(ext.reshape(layer.ext_channels, th // sy, tw // sx)), counters


def _tile_index(layer: WinogradLayer) -> tuple[np.ndarray, np.ndarray]:
    """Rows (4, oh2) and columns (4, ow2) of the extended cube each 4x4 tile reads."""
    oh2, ow2 = layer.out_height // 2, layer.out_width // 2
    at = np.arange(4)[:, None]
    return 2 * np.arange(oh2)[None, :] + at, 2 * np.arange(ow2)[None, :] + at


def pre_added_fp16(ext: np.ndarray, layer: WinogradLayer) -> np.ndarray:
    """CSC pre-addition of every 4x4 tile of an fp16 layer: (C_ext, H'/2, W'/2, 16) fp16 bits."""
    rows, cols = _tile_index(layer)
    tiles = ext[:, rows.T[:, None, :, None], cols.T[None, :, None, :]]  # (C, oh2, ow2, 4, 4)
    shape = (*tiles.shape[:3], 16)
    parts = {}

    def convert(start: int, stop: int) -> None:  # channels are independent
        parts[start] = csc_cvt(data_in=tiles[start:stop].reshape(-1, 16).view(np.uint16),
                               precision=FP16.code,
                               truncate=layer.pra_truncate)["out"].reshape(-1, *shape[1:])

    run_split(convert, tiles.shape[0], min_chunk=max(1, PARALLEL_ELEMENTS // tiles[0].size))
    return np.concatenate([parts[start] for start in sorted(parts)])


def pre_added_int(ext: np.ndarray, layer: WinogradLayer) -> np.ndarray:
    """CSC pre-addition of every 4x4 tile of an integer layer: (4, 4, C_ext, H'/2, W'/2) int16,
    tile row and column first (the order of the channel sums, one per tile position)."""
    rows, cols = _tile_index(layer)
    channels = ext.shape[0]
    out = np.empty((4, 4, channels, rows.shape[1], cols.shape[1]), np.int16)
    bits = 8 if layer.precision == INT8 else 16

    def convert(start: int, stop: int) -> None:  # channels are independent
        tiles = ext[start:stop][:, rows[:, None, :, None], cols[None, :, None, :]]
        out[:, :, start:stop] = winograd_pre_add_int(
            np.moveaxis(tiles, 0, 2), layer.pra_truncate & 3, bits)

    run_split(convert, channels, min_chunk=max(1, PARALLEL_ELEMENTS // (16 * out[0, 0, 0].size)))
    return out


def winograd_int(tiles: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Exact integer sums (K, H', W'): sum over channels of At (d' . w') A.

    ``tiles`` from :func:`pre_added_int`, ``weights`` (K, C_ext, 4, 4).  The
    channel sums are one float64 matrix product per tile position: products of
    16-bit values (below 2**30) summed over fewer than 2**22 channels stay below
    2**52, where float64 holds every integer exactly.  The post-transform then
    adds the exact integers.
    """
    _, _, c, oh2, ow2 = tiles.shape
    if c >= 1 << 22:  # 13-bit channel counts times the folded stride never get here
        raise NotImplementedFeature("CMAC", f"Winograd sums over {c} channels")
    k = weights.shape[0]
    w = weights.reshape(k, c, 16).transpose(2, 0, 1).astype(np.float64)  # (16, K, C)
    d = tiles.reshape(16, c, oh2 * ow2).astype(np.float64)
    m = np.matmul(w, d).astype(np.int64).reshape(4, 4, k, oh2, ow2)  # tile row, column
    rows = np.tensordot(WINOGRAD_AT, m, axes=(1, 0))  # At m: (i, column, K, oh2, ow2)
    out = np.tensordot(WINOGRAD_AT, rows, axes=(1, 1))  # (At m) A: (j, i, K, oh2, ow2)
    return out.transpose(2, 3, 1, 4, 0).reshape(k, 2 * oh2, 2 * ow2)


@njit
def _winograd_fp16_rows(d, d_nan, w, w_nan, out, rows):
    """fp32 bit patterns into ``out`` (K, oh2, ow2, 4), tile rows ``rows[0]:rows[1]``.

    CACC over 4-channel groups of CMAC operations.

    ``d`` = (sign, significand, exponent) arrays (oh2, ow2, groups, 64) of the
    pre-added tiles, ``w`` the same (K, groups, 64) of the weights (CMAC
    operands, lane = 16 * channel in the group + tile position); ``d_nan``
    (oh2, ow2, groups) and ``w_nan`` (K, groups) the first NaN of each block,
    -1 if none.
    """
    d_sign, d_sig, d_exp = d
    w_sign, w_sig, w_exp = w
    oh2, ow2, groups, lanes = d_sig.shape
    n_k = w_sig.shape[0]
    for y in range(rows[0], rows[1]):
        sums = np.zeros(16, np.int64)
        res = np.zeros(4, np.int64)
        acc_e = np.zeros(4, np.int64)
        acc_m = np.zeros(4, np.int64)
        for x in range(ow2):
            for k in range(n_k):
                acc_e[:] = 0
                acc_m[:] = 0
                nan_seen = False
                for g in range(groups):
                    nan_bits = w_nan[k, g]  # weights are scanned before data
                    if nan_bits < 0:
                        nan_bits = d_nan[y, x, g]
                    if nan_bits >= 0:
                        nan_seen = True
                        for o in range(4):
                            acc_e[o], acc_m[o] = cacc_accumulate(
                                acc_e[o], acc_m[o], MAC_NAN_EXP, mac_nan_block(nan_bits))
                        continue
                    ds, dm, de = d_sign[y, x, g], d_sig[y, x, g], d_exp[y, x, g]
                    ws, wm, we = w_sign[k, g], w_sig[k, g], w_exp[k, g]
                    emax = block_exponent(de, we)
                    sums[:] = 0  # per tile position: the 4 channels' aligned products
                    for c in range(4):
                        for p in range(16):
                            j = 16 * c + p
                            sums[p] += np.int32(aligned_product(
                                xor32(ds[j], ws[j]), wm[j], dm[j], de[j] + we[j], emax))
                    for o in range(4):  # At sums A, kept to the block's 38 bits
                        total = np.int64(0)
                        for p in range(16):
                            total += WINOGRAD_POST[o, p] * sums[p]
                        res[o] = sign_extend(total, MAC_BITS)
                    for o in range(4):
                        if nan_seen:
                            acc_e[o], acc_m[o] = cacc_accumulate(acc_e[o], acc_m[o],
                                                                 (emax * 4) & 63, res[o])
                        else:
                            acc_e[o], acc_m[o] = cacc_accumulate_finite(
                                acc_e[o], acc_m[o], (emax * 4) & 63, res[o])
                for o in range(4):
                    out[k, y, x, o] = cacc_to_fp32(acc_e[o], acc_m[o])


def _first_nan_in_cmac_order(blocks: np.ndarray) -> np.ndarray:
    """First NaN of each (..., 4 channels, 16 positions) block in the CMAC's lane order
    (lane = 4 * position + channel), -1 if none."""
    lanes = blocks.swapaxes(-1, -2).reshape(*blocks.shape[:-2], 64)
    return first_nan_per_block(lanes, nan_mask(lanes), 64)[..., 0]


def winograd_fp16(tiles: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """fp32 bit patterns (K, H', W') of an fp16 Winograd layer.

    ``tiles`` (C, oh2, ow2, 16) pre-added fp16 bits, ``weights`` (K, C, 4, 4).
    A CMAC block is 4 channels of the 16 tile positions.
    """
    n_c, oh2, ow2, _ = tiles.shape
    n_k = weights.shape[0]
    groups = n_c // 4
    # (..., channel, position) blocks: channel-major lanes for the products
    d = np.asarray(tiles, np.uint16).reshape(groups, 4, oh2, ow2, 16).transpose(2, 3, 0, 1, 4)
    w = np.asarray(weights, np.uint16).reshape(n_k, groups, 4, 16)
    d_ops = fp16_mac_operands(np.ascontiguousarray(d).reshape(oh2, ow2, groups, 64))
    w_ops = fp16_mac_operands(w.reshape(n_k, groups, 64))
    operands = (d_ops, _first_nan_in_cmac_order(d), w_ops, _first_nan_in_cmac_order(w))
    out = np.zeros((n_k, oh2, ow2, 4), dtype=np.uint32)
    run_split(lambda a, b: _winograd_fp16_rows(*operands, out, (a, b)), oh2)
    return out.reshape(n_k, oh2, ow2, 2, 2).transpose(0, 1, 3, 2, 4).reshape(
        n_k, 2 * oh2, 2 * ow2)


def fetch_winograd_weights(ctx, layer: WinogradLayer) -> tuple[np.ndarray, dict]:
    """Transformed weights (K, C_ext, 4, 4) from the Winograd weight layout."""
    dc, counters = fetch_weights(ctx, layer.weights)  # same bytes read in the DC order
    stream = pack_weight_dc(dc, layer.precision, ctx.config)
    shape = (layer.kernels, layer.ext_channels, 4, 4)
    return unpack_weight_winograd(stream, shape, layer.precision, ctx.config), counters


def compute_winograd_layer(ctx) -> tuple[np.ndarray, dict]:
    """CACC's output cube (K, H', W') of a Winograd layer and its counters."""
    layer = decode_winograd_layer(ctx)
    ext, data_counters = extended_input(ctx, layer)
    weights, weight_counters = fetch_winograd_weights(ctx, layer)
    counters = layer_counters(data_counters, weight_counters)
    if layer.precision == FP16:
        return winograd_fp16(pre_added_fp16(ext, layer), weights), counters
    out, saturated = cacc_round_int32(winograd_int(pre_added_int(ext, layer), weights),
                                      layer.clip_truncate)
    counters[(CACC, "D_OUT_SATURATION_0")] = saturated
    return out, counters
