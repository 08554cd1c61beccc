"""Simulated memory: sparse 64 KiB pages over a 64-bit address space.

Bytes never written read as zero.  NVDLA has two spaces: the primary memory
(MC, reached through the DBB/MCIF) and the secondary CV-SRAM (CVIF); a
``Machine`` holds one ``Memory`` for each.  Also here: the layer read/write
bookkeeping and the ``mem_init`` fill patterns.  The memory file formats live
in ``sim.memfiles``, atomic file writes in ``sim.files``, the host limits in
``sim.limits``.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import MemoryFault, SimError
from .files import write_atomically
from .limits import DEFAULT_LIMITS, MemoryLimits, check_extent
from .listeners import MemoryListeners

PAGE_BITS = 16
PAGE_SIZE = 1 << PAGE_BITS
PAGE_MASK = PAGE_SIZE - 1
#: Pages come from slabs, each twice the last from one page up to 32 MiB: numpy asks the
#: kernel to back arrays of 4 MiB or more with huge pages, so a memory that grows large
#: (a loadable's 26 MB of blobs, a network's outputs) takes a page fault per 2 MiB, not
#: per 4 KiB (ResNet-50's blobs: 6400 faults and 19 ms, or 300 and 9 ms), while a small
#: trace's few pages stay in a small slab (a huge page costs 2 MiB of zeroing to fault).
FIRST_SLAB_PAGES = 1
LAST_SLAB_PAGES = 512
_NO_SLAB = np.zeros((0, PAGE_SIZE), dtype=np.uint8)  # a new memory's slab: no rows to hand out
#: Memory.write_runs scatters this many runs or more at once, if they are short (this many
#: bytes a run or fewer, on average): a record file whose small records skip bytes makes
#: hundreds, ~1 us each one by one, where a scatter costs ~40 us, ~0.2 us a run and a few
#: ns a byte (629 runs of 32 bytes: ~0.3 ms against ~0.6)
SCATTER_RUNS = 64
SCATTER_MEAN_BYTES = 64


# How a layer's DMA read relates to its own writes (Memory._check_overlap)
STREAMED = "streamed"  # fetched while the layer writes: overlapping writes are timing-dependent
HELD = "held"  # fetched into a buffer the layer keeps (the convolution buffer)
ELEMENTWISE = "elementwise"  # each element written exactly where it was read is safe
ORDERED = "ordered"  # the unit's order puts every write after the reads of its bytes


class LayerAccess:
    """A DMA window of one layer: ``lines`` = (line offsets, line bytes) are the bytes
    it really moves (None: the whole window), or a function returning them: called only
    if a write of the layer meets the window (most never do, and the offsets of a small
    operand took longer to make than its read).  Made for every DMA access of a layer: a
    plain class with slots (a frozen dataclass took longer to make than the access)."""

    __slots__ = ("addr", "size", "what", "lines", "mode", "_sorted")

    def __init__(self, addr: int, size: int, what: str = "",
                 lines: tuple[np.ndarray, int] | Callable[[], tuple[np.ndarray, int]] | None
                 = None, mode: str = STREAMED):
        self.addr, self.size, self.what, self.lines, self.mode = addr, size, what, lines, mode
        self._sorted = None

    def __repr__(self) -> str:
        return (f"LayerAccess(addr={self.addr:#x}, size={self.size:#x}, what={self.what!r}, "
                f"mode={self.mode!r})")

    @property
    def _own_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) relative to ``addr``, sorted: computed once (a layer's read is
        compared with every one of its writes)."""
        if self._sorted is None:
            if self.lines is None:
                self._sorted = np.array([0], np.int64), np.array([self.size], np.int64)
            else:
                offsets, length = self.lines() if callable(self.lines) else self.lines
                starts = np.sort(np.asarray(offsets, np.int64).ravel())
                self._sorted = starts, starts + int(length)
        return self._sorted

    def intervals(self, base: int) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) of the bytes moved, relative to ``base`` (an address near this
        window: 64-bit addresses do not fit numpy's integers), sorted by start."""
        starts, ends = self._own_intervals
        shift = self.addr - base
        return (starts + shift, ends + shift) if shift else (starts, ends)

    def intersects(self, other: LayerAccess) -> bool:
        if not (self.addr < other.addr + other.size and other.addr < self.addr + self.size):
            return False
        base = min(self.addr, other.addr)  # the windows overlap: offsets from it are small
        starts, ends = self.intervals(base)  # equal lengths: ends sorted as starts are
        o_starts, o_ends = other.intervals(base)
        first = np.searchsorted(ends, o_starts, side="right")  # first interval ending past it
        hit = first < starts.size
        return bool(np.any(starts[first[hit]] < o_ends[hit]))

    def same_bytes(self, other: LayerAccess) -> bool:
        if self.addr != other.addr:
            return False
        mine, theirs = self.intervals(self.addr), other.intervals(self.addr)
        return all(a.shape == b.shape and np.array_equal(a, b)
                   for a, b in zip(mine, theirs, strict=True))


class Memory:
    """Sparse byte-addressable memory."""

    def __init__(self, name: str = "pri_mem", address_bits: int = 64,
                 limits: MemoryLimits = DEFAULT_LIMITS):
        self.name = name
        self.address_bits = address_bits
        self.limit = 1 << address_bits
        self.limits = limits
        self._pages: dict[int, np.ndarray] = {}
        # each page's row in its slab (its .base): a run of pages is one view of their slab
        # when their rows follow each other (_slab_view; asking each page's address took
        # 1.5 us a page, 3 ms of AlexNet's fully connected layers' 1800 pages)
        self._rows: dict[int, int] = {}
        # the first page of each page's run: the pages before it up to that one are the rows
        # just before its own in the same slab (pages never move, so a run only grows at its
        # end): a run of pages is checked in one look-up (_slab_view; page by page, AlexNet's
        # fully connected weights' 1800 pages took 0.15 ms)
        self._run_start: dict[int, int] = {}
        # pages are handed out from slabs of several (_new_page); none yet (a memory that
        # is never written makes none: a trace's sec_mem)
        self._slab = _NO_SLAB
        self._slab_used = 0
        self._slab_lock = threading.Lock()
        # (addr, size, what) read by the running layer's DMAs; None outside a layer
        self._layer_reads: list[LayerAccess] | None = None
        # every DMA read and write of the running layer, whatever its mode (sim.races
        # compares them with those of the layers still running); None outside a layer
        self._tracked_reads: list[LayerAccess] | None = None
        self._tracked_writes: list[LayerAccess] | None = None
        # a layer's DMAs may read from several threads at once (sim.conv.direct fetches
        # data and weights side by side): a read's window and its entry go in together
        self._reads_lock = threading.Lock()
        # told of every write, and of the feature cubes DMA writes held (sim.listeners)
        self.listeners = MemoryListeners()
        self._listening = self.listeners.items_view()  # true while anyone listens
        # Writes made inside a layer (by the hardware, not a CPU) are numbered; with the
        # log on, each is kept as (start, end, number): a recorder asks when a region last
        # changed, to check it as soon as it holds its final bytes (sim.trace.record).
        self.layer_writes = 0
        self._write_log: list[tuple[int, int, int]] | None = None

    # -- bounds -------------------------------------------------------------
    def check(self, addr: int, size: int, what: str = "", access: str = "access") -> None:
        """Raise a MemoryFault naming ``what`` (a register, a trace line) unless the range is valid.

        The range must lie in the configuration's address space and within the
        simulator's per-access limit.
        """
        if self.in_bounds(addr, size):
            return
        if addr < 0 or size < 0 or addr + size > self.limit:
            raise MemoryFault(f"{access} {addr:#x}+{size:#x} is outside {self.name} "
                              f"({self.address_bits}-bit address space)", where=what)
        if size > self.limits.access:
            raise MemoryFault(f"{access} {addr:#x}+{size:#x} exceeds the simulator's limit of "
                              f"{self.limits.access:#x} bytes per access", where=what)

    def in_bounds(self, addr: int, size: int) -> bool:
        """Whether :meth:`check` lets the range pass: in the address space, within the
        per-access limit."""
        return addr >= 0 and size >= 0 and addr + size <= self.limit \
            and size <= self.limits.access

    def _chunks(self, addr: int, size: int):
        """Yield (page_index, offset_in_page, offset_in_buffer, length)."""
        done = 0
        while done < size:
            a = addr + done
            page, off = a >> PAGE_BITS, a & PAGE_MASK
            n = min(PAGE_SIZE - off, size - done)
            yield page, off, done, n
            done += n

    def _reserve(self, addr: int, size: int, what: str) -> list[int]:
        """The pages a write of ``[addr, addr + size)`` would make (in address order);
        refuse it if they would make the memory hold more than its resident limit."""
        if not size:
            return []
        missing = self._missing_pages(addr, size)
        if not self._room_for(len(missing)):
            raise MemoryFault(f"write {addr:#x}+{size:#x} would make {self.name} hold more "
                              f"than the simulator's limit of {self.limits.resident:#x} bytes",
                              where=what)
        return missing

    # -- a layer's reads, so that an output overlapping its own input stops -----
    def begin_layer(self, refuse_overlap: bool = True) -> None:
        """A layer starts: its accesses are kept from now on, and, if ``refuse_overlap``,
        its writes are checked against its own reads (:meth:`_check_overlap`)."""
        self._tracked_reads, self._tracked_writes = [], []
        if refuse_overlap:
            self._layer_reads = []
            self._read_bytes = np.empty((64, 2), np.uint64)  # first and last byte of each read

    def end_layer(self) -> tuple[list[LayerAccess], list[LayerAccess]]:
        """The layer has ended: (its reads, its writes)."""
        done = self._tracked_reads or [], self._tracked_writes or []
        self._layer_reads = self._tracked_reads = self._tracked_writes = None
        return done

    def _record_read(self, read: LayerAccess) -> None:
        tracked = self._tracked_reads
        if tracked is None or not read.size:
            return
        tracked.append(read)  # one call: atomic, from whichever thread
        if self._layer_reads is None or read.mode in (HELD, ORDERED):
            return
        with self._reads_lock:
            n = len(self._layer_reads)
            if n == len(self._read_bytes):
                self._read_bytes = np.resize(self._read_bytes, (2 * n, 2))
            self._read_bytes[n] = (read.addr, read.addr + read.size - 1)
            self._layer_reads.append(read)

    def _reads_near(self, write: LayerAccess) -> list[LayerAccess]:
        """The layer's reads whose windows meet the write's: a unit that moves a cube
        line by line makes thousands of both, so the windows are compared as arrays."""
        reads = self._layer_reads
        if len(reads) < 16:
            return reads
        spans = self._read_bytes[: len(reads)]
        last = write.addr + write.size - 1  # byte addresses stay below 2**64
        meet = (spans[:, 0] <= np.uint64(last)) & (spans[:, 1] >= np.uint64(write.addr))
        return [reads[i] for i in np.flatnonzero(meet).tolist()]

    def _check_overlap(self, write: LayerAccess) -> None:
        """A layer's DMA write into bytes the same layer still streams in is refused.

        NVDLA's write DMA runs while its read DMAs still fetch, so a write onto
        bytes the layer reads gives a result that depends on request order and
        latency, and the simulator (which reads before it writes) stops instead
        of guessing.  Not refused, because the result does not depend on timing:
        writes onto bytes the layer never reads (only the bytes each line moves
        count, not the gaps its strides leave), reads held in a buffer the
        layer keeps (the convolution buffer), and a unit writing each element
        exactly where it read it, every input byte fetched once (an elementwise
        SDP layer; CDP, whose datapath keeps the channel window it fetched): every
        byte is read before the element computed from it is written.
        """
        for read in self._reads_near(write):
            if read.mode == ELEMENTWISE and read.same_bytes(write):
                continue
            if read.intersects(write):
                raise MemoryFault(
                    f"write {write.addr:#x}+{write.size:#x} overlaps bytes this layer "
                    f"reads ({read.what + ' ' if read.what else ''}{read.addr:#x}+"
                    f"{read.size:#x}) in {self.name} (the result would depend on DMA timing)",
                    where=write.what)

    # -- access -------------------------------------------------------------
    def read_array(self, addr: int, size: int, what: str = "", *, lines=None,
                   mode: str = STREAMED) -> np.ndarray:
        """A copy of ``size`` bytes at ``addr`` as a uint8 array (never-written bytes read 0).

        ``lines`` = (line offsets, line bytes): the bytes the DMA really moves
        inside the window (None: all of it), or a function returning them (called only
        if a write of the layer meets the window); ``mode``: STREAMED, HELD or
        ELEMENTWISE (see :meth:`_check_overlap`).
        """
        self.check(addr, size, what, "read")
        self._record_read(LayerAccess(addr, size, what, lines, mode))
        return self._copy_out(addr, size)

    def read_view(self, addr: int, size: int, what: str = "", *, lines=None,
                  mode: str = STREAMED) -> np.ndarray:
        """:meth:`read_array` without its copy where the range lies in one page or in
        consecutive pages of one slab (a loadable's weights, written in one go; a feature
        cube a layer wrote): a read-only view of the page or slab.

        For a reader done with the bytes before anything writes the memory (the CDMA
        unpacking a layer's weights into an array of its own, a DMA gathering a cube's
        elements): a later write shows through the view.  Anything else (missing pages,
        a slab boundary) is a copy.
        """
        self.check(addr, size, what, "read")
        self._record_read(LayerAccess(addr, size, what, lines, mode))
        view = self._slab_view(addr, size)
        return self._copy_out(addr, size) if view is None else view

    def _slab_view(self, addr: int, size: int, writeable: bool = False) -> np.ndarray | None:
        """``[addr, addr + size)`` as a view (read-only unless ``writeable``) of the page or
        of the slab holding all its pages in order, or None."""
        first, last = addr >> PAGE_BITS, (addr + size - 1) >> PAGE_BITS
        if size <= 0:
            return None
        pages = self._pages
        head = pages.get(first)
        if first == last:
            if head is None:
                return None
            view = head[addr & PAGE_MASK: (addr & PAGE_MASK) + size]
            view.flags.writeable = writeable
            return view
        slab = None if head is None else head.base
        if slab is None or slab.ndim != 2 or slab.shape[1] != PAGE_SIZE:
            return None
        if self._run_start.get(last, last + 1) > first:  # not every page, or not in a row
            return None
        offset = self._rows[first] * PAGE_SIZE + (addr & PAGE_MASK)
        view = slab.reshape(-1)[offset: offset + size]
        view.flags.writeable = writeable
        return view

    def read_for_update(self, addr: int, size: int, what: str = "") -> np.ndarray:
        """The bytes a partial write keeps (a write DMA's gaps): not an input of the layer."""
        self.check(addr, size, what, "write")
        return self._copy_out(addr, size)

    def _copy_out(self, addr: int, size: int) -> np.ndarray:
        off = addr & PAGE_MASK
        if off + size <= PAGE_SIZE:  # the usual read, inside one page
            data = self._pages.get(addr >> PAGE_BITS)
            if data is not None:
                return data[off : off + size].copy()
        out = np.zeros(size, dtype=np.uint8)
        for page, off, pos, n in self._chunks(addr, size):
            data = self._pages.get(page)
            if data is not None:
                out[pos : pos + n] = data[off : off + n]
        return out

    def read(self, addr: int, size: int, what: str = "") -> bytes:
        """:meth:`read_array` as bytes, copied once (the pages joined straight into them)."""
        self.check(addr, size, what, "read")
        self._record_read(LayerAccess(addr, size, what, None, STREAMED))
        pages = self._pages
        return b"".join([pages[page][off:off + n] if page in pages else bytes(n)
                         for page, off, _, n in self._chunks(addr, size)])

    def write(self, addr: int, data, what: str = "", *, lines=None) -> None:
        """Write bytes (``bytes``, ``bytearray`` or a uint8-viewable numpy array).

        ``lines`` = (line offsets, line bytes): the bytes a DMA writes (or a function
        returning them, as for :meth:`read_array`); the rest of the window is written
        back unchanged.
        """
        buf = _as_u8(data)
        size = buf.size
        self.check(addr, size, what, "write")
        if self._tracked_writes is not None and size:
            access = LayerAccess(addr, size, what, lines)
            if self._layer_reads:
                self._check_overlap(access)
            self._tracked_writes.append(access)
        off = addr & PAGE_MASK
        # the usual write, inside one page already held, needs no room
        held = self._pages.get(addr >> PAGE_BITS) if off + size <= PAGE_SIZE else None
        missing = None if held is not None else self._reserve(addr, size, what)
        if self._layer_reads is not None:
            self.layer_writes += 1
            if self._write_log is not None:
                self._write_log.append((addr, addr + size, self.layer_writes))
        if held is not None:
            held[off : off + size] = buf
        else:
            if missing and len(missing) > 1:
                self._make_pages(missing)
            for page, off, pos, n in self._chunks(addr, size):
                dst = self._pages.get(page)
                if dst is None:
                    dst = self._new_page(page)
                dst[off : off + n] = buf[pos : pos + n]
        if self._listening:
            self.listeners.wrote(self, addr, size)

    def write_runs(self, base: int, runs) -> None:
        """:meth:`write` of each ``(offset, data)`` of ``runs`` at ``base + offset``, in order
        (a record file's runs: hundreds when its records skip bytes).  A run inside one page
        already held, outside a layer and unheard, is copied into it here (what write does
        with it, without a call's and its checks' cost: the range is valid, the page held);
        any other is :meth:`write`'s, with its checks and errors."""
        if self._tracked_writes is not None or self._listening:
            for offset, data in runs:
                self.write(base + offset, data)
            return
        if len(runs) >= SCATTER_RUNS and self._scatter_runs(base, runs):
            return
        pages, in_bounds = self._pages, self.in_bounds
        for offset, data in runs:
            addr = base + offset
            size = len(data)
            off = addr & PAGE_MASK
            held = pages.get(addr >> PAGE_BITS) if off + size <= PAGE_SIZE else None
            if held is None or not isinstance(data, bytes) or not in_bounds(addr, size):
                self.write(addr, data)
            else:  # bytes copied straight into the page's buffer (half numpy's cost)
                memoryview(held)[off:off + size] = data

    def _scatter_runs(self, base: int, runs) -> bool:
        """:meth:`write_runs` of many short runs as one scatter through a view of the window
        they span, when that is what writing them one by one leaves and raises nothing: runs
        of bytes, none overlapping another (the order of writing does not matter), within
        the address space and the per-access limit, over pages all held in order in one
        slab (a region mem_init made).  False, with nothing written, otherwise."""
        datas = [data for _, data in runs]
        if not all(type(data) is bytes for data in datas):
            return False
        try:
            starts = np.array([offset for offset, _ in runs], np.int64)
        except OverflowError:
            return False
        sizes = np.fromiter(map(len, datas), np.int64, len(datas))
        if int(sizes.sum()) > SCATTER_MEAN_BYTES * len(datas):
            return False  # long runs: copied one by one sooner than byte by byte
        s0 = int(starts.min())
        if int(starts.max()) - s0 > self.limits.resident:
            return False  # no slab spans them (and int64 sums of far offsets could wrap)
        starts -= s0  # small from here: the window's offsets
        order = np.argsort(starts, kind="stable")
        first, ends = starts[order], starts[order] + sizes[order]
        if (first[1:] < np.maximum.accumulate(ends)[:-1]).any():
            return False  # runs overlap: the later one's bytes win, written in order
        lo, span = base + s0, int(ends.max())
        if lo < 0 or lo + span > self.limit or int(sizes.max()) > self.limits.access:
            return False
        window = self._slab_view(lo, span, writeable=True)
        if window is None:
            return False
        # byte k of the runs joined goes to its run's start plus its place in the run
        before = np.cumsum(sizes) - sizes
        index = np.repeat(starts - before, sizes) + np.arange(int(sizes.sum()))
        window[index] = np.frombuffer(b"".join(datas), np.uint8)
        return True

    def hold(self, ranges) -> None:
        """Make the missing pages of ``ranges`` ((addr, size) pairs) now, in address order
        in one slab of their own, for writes of those ranges about to follow in another
        order (a loadable's blobs): :meth:`read_view` then hands out any run of them
        without a copy.  The memory reads the same (a new page is zeros); nothing is made
        unless every range is valid and every page fits the resident limit, so the writes
        meet the errors they would have met."""
        pages: set[int] = set()
        for addr, size in ranges:
            if size <= 0:
                continue
            try:
                self.check(addr, size)
            except MemoryFault:
                return
            pages.update(range(addr >> PAGE_BITS, ((addr + size - 1) >> PAGE_BITS) + 1))
        missing = sorted(pages.difference(self._pages))
        if missing and self._room_for(len(missing)):
            slab = np.zeros((len(missing), PAGE_SIZE), dtype=np.uint8)
            self._add_pages(missing, slab, 0)

    def _make_pages(self, pages: list[int]) -> None:
        """Make ``pages`` (missing, in address order) consecutive rows of one slab: the cube
        a DMA writes over them is then read back as a view (:meth:`read_view`).  The rest of
        the current slab, if too short for them, is left unused."""
        with self._slab_lock:
            pages = [page for page in pages if page not in self._pages]  # another thread's?
            first = self._slab_used_after(len(pages))
            self._add_pages(pages, self._slab, first)

    def _new_page(self, page: int) -> np.ndarray:
        """Page ``page`` made: zeros, the next row of the current slab (a new one when it is
        used up)."""
        with self._slab_lock:  # never the same row twice, whichever thread asks
            row = self._slab_used_after(1)
            made = self._pages[page] = self._slab[row]
            self._rows[page] = row
            self._run_start[page] = self._run_from(page, self._slab, row)
            return made

    def _run_from(self, page: int, slab: np.ndarray, row: int) -> int:
        """The first page of the run of ``page``, made row ``row`` of ``slab``: the run of
        the page before it if that one is the row before in the same slab."""
        before = self._pages.get(page - 1)
        if before is not None and before.base is slab and self._rows[page - 1] == row - 1:
            return self._run_start[page - 1]
        return page

    def _add_pages(self, pages: list[int], slab: np.ndarray, first_row: int) -> None:
        """``pages`` (missing, in address order) made rows ``first_row`` on of ``slab``, each
        page's run (``_run_start``) found for all at once (page by page, a loadable's 3800
        pages took 0.5 ms more)."""
        if not pages:
            return
        rows = range(first_row, first_row + len(pages))
        self._pages.update(zip(pages, slab[rows.start:rows.stop], strict=True))
        self._rows.update(zip(pages, rows, strict=True))
        first = pages[0]
        start = self._run_from(first, slab, first_row)
        if len(pages) == 1:
            self._run_start[first] = start
            return
        at = np.asarray(pages, np.int64)
        starts = at.copy()  # a page whose page before is the row before starts no run
        starts[1:][np.diff(at) == 1] = np.iinfo(np.int64).min
        np.maximum.accumulate(starts, out=starts)
        starts[starts == first] = start
        self._run_start.update(zip(pages, starts.tolist(), strict=True))

    def _slab_used_after(self, n: int) -> int:
        """The first of the next ``n`` rows (pages of zeros) of the current slab, or of a new
        one (twice the last, at least ``n`` rows) when too few are left, now taken; the
        caller holds the lock."""
        if len(self._slab) - self._slab_used < n:
            size = min(max(2 * len(self._slab), FIRST_SLAB_PAGES), LAST_SLAB_PAGES)
            self._slab = np.zeros((max(size, n), PAGE_SIZE), dtype=np.uint8)
            self._slab_used = 0
        self._slab_used += n
        return self._slab_used - n

    def window_write_ok(self, addr: int, size: int, lines: tuple[np.ndarray, int]) -> bool:
        """Would one :meth:`write` of the window ``[addr, addr + size)`` with ``lines`` =
        (line offsets, line bytes) leave what writes of those lines one by one leave?  Yes
        unless it faults (a line's own write would name its range), someone is told of
        each write (listeners, the layer write log), or it would hold a page no line
        touches (the resident limit counts pages)."""
        if self._listening or self._write_log is not None or not size:
            return False
        try:
            self.check(addr, size)
        except MemoryFault:
            return False
        first = addr >> PAGE_BITS
        missing = self._missing_pages(addr, size)
        if not missing:
            return True
        offsets, length = lines
        if not 0 < length <= PAGE_SIZE:
            return False
        starts = (addr & PAGE_MASK) + np.asarray(offsets, np.int64).ravel()
        touched = set(((np.concatenate([starts, starts + (length - 1)]) >> PAGE_BITS)
                       + first).tolist())
        return touched.issuperset(missing) and self._room_for(len(missing))

    def _missing_pages(self, addr: int, size: int) -> list[int]:
        """The pages of ``[addr, addr + size)`` (size > 0) this memory does not hold yet."""
        first, last = addr >> PAGE_BITS, (addr + size - 1) >> PAGE_BITS
        return [p for p in range(first, last + 1) if p not in self._pages]

    def _room_for(self, new_pages: int) -> bool:
        """Whether ``new_pages`` more pages keep the memory within its resident limit."""
        return (len(self._pages) + new_pages) * PAGE_SIZE <= self.limits.resident

    def log_layer_writes(self) -> None:
        """Keep the range of every in-layer write from now on (for :meth:`last_layer_write`)."""
        if self._write_log is None:
            self._write_log = []

    def notify_feature(self, addr: int, layout, precision: str, what: str = "") -> None:
        """Tell the listeners that the last write at ``addr`` held this feature cube."""
        if self._listening:
            self.listeners.wrote_feature(self, addr, layout, precision, what)

    def last_layer_write(self, addr: int, size: int) -> int:
        """The number of the last logged in-layer write that touched the range (0: none);
        compare with :attr:`layer_writes` read earlier."""
        if self._write_log is None:
            raise RuntimeError("last_layer_write needs log_layer_writes() first")
        end = addr + size
        for start, stop, number in reversed(self._write_log):
            if start < end and addr < stop:
                return number
        return 0

    def gather(self, addr: int, offsets: np.ndarray, what: str = "") -> np.ndarray:
        """Bytes at ``addr + offsets`` (any shape), for strided DMA reads."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.size == 0:
            return np.zeros(offsets.shape, dtype=np.uint8)
        lo, hi = int(offsets.min()), int(offsets.max())
        window = self.read_array(addr + lo, hi - lo + 1, what)
        return window[offsets - lo]

    def scatter(self, addr: int, offsets: np.ndarray, values: np.ndarray, what: str = "") -> None:
        """Write ``values`` (uint8) at ``addr + offsets``, leaving other bytes as they are."""
        offsets = np.asarray(offsets, dtype=np.int64).ravel()
        values = _as_u8(values)
        if offsets.size == 0:
            return
        lo, hi = int(offsets.min()), int(offsets.max())
        window = self.read_for_update(addr + lo, hi - lo + 1, what)
        window[offsets - lo] = values
        self.write(addr + lo, window, what)

    def crc32(self, addr: int, size: int, what: str = "") -> int:
        """CRC-32 (zlib polynomial) of a range, as the trace checks compute it."""
        self.check(addr, size, what, "CRC")
        crc = 0
        step = 1 << 20
        for start in range(addr, addr + size, step):
            crc = zlib.crc32(self.read(start, min(step, addr + size - start)), crc)
        return crc & 0xFFFFFFFF

    def fill(self, addr: int, size: int, pattern: str, seed: int = 0, what: str = "") -> None:
        """``mem_init`` patterns: ALL_ZERO, ONES, AFIVE, FIVEA, ADDR, RANDOM."""
        self.check(addr, size, what, "fill")
        if pattern.upper() == "ALL_ZERO" and size and self._tracked_writes is None \
                and not self._listening:
            self._zero(addr, size, pattern, what)
            return
        self.write(addr, fill_pattern(pattern, addr, size, seed), what)

    def _zero(self, addr: int, size: int, pattern: str, what: str) -> None:
        """:meth:`write` of zeros outside a layer, unheard: a page it makes is zero already
        (most ``mem_init`` fills are zeros onto memory never written)."""
        check_extent(size, f"mem_init {pattern}")  # what fill_pattern checks
        missing = self._reserve(addr, size, what)
        if len(missing) > 1:  # consecutive rows of one slab, as write makes them: what is
            self._make_pages(missing)  # loaded there next is then read as a view, not copied
        made = set(missing)
        pages = self._pages
        for page, off, _, n in self._chunks(addr, size):
            dst = pages.get(page)
            if dst is None:
                self._new_page(page)
            elif page not in made:
                dst[off : off + n] = 0

    def load_file(self, addr: int, path: str | Path) -> int:
        """Load a memory image (raw binary, record or hex ``.dat``) at ``addr``.

        Returns the number of bytes loaded.
        """
        from .memfiles import load_image  # the formats: only a memory that loads a file

        data = load_image(path, self.limits)
        self.write(addr, data, str(path))
        return len(data)

    def dump_file(self, addr: int, size: int, path: str | Path, dat_format: str = "hex") -> None:
        """Write ``size`` bytes at ``addr`` to ``path``, never leaving it half-written.

        A ``.dat`` name gets NVDLA's text format: ``hex`` (the nv_full trace
        player's dump) or ``records`` (nv_small's ``{offset, size, payload}``);
        any other name gets raw binary.
        """
        from .memfiles import format_hex_dat, format_record_dat

        data = self.read(addr, size, str(path))
        if Path(path).suffix != ".dat":
            write_atomically(path, data)
        elif dat_format == "hex":
            write_atomically(path, format_hex_dat(addr, data))
        elif dat_format == "records":
            write_atomically(path, format_record_dat(data))
        else:
            raise SimError(f"unknown .dat format {dat_format!r} (hex or records)")


def _as_u8(data) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):  # a view: writes copy it into pages
        return np.frombuffer(data, dtype=np.uint8)
    arr = np.ascontiguousarray(data)
    return arr.view(np.uint8).ravel()


def fill_pattern(pattern: str, addr: int, size: int, seed: int = 0) -> np.ndarray:
    """The bytes a ``mem_init`` pattern writes over ``[addr, addr+size)``."""
    name = pattern.upper()
    check_extent(size, f"mem_init {pattern}")
    if name == "ALL_ZERO":
        return np.zeros(size, dtype=np.uint8)
    if name == "ONES":
        return np.full(size, 0xFF, dtype=np.uint8)
    if name == "AFIVE":
        return np.full(size, 0xA5, dtype=np.uint8)
    if name == "FIVEA":
        return np.full(size, 0x5A, dtype=np.uint8)
    if name == "ADDR":
        # every aligned 32-bit word holds the low 32 bits of its own address
        first = addr & ~3
        words = np.arange(first, addr + size + 4, 4, dtype=np.uint64) & 0xFFFFFFFF
        raw = words.astype("<u4").view(np.uint8)
        return raw[addr - first : addr - first + size].copy()
    if name == "RANDOM":
        return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    raise SimError(f"unknown mem_init pattern {pattern!r}")
