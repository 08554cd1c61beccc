"""Weight formats (format.rst "Weight Format"), both directions.

Weights are arrays (K, C, R, S): kernels, channels, height, width, in the
element dtypes of :mod:`sim.dma.elements`.

Direct convolution (DC)
    Kernels go in groups of ``weight_group_size`` (the configuration's MAC
    atomic K for int8, half of it for int16/fp16: 32/16 on nv_full); each
    kernel is cut into 1x1xC' small cubes of ``mac_atomic_c`` elements (64 on
    nv_full; the last one shorter, never zero-filled).  Inside a group the
    small cubes are scanned C' -> K -> W -> H -> C; groups follow each other
    compactly and the whole stream is zero-filled to 128 bytes.
Deconvolution
    The kernel is split by the deconvolution stride into stride_x*stride_y
    sub-kernels (:func:`split_deconv_weights`); each is mapped like DC but
    with W and H scanned in reverse (``reverse=True``).
Image input
    Channel pre-extension turns each line of a kernel into channels
    (K, C, R, S) -> (K, S*C, R, 1), channel s*C + c; an optional
    post-extension of 2 or 4 lines merges that many lines into channels
    (no zeros added for a short last line group).  Then DC mapping.
Winograd
    Channels are padded to a 32-byte atom, extended by the stride to a 3x3
    kernel, transformed to 4x4 by G W G^T (optionally scaled), and mapped in
    4x4x4-element small cubes scanned K -> C inside a kernel group (inside a
    small cube: channel fastest, then W, then H).
Sparse compression
    :func:`compress_weights` / :func:`decompress_weights`: a WMB bit mask (one
    bit per element, little-endian bit order, 1 = non-zero), the non-zero
    elements packed compactly, and one 32-bit WGS (compressed bytes) per
    kernel group; each surface zero-filled to 128 bytes.

Every mapping is a permutation; ``*_order`` functions expose it as an index
array: element i of the memory stream is ``weights.ravel()[order[i]]``.  The
pack/unpack functions do not gather through it: a stream is a few blocks
(whole kernel groups / the short last group, times whole channel chunks / the
short last chunk), each a reshape and transpose of a slice of the weights,
so the copy is one strided numpy assignment per block (:func:`_tiled_copy`;
``tests/dma/test_weights_blocks.py`` holds it to the ``*_order`` gather).
A DC stream of whole atomic-C runs can also be read where it is: :func:`dc_kernel_runs`
says where each kernel's runs lie (:class:`DcStream`).
"""

from __future__ import annotations

import math

import numpy as np

from ..configs import FP16, INT8
from ..jit import PARALLEL_ELEMENTS, njit, run_split
from ..records import record
from .align import LayoutError, align_up, ceil_div
from .elements import as_bytes, bytes_per_element, element_dtype, from_bytes, to_elements

WEIGHT_SIZE_ALIGN = 128  # zero fill at the end of weight, WMB and WGS surfaces
WINOGRAD_CUBE_CHANNELS = 4
WINOGRAD_ATOM_BYTES = 32
#: A large unpack is split by kernel groups over the cores (numpy copies release the
#: GIL) when each core's share holds at least this many elements; the weights' NaN/Inf
#: counts split a stream of this many (sim.conv.cdma).  AlexNet's fc6 (37.7 M fp16,
#: channels R*S apart in the array, so moved an element at a time) took 31 ms on one core.
SPLIT_UNPACK_ELEMENTS = 8 * PARALLEL_ELEMENTS

# Winograd F(2x2, 3x3) kernel transform and the inverse used to recover 3x3 kernels
WINOGRAD_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
WINOGRAD_G_INV = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, -1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])


def weight_group_size(precision: str, cfg=None, *, mac_atomic_k: int | None = None) -> int:
    """Kernels per group: MAC atomic K for int8, half of it for int16/fp16."""
    k = cfg.mac_atomic_k if mac_atomic_k is None else mac_atomic_k
    return k if precision == INT8 else k // 2


def weight_atomic_c(cfg=None, *, mac_atomic_c: int | None = None) -> int:
    """Elements per 1x1xC' small cube (MAC atomic C; 64 on nv_full)."""
    return cfg.mac_atomic_c if mac_atomic_c is None else mac_atomic_c


def _check_kcrs(w: np.ndarray, what: str) -> None:
    if w.ndim != 4 or min(w.shape) < 1:
        raise LayoutError(f"{what}: weights must be a non-empty (K, C, R, S) array, got {w.shape}")


def _padded_index(shape, pads) -> np.ndarray:
    """Flat indices of an array of ``shape``, padded with -1 to ``pads`` per axis."""
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return np.pad(idx, [(0, p - s) for s, p in zip(shape, pads, strict=True)], constant_values=-1)


def _ordered(idx: np.ndarray) -> np.ndarray:
    flat = idx.ravel()
    return flat[flat >= 0]


def dc_order(shape, group: int, atomic_c: int, reverse: bool = False) -> np.ndarray:
    """Memory order of DC weights: stream element i is ``w.ravel()[order[i]]``.

    Scan per kernel group: C-chunk (slowest) -> H -> W -> K -> C' (fastest).
    ``reverse`` scans H and W backwards (deconvolution).
    """
    k, c, r, s = shape
    kg, cg = ceil_div(k, group), ceil_div(c, atomic_c)
    idx = _padded_index(shape, (kg * group, cg * atomic_c, r, s))
    if reverse:
        idx = idx[:, :, ::-1, ::-1]
    idx = idx.reshape(kg, group, cg, atomic_c, r, s).transpose(0, 2, 4, 5, 1, 3)
    return _ordered(idx)


# -- block copies (what pack/unpack run) ---------------------------------------
# A layout scans two tiled axes of an array X -- a0 cut into tiles of t0, a1 into
# tiles of t1, each with a short last tile and no padding kept -- tile of a0
# (slowest), tile of a1, then the tiles' elements in the order ``inner`` (axes of
# X).  Whole tiles and the short last one of each axis give at most four blocks;
# a block of n0 x n1 tiles is contiguous per a0 tile, so it is one transpose.

def _reshaped(a: np.ndarray, shape) -> np.ndarray:
    """``a`` reshaped without a copy (raises if it would need one: writes must land)."""
    v = a.view()
    v.shape = shape
    return v


def _tiles(n: int, t: int):
    """(first index, tiles, tile size): the whole tiles of an axis of ``n``, then the short one."""
    whole, rest = divmod(n, t)
    return [seg for seg in ((0, whole, t), (whole * t, 1, rest)) if seg[1] and seg[2]]


def _as_words(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` (one shape and dtype) with each run along their last axis read as
    one element when that axis is contiguous in both: a copy between them then moves a
    run at a time.  Runs of up to 8 bytes become 8-, 4- or 2-byte words (a DC stream's
    runs of atomic-C channels, 8 bytes on nv_small, copied 3x faster than byte by byte);
    longer runs one raw (void) element of the run's bytes, which numpy copies whole (the
    64-byte runs of nv_full/nv_large: ResNet-50's int8 weights unpacked 20-25% faster than
    as 8 words a run).  A run of no such size keeps its elements."""
    item = a.dtype.itemsize
    if a.ndim == 0 or a.strides[-1] != item or b.strides[-1] != item:
        return a, b
    run = a.shape[-1] * item
    if run > 8:
        whole = np.dtype((np.void, run))
        return a.view(whole), b.view(whole)
    for word in (8, 4, 2):
        if word > item and run % word == 0:
            return a.view(f"<u{word}"), b.view(f"<u{word}")
    return a, b


def _tiled_copy(x: np.ndarray, stream: np.ndarray, a0: int, t0: int, a1: int, t1: int,
                inner, to_stream: bool) -> None:
    """Copy between the array ``x`` (possibly a strided view) and the 1-D ``stream``."""
    shape = x.shape
    pos = 0
    for first0, n0, size0 in _tiles(shape[a0], t0):
        per_tile0 = x.size // shape[a0] * size0
        rows = _reshaped(stream[pos: pos + n0 * per_tile0], (n0, per_tile0))
        pos += n0 * per_tile0
        col = 0
        for first1, n1, size1 in _tiles(shape[a1], t1):
            index = [slice(None)] * x.ndim
            index[a0] = slice(first0, first0 + n0 * size0)
            index[a1] = slice(first1, first1 + n1 * size1)
            sub = x[tuple(index)]
            split, where = [], {}  # the block's axes with a0 and a1 split (tile, inside)
            for axis, n in enumerate(sub.shape):
                if axis in (a0, a1):
                    tiles, size = (n0, size0) if axis == a0 else (n1, size1)
                    where[axis] = len(split) + 1
                    split += [tiles, size]
                    where[-1 - axis] = len(split) - 2  # the tile index
                else:
                    where[axis] = len(split)
                    split.append(n)
            block = _reshaped(sub, split).transpose(
                [where[-1 - a0], where[-1 - a1]] + [where[axis] for axis in inner])
            per = sub.size // n0
            part = _reshaped(rows[:, col: col + per], block.shape)
            col += per
            block, part = _as_words(block, part)
            if to_stream:
                part[...] = block
            else:
                block[...] = part


def _stream_elements(data, count: int, precision: str) -> np.ndarray:
    """The first ``count`` elements of a weight stream (bytes or uint8 array), 1-D."""
    data = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, (bytes, bytearray)) \
        else np.asarray(data, dtype=np.uint8)
    need = count * bytes_per_element(precision)
    if data.size < need:
        raise LayoutError(f"weight data has {data.size} bytes, the layout needs {need}")
    return from_bytes(data[:need].reshape(count, -1), precision)


def _pack_tiled(x: np.ndarray, precision: str, a0: int, t0: int, a1: int, t1: int,
                inner) -> np.ndarray:
    """The stream of ``x`` (elements), zero-filled to 128 bytes."""
    bpe = bytes_per_element(precision)
    out = np.zeros(align_up(x.size * bpe, WEIGHT_SIZE_ALIGN), dtype=np.uint8)
    stream = out[: x.size * bpe].view(element_dtype(precision))
    _tiled_copy(x, stream, a0, t0, a1, t1, inner, to_stream=True)
    return out


def _unpack_tiled(data, shape, precision: str, a0: int, t0: int, a1: int, t1: int, inner,
                  flip=(), storage=None) -> np.ndarray:
    """The array of ``shape`` from its stream; axes in ``flip`` are scanned backwards.

    ``storage``: the order of the axes in memory (default: as in ``shape``); the array
    returned is then a transposed view of a C-contiguous buffer.
    """
    if storage is None:
        out = np.empty(shape, dtype=element_dtype(precision))
    else:
        out = np.empty([shape[a] for a in storage], dtype=element_dtype(precision)).transpose(
            np.argsort(storage))
    stream = _stream_elements(data, out.size, precision)
    view = out[tuple(slice(None, None, -1) if axis in flip else slice(None)
                     for axis in range(out.ndim))]
    if a0 != 0 or 0 in flip:
        raise LayoutError("weight layouts tile the kernels (axis 0), scanned forwards")
    # kernel groups are compact in the stream, whole ones first: kernels k0:k1 (k0 at a
    # group's start) are the stream's elements k0 * per_kernel:k1 * per_kernel
    per_kernel = out.size // shape[0]

    def copy(first: int, stop: int) -> None:
        k0, k1 = first * t0, min(stop * t0, shape[0])
        _tiled_copy(view[k0:k1], stream[k0 * per_kernel: k1 * per_kernel], a0, t0, a1, t1,
                    inner, to_stream=False)

    run_split(copy, ceil_div(shape[0], t0),
              min_chunk=max(1, SPLIT_UNPACK_ELEMENTS // (t0 * per_kernel)))
    return out


def pack_weight_dc(w, precision: str, cfg=None, *, mac_atomic_c: int | None = None,
                   mac_atomic_k: int | None = None, reverse: bool = False) -> np.ndarray:
    """DC weight stream (uint8, zero-filled to 128 bytes) of a (K, C, R, S) array."""
    w = np.asarray(w)
    _check_kcrs(w, "weight-dc")
    w = to_elements(w, precision)
    if reverse:
        w = w[:, :, ::-1, ::-1]
    # scan per group: C-chunk -> H -> W -> K -> C' (dc_order)
    return _pack_tiled(w, precision,
                       0, weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k),
                       1, weight_atomic_c(cfg, mac_atomic_c=mac_atomic_c), (2, 3, 0, 1))


#: (K, R, S, C): the storage order of :func:`unpack_weight_dc` ``channels_last``
CHANNELS_LAST = (0, 2, 3, 1)


def unpack_weight_dc(data, shape, precision: str, cfg=None, *, mac_atomic_c: int | None = None,
                     mac_atomic_k: int | None = None, reverse: bool = False,
                     channels_last: bool = False) -> np.ndarray:
    """(K, C, R, S) weights from a DC weight stream.

    ``channels_last``: the array is a (K, C, R, S) view of a C-contiguous (K, R, S, C)
    buffer.  The stream holds runs of an atom's channels, one kernel position at a
    time: stored channels last, each run is one contiguous copy rather than elements
    R*S apart (several times faster for 3x3 kernels).
    """
    shape = tuple(int(n) for n in shape)
    return _unpack_tiled(data, shape, precision,
                         0, weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k),
                         1, weight_atomic_c(cfg, mac_atomic_c=mac_atomic_c), (2, 3, 0, 1),
                         flip=(2, 3) if reverse else (),
                         storage=CHANNELS_LAST if channels_last else None)


def dc_kernel_runs(shape, group: int, atomic_c: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each kernel's runs lie in a DC stream (:func:`dc_order`) of (K, C, R, S)
    weights, C a multiple of ``atomic_c``: kernel ``k``'s run ``b`` (its channels
    ``b // (R*S) * atomic_c`` on at position ``b % (R*S)``, row-major: CACC's block
    order) is the ``atomic_c`` elements from ``base[k] + b * stride[k]``.

    Inside a kernel group a run of every kernel follows the other (C' -> K), so a
    kernel's runs are as many runs apart as its group has kernels (fewer in a short
    last group).  Returns (base, stride), int64 (K,), in elements.
    """
    k, c, r, s = (int(n) for n in shape)
    if c % atomic_c:
        raise LayoutError(f"weight-dc: {c} channels are not whole runs of {atomic_c}")
    return _kernel_runs(k, c * r * s, group, atomic_c)


@njit
def _kernel_runs(k, kernel_elements, group, atomic_c):
    """:func:`dc_kernel_runs`' arrays in one compiled call (its eight numpy passes over K
    kernels took a fully connected layer 30 us, with the caches cold)."""
    base, stride = np.empty(k, np.int64), np.empty(k, np.int64)
    for kernel in range(k):
        first = kernel // group * group  # the kernel's group's first kernel
        base[kernel] = first * kernel_elements + (kernel - first) * atomic_c
        stride[kernel] = min(group, k - first) * atomic_c
    return base, stride


@record
class DcStream:
    """A layer's DC weight stream as fetched, not unpacked: ``elements`` its
    first K*C*R*S elements, kernel ``k``'s runs of ``atomic_c`` from ``base[k]``,
    ``stride[k]`` apart (:func:`dc_kernel_runs`); ``shape`` (K, C, R, S).  ``specials``
    (K, 2) int64: each kernel's NaN and Inf weights, counted by the reader as it reads
    them (the stream is read once), and ``totals`` (2,) int64 their sums, kept by the
    reader with them (the CDMA's counters: summed afterwards, the counts other threads
    had just written took a fully connected layer some 30 us)."""

    elements: np.ndarray
    shape: tuple
    precision: str
    group: int
    atomic_c: int
    base: np.ndarray
    stride: np.ndarray
    specials: np.ndarray
    totals: np.ndarray

    def unpacked(self) -> np.ndarray:
        """The (K, C, R, S) weights (:func:`unpack_weight_dc`)."""
        return _unpack_tiled(self.elements.view(np.uint8), self.shape, self.precision,
                             0, self.group, 1, self.atomic_c, (2, 3, 0, 1))


def dc_stream(data, shape, precision: str, cfg=None, *, mac_atomic_c: int | None = None,
              mac_atomic_k: int | None = None) -> DcStream:
    """The DC weight stream ``data`` (bytes, possibly a read-only view of the memory:
    not copied) of (K, C, R, S) weights, C a multiple of MAC atomic C, as its runs."""
    shape = tuple(int(n) for n in shape)
    atomic_c = weight_atomic_c(cfg, mac_atomic_c=mac_atomic_c)
    group = weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k)
    base, stride = dc_kernel_runs(shape, group, atomic_c)
    elements = _stream_elements(data, math.prod(shape), precision)  # ints: no numpy call
    return DcStream(elements, shape, precision, group, atomic_c, base, stride,
                    np.zeros((shape[0], 2), np.int64), np.zeros(2, np.int64))


def weight_bytes(shape, precision: str) -> int:
    """Bytes of an uncompressed weight stream before the 128-byte fill."""
    return int(np.prod(shape)) * bytes_per_element(precision)


# -- deconvolution ------------------------------------------------------------

def split_deconv_weights(w, stride_x: int, stride_y: int) -> list[np.ndarray]:
    """Split (K, C, R, S) by the deconvolution stride into stride_y*stride_x kernels.

    Set (y, x) (y outer, x inner) holds w[:, :, y::stride_y, x::stride_x],
    zero-filled to ceil(R/stride_y) x ceil(S/stride_x).
    """
    w = np.asarray(w)
    _check_kcrs(w, "deconvolution")
    k, c, r, s = w.shape
    rr, ss = ceil_div(r, stride_y), ceil_div(s, stride_x)
    full = np.zeros((k, c, rr * stride_y, ss * stride_x), dtype=w.dtype)
    full[:, :, :r, :s] = w
    return [np.ascontiguousarray(full[:, :, y::stride_y, x::stride_x])
            for y in range(stride_y) for x in range(stride_x)]


def merge_deconv_weights(parts, shape, stride_x: int, stride_y: int) -> np.ndarray:
    """Inverse of :func:`split_deconv_weights`."""
    k, c, r, s = shape
    parts = list(parts)
    if len(parts) != stride_x * stride_y:
        raise LayoutError(f"deconvolution: {len(parts)} split kernels, expected "
                          f"{stride_x * stride_y}")
    rr, ss = ceil_div(r, stride_y), ceil_div(s, stride_x)
    full = np.zeros((k, c, rr * stride_y, ss * stride_x), dtype=parts[0].dtype)
    for i, part in enumerate(parts):
        y, x = divmod(i, stride_x)
        full[:, :, y::stride_y, x::stride_x] = part
    return full[:, :, :r, :s]


def pack_weight_deconv(w, precision: str, cfg=None, *, stride_x: int = 1, stride_y: int = 1,
                       **kw) -> list[np.ndarray]:
    """One DC-reversed weight stream per split kernel (in split order)."""
    return [pack_weight_dc(part, precision, cfg, reverse=True, **kw)
            for part in split_deconv_weights(w, stride_x, stride_y)]


# -- image input --------------------------------------------------------------

def pre_extend_image(w) -> np.ndarray:
    """Channel pre-extension: (K, C, R, S) -> (K, S*C, R, 1), channel s*C + c."""
    w = np.asarray(w)
    _check_kcrs(w, "weight-img")
    k, c, r, s = w.shape
    return np.ascontiguousarray(w.transpose(0, 3, 1, 2).reshape(k, s * c, r, 1))


def undo_pre_extend_image(w, channels: int) -> np.ndarray:
    """Inverse of :func:`pre_extend_image` for an image of ``channels`` channels."""
    k, sc, r, _ = w.shape
    return np.ascontiguousarray(w.reshape(k, sc // channels, channels, r).transpose(0, 2, 3, 1))


def _check_post_extension(post_extension: int, ce: int, atomic_c: int) -> None:
    if post_extension == 1:
        return
    if post_extension not in (2, 4):
        raise LayoutError(f"weight-img: channel post-extension {post_extension} must be 1, 2 or 4")
    if post_extension * ce > atomic_c:
        raise LayoutError(f"weight-img: post-extension {post_extension} of {ce} channels exceeds "
                          f"the MAC atomic C ({atomic_c}) (format.rst post-extension)")


def image_order(shape, group: int, atomic_c: int, post_extension: int = 1) -> np.ndarray:
    """Memory order of image weights given in original (K, C, R, S) shape."""
    k, c, r, s = shape
    ce = s * c
    pre = np.arange(k * c * r * s, dtype=np.int64).reshape(k, c, r, s)
    pre = pre.transpose(0, 3, 1, 2).reshape(k, ce, r)  # index of the original element
    _check_post_extension(post_extension, ce, atomic_c)
    if post_extension == 1:
        return pre.reshape(k, ce, r, 1).ravel()[dc_order((k, ce, r, 1), group, atomic_c)]
    kg, rg = ceil_div(k, group), ceil_div(r, post_extension)
    idx = np.pad(pre, [(0, kg * group - k), (0, 0), (0, rg * post_extension - r)],
                 constant_values=-1)
    idx = idx.reshape(kg, group, ce, rg, post_extension).transpose(0, 3, 1, 4, 2)
    return _ordered(idx)


def pack_weight_image(w, precision: str, cfg=None, *, post_extension: int = 1,
                      mac_atomic_c: int | None = None, mac_atomic_k: int | None = None):
    """Image-input weight stream of original (K, C, R, S) weights (C = image channels)."""
    w = np.asarray(w)
    _check_kcrs(w, "weight-img")
    group = weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k)
    atomic_c = weight_atomic_c(cfg, mac_atomic_c=mac_atomic_c)
    k, c, r, s = w.shape
    _check_post_extension(post_extension, s * c, atomic_c)
    pre = pre_extend_image(to_elements(w, precision))[..., 0]  # (K, S*C, R)
    if post_extension == 1:  # DC of (K, S*C, R, 1): C-chunk -> H -> K -> C'
        return _pack_tiled(pre, precision, 0, group, 1, atomic_c, (2, 0, 1))
    # per group: line group -> K -> line -> channel (image_order)
    return _pack_tiled(pre, precision, 0, group, 2, post_extension, (0, 2, 1))


def unpack_weight_image(data, shape, precision: str, cfg=None, *, post_extension: int = 1,
                        mac_atomic_c: int | None = None, mac_atomic_k: int | None = None):
    """Original (K, C, R, S) weights from an image-input weight stream."""
    k, c, r, s = (int(n) for n in shape)
    group = weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k)
    atomic_c = weight_atomic_c(cfg, mac_atomic_c=mac_atomic_c)
    _check_post_extension(post_extension, s * c, atomic_c)
    pre_shape = (k, s * c, r)
    if post_extension == 1:
        pre = _unpack_tiled(data, pre_shape, precision, 0, group, 1, atomic_c, (2, 0, 1))
    else:
        pre = _unpack_tiled(data, pre_shape, precision, 0, group, 2, post_extension, (0, 2, 1))
    return undo_pre_extend_image(pre[..., None], c)


# -- Winograd -----------------------------------------------------------------

def winograd_extend(w, stride: int = 1, precision: str = FP16) -> np.ndarray:
    """Phase 1 before the transform: pad channels to a 32-byte atom, extend by stride.

    (K, C, R, S) -> (K, C' * stride^2, 3, 3) where C' is C rounded up to
    32 bytes; extended channel e takes original channel e % C', column
    x*stride + (e // C') % stride and row y*stride + e // (C' * stride).
    The kernel must become 3x3 (R and S in (2*stride, 3*stride]).
    """
    w = np.asarray(w)
    _check_kcrs(w, "weight-winograd")
    k, c, r, s = w.shape
    if ceil_div(r, stride) != 3 or ceil_div(s, stride) != 3:
        raise LayoutError(f"weight-winograd: a {s}x{r} kernel with stride {stride} does not "
                          "extend to 3x3 (format.rst Winograd channel extension)")
    cp = align_up(c, WINOGRAD_ATOM_BYTES // bytes_per_element(precision))
    full = np.zeros((k, cp, 3 * stride, 3 * stride), dtype=w.dtype)
    full[:, :c, :r, :s] = w
    # split rows/cols into (position, phase), then move the phases into channels
    ext = full.reshape(k, cp, 3, stride, 3, stride).transpose(0, 3, 5, 1, 2, 4)
    return np.ascontiguousarray(ext.reshape(k, stride * stride * cp, 3, 3))


def winograd_transform(w3, scale: float = 1.0) -> np.ndarray:
    """G W G^T of each 3x3 kernel plane (float64, exact), times ``scale``: (..., 4, 4)."""
    w3 = np.asarray(w3, dtype=np.float64)
    return scale * np.einsum("ij,...jk,lk->...il", WINOGRAD_G, w3, WINOGRAD_G)


def winograd_inverse(w4, scale: float = 1.0) -> np.ndarray:
    """3x3 kernels back from transformed 4x4 ones (divides by ``scale`` first)."""
    w4 = np.asarray(w4, dtype=np.float64) / scale
    return np.einsum("ij,...jk,lk->...il", WINOGRAD_G_INV, w4, WINOGRAD_G_INV)


def winograd_weights(w, precision: str, stride: int = 1, scale: float = 1.0) -> np.ndarray:
    """Transformed (K, C_ext, 4, 4) elements ready for :func:`pack_weight_winograd`.

    fp16 results are rounded to nearest even; integer results are rounded to
    nearest (ties to even) and must fit the precision -- choose ``scale`` so
    that they do (4 makes every transform of integers exact).
    """
    if precision == FP16:
        src = np.asarray(w)
        if src.dtype == np.uint16:
            src = src.view(np.float16)
        out = winograd_transform(winograd_extend(src.astype(np.float64), stride, precision), scale)
        with np.errstate(over="ignore"):  # a transform past fp16's range is Inf, no warning
            return out.astype(np.float32).astype(np.float16).view(np.uint16)
    out = np.rint(winograd_transform(winograd_extend(w, stride, precision), scale))
    return to_elements(out.astype(np.int64), precision)


def _check_winograd_shape(shape) -> None:
    k, c, r, s = shape
    if (r, s) != (4, 4):
        raise LayoutError(f"weight-winograd: transformed kernels are 4x4, got {s}x{r}")
    if c % WINOGRAD_CUBE_CHANNELS:
        raise LayoutError(f"weight-winograd: {c} channels is not a multiple of 4 "
                          "(format.rst 4x4x4 small cubes)")


def winograd_order(shape, group: int) -> np.ndarray:
    """Memory order of transformed (K, C, 4, 4) weights (C a multiple of 4)."""
    _check_winograd_shape(shape)
    k, c, r, s = shape
    kg = ceil_div(k, group)
    idx = _padded_index(shape, (kg * group, c, 4, 4))
    idx = idx.reshape(kg, group, c // 4, 4, 4, 4).transpose(0, 2, 1, 4, 5, 3)
    return _ordered(idx)


def pack_weight_winograd(w4, precision: str, cfg=None, *,
                         mac_atomic_k: int | None = None) -> np.ndarray:
    """Winograd weight stream of transformed (K, C, 4, 4) weights."""
    w4 = np.asarray(w4)
    _check_kcrs(w4, "weight-winograd")
    _check_winograd_shape(w4.shape)
    # per group: 4-channel cube -> K -> H -> W -> channel (winograd_order)
    return _pack_tiled(to_elements(w4, precision), precision,
                       0, weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k),
                       1, WINOGRAD_CUBE_CHANNELS, (0, 2, 3, 1))


def unpack_weight_winograd(data, shape, precision: str, cfg=None, *,
                           mac_atomic_k: int | None = None) -> np.ndarray:
    """Transformed (K, C, 4, 4) weights from a Winograd weight stream."""
    shape = tuple(int(n) for n in shape)
    _check_winograd_shape(shape)
    return _unpack_tiled(data, shape, precision,
                         0, weight_group_size(precision, cfg, mac_atomic_k=mac_atomic_k),
                         1, WINOGRAD_CUBE_CHANNELS, (0, 2, 3, 1))


# -- sparse compression -------------------------------------------------------

@record
class CompressedWeights:
    """The three surfaces of compressed weights (each zero-filled to 128 bytes)."""

    data: np.ndarray  # non-zero elements, packed
    wmb: np.ndarray  # one bit per element, little-endian bit order
    wgs: np.ndarray  # one little-endian uint32 per kernel group: its compressed bytes


def group_bytes(kernels: int, kernel_bytes: int, group: int) -> list[int]:
    """Uncompressed bytes of each kernel group (the last may hold fewer kernels)."""
    full, rest = divmod(kernels, group)
    return [group * kernel_bytes] * full + ([rest * kernel_bytes] if rest else [])


def _fill128(raw: np.ndarray) -> np.ndarray:
    out = np.zeros(align_up(raw.size, WEIGHT_SIZE_ALIGN), dtype=np.uint8)
    out[: raw.size] = raw
    return out


def compress_weights(stream, precision: str, groups: list[int]) -> CompressedWeights:
    """Compress an uncompressed weight stream whose kernel groups have ``groups`` bytes.

    An element is zero when all its bits are zero (fp16 -0.0 is kept).
    """
    stream = np.asarray(stream, dtype=np.uint8)
    total = sum(groups)
    if stream.size < total:
        raise LayoutError(f"weight stream has {stream.size} bytes, groups need {total}")
    bpe = bytes_per_element(precision)
    if any(g % bpe for g in groups):
        raise LayoutError("kernel group sizes must be whole elements")
    elems = from_bytes(stream[:total].reshape(-1, bpe), precision)
    mask = elems != 0
    ends = np.cumsum([g // bpe for g in groups])
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    nonzero = np.add.reduceat(mask.astype(np.int64), starts) if len(groups) else np.zeros(0)
    wgs = (np.asarray(nonzero, dtype=np.int64) * bpe).astype("<u4")
    return CompressedWeights(
        data=_fill128(as_bytes(elems[mask]).ravel()),
        wmb=_fill128(np.packbits(mask, bitorder="little")),
        wgs=_fill128(wgs.view(np.uint8)),
    )


def decompress_weights(compressed: CompressedWeights, precision: str,
                       groups: list[int]) -> np.ndarray:
    """The uncompressed stream (no 128-byte fill) from WMB, WGS and data surfaces."""
    bpe = bytes_per_element(precision)
    count = sum(groups) // bpe
    wmb = np.asarray(compressed.wmb, dtype=np.uint8)
    if wmb.size * 8 < count:
        raise LayoutError(f"WMB has {wmb.size * 8} bits for {count} weights")
    mask = np.unpackbits(wmb, bitorder="little")[:count].astype(bool)
    wgs = np.asarray(compressed.wgs, dtype=np.uint8)[: 4 * len(groups)].view("<u4")
    nonzero = int(mask.sum())
    ends = np.cumsum([g // bpe for g in groups])
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    per_group = np.add.reduceat(mask.astype(np.int64), starts) * bpe if groups else []
    if len(wgs) != len(groups) or np.any(wgs != per_group):
        raise LayoutError("WGS does not match the WMB bit counts of the kernel groups")
    data = np.asarray(compressed.data, dtype=np.uint8)
    if data.size < nonzero * bpe:
        raise LayoutError(f"compressed data has {data.size} bytes, WMB needs {nonzero * bpe}")
    elems = np.zeros(count, dtype=element_dtype(precision))
    elems[mask] = from_bytes(data[: nonzero * bpe].reshape(-1, bpe), precision)
    return as_bytes(elems).ravel()
