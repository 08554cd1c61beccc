"""Deconvolution (transposed convolution) as NVDLA runs it: strided weight split.

NVDLA has no deconvolution mode in hardware.  Its software splits a
transposed convolution of stride (sx, sy) into ``sx*sy`` ordinary direct
convolutions, one per output phase (py, px):

* the kernel is split by the stride (:func:`sim.dma.weights.split_deconv_weights`:
  phase (py, px) keeps ``w[:, :, py::sy, px::sx]``, zero-filled to
  ``ceil(R/sy) x ceil(S/sx)``) and each part is stored in the DC layout with
  H and W scanned backwards (:func:`sim.dma.weights.pack_weight_deconv`), so
  the CSC sees the part flipped;
* each part runs as a direct-convolution layer (stride 1, dilation 1) on the
  whole input padded by ``ceil(R/sy) - 1`` lines and ``ceil(S/sx) - 1``
  columns of zeros on every side;
* its output holds the deconvolution's pixels ``(q*sy + py, p*sx + px)``; the
  phases are interleaved in memory by the output strides of SDP/Rubik
  (Rubik's contract mode), which is data movement only.

So the arithmetic of a deconvolution layer is exactly that of the direct
convolution layers it is made of (:mod:`sim.conv.mac_int`,
:mod:`sim.conv.mac_fp16`); :func:`deconv_phases` gives each layer's
parameters and :func:`interleave` assembles their outputs, for firmware
writers and tests.
"""

from __future__ import annotations

import numpy as np

from ..dma.weights import split_deconv_weights
from ..records import record


@record
class DeconvPhase:
    phase_y: int
    phase_x: int
    kernel: np.ndarray  # (K, C, R', S') as the CSC sees it (split part, flipped)
    pad_y: int  # zero lines above and below the input
    pad_x: int  # zero columns left and right of the input


def deconv_phases(w, stride_x: int, stride_y: int) -> list[DeconvPhase]:
    """The direct-convolution layers of a transposed convolution, phase (y, x) order."""
    parts = split_deconv_weights(w, stride_x, stride_y)
    out = []
    for i, part in enumerate(parts):
        py, px = divmod(i, stride_x)
        rr, ss = part.shape[2], part.shape[3]
        out.append(DeconvPhase(py, px, np.ascontiguousarray(part[:, :, ::-1, ::-1]), rr - 1,
                               ss - 1))
    return out


def deconv_output_size(in_h: int, in_w: int, r: int, s: int, stride_x: int, stride_y: int):
    """(H, W) of the transposed convolution: (in - 1) * stride + kernel."""
    return (in_h - 1) * stride_y + r, (in_w - 1) * stride_x + s


def interleave(outputs, shape, stride_x: int, stride_y: int) -> np.ndarray:
    """Assemble (K, H, W) from the phase layers' outputs (in :func:`deconv_phases` order)."""
    k, h, w = shape
    out = np.zeros((k, h, w), dtype=np.asarray(outputs[0]).dtype)
    for i, phase_out in enumerate(outputs):
        py, px = divmod(i, stride_x)
        rows = len(range(py, h, stride_y))
        cols = len(range(px, w, stride_x))
        out[:, py::stride_y, px::stride_x] = np.asarray(phase_out)[:, :rows, :cols]
    return out
