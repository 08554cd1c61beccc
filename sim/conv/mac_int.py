"""CSC + CMAC + CACC for int8/int16 direct convolution, as exact matrix products.

The CMAC multiplies int8/int16 data and weights exactly and CACC adds the
partial sums of every kernel position and channel group in a 48-bit
saturating accumulator.  Integer addition is associative, so the result is
the exact convolution sum as long as no partial sum can leave the 48-bit
range.  BYTE_PER_KERNEL has 18 bits, so a kernel has fewer than 2**17
int16 elements and ``|sum| < 2**17 * 2**30 = 2**47``: the 48-bit accumulator
can never saturate with legal registers.  :func:`conv_sum` still checks the
bound (``max|x| * sum|w|`` per kernel) before relying on it.

The sum is computed as one matrix product of the weights (K, C*R*S) with the
im2col matrix (C*R*S, H'*W') of the padded input: float32 BLAS when the
bound is below 2**24, float64 below 2**53 (both exact for integers in that
range), int64 otherwise.

CACC then delivers ``saturate_int32(round_half_away(acc / 2**CLIP_TRUNCATE))``
to the SDP and counts the saturated values (D_OUT_SATURATION):
:func:`sim.num.mac.cacc_round_int32`.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import NotImplementedFeature
from .layer import ConvLayer

ACC_BITS = 48


def pad_value_of(layer: ConvLayer) -> int:
    """The pad element: the low byte (int8) or the 16-bit value (int16), signed."""
    if layer.element_bytes == 1:
        v = layer.pad_value & 0xFF
        return v - 256 if v & 0x80 else v
    v = layer.pad_value & 0xFFFF
    return v - 65536 if v & 0x8000 else v


def padded_input(cube: np.ndarray, layer: ConvLayer, pad) -> tuple[np.ndarray, int, int]:
    """Input (N, C, Hp, Wp) framed by pad values so every CSC coordinate is inside.

    Returns the array and the offsets (top, left) of input pixel (0, 0).
    """
    n, c, h, w = cube.shape
    top, left = layer.pad_top, layer.pad_left
    need_h = ((layer.out_height - 1) * layer.stride_y
              + (layer.kernel_height - 1) * layer.dilation_y + 1)
    need_w = ((layer.out_width - 1) * layer.stride_x
              + (layer.kernel_width - 1) * layer.dilation_x + 1)
    hp, wp = max(need_h, top + h), max(need_w, left + w)
    out = np.empty((n, c, hp, wp), dtype=cube.dtype)
    out[...] = pad
    out[:, :, top: top + h, left: left + w] = cube
    return out, top, left


def im2col(xp: np.ndarray, layer: ConvLayer) -> np.ndarray:
    """View (N, C, R, S, H', W') of the padded input: element [n,c,r,s,y,x] is
    xp[n, c, y*stride_y + r*dil_y, x*stride_x + s*dil_x]."""
    n, c, hp, wp = xp.shape
    sn, sc, sh, sw = xp.strides
    shape = (n, c, layer.kernel_height, layer.kernel_width, layer.out_height, layer.out_width)
    strides = (sn, sc, sh * layer.dilation_y, sw * layer.dilation_x, sh * layer.stride_y,
               sw * layer.stride_x)
    return as_strided(xp, shape=shape, strides=strides, writeable=False)


def conv_sum(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer) -> np.ndarray:
    """Exact convolution sums (N, K, H', W') as int64."""
    pad = pad_value_of(layer)
    xp, _, _ = padded_input(cube, layer, pad)
    k = weights.shape[0]
    n = cube.shape[0]
    crs = weights.shape[1] * weights.shape[2] * weights.shape[3]
    pixels = layer.out_height * layer.out_width
    wmat = weights.reshape(k, crs)
    xmax = max(int(np.abs(xp).max(initial=0)), abs(pad))
    wsum = int(np.abs(wmat.astype(np.int64)).sum(axis=1).max(initial=0))
    bound = xmax * wsum
    if bound >= 1 << (ACC_BITS - 1):
        # unreachable: BYTE_PER_KERNEL < 2**18 bounds |sum| below 2**47
        raise NotImplementedFeature("CACC", "48-bit accumulator saturation")
    if bound < 1 << 24:
        dtype = np.float32
    elif bound < 1 << 53:
        dtype = np.float64
    else:
        dtype = np.int64
    cols = im2col(xp, layer)
    wf = wmat.astype(dtype)
    out = np.empty((n, k, pixels), dtype=np.int64)
    for b in range(n):
        col = cols[b].astype(dtype, order="C").reshape(crs, pixels)
        out[b] = wf @ col
    return out.reshape(n, k, layer.out_height, layer.out_width)
