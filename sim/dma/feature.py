"""Feature data cubes in memory (format.rst "Feature Data Format").

A W x H x C cube is cut into 1x1xC' atoms (C' = one memory atom: 32 bytes on
nv_full, 8 on nv_small, so 32 int8 or 16 int16/fp16 channels on nv_full).
Atoms are laid out C' -> W -> H -> C: the atoms of a line are contiguous,
lines are ``line_stride`` apart, surfaces (groups of C' channels) are
``surface_stride`` apart and batches ``batch_stride`` apart.  The last
surface is padded to a whole atom.  Packed means line_stride = W * atom and
surface_stride = H * line_stride.

Byte offset of element (n, c, h, w) from the cube's address::

    n*batch_stride + (c // C')*surface_stride + h*line_stride + w*atom + (c % C')*bpe

Arrays are (C, H, W), or (N, C, H, W) for several batches, in the element
dtypes of :mod:`sim.dma.elements` (fp16 as uint16 bit patterns).

Public API (names other units rely on):

* :class:`FeatureLayout`, :func:`feature_layout`
* :func:`pack_feature`, :func:`unpack_feature` -- numpy arrays <-> bytes
* :func:`gather_feature`, :func:`scatter_feature` -- on a flat uint8 buffer
* :func:`read_feature`, :func:`write_feature` -- through a memory object with
  ``read_array(addr, size, what, lines=, mode=)``, ``read_for_update(addr,
  size, what)`` (the bytes a strided write keeps) and ``write(addr, data, what,
  lines=)`` (e.g. ``sim.dram.Memory``; ``what`` names the register in errors,
  ``lines`` a function returning the bytes the DMA really moves, ``mode`` how a
  read relates to the layer's own writes)
* :func:`fold_1x1` -- the 1x1xC surface-packed special case
* :func:`padded_channels` -- channels rounded up to whole atoms
"""

from __future__ import annotations

import functools
import threading
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..dram import STREAMED, check_extent
from ..records import record
from .align import LayoutError, align_up, ceil_div, check_alignment
from .elements import (
    as_bytes,
    bytes_per_element,
    check_precision_name,
    elements_per_atom,
    from_bytes,
    infer_precision,
    to_elements,
)


def resolve_atom(cfg=None, atom_bytes: int | None = None) -> int:
    """The memory atom in bytes: ``atom_bytes`` if given, else ``cfg.atom_bytes``."""
    if atom_bytes is None:
        if cfg is None:
            raise LayoutError("layout needs a hardware configuration or an explicit atom_bytes")
        atom_bytes = cfg.atom_bytes
    if atom_bytes <= 0 or atom_bytes & (atom_bytes - 1):
        raise LayoutError(f"memory atom {atom_bytes} is not a power of two")
    return atom_bytes


@record
class FeatureLayout:
    """Where a (possibly batched) feature cube lives, relative to its address.

    ``group`` is the number of channels per atom (C'); ``element_bytes`` the
    bytes of one element.  Feature data has group = atom // bpe; the SDP
    operand formats of :mod:`sim.dma.operands` reuse this class with other
    groups and multi-component elements.
    """

    channels: int
    height: int
    width: int
    group: int
    element_bytes: int
    line_stride: int
    surface_stride: int
    batch_stride: int = 0
    batch: int = 1

    # the derived sizes are cached: a frozen layout's never change, and a layer's
    # reads and writes ask for them dozens of times
    @cached_property
    def surfaces(self) -> int:
        return ceil_div(self.channels, self.group)

    @cached_property
    def padded_channels(self) -> int:
        """Channels rounded up to whole atoms (the lanes the hardware moves)."""
        return self.surfaces * self.group

    @cached_property
    def atom_bytes(self) -> int:
        """Bytes of one 1x1xC' atom (group x element bytes)."""
        return self.group * self.element_bytes

    @cached_property
    def line_bytes(self) -> int:
        return self.width * self.atom_bytes

    @cached_property
    def cube_extent(self) -> int:
        """Bytes from the cube's address to the end of its last atom (one batch)."""
        return (self.surfaces - 1) * self.surface_stride + (self.height - 1) * self.line_stride \
            + self.line_bytes

    @cached_property
    def extent(self) -> int:
        """Bytes from the address to the end of the last atom of the last batch."""
        return (self.batch - 1) * self.batch_stride + self.cube_extent

    @cached_property
    def size(self) -> int:
        """Bytes of data (atoms) in the layout, gaps excluded."""
        return self.batch * self.surfaces * self.height * self.line_bytes

    @cached_property
    def is_packed(self) -> bool:
        return self.extent == self.size

    @cached_property
    def in_atom_order(self) -> bool:
        """The atoms lie back to back in (N, S, H, W) order (a flat copy of them is the
        layout's bytes)."""
        return (self.line_stride == self.line_bytes
                and self.surface_stride == self.height * self.line_stride
                and (self.batch == 1 or self.batch_stride == self.surfaces * self.surface_stride))

    def shape(self) -> tuple[int, ...]:
        """Array shape: (C, H, W), or (N, C, H, W) when batch > 1."""
        cube = (self.channels, self.height, self.width)
        return cube if self.batch == 1 else (self.batch,) + cube

    def lines(self) -> tuple[np.ndarray, int]:
        """(offset of every line of atoms, bytes of a line): what a DMA moves, gaps excluded.
        The offsets are computed once per layout (a layer reads and writes a few) and are
        read-only."""
        return self._line_offsets, self.line_bytes

    @cached_property
    def _line_offsets(self) -> np.ndarray:
        n = np.arange(self.batch, dtype=np.int64)[:, None, None] * self.batch_stride
        s = np.arange(self.surfaces, dtype=np.int64)[None, :, None] * self.surface_stride
        h = np.arange(self.height, dtype=np.int64)[None, None, :] * self.line_stride
        offsets = (n + s + h).ravel()
        offsets.flags.writeable = False
        return offsets

    def atom_offsets(self) -> np.ndarray:
        """Byte offset of every atom, shape (N, surfaces, H, W), int64."""
        n = np.arange(self.batch, dtype=np.int64)[:, None, None, None] * self.batch_stride
        s = np.arange(self.surfaces, dtype=np.int64)[None, :, None, None] * self.surface_stride
        h = np.arange(self.height, dtype=np.int64)[None, None, :, None] * self.line_stride
        w = np.arange(self.width, dtype=np.int64)[None, None, None, :] * self.atom_bytes
        return n + s + h + w

    def element_offsets(self) -> np.ndarray:
        """Byte offset of every element, in the array's shape (see :meth:`shape`)."""
        c = np.arange(self.channels, dtype=np.int64)
        base = self.atom_offsets()[:, c // self.group]  # (N, C, H, W)
        off = base + ((c % self.group) * self.element_bytes)[None, :, None, None]
        return off if self.batch > 1 else off[0]

    def offset(self, c: int, h: int, w: int, n: int = 0) -> int:
        """Byte offset of one element."""
        return (n * self.batch_stride + (c // self.group) * self.surface_stride
                + h * self.line_stride + w * self.atom_bytes
                + (c % self.group) * self.element_bytes)

    def validate(self, atom_bytes: int, kind: str = "feature", what: str = "") -> FeatureLayout:
        """Check dimensions, stride alignment (Table 35) and that strides hold a line/surface."""
        prefix = f"{what}: " if what else ""
        for name, value in (("channels", self.channels), ("height", self.height),
                            ("width", self.width), ("batch", self.batch)):
            if value < 1:
                raise LayoutError(f"{prefix}cube {name} {value} must be at least 1")
        check_alignment(kind, atom_bytes, what, line_stride=self.line_stride,
                        surface_stride=self.surface_stride,
                        planar_stride=self.batch_stride if self.batch > 1 else None)
        if self.height > 1 and self.line_stride < self.line_bytes:
            raise LayoutError(f"{prefix}line stride {self.line_stride:#x} is smaller than a line "
                              f"({self.width} atoms = {self.line_bytes:#x} bytes)")
        surface = (self.height - 1) * self.line_stride + self.line_bytes
        if self.surfaces > 1 and self.surface_stride < surface:
            raise LayoutError(f"{prefix}surface stride {self.surface_stride:#x} is smaller than "
                              f"a surface ({surface:#x} bytes)")
        if self.batch > 1 and self.batch_stride < self.atom_bytes:
            raise LayoutError(f"{prefix}batch stride {self.batch_stride:#x} is smaller than "
                              "an atom")
        check_extent(self.extent, f"{what or kind}: cube of {self.width}x{self.height}x"
                     f"{self.channels} (batch {self.batch})")
        return self

    def check_disjoint(self, what: str = "") -> None:
        """Raise when two atoms share bytes (only interleaved batches can do that)."""
        if self.batch == 1 or self.batch_stride >= self.cube_extent:
            return
        starts = np.sort(self.atom_offsets().ravel())
        if np.any(np.diff(starts) < self.atom_bytes):
            prefix = f"{what}: " if what else ""
            raise LayoutError(f"{prefix}batch stride {self.batch_stride:#x} makes batches overlap")


def padded_channels(channels: int, precision: str, atom_bytes: int) -> int:
    """``channels`` rounded up to whole memory atoms of ``precision`` elements."""
    return align_up(channels, elements_per_atom(precision, atom_bytes))


def feature_layout(shape, precision: str, atom_bytes: int, line_stride: int | None = None,
                   surface_stride: int | None = None, batch_stride: int | None = None,
                   batch: int = 1, what: str = "") -> FeatureLayout:
    """A validated :class:`FeatureLayout`; strides left None are packed.

    ``shape`` is (C, H, W) (or (N, C, H, W), which sets ``batch``).
    """
    try:  # a layer's layouts recur (its reads and writes, the next layers'): made once
        return _valid_layout(tuple(int(v) for v in shape), precision, int(atom_bytes),
                             *(None if v is None else int(v)
                               for v in (line_stride, surface_stride, batch_stride)),
                             int(batch))
    except Exception:  # not a layout: made again as given, to raise its error naming what
        pass
    return _feature_layout(shape, precision, atom_bytes, line_stride, surface_stride,
                           batch_stride, batch, what)


@functools.lru_cache(maxsize=1024)
def _valid_layout(shape: tuple[int, ...], precision: str, atom_bytes: int,
                  line_stride: int | None, surface_stride: int | None,
                  batch_stride: int | None, batch: int) -> FeatureLayout:
    """:func:`_feature_layout` of a layout that passes (``what`` only names an error)."""
    return _feature_layout(shape, precision, atom_bytes, line_stride, surface_stride,
                           batch_stride, batch, "")


def _feature_layout(shape, precision: str, atom_bytes: int, line_stride, surface_stride,
                    batch_stride, batch: int, what: str) -> FeatureLayout:
    check_precision_name(precision)
    shape = tuple(int(v) for v in shape)
    if len(shape) == 4:
        batch, shape = shape[0], shape[1:]
    if len(shape) != 3:
        raise LayoutError(f"feature shape {shape} is not (C, H, W) or (N, C, H, W)")
    line_stride = shape[2] * atom_bytes if line_stride is None else int(line_stride)
    if surface_stride is None:
        surface_stride = shape[1] * line_stride
    if batch_stride is None:
        batch_stride = ceil_div(shape[0], elements_per_atom(precision, atom_bytes)) * surface_stride
    layout = FeatureLayout(shape[0], shape[1], shape[2], elements_per_atom(precision, atom_bytes),
                           bytes_per_element(precision), line_stride, int(surface_stride),
                           int(batch_stride), int(batch))
    return layout.validate(atom_bytes, what=what)


# -- scratch memory --------------------------------------------------------------

#: Scratch arrays of up to this many bytes are kept per thread (larger ones are made anew).
SCRATCH_MAX = 1 << 25
_SCRATCH = threading.local()


def scratch_bytes(nbytes: int, slot: str) -> np.ndarray:
    """``nbytes`` uint8 of this thread's scratch ``slot``: the memory of the slot's last call
    (the caller's until the next call), grown when too small.  Fresh memory costs a page
    fault per 4 KiB when first touched, ten times a rewrite: a layer's output and the
    window it is written through come here rather than from new arrays each layer."""
    if nbytes > SCRATCH_MAX:
        return np.empty(nbytes, np.uint8)
    slots = getattr(_SCRATCH, "slots", None)
    if slots is None:
        slots = _SCRATCH.slots = {}
    buf = slots.get(slot)
    if buf is None or buf.size < nbytes:
        buf = slots[slot] = np.empty(align_up(nbytes, 1 << 16), np.uint8)
    return buf[:nbytes]


# -- core: flat uint8 buffers --------------------------------------------------

def _atom_view(buf: np.ndarray, base: int, layout: FeatureLayout, writeable: bool) -> np.ndarray:
    """(N, S, H, W, atom) strided view of ``buf`` starting at ``base``."""
    if base < 0 or base + layout.extent > buf.size:
        raise LayoutError(f"cube of {layout.extent:#x} bytes at offset {base:#x} does not fit "
                          f"in a buffer of {buf.size:#x} bytes")
    start = buf[base:]
    step = start.strides[0]
    shape = (layout.batch, layout.surfaces, layout.height, layout.width, layout.atom_bytes)
    strides = (layout.batch_stride * step, layout.surface_stride * step,
               layout.line_stride * step, layout.atom_bytes * step, step)
    if not start.flags.c_contiguous:
        return as_strided(start, shape=shape, strides=strides, writeable=writeable)
    # a window of memory (the usual buffer): viewed directly, without as_strided's cost
    view = np.ndarray(shape, np.uint8, start, 0, strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _as_flat_u8(memory) -> np.ndarray:
    if isinstance(memory, (bytes, bytearray, memoryview)):
        return np.frombuffer(memory, dtype=np.uint8)
    arr = np.asarray(memory)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise LayoutError("memory must be bytes or a flat uint8 array")
    return arr


#: Arrays of up to this many bytes swap in one numpy transposing copy; larger ones (cubes
#: past the caches) move 8-byte words first (:func:`_swap_by_words`).
PLAIN_SWAP_BYTES = 1 << 21


def swap_last_axes(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[m, j, i] = src[m, i, j]`` for a C-contiguous ``src`` (M, A, B) of small elements.

    Up to :data:`PLAIN_SWAP_BYTES`, numpy's own transposing copy: at 1-2 byte elements it
    beats moving words and swapping bytes within tiles by 1.3-1.9x on cubes that stay in
    the caches (numpy 2.4; ResNet-50's feature maps); past that the words win.
    """
    if src.nbytes <= PLAIN_SWAP_BYTES:
        np.copyto(dst, src.transpose(0, 2, 1))
    else:
        _swap_by_words(src, dst)


def _swap_by_words(src: np.ndarray, dst: np.ndarray) -> None:
    """:func:`swap_last_axes` for large arrays.

    A plain transpose of bytes reads each element from a different line (the
    atoms of a cube lie a surface apart), so the elements first move 8 bytes
    at a time -- ``k`` consecutive ones of a row as one word -- and are then
    swapped within (A x k) tiles that stay in the cache.  A tail of B that
    fills no word moves element by element.
    """
    m, a, b = src.shape
    k = 8 // src.itemsize
    main = b - b % k if k > 1 else 0
    if main:
        words = src[:, :, :main].view(np.uint64) if main == b else \
            np.ascontiguousarray(src[:, :, :main]).view(np.uint64)  # (M, A, main/k)
        tiles = np.ascontiguousarray(words.transpose(0, 2, 1))  # (M, main/k, A) words
        tiles = tiles.view(src.dtype).reshape(m, main // k, a, k)
        dst[:, :main].reshape(m, main // k, k, a)[...] = tiles.transpose(0, 1, 3, 2)
    dst[:, main:] = src[:, :, main:].transpose(0, 2, 1)


def atoms_in_order(buf, base: int, layout: FeatureLayout) -> np.ndarray:
    """The atoms of ``layout`` in ``buf`` (from ``base``) in the order they lie, gaps left
    out: contiguous uint8 (N*S, H*W, atom bytes), surface by surface."""
    atoms = np.ascontiguousarray(_atom_view(_as_flat_u8(buf), base, layout, False))
    return atoms.reshape(layout.batch * layout.surfaces, layout.height * layout.width,
                         layout.atom_bytes)


def gather_atoms(buf, base: int, layout: FeatureLayout) -> np.ndarray:
    """Raw element bytes, shape (N, C_padded, H, W, element_bytes) (C padded to surfaces*C')."""
    n, s, h, w = layout.batch, layout.surfaces, layout.height, layout.width
    eb, group = layout.element_bytes, layout.group
    words = atoms_in_order(buf, base, layout).view(f"<u{eb}")  # whole elements move
    planar = np.empty((n * s, group, h * w), words.dtype)
    swap_last_axes(words, planar)
    return planar.view(np.uint8).reshape(n, s * group, h, w, eb)


def scatter_atoms(buf: np.ndarray, base: int, layout: FeatureLayout, raw: np.ndarray) -> None:
    """Write raw element bytes (N, C_padded, H, W, element_bytes) into ``buf`` in place."""
    n, s, h, w, eb = layout.batch, layout.surfaces, layout.height, layout.width, \
        layout.element_bytes
    words = np.ascontiguousarray(raw).view(f"<u{eb}")[..., 0]  # (N, C_padded, H, W) elements
    planar = words.reshape(n * s, layout.group, h * w)
    view = _atom_view(buf, base, layout, True)
    if layout.in_atom_order:  # swap straight into the buffer
        start = buf[base:base + layout.extent].view(words.dtype)
        swap_last_axes(planar, start.reshape(n * s, h * w, layout.group))
        return
    atoms = np.empty((n * s, h * w, layout.group), words.dtype)
    swap_last_axes(planar, atoms)
    view[...] = atoms.view(np.uint8).reshape(n, s, h, w, layout.atom_bytes)


def gather_feature(buf, base: int, layout: FeatureLayout, precision: str) -> np.ndarray:
    """Elements of a feature cube stored in the flat uint8 ``buf`` at index ``base``."""
    raw = gather_atoms(buf, base, layout)[:, : layout.channels]
    out = from_bytes(raw, precision)
    return out if layout.batch > 1 else out[0]


def _padded_raw(array: np.ndarray, layout: FeatureLayout, precision: str, pad_value: int):
    elems = to_elements(array, precision)
    if elems.ndim == 3:
        elems = elems[None]
    want = (layout.batch, layout.channels, layout.height, layout.width)
    if elems.shape != want:
        raise LayoutError(f"array shape {elems.shape} does not match the layout {want}")
    padded_c = layout.surfaces * layout.group
    if padded_c != layout.channels:
        pad = np.full((layout.batch, padded_c - layout.channels, layout.height, layout.width),
                      pad_value).astype(elems.dtype)
        elems = np.concatenate([elems, pad], axis=1)
    return as_bytes(elems)


def scatter_feature(buf: np.ndarray, base: int, layout: FeatureLayout, array,
                    precision: str | None = None, pad_value: int = 0) -> None:
    """Store ``array`` (C,H,W or N,C,H,W) into ``buf`` at index ``base``; gaps untouched.

    Channels added to fill the last atom get ``pad_value`` (an element value;
    fp16 as bit pattern).
    """
    precision = precision or infer_precision(array)
    layout.check_disjoint()
    scatter_atoms(buf, base, layout, _padded_raw(np.asarray(array), layout, precision, pad_value))


# -- user API ----------------------------------------------------------------

def pack_feature(array, cfg=None, *, precision: str | None = None, atom_bytes: int | None = None,
                 line_stride: int | None = None, surface_stride: int | None = None,
                 batch_stride: int | None = None, pad_value: int = 0, fill: int = 0):
    """Memory image of a feature cube: returns ``(data, layout)``.

    ``array`` is (C, H, W) or (N, C, H, W); the precision defaults to the
    dtype's (int8, int16, uint16/float16 -> fp16).  ``data`` is a uint8 array
    of ``layout.extent`` bytes, gaps between lines/surfaces set to ``fill``.
    """
    array = np.asarray(array)
    precision = precision or infer_precision(array)
    atom = resolve_atom(cfg, atom_bytes)
    layout = feature_layout(array.shape, precision, atom, line_stride, surface_stride,
                            batch_stride)
    data = np.full(layout.extent, fill, dtype=np.uint8)
    scatter_feature(data, 0, layout, array, precision, pad_value)
    return data, layout


def _layout_from(shape, strides, precision: str, atom: int, batch: int) -> FeatureLayout:
    if isinstance(strides, FeatureLayout):
        return strides
    if strides is None:
        strides = ()
    strides = tuple(strides) + (None,) * (3 - len(tuple(strides)))
    return feature_layout(shape, precision, atom, *strides[:3], batch=batch)


def unpack_feature(memory, addr: int, shape, strides=None, cfg=None, *, precision: str,
                   atom_bytes: int | None = None, batch: int = 1) -> np.ndarray:
    """Read a feature cube from a flat memory image (bytes or uint8 array).

    ``addr`` is the cube's offset in ``memory`` (it must be atom aligned);
    ``strides`` is None (packed), (line_stride, surface_stride[, batch_stride])
    or a :class:`FeatureLayout`.  Returns (C, H, W) or (N, C, H, W) elements.
    """
    atom = resolve_atom(cfg, atom_bytes)
    check_alignment("feature", atom, start=addr)
    layout = _layout_from(shape, strides, precision, atom, batch)
    return gather_feature(memory, addr, layout, precision)


def read_feature(mem, addr: int, shape, precision: str, atom_bytes: int, line_stride: int,
                 surface_stride: int, batch_stride: int = 0, batch: int = 1,
                 what: str = "", mode: str = STREAMED) -> np.ndarray:
    """A feature cube read through ``mem.read_array`` (the DMA engines' reader).

    Returns (C, H, W) elements, or (N, C, H, W) when ``batch`` > 1.  ``mode``
    says how the read relates to the layer's own writes (:mod:`sim.dram`).
    """
    layout, window = _read_window(mem, addr, shape, precision, atom_bytes, line_stride,
                                  surface_stride, batch_stride, batch, what, mode)
    return gather_feature(window, 0, layout, precision)


def read_feature_atoms(mem, addr: int, shape, precision: str, atom_bytes: int,
                       line_stride: int, surface_stride: int, what: str = "",
                       mode: str = STREAMED) -> np.ndarray:
    """:func:`read_feature` of one cube, its elements in the order of its atoms: (S, H*W,
    G), S surfaces of G elements (the channels of ``shape`` whole atoms).  For a unit that
    computes each element alone (an elementwise SDP layer), which may take them in any
    order: no transpose to (C, H, W).  The array may be a read-only view of the memory's
    bytes, for a reader done with it before anything writes the memory."""
    layout, window = _read_window(mem, addr, shape, precision, atom_bytes, line_stride,
                                  surface_stride, 0, 1, what, mode)
    atoms = atoms_in_order(window, 0, layout)
    return from_bytes(atoms.reshape(*atoms.shape[:2], layout.group, layout.element_bytes),
                      precision)


def _read_window(mem, addr: int, shape, precision: str, atom_bytes: int, line_stride: int,
                 surface_stride: int, batch_stride: int, batch: int, what: str, mode: str):
    """(layout, bytes of its window) of a feature cube read through ``mem``."""
    check_alignment("feature", atom_bytes, what, start=addr)
    layout = feature_layout(shape, precision, atom_bytes, line_stride, surface_stride,
                            batch_stride, batch, what)
    # the gather copies the elements out: a memory that can lend its bytes
    # (sim.dram.Memory.read_view) spares a copy of the window
    read = getattr(mem, "read_view", None) or mem.read_array
    return layout, read(addr, layout.extent, what, lines=layout.lines, mode=mode)


def write_feature(mem, addr: int, array, precision: str, atom_bytes: int, line_stride: int,
                  surface_stride: int, batch_stride: int = 0, pad_value: int = 0,
                  what: str = "") -> FeatureLayout:
    """Write a (C,H,W) or (N,C,H,W) cube through ``mem.write`` (the DMA engines' writer).

    Whole atoms are written (padding channels get ``pad_value``); bytes between
    lines and surfaces are left as they were.
    """
    array = np.asarray(array)
    layout = _write_layout(addr, array.shape, precision, atom_bytes, line_stride,
                           surface_stride, batch_stride, array.shape[0] if array.ndim == 4 else 1,
                           what)
    raw = _padded_raw(array, layout, precision, pad_value)
    if layout.height * layout.width == 1 and layout.in_atom_order:
        # one pixel, atoms back to back: each atom is its channels in order, so the cube's
        # bytes are the window's as they are (no scratch window, no transpose: a fully
        # connected layer's output, where each numpy call costs with the caches cold)
        _write_bytes(mem, addr, layout, precision, what, raw.reshape(-1))
        return layout
    _write_window(mem, addr, layout, precision, what,
                  lambda window: scatter_atoms(window, 0, layout, raw))
    return layout


def write_feature_atoms(mem, addr: int, atoms: np.ndarray, shape, precision: str,
                        atom_bytes: int, line_stride: int, surface_stride: int,
                        batch_stride: int = 0, what: str = "") -> FeatureLayout:
    """:func:`write_feature` of one cube of ``shape`` (C, H, W) whose elements come in the
    order of its atoms (:func:`read_feature_atoms`' order, any shape of as many elements):
    the bytes, checks and notices of ``write_feature``, with no transpose."""
    layout = _write_layout(addr, shape, precision, atom_bytes, line_stride, surface_stride,
                           batch_stride, 1, what)
    elements = to_elements(np.asarray(atoms), precision)
    if elements.size != layout.surfaces * layout.height * layout.width * layout.group:
        raise LayoutError(f"{elements.size} elements do not fill the atoms of {tuple(shape)}")
    raw = as_bytes(elements).reshape(1, layout.surfaces, layout.height, layout.width,
                                     layout.atom_bytes)

    def fill(window: np.ndarray) -> None:
        _atom_view(window, 0, layout, True)[...] = raw

    _write_window(mem, addr, layout, precision, what, fill)
    return layout


def _write_layout(addr: int, shape, precision: str, atom_bytes: int, line_stride: int,
                  surface_stride: int, batch_stride: int, batch: int, what: str
                  ) -> FeatureLayout:
    """The layout a feature write of ``shape`` at ``addr`` covers, after the checks every
    such write makes (the start on an atom, the strides, no two atoms on one address)."""
    check_alignment("feature", atom_bytes, what, start=addr)
    layout = feature_layout(shape, precision, atom_bytes, line_stride, surface_stride,
                            batch_stride, batch, what)
    layout.check_disjoint(what)
    return layout


def _write_window(mem, addr: int, layout: FeatureLayout, precision: str, what: str,
                  fill) -> None:
    """Write the window of ``layout`` at ``addr`` through ``mem.write``, ``fill(window)``
    storing its atoms (the gaps keep the bytes memory holds)."""
    if layout.is_packed:  # every byte written: the window is scratch (mem.write copies it)
        window = scratch_bytes(layout.extent, "write_feature")
    else:
        window = mem.read_for_update(addr, layout.extent, what)
    fill(window)
    _write_bytes(mem, addr, layout, precision, what, window)


def _write_bytes(mem, addr: int, layout: FeatureLayout, precision: str, what: str,
                 window: np.ndarray) -> None:
    """Write ``window``, the bytes of ``layout``'s window at ``addr``, through ``mem.write``."""
    mem.write(addr, window, what, lines=layout.lines)
    mem.notify_feature(addr, layout, precision, what)  # which elements these bytes hold


def fold_1x1(array, precision: str | None = None, atom_bytes: int = 32) -> np.ndarray:
    """The 1x1xC surface-packed special case: a (C, 1, 1) cube as a (C', 1, S) cube.

    A surface-packed 1x1xC cube has the same bytes as a packed cube of width
    S = ceil(C / C') and C' channels, which NVDLA may process instead (to save
    bandwidth).  Missing channels are zero.
    """
    array = np.asarray(array)
    precision = precision or infer_precision(array)
    if array.ndim != 3 or array.shape[1:] != (1, 1):
        raise LayoutError(f"fold_1x1 needs a (C, 1, 1) cube, got {array.shape}")
    group = elements_per_atom(precision, atom_bytes)
    elems = to_elements(array, precision).reshape(-1)
    padded = np.zeros(align_up(elems.size, group), dtype=elems.dtype)
    padded[: elems.size] = elems
    return padded.reshape(-1, group).T.reshape(group, 1, -1)
