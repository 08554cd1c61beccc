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

from ..jit import njit, prange
from ..num.mac import (
    MAC_NAN_EXP,
    cacc_accumulate,
    cacc_to_fp32,
    fp16_block_dot,
    fp16_mac_operands,
    mac_nan_block,
)
from ..num.rounding import sign_extend
from .layer import ConvLayer


@njit(parallel=True)
def _conv_fp16_kernel(x, w, stride_y, stride_x, dil_y, dil_x, top, left, pad_bits,
                      out_h, out_w, block):
    """x: (N, H, W, C) fp16 bits; w: (K, R, S, C) fp16 bits -> (N, K, H', W') fp32 bits."""
    n_b, in_h, in_w, n_c = x.shape
    n_k, n_r, n_s, _ = w.shape
    xf = x.ravel()
    wf = w.ravel()
    xz, xn, xsg, xm, xe = fp16_mac_operands(xf)
    wz, wn, wsg, wm, we = fp16_mac_operands(wf)
    pad = np.array([pad_bits], dtype=np.uint16)
    pz, pn, psg, pm, pe = fp16_mac_operands(pad)
    groups = (n_c + block - 1) // block
    # first weight NaN of every block (weights are scanned before data), -1 if none
    wnan = np.full((n_k, groups, n_r, n_s), -1, np.int64)
    for k in range(n_k):
        for r in range(n_r):
            for s in range(n_s):
                base = ((k * n_r + r) * n_s + s) * n_c
                for g in range(groups):
                    for c in range(g * block, min(n_c, g * block + block)):
                        if wn[base + c]:
                            wnan[k, g, r, s] = wf[base + c]
                            break
    out = np.zeros((n_b, n_k, out_h, out_w), dtype=np.uint32)
    for row in prange(n_b * out_h):
        b = row // out_h
        oy = row % out_h
        d_z = np.zeros(block, np.bool_)
        d_s = np.zeros(block, np.int64)
        d_m = np.zeros(block, np.int64)
        d_e = np.zeros(block, np.int64)
        lane_e = np.zeros(block, np.int64)
        acc_e = np.zeros(n_k, np.int64)
        acc_m = np.zeros(n_k, np.int64)
        for ox in range(out_w):
            acc_e[:] = 0
            acc_m[:] = 0
            for g in range(groups):
                c0 = g * block
                lanes = min(n_c, c0 + block) - c0
                for r in range(n_r):
                    iy = oy * stride_y + r * dil_y - top
                    for s in range(n_s):
                        ix = ox * stride_x + s * dil_x - left
                        # the data lanes of this block, and their first NaN
                        dnan = -1
                        if 0 <= iy < in_h and 0 <= ix < in_w:
                            base = ((b * in_h + iy) * in_w + ix) * n_c + c0
                            for j in range(lanes):
                                d_z[j] = xz[base + j]
                                d_s[j] = xsg[base + j]
                                d_m[j] = xm[base + j]
                                d_e[j] = xe[base + j]
                                if dnan < 0 and xn[base + j]:
                                    dnan = xf[base + j]
                        else:
                            for j in range(lanes):
                                d_z[j] = pz[0]
                                d_s[j] = psg[0]
                                d_m[j] = pm[0]
                                d_e[j] = pe[0]
                            if pn[0]:
                                dnan = pad_bits
                        for k in range(n_k):
                            nan_bits = wnan[k, g, r, s]
                            if nan_bits < 0:
                                nan_bits = dnan
                            if nan_bits >= 0:
                                acc_e[k], acc_m[k] = cacc_accumulate(
                                    acc_e[k], acc_m[k], MAC_NAN_EXP, mac_nan_block(nan_bits))
                                continue
                            wbase = ((k * n_r + r) * n_s + s) * n_c + c0
                            emax, total = fp16_block_dot(d_z, d_s, d_m, d_e, wz, wsg, wm, we,
                                                         wbase, lanes, lane_e)
                            if total != 0:
                                acc_e[k], acc_m[k] = cacc_accumulate(
                                    acc_e[k], acc_m[k], (emax * 4) & 63, sign_extend(total, 38))
            for k in range(n_k):
                out[b, k, oy, ox] = cacc_to_fp32(acc_e[k], acc_m[k])
    return out


def conv_fp16(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer, block: int) -> np.ndarray:
    """fp32 bit patterns (N, K, H', W') as uint32: CACC's output for an fp16 layer.

    ``cube`` is (N, C, H, W) fp16 bits after the CDMA (NaN flush applied);
    ``weights`` (K, C, R, S) fp16 bits; ``block`` is the MAC atomic C.
    """
    x = np.ascontiguousarray(np.asarray(cube, dtype=np.uint16).transpose(0, 2, 3, 1))
    w = np.ascontiguousarray(np.asarray(weights, dtype=np.uint16).transpose(0, 2, 3, 1))
    return _conv_fp16_kernel(
        x, w, layer.stride_y, layer.stride_x, layer.dilation_y, layer.dilation_x,
        layer.pad_top, layer.pad_left, np.int64(layer.pad_value & 0xFFFF), layer.out_height,
        layer.out_width, block)
