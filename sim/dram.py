"""Simulated memory: sparse 64 KiB pages over a 64-bit address space.

Bytes never written read as zero.  NVDLA has two spaces: the primary memory
(MC, reached through the DBB/MCIF) and the secondary CV-SRAM (CVIF); a
``Machine`` holds one ``Memory`` for each.  Also here: the two NVDLA memory
file formats (``.dat`` records of the nv_small traces and hex-byte dumps of
the nv_full trace player) and the ``mem_init`` fill patterns.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .errors import MemoryFault, SimError

PAGE_BITS = 16
PAGE_SIZE = 1 << PAGE_BITS
PAGE_MASK = PAGE_SIZE - 1


@dataclass(frozen=True)
class MemoryLimits:
    """What one simulated memory may cost the host, so no input can exhaust it.

    ``access``: the most bytes one DMA transfer, fill, load, dump or CRC may
    cover (a register programming a terabyte cube stops here, before any
    allocation); ``resident``: the most bytes of pages a memory may hold.
    """

    access: int = 256 << 20
    resident: int = 2 << 30


DEFAULT_LIMITS = MemoryLimits()


def check_extent(size: int, what: str, limits: MemoryLimits = DEFAULT_LIMITS) -> int:
    """Raise before allocating ``size`` bytes that a single access may not cover."""
    if size < 0:
        raise MemoryFault(f"negative size {size}", where=what)
    if size > limits.access:
        raise MemoryFault(f"{size:#x} bytes exceed the simulator's limit of "
                          f"{limits.access:#x} bytes per access", where=what)
    return size


# How a layer's DMA read relates to its own writes (Memory._check_overlap)
STREAMED = "streamed"  # fetched while the layer writes: overlapping writes are timing-dependent
HELD = "held"  # fetched into a buffer the layer keeps (the convolution buffer)
ELEMENTWISE = "elementwise"  # each element written exactly where it was read is safe


@dataclass(frozen=True)
class LayerAccess:
    """A DMA window of one layer: ``lines`` = (line offsets, line bytes) are the bytes
    it really moves (None: the whole window)."""

    addr: int
    size: int
    what: str = ""
    lines: tuple[np.ndarray, int] | None = None
    mode: str = STREAMED

    @cached_property
    def _own_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, ends) relative to ``addr``, sorted: computed once (a layer's read is
        compared with every one of its writes)."""
        if self.lines is None:
            return np.array([0], np.int64), np.array([self.size], np.int64)
        offsets, length = self.lines
        starts = np.sort(np.asarray(offsets, np.int64).ravel())
        return starts, starts + int(length)

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
        # (addr, size, what) read by the running layer's DMAs; None outside a layer
        self._layer_reads: list[LayerAccess] | None = None
        # told of every write (``wrote(memory, addr, size)``); see sim.diff.record
        self.observer = None
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
        if addr < 0 or size < 0 or addr + size > self.limit:
            raise MemoryFault(f"{access} {addr:#x}+{size:#x} is outside {self.name} "
                              f"({self.address_bits}-bit address space)", where=what)
        if size > self.limits.access:
            raise MemoryFault(f"{access} {addr:#x}+{size:#x} exceeds the simulator's limit of "
                              f"{self.limits.access:#x} bytes per access", where=what)

    def _chunks(self, addr: int, size: int):
        """Yield (page_index, offset_in_page, offset_in_buffer, length)."""
        done = 0
        while done < size:
            a = addr + done
            page, off = a >> PAGE_BITS, a & PAGE_MASK
            n = min(PAGE_SIZE - off, size - done)
            yield page, off, done, n
            done += n

    def _reserve(self, addr: int, size: int, what: str) -> None:
        """Refuse a write that would make the memory hold more than its resident limit."""
        if not size:
            return
        first, last = addr >> PAGE_BITS, (addr + size - 1) >> PAGE_BITS
        new = sum(1 for p in range(first, last + 1) if p not in self._pages)
        if (len(self._pages) + new) * PAGE_SIZE > self.limits.resident:
            raise MemoryFault(f"write {addr:#x}+{size:#x} would make {self.name} hold more than "
                              f"the simulator's limit of {self.limits.resident:#x} bytes",
                              where=what)

    # -- a layer's reads, so that an output overlapping its own input stops -----
    def begin_layer(self) -> None:
        self._layer_reads = []
        self._read_bytes = np.empty((64, 2), np.uint64)  # first and last byte of each read

    def end_layer(self) -> None:
        self._layer_reads = None

    def _record_read(self, read: LayerAccess) -> None:
        if self._layer_reads is not None and read.size and read.mode != HELD:
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
        layer keeps (the convolution buffer), and an elementwise unit writing
        each element exactly where it read it (every byte is read before the
        element computed from it is written).
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
        inside the window (None: all of it); ``mode``: STREAMED, HELD or
        ELEMENTWISE (see :meth:`_check_overlap`).
        """
        self.check(addr, size, what, "read")
        self._record_read(LayerAccess(addr, size, what, lines, mode))
        return self._copy_out(addr, size)

    def read_for_update(self, addr: int, size: int, what: str = "") -> np.ndarray:
        """The bytes a partial write keeps (a write DMA's gaps): not an input of the layer."""
        self.check(addr, size, what, "write")
        return self._copy_out(addr, size)

    def _copy_out(self, addr: int, size: int) -> np.ndarray:
        out = np.zeros(size, dtype=np.uint8)
        for page, off, pos, n in self._chunks(addr, size):
            data = self._pages.get(page)
            if data is not None:
                out[pos : pos + n] = data[off : off + n]
        return out

    def read(self, addr: int, size: int, what: str = "") -> bytes:
        return self.read_array(addr, size, what).tobytes()

    def write(self, addr: int, data, what: str = "", *, lines=None) -> None:
        """Write bytes (``bytes``, ``bytearray`` or a uint8-viewable numpy array).

        ``lines`` = (line offsets, line bytes): the bytes a DMA writes; the rest
        of the window is written back unchanged.
        """
        buf = _as_u8(data)
        self.check(addr, buf.size, what, "write")
        if self._layer_reads:
            self._check_overlap(LayerAccess(addr, buf.size, what, lines))
        self._reserve(addr, buf.size, what)
        if self._layer_reads is not None:
            self.layer_writes += 1
            if self._write_log is not None:
                self._write_log.append((addr, addr + buf.size, self.layer_writes))
        for page, off, pos, n in self._chunks(addr, buf.size):
            dst = self._pages.get(page)
            if dst is None:
                dst = self._pages[page] = np.zeros(PAGE_SIZE, dtype=np.uint8)
            dst[off : off + n] = buf[pos : pos + n]
        if self.observer is not None:
            self.observer.wrote(self, addr, buf.size)

    def log_layer_writes(self) -> None:
        """Keep the range of every in-layer write from now on (for :meth:`last_layer_write`)."""
        if self._write_log is None:
            self._write_log = []

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
        self.write(addr, fill_pattern(pattern, addr, size, seed), what)

    def load_file(self, addr: int, path: str | Path) -> int:
        """Load a memory image (raw binary, record or hex ``.dat``) at ``addr``.

        Returns the number of bytes loaded.
        """
        data = load_image(path, self.limits)
        self.write(addr, data, str(path))
        return len(data)

    def dump_file(self, addr: int, size: int, path: str | Path, dat_format: str = "hex") -> None:
        """Write ``size`` bytes at ``addr`` to ``path``, never leaving it half-written.

        A ``.dat`` name gets NVDLA's text format: ``hex`` (the nv_full trace
        player's dump) or ``records`` (nv_small's ``{offset, size, payload}``);
        any other name gets raw binary.
        """
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
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), dtype=np.uint8)
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


# -- NVDLA memory files -------------------------------------------------------

_RECORD = re.compile(
    r"\{\s*offset\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*size\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,"
    r"\s*payload\s*:\s*([^{}]*)\}"  # a payload never holds a brace: scans stay linear
)


_STRAY = re.compile(r"[^\s{},]")


def read_record_dat(path: str | Path) -> list[tuple[int, bytes]]:
    """Parse an nv_small ``.dat``: ``{offset:0x0, size:4, payload:0x00 0x20 ...} ,``.

    Returns (offset, bytes) records; raises SimError naming file:line on bad input.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise SimError(f"{path}: holds no memory records (expected {{offset:0x.., size:N, "
                       f"payload:0x.. ...}})")
    records = _well_formed_records(text)
    if records is not None:
        return records

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def check_gap(start: int, stop: int) -> None:
        stray = _STRAY.search(text, start, stop)
        if stray:
            raise SimError(f"{path}:{line_of(stray.start())}: not a memory record")

    records = []
    end = 0
    for match in _RECORD.finditer(text):
        check_gap(end, match.start())
        end = match.end()
        try:
            offset = int(match.group(1), 0)
            size = int(match.group(2), 0)
            payload = _hex_bytes(match.group(3))
            if payload is None:
                payload = bytes([int(tok, 16) for tok in match.group(3).split()])
        except ValueError:
            raise SimError(f"{path}:{line_of(match.start())}: malformed payload") from None
        if len(payload) != size:
            raise SimError(
                f"{path}:{line_of(match.start())}: size {size} but {len(payload)} payload bytes"
            )
        records.append((offset, payload))
    check_gap(end, len(text))
    return records


def _well_formed_records(text: str) -> list[tuple[int, bytes]] | None:
    """The records of a file with nothing wrong in it, parsed in bulk; None when anything
    is off (the record-by-record parse then names the line)."""
    fields = _RECORD.findall(text)
    if _STRAY.search(_RECORD.sub("", text)):
        return None
    try:
        offsets = [int(offset, 0) for offset, _, _ in fields]
        sizes = [int(size, 0) for _, size, _ in fields]
    except ValueError:
        return None
    payloads = [payload for _, _, payload in fields]
    if any(p.count("0x") != size for p, size in zip(payloads, sizes, strict=True)):
        return None  # a size that disagrees, or tokens other than 0xHH
    data = _hex_bytes(" ".join(payloads))
    if data is None or len(data) != sum(sizes):
        return None
    records, start = [], 0
    for offset, size in zip(offsets, sizes, strict=True):
        records.append((offset, data[start:start + size]))
        start += size
    return records


def record_runs(records: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The records with each one that starts where the previous ended joined to it: the
    same bytes in the same order of writing, in fewer writes."""
    runs: list[tuple[int, list[bytes]]] = []
    end = None
    for offset, payload in records:
        if offset == end:
            runs[-1][1].append(payload)
        else:
            runs.append((offset, [payload]))
        end = offset + len(payload)
    return [(offset, b"".join(parts)) for offset, parts in runs]


def record_dat_extent(records: list[tuple[int, bytes]]) -> int:
    return max((off + len(data) for off, data in records), default=0)


def _hex_bytes(tokens: str) -> bytes | None:
    """Whitespace-separated ``0xHH`` tokens as bytes, or None unless every one is exactly that."""
    if "0X" in tokens:
        tokens = tokens.replace("0X", "0x")
    try:
        data = bytes.fromhex(tokens.replace("0x", ""))
    except ValueError:
        return None
    return data if len(data) == tokens.count("0x") else None


def _is_data_line(line: str) -> bool:
    """A line of hex bytes, not a header (``key = value``, ``dumped memory,...``, rules)."""
    return line.lstrip()[:2].lower() == "0x" and "=" not in line


def _check_header(path: Path, lineno: int, line: str) -> None:
    """Besides data, a memory file holds text: headers (``key = value``, ``memory
    type:dram``), comments, rules, braces; anything else (binary) is no memory file."""
    text = line.strip()
    if not (text.isprintable() and text.isascii()):
        raise SimError(f"{path}:{lineno}: binary data, neither hex bytes (0xHH ...) nor a "
                       f"header line")


def read_hex_dat(path: str | Path) -> bytes:
    """Parse an nv_full trace-player memory file: whitespace-separated hex bytes.

    Header lines (``key = value``, ``dumped memory,...``, rules of ``=``) are
    skipped; every other token must be a hex byte.  Files whose lines all look
    like the first (the usual layout) are decoded as one array; other
    well-formed files (every token ``0xHH``) in one call; anything else goes
    token by token to find the line to blame.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    start, lineno = 0, 1  # skip the header lines at the top; any later ones take the slow path
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        line = raw[start:end].decode("latin-1")
        if _is_data_line(line):
            break
        _check_header(path, lineno, line)
        start, lineno = end + 1, lineno + 1
    data = _regular_hex(raw, start)
    if data is None:
        data = _hex_bytes(raw[start:].decode("latin-1"))
    if data is None:
        data = _read_hex_tokens(path)
    if not data:
        raise SimError(f"{path}: holds no data (expected lines of hex bytes, 0xHH ...)")
    return data


_HEX_DIGIT = np.full(256, 255, np.uint8)  # value of an ASCII hex digit, 255 for anything else
_HEX_DIGIT[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16)
_HEX_DIGIT[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


def _regular_hex(raw: bytes, start: int) -> bytes | None:
    """The bytes of ``raw[start:]`` when every full line is laid out like the first
    (``0xHH`` tokens at the same columns, the same separators); None otherwise.
    A shorter last line goes through :func:`_hex_bytes`."""
    first = raw.find(b"\n", start)
    if first < 0:
        return None
    width = first + 1 - start
    line = np.frombuffer(raw, np.uint8, count=width, offset=start)
    xs = np.flatnonzero((line | 0x20) == ord("x"))  # the x of every 0x
    if xs.size == 0 or xs[0] < 1 or xs[-1] + 2 >= width:
        return None
    lines = (len(raw) - start) // width
    body = np.frombuffer(raw, np.uint8, count=lines * width, offset=start).reshape(lines, width)
    fixed = np.ones(width, bool)
    fixed[xs + 1] = fixed[xs + 2] = False
    if not (body[:, fixed] == line[fixed]).all():
        return None
    high, low = _HEX_DIGIT[body[:, xs + 1]], _HEX_DIGIT[body[:, xs + 2]]
    if ((high | low) > 15).any():
        return None
    tail = raw[start + lines * width:].decode("latin-1")
    rest = _hex_bytes(tail) if tail.strip() else b""
    return None if rest is None else ((high << 4) | low).tobytes() + rest


def _read_hex_tokens(path: Path) -> bytes:
    out = bytearray()
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not _is_data_line(line):
            _check_header(path, lineno, line)
            continue
        for tok in line.split():
            try:
                value = int(tok, 16)
            except ValueError:
                raise SimError(f"{path}:{lineno}: {tok!r} is not a hex byte") from None
            if not 0 <= value <= 0xFF:
                raise SimError(f"{path}:{lineno}: {tok!r} is not a byte")
            out.append(value)
    return bytes(out)


def format_hex_dat(addr: int, data: bytes, ram: str = "dram") -> str:
    """Render bytes in the trace player's dump format (32 bytes a line)."""
    lines = [f"dumped memory,start_address={addr:#x} size={len(data):#x}",
             f"memory type:{ram}", "=" * 30, ""]
    for i in range(0, len(data), 32):
        lines.append(" " + " ".join(f"0x{b:02x}" for b in data[i : i + 32]))
    return "\n".join(lines) + "\n"


_HEX_TOKENS = np.frombuffer(b"".join(b"0x%02x " % b for b in range(256)), np.uint8)
_HEX_TOKENS = _HEX_TOKENS.reshape(256, 5)  # "0xNN " for every byte value


def format_record_dat(data: bytes, record: int = 4) -> str:
    """Render bytes as nv_small ``.dat`` records (offsets relative to the start).

    The payloads of all records are rendered at once (a table of the 256
    ``0xNN`` tokens indexed by the bytes); only each line's offset is formatted
    one by one.
    """
    raw = np.frombuffer(bytes(data), np.uint8)
    full = raw.size // record
    width = 5 * record - 1  # the tokens and the spaces between them
    text = _HEX_TOKENS[raw[: full * record].reshape(full, record)].reshape(full, 5 * record)
    payloads = text[:, :width].tobytes().decode("ascii")
    lines = ["{"]
    lines += [f"{{offset:{i * record:#x}, size:{record}, payload:"
              f"{payloads[i * width:(i + 1) * width]}}} ," for i in range(full)]
    tail = raw[full * record:]
    if tail.size:
        payload = " ".join(f"0x{b:02x}" for b in tail.tolist())
        lines.append(f"{{offset:{full * record:#x}, size:{tail.size}, payload:{payload}}} ,")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: str | Path, content: bytes | str) -> None:
    """Write a file so that it is never left half-written, with the modes a plain
    ``open`` gives (0666 less the umask; the temporary file it starts as is 0600)."""
    path = Path(path)
    data = content.encode() if isinstance(content, str) else content
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    except OSError as exc:
        raise SimError(f"{path}: cannot write ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SimError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- memory files for RTL benches ------------------------------------------------

#: dump format -> file suffix: NVDLA's hex ``.dat`` (the trace player's dump),
#: raw binary, plain hex words (one a line) and ``$readmemh`` images (``@`` word
#: addresses).  Words are little-endian: the byte at the lowest address is the
#: least significant byte of its word.
MEMORY_FILE_FORMATS = {"dat": ".dat", "bin": ".bin", "hex": ".hex", "readmemh": ".mem"}
_TEXT_SUFFIXES = (".hex", ".mem", ".vmh", ".txt", ".readmemh")
_HEADER = re.compile(r"start_address\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_SIZE = re.compile(r"size\s*=\s*(0x[0-9a-fA-F]+|\d+)")


def _header_number(text: str) -> int:
    """A header value: 0x-prefixed hex, else decimal (leading zeros allowed, as C reads them)."""
    return int(text, 16) if text[:2].lower() == "0x" else int(text, 10)


def check_word_bytes(word_bytes: int) -> int:
    if word_bytes < 1 or word_bytes > 128:
        raise SimError(f"word width {word_bytes} bytes: expected 1..128")
    return word_bytes


def format_words(data: bytes, word_bytes: int) -> list[str]:
    """Little-endian hex words of ``data`` (the last word zero-padded)."""
    check_word_bytes(word_bytes)
    pad = -len(data) % word_bytes
    raw = np.frombuffer(bytes(data) + bytes(pad), dtype=np.uint8)
    rows = raw.reshape(-1, word_bytes)[:, ::-1]  # most significant byte first
    text = rows.tobytes().hex()
    digits = 2 * word_bytes
    return [text[i : i + digits] for i in range(0, len(text), digits)]


def format_memory_file(addr: int, data: bytes, fmt: str = "dat", word_bytes: int = 1,
                       ram: str = "dram") -> bytes | str:
    """The content of a memory file of format ``fmt`` (see MEMORY_FILE_FORMATS).

    ``hex`` and ``readmemh`` start with a ``//`` comment naming the start
    address and size (``$readmemh`` ignores comments); a ``readmemh`` image
    whose address is not word aligned starts at the word holding ``addr``,
    zero-filled before it.
    """
    if fmt == "dat":
        return format_hex_dat(addr, data, ram)
    if fmt == "bin":
        return bytes(data)
    if fmt not in MEMORY_FILE_FORMATS:
        raise SimError(f"unknown dump format {fmt!r} (one of: {', '.join(MEMORY_FILE_FORMATS)})")
    head = (f"// nvdla-sim memory {ram} start_address={addr:#x} size={len(data):#x} "
            f"word_bytes={word_bytes}")
    if fmt == "hex":
        return "\n".join([head] + format_words(data, word_bytes)) + "\n"
    lead = addr % word_bytes
    words = format_words(bytes(lead) + bytes(data), word_bytes)
    return "\n".join([head, f"@{(addr - lead) // word_bytes:x}"] + words) + "\n"


def memory_file_name(name: str, fmt: str) -> str:
    """``name`` with the suffix of dump format ``fmt``."""
    if fmt not in MEMORY_FILE_FORMATS:
        raise SimError(f"unknown dump format {fmt!r} (one of: {', '.join(MEMORY_FILE_FORMATS)})")
    return str(Path(name).with_suffix(MEMORY_FILE_FORMATS[fmt]))


def write_memory_file(path: str | Path, addr: int, data: bytes, fmt: str = "dat",
                      word_bytes: int = 1, ram: str = "dram") -> None:
    write_atomically(path, format_memory_file(addr, data, fmt, word_bytes, ram))


def _read_words(path: Path) -> tuple[int | None, bytes]:
    """A plain hex or ``$readmemh`` file: words, ``@`` word addresses, ``//`` comments."""
    text = _read_text(path)
    base = size = None
    chunks: dict[int, bytearray] = {}
    pos = None  # word address where the current run started (None before any @)
    width = None
    flat = bytearray()
    for lineno, line in enumerate(text.splitlines(), 1):
        code, _, comment = line.partition("//")
        if base is None and (m := _HEADER.search(comment)):
            base = _header_number(m.group(1))
            if (s := _HEADER_SIZE.search(comment)):
                size = _header_number(s.group(1))
        for tok in code.replace("_", "").split():
            if tok.startswith("@"):
                try:
                    pos = int(tok[1:], 16)  # a run of words starts here
                except ValueError:
                    raise SimError(f"{path}:{lineno}: {tok!r} is not a word address") from None
                continue
            if len(tok) % 2:
                tok = "0" + tok
            if width is None:
                width = len(tok) // 2
            if len(tok) // 2 > width:
                raise SimError(f"{path}:{lineno}: word {tok!r} is wider than {width} bytes")
            try:
                word = bytes.fromhex(tok.rjust(2 * width, "0"))[::-1]
            except ValueError:
                raise SimError(f"{path}:{lineno}: {tok!r} is not a hex word") from None
            if pos is None:
                flat += word
            else:
                chunks.setdefault(pos, bytearray()).extend(word)
    if not chunks:
        return base, bytes(flat[:size] if size is not None else flat)
    if flat:
        raise SimError(f"{path}: words before the first @address")
    return _assemble_words(path, chunks, width, base, size)


def _assemble_words(path, chunks, width, base, size):
    starts = sorted(chunks)
    lo = starts[0] * width
    hi = max(s * width + len(chunks[s]) for s in starts)
    buf = bytearray(check_extent(hi - lo, f"{path}: @addresses {starts[0]:#x}..{starts[-1]:#x}"))
    for s in chunks:  # in file order: a later run overwrites an earlier one
        buf[s * width - lo : s * width - lo + len(chunks[s])] = chunks[s]
    if base is None:
        return lo, bytes(buf)
    if base < lo:
        raise SimError(f"{path}: start_address {base:#x} is below the first @address")
    data = bytes(buf[base - lo :])
    return base, data[:size] if size is not None else data


def read_memory_file(path: str | Path) -> tuple[int | None, bytes]:
    """Read a memory image of any format nvdla-sim writes or RTL benches use.

    Returns (byte address of the first byte or None when the file does not
    say, bytes): NVDLA hex ``.dat`` (address in its header), record ``.dat``
    (None), plain hex / ``$readmemh`` text (``.hex``, ``.mem``, ``.vmh``,
    ``.txt``: ``@`` word addresses or our ``start_address=`` comment) and raw
    binary (anything else: None).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _TEXT_SUFFIXES:
        return _read_words(path)
    if suffix != ".dat":
        try:
            return None, path.read_bytes()
        except OSError as exc:
            raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    head = _read_text(path)[:4096]
    data = load_image(path)
    m = _HEADER.search(head)
    if m and "payload" not in head:
        return _header_number(m.group(1)), data
    return None, data


def write_folder_atomically(folder: str | Path, files: dict[str, bytes | str]) -> Path:
    """Write a folder of files (a generated trace, a loadable's outputs) whole or not at all.

    The files go to a hidden sibling folder first, which then replaces
    ``folder`` by two renames (an existing folder is moved aside and removed
    only once the new one is in place), so a reader never sees a half-written
    trace and an interrupted run leaves the previous folder or a ``.old``
    copy of it, never a mix.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if Path(name).name != name or name in ("", ".", ".."):
            raise SimError(f"{folder}: {name!r} is not a plain file name")
        if not isinstance(content, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"{folder}: the content of {name} is {type(content).__name__}, "
                            "not str or bytes")
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    os.chmod(tmp, 0o777 & ~_umask())  # a folder as mkdir makes it, not mkdtemp's 0700
    old = None
    try:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            (tmp / name).write_bytes(data)
        if folder.exists():
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.old."))
            os.replace(folder, old / folder.name)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not folder.exists():
            os.replace(old / folder.name, folder)  # put the previous folder back
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return folder


def load_image(path: str | Path, limits: MemoryLimits = DEFAULT_LIMITS) -> bytes:
    """The bytes of a memory image (raw binary, record ``.dat`` or hex ``.dat``), from
    its first byte (a record file's gaps read as zeros)."""
    path = Path(path)
    if path.suffix != ".dat":
        data = _read_bytes(path, limits)
        if not data:
            raise SimError(f"{path}: the memory image is empty")
        return data
    head = _read_text(path)[:4096]
    if "offset" in head and "payload" in head:
        records = read_record_dat(path)
        buf = bytearray(check_extent(record_dat_extent(records), f"{path}: records", limits))
        for off, payload in records:
            buf[off : off + len(payload)] = payload
        return bytes(buf)
    return read_hex_dat(path)


def _read_bytes(path: Path, limits: MemoryLimits = DEFAULT_LIMITS) -> bytes:
    try:
        check_extent(path.stat().st_size, str(path), limits)
        return path.read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
