"""CSC + CMAC + CACC for int8/int16 direct convolution, as exact matrix products.

The CMAC multiplies int8/int16 data and weights exactly and CACC adds the
partial sums of every kernel position and channel group in a 48-bit
saturating accumulator.  Integer addition is associative, so the result is
the exact convolution sum as long as no partial sum can leave the 48-bit
range.  BYTE_PER_KERNEL has 18 bits, so a kernel has fewer than 2**17
int16 elements and ``|sum| < 2**17 * 2**30 = 2**47``: the 48-bit accumulator
can never saturate with legal registers.  :func:`conv_sum` still checks the
bound (``max|x| * sum|w|`` per kernel) before relying on it.

The sum is computed as matrix products of the weights (K, C*R*S) with the
im2col matrix (C*R*S, H'*W') of the padded input, in floating point wherever
that is exact.  Exact, because every value BLAS forms for an output, in
whatever order or grouping (FMA included), is an integer: a sum of a subset
of that output's products ``x * w``, so at most ``max|x| * sum|w|`` of its
kernel in magnitude -- and a float type holds every integer below 2**24
(float32) or 2**53 (float64), and an IEEE operation whose exact result it
holds returns that result.  So (:func:`sum_types`):

* float32 (twice float64's speed) when ``max|x| * sum|w| < 2**24`` for every
  kernel: most int8 layers;
* else, for layers of many output pixels, float32 on row chunks of the
  C*R*S axis each within 2**24 (:func:`reduction_chunks`), the chunks'
  results added in float64 (partial sums below 2**47, so exact);
* else float64 (the bound is below 2**47), int64 past 2**53 (unreachable
  with legal registers, kept as the safe path).

CACC then delivers ``saturate_int32(round_half_away(acc / 2**CLIP_TRUNCATE))``
to the SDP and counts the saturated values (D_OUT_SATURATION):
:func:`sim.num.mac.cacc_round_int32`.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..dma.align import ceil_div
from ..errors import NotImplementedFeature
from ..jit import run_split
from ..num.mac import cacc_round_int32, cacc_round_is_identity
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

    Returns the array and the offsets (top, left) of input pixel (0, 0): ``cube`` itself
    when the layer reads no pad element (the caller only reads it).
    """
    n, c, h, w = cube.shape
    top, left = layer.pad_top, layer.pad_left
    need_h = ((layer.out_height - 1) * layer.stride_y
              + (layer.kernel_height - 1) * layer.dilation_y + 1)
    need_w = ((layer.out_width - 1) * layer.stride_x
              + (layer.kernel_width - 1) * layer.dilation_x + 1)
    hp, wp = max(need_h, top + h), max(need_w, left + w)
    if (hp, wp, top, left) == (h, w, 0, 0):  # no pad element is read (1x1 kernels): no copy
        return cube, 0, 0
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


FLOAT32_EXACT = 1 << 24  # float32 holds every integer below this (24-bit significand)
FLOAT64_EXACT = 1 << 53
MIN_CHUNK_ROWS = 128  # a float32 chunk shorter than this (on average) costs more than float64
MIN_CHUNK_PIXELS = 1024  # fewer output pixels: splitting the product costs what float32 saves


def magnitude(a: np.ndarray) -> int:
    """max |a| of an integer array, from its max and min (np.abs wraps int8 -128 to itself)."""
    return max(int(a.max(initial=0)), -int(a.min(initial=0)))


def kernel_abs_sums(wmat: np.ndarray) -> np.ndarray:
    """sum_j |w[k, j]| per kernel, int64.

    np.abs of int8/int16 wraps only the most negative value to itself, whose bits read
    unsigned are its magnitude (2**7, 2**15): so |w| is np.abs viewed unsigned, with no
    wider copy.  int8 sums are added in int32 (faster), exact while C*R*S * 2**7 < 2**31.
    """
    unsigned = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}.get(wmat.dtype)
    if unsigned is None:  # wider values (as the tests give): |w| cannot wrap
        return np.abs(wmat.astype(np.int64)).sum(axis=1)
    wide = np.int32 if unsigned is np.uint8 and wmat.shape[1] < 1 << 24 else np.int64
    return np.abs(wmat).view(unsigned).sum(axis=1, dtype=wide).astype(np.int64)


def reduction_chunks(wmat: np.ndarray, xmax: int) -> list[tuple[int, int]] | None:
    """Row ranges [a, b) of the C*R*S axis in which float32 products are exact, or None.

    Why exact: for output (k, p) a chunk's terms are the integers ``x[j, p] * w[k, j]``
    for j in [a, b), each at most ``xmax * |w[k, j]|`` in magnitude.  However BLAS
    groups, orders or fuses (FMA) the additions, every value it forms is the sum of
    a subset of these terms, so at most ``xmax * sum_{j in [a, b)} |w[k, j]|``.  The
    chunks are cut so that this bound is below 2**24 for every kernel k: every
    product and partial sum is then an integer float32 represents exactly, and an
    IEEE operation whose exact result is representable returns it unrounded.
    Chunks are cut greedily (each as long as every kernel's bound allows); None
    when they would average fewer than MIN_CHUNK_ROWS rows (a single term of 2**24
    or more, as int16 data has, makes any chunk impossible).
    """
    k, crs = wmat.shape
    limit = (FLOAT32_EXACT - 1) // max(xmax, 1)  # largest |w| sum a chunk may have
    wide = np.int16 if wmat.dtype.itemsize == 1 else np.int32
    cum = np.zeros((k, crs + 1), dtype=np.int64)  # cum[k, j]: sum of |w[k, :j]|
    np.cumsum(np.abs(wmat.astype(wide)), axis=1, dtype=np.int64, out=cum[:, 1:])
    # all kernels' running sums in one sorted vector: kernel i's shifted past kernel i-1's
    span = int(cum[:, -1].max(initial=0)) + limit + 1
    shift = np.arange(k, dtype=np.int64) * span
    flat = (cum + shift[:, None]).ravel()
    row0 = np.arange(k, dtype=np.int64) * (crs + 1)
    most = max(1, crs // MIN_CHUNK_ROWS)
    chunks: list[tuple[int, int]] = []
    start = 0
    while start < crs:
        if len(chunks) == most:
            return None
        # per kernel, the last row end whose sum from ``start`` stays within the limit
        reach = np.searchsorted(flat, shift + cum[:, start] + limit, side="right") - 1 - row0
        end = min(int(reach.min(initial=crs)), crs)
        if end <= start:  # one term alone is too large
            return None
        chunks.append((start, end))
        start = end
    return chunks


def _float32_by_magnitudes(xmax: int, wmax: int, crs: int) -> bool:
    """:func:`sum_types`' cheapest test: ``xmax * max|w| * C*R*S`` bounds every kernel's
    sum, and float32 holds it whole."""
    return xmax * wmax * crs < FLOAT32_EXACT


def sum_types(wmat: np.ndarray, xmax: int, pixels: int, prep: WeightPrep | None = None
              ) -> tuple[type, list[tuple[int, int]]]:
    """The dtype of the products and the C*R*S row chunks (see the module's docstring).

    Cheapest test first: ``xmax * max|w| * C*R*S`` bounds every kernel's sum.  ``prep``:
    the weights' magnitude and largest kernel |w| sum, computed already.
    """
    k, crs = wmat.shape
    whole = [(0, crs)]
    if _float32_by_magnitudes(xmax, magnitude(wmat) if prep is None else prep.magnitude, crs):
        return np.float32, whole
    abs_max = (int(kernel_abs_sums(wmat).max(initial=0)) if prep is None
               else prep.abs_sum_max)
    bound = xmax * abs_max
    if bound >= 1 << (ACC_BITS - 1):
        # unreachable: BYTE_PER_KERNEL < 2**18 bounds |sum| below 2**47
        raise NotImplementedFeature("CACC", "48-bit accumulator saturation")
    if bound < FLOAT32_EXACT:
        return np.float32, whole
    if bound >= FLOAT64_EXACT:
        return np.int64, whole
    chunks = reduction_chunks(wmat, xmax) if pixels >= MIN_CHUNK_PIXELS else None
    return (np.float64, whole) if chunks is None else (np.float32, chunks)


def data_sum_types(wmat: np.ndarray, xp: np.ndarray, pad: int, pixels: int,
                   prep: WeightPrep | None = None) -> tuple[type, list[tuple[int, int]]]:
    """:func:`sum_types` of the data ``xp`` framed by ``pad`` values.

    The data's magnitude takes two passes over it, and the largest magnitude its dtype
    holds often settles the type already: when float32 holds ``dtype max * max|w| *
    C*R*S``, it holds the bound of the data's own magnitude (no larger) too, and
    sum_types' first test answers float32 whole either way.
    """
    crs = wmat.shape[1]
    wmax = magnitude(wmat) if prep is None else prep.magnitude
    if xp.dtype.kind in "iu":
        info = np.iinfo(xp.dtype)
        widest = max(int(info.max), -int(info.min), abs(pad))
        if _float32_by_magnitudes(widest, wmax, crs):
            return np.float32, [(0, crs)]
    return sum_types(wmat, max(magnitude(xp), abs(pad)), pixels, prep)


#: A thread's share of a layer's multiply-accumulates, at least (about a millisecond):
#: fewer are not worth handing to another thread.
PARALLEL_MACS = 1 << 22
#: Output pixels a thread's share of rows must have for the threads to share the rows
#: rather than the kernels: each then copies its own part of the im2col matrix (a copy
#: one thread would otherwise make for all), but every thread packs all the weights,
#: which for few pixels costs more than the copy it shares.
ROW_SPLIT_PIXELS = 256
#: The most bytes of im2col columns a share of output rows makes at once: the product then
#: reads them from the cache it wrote them to (ResNet-50's 7x7 image layer and 3x3 layers
#: of 56x56 pixels ran a quarter faster in pieces of 1 MiB than in whole halves), and a
#: process's first layers touch less fresh memory.
COLUMN_PIECE_BYTES = 1 << 20
#: Output pixels of a piece, at least: narrower products run below the BLAS's speed
#: (3x3 layers of 28x28 pixels were slower in pieces of 224 pixels than in halves).
MIN_PIECE_PIXELS = 512


def kernels_shared(layer: ConvLayer) -> bool:
    """Whether the threads share a layer's kernels (few output pixels) rather than its
    output rows (see ROW_SPLIT_PIXELS)."""
    return not (layer.out_height > 1
                and layer.out_height * layer.out_width >= 2 * ROW_SPLIT_PIXELS)


def conv_sum(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer) -> np.ndarray:
    """Exact convolution sums (N, K, H', W') as int64."""
    plan = _Plan(cube, weights, layer)
    out = np.empty((plan.n, plan.k, plan.pixels), dtype=np.int64)
    plan.sums(out)
    return out.reshape(plan.n, plan.k, layer.out_height, layer.out_width)


class WeightPrep:
    """What the products need of a layer's integer weights (K, C, R, S) and no data: the
    (K, C*R*S) matrix, its magnitude, the largest kernel |w| sum and the matrix in
    float32 (the product type of int8 layers, made ahead: another thread makes it
    while the data is fetched, :func:`sim.conv.direct.compute_direct_layer`; or by the
    products' threads, each its share, and kept here).  The CBUF keeps it beside weights
    a next layer reuses (:class:`sim.conv.cdma.Cbuf`)."""

    __slots__ = ("weights", "wmat", "channels_last", "magnitude", "_abs_sum_max", "float32")

    def __init__(self, weights: np.ndarray, float32: bool = True):
        k = weights.shape[0]
        self.weights = weights
        # weights stored (K, R, S, C) (sim.dma.weights.unpack_weight_dc's channels_last)
        # give their matrix without a copy: its columns, and the im2col matrix's rows
        # (_Plan), are then in (R, S, C) order
        krsc = weights.transpose(0, 2, 3, 1)
        self.channels_last = krsc.flags.c_contiguous and not weights.flags.c_contiguous
        self.wmat = (krsc if self.channels_last else weights).reshape(k, -1)
        self.magnitude = magnitude(self.wmat)
        self._abs_sum_max = None
        # the |w| sums only if the data's largest magnitude (that of its dtype) could need
        # them (sum_types' first test failing)
        data_max = 1 << (8 * weights.dtype.itemsize - 1)
        if not _float32_by_magnitudes(data_max, self.magnitude, self.wmat.shape[1]):
            _ = self.abs_sum_max
        # float32=False: a layer whose threads share the kernels converts each share itself
        # (kernels_shared), in parallel rather than here ahead of them
        self.float32 = self.wmat.astype(np.float32) \
            if float32 and weights.dtype.itemsize == 1 else None

    @property
    def abs_sum_max(self) -> int:
        """The largest kernel |w| sum."""
        if self._abs_sum_max is None:
            self._abs_sum_max = int(kernel_abs_sums(self.wmat).max(initial=0))
        return self._abs_sum_max


def conv_cacc(cube: np.ndarray, weights: np.ndarray, layer: ConvLayer,
              prep: WeightPrep | None = None) -> tuple[np.ndarray, int]:
    """What CACC delivers: the int32 cube (N, K, H', W') and its saturation count,
    ``cacc_round_int32(conv_sum(...), layer.clip_truncate)``.

    When the sums are whole float32 products (every sum an integer below 2**24) and
    CLIP_TRUNCATE is 0, rounding changes nothing and nothing reaches the int32 limits: the
    threads cast their products straight to int32 (no int64 cube, no pass to round and
    test it).
    ``prep``: :class:`WeightPrep` of ``weights``, made already.
    """
    plan = _Plan(cube, weights, layer, prep)
    shape = (plan.n, plan.k, layer.out_height, layer.out_width)
    whole_float32 = plan.dtype is np.float32 and len(plan.chunks) == 1  # |sums| < 2**24
    if not (whole_float32 and cacc_round_is_identity(FLOAT32_EXACT - 1, layer.clip_truncate)):
        out = np.empty((plan.n, plan.k, plan.pixels), dtype=np.int64)
        plan.sums(out)
        return cacc_round_int32(out.reshape(shape), layer.clip_truncate)
    out = np.empty((plan.n, plan.k, plan.pixels), dtype=np.int32)
    plan.sums(out)
    return out.reshape(shape), 0


class _Plan:
    """One layer's sums: the padded input's im2col view, the weights in the product type
    and the C*R*S chunks (see the module's docstring)."""

    def __init__(self, cube: np.ndarray, weights: np.ndarray, layer: ConvLayer,
                 prep: WeightPrep | None = None):
        if prep is not None and prep.weights is not weights:
            raise ValueError("the WeightPrep is not of these weights")
        pad = pad_value_of(layer)
        xp, _, _ = padded_input(cube, layer, pad)
        self.layer = layer
        self.n, self.k = cube.shape[0], weights.shape[0]
        self.crs = weights.shape[1] * weights.shape[2] * weights.shape[3]
        self.pixels = layer.out_height * layer.out_width
        wmat = weights.reshape(self.k, self.crs) if prep is None else prep.wmat
        self.channels_last = prep is not None and prep.channels_last
        self.dtype, self.chunks = data_sum_types(wmat, xp, pad, self.n * self.pixels, prep)
        self.cols = im2col(xp, layer)
        ready = prep is not None and self.dtype is np.float32 and prep.float32 is not None
        self.wmat = wmat
        self.wf = prep.float32 if ready else None  # else made whole, or by each share
        # float32 weights made here go to the prep: a layer reusing the weights reuses them
        self.keep = prep if prep is not None and self.dtype is np.float32 else None
        self._shares = None  # the matrix the shares fill, each its own kernels

    def _weights(self, k0: int, k1: int) -> np.ndarray:
        """Kernels [k0, k1) in the product type."""
        if self.wf is not None:
            return self.wf[k0:k1]
        if self._shares is None:
            return self.wmat[k0:k1].astype(self.dtype)
        part = self._shares[k0:k1]
        np.copyto(part, self.wmat[k0:k1])
        return part

    def sums(self, out: np.ndarray) -> None:
        """The sums into ``out`` (N, K, H'*W'), any integer dtype that holds them.

        The threads take the output rows or the kernels in shares (the matrix products
        release the GIL): the BLAS runs one thread, whose idle helpers would spin on the
        cores the firmware and the SDP need next (sim.cli).
        """
        oh, ow = self.layer.out_height, self.layer.out_width
        by_rows = not kernels_shared(self.layer)
        if self.wf is None and (by_rows or self.n > 1):  # every share needs them all
            self.wf = self.wmat.astype(self.dtype)
        elif self.wf is None and self.keep is not None:
            self._shares = np.empty(self.wmat.shape, np.float32)
        for b in range(self.n):
            if by_rows:
                min_chunk = max(ceil_div(ROW_SPLIT_PIXELS, ow),
                                ceil_div(PARALLEL_MACS, self.k * self.crs * ow))
                piece = self._piece_rows()
                # the threads take pieces as they finish the last (a core slowed by other
                # work takes fewer); a share of several pieces makes them one by one
                run_split(lambda y0, y1, b=b: self._rows(b, y0, y1, out[b]), oh,
                          min_chunk=min_chunk, pieces=ceil_div(oh, max(piece, min_chunk)))
                continue
            col = self._columns(b, 0, oh)
            run_split(lambda k0, k1, col=col, b=b: _kernel_sums(
                self._weights(k0, k1), col, self.chunks, out[b, k0:k1]),
                self.k, min_chunk=ceil_div(PARALLEL_MACS, self.crs * self.pixels))
        if self.keep is not None and self.keep.float32 is None:
            self.keep.float32 = self.wf if self._shares is None else self._shares

    def _columns(self, b: int, y0: int, y1: int) -> np.ndarray:
        """The im2col matrix (C*R*S, pixels) of output rows [y0, y1) of batch ``b``: rows
        in the weight matrix's column order, (C, R, S) or (R, S, C)."""
        ow = self.layer.out_width
        part = self.cols[b, :, :, :, y0:y1]
        if self.channels_last:
            part = part.transpose(1, 2, 0, 3, 4)
        return part.astype(self.dtype, order="C").reshape(self.crs, (y1 - y0) * ow)

    def _piece_rows(self) -> int:
        """Output rows whose columns fit in COLUMN_PIECE_BYTES, or of MIN_PIECE_PIXELS."""
        ow = self.layer.out_width
        row_bytes = self.crs * ow * np.dtype(self.dtype).itemsize
        return max(COLUMN_PIECE_BYTES // row_bytes, ceil_div(MIN_PIECE_PIXELS, ow))

    def _rows(self, b: int, y0: int, y1: int, out: np.ndarray) -> None:
        """The sums of output rows [y0, y1), their columns made a piece at a time."""
        ow, piece = self.layer.out_width, self._piece_rows()
        for ya in range(y0, y1, piece):
            yb = min(y1, ya + piece)
            _kernel_sums(self.wf, self._columns(b, ya, yb), self.chunks,
                         out[:, ya * ow: yb * ow])


def _kernel_sums(wf: np.ndarray, col: np.ndarray, chunks, out: np.ndarray) -> None:
    """The sums of kernels ``wf`` (K', CRS) over the columns ``col`` (CRS, P) into ``out``
    (K', P), the reduction cut at ``chunks`` (each part exact in its dtype)."""
    if len(chunks) == 1:
        out[...] = wf @ col
        return
    acc = None  # float64: exact, every partial sum is below 2**47
    for lo, hi in chunks:
        part = wf[:, lo:hi] @ col[lo:hi]
        if acc is None:
            acc = part.astype(np.float64)
        else:
            acc += part
    out[...] = acc
