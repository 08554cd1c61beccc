"""NVDLA and RTL memory files: each format's reader and writer side by side.

Record ``.dat`` (``{offset, size, payload}`` lines of the nv_small traces), hex
``.dat`` (the nv_full trace player's dumps), raw binary, plain hex words and
``$readmemh`` images (RTL benches).  ``load_image`` and ``read_memory_file``
read any of them; ``format_memory_file`` and ``write_memory_file`` write one.
"""

from __future__ import annotations

import binascii
import functools
import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np

from .errors import SimError
from .files import read_bytes, write_atomically
from .jit import intrinsic, njit, numba_loaded
from .limits import DEFAULT_LIMITS, MemoryLimits, check_extent
from .records import record

# -- shared: reading files, hex tokens, header lines ----------------------------

def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None


def _read_bytes(path: Path, limits: MemoryLimits = DEFAULT_LIMITS) -> bytes:
    try:
        check_extent(path.stat().st_size, str(path), limits)
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    return read_bytes(path)


def _hex_bytes(tokens: str) -> bytes | None:
    """Whitespace-separated ``0xHH`` tokens as bytes, or None unless every one is exactly that."""
    if "0X" in tokens:
        tokens = tokens.replace("0X", "0x")
    try:
        data = bytes.fromhex(tokens.replace("0x", ""))
    except ValueError:
        return None
    return data if len(data) == tokens.count("0x") else None


class _LazyPattern:
    """``re.compile(*args)``, compiled at the first use of one of its methods: the memory
    files' patterns took ~1 ms of every process's start, most of which read no memory
    file.  A method, once looked up, is kept as this object's attribute."""

    def __init__(self, *args) -> None:
        self._args = args

    def __getattr__(self, name: str):
        value = getattr(re.compile(*self._args), name)  # re keeps the compiled pattern
        setattr(self, name, value)
        return value


def _is_data_line(line: str) -> bool:
    """A line of hex bytes, not a header (``key = value``, ``dumped memory,...``, rules)."""
    return line.lstrip()[:2].lower() == "0x" and "=" not in line


def _check_header(path: Path | str, lineno: int, line: str) -> None:
    """Besides data, a memory file holds text: headers (``key = value``, ``memory
    type:dram``), comments, rules, braces; anything else (binary) is no memory file."""
    text = line.strip()
    if not (text.isprintable() and text.isascii()):
        raise SimError(f"{Path(path)}:{lineno}: binary data, neither hex bytes (0xHH ...) nor a "
                       f"header line")


_HEADER = _LazyPattern(r"start_address\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_SIZE = _LazyPattern(r"size\s*=\s*(0x[0-9a-fA-F]+|\d+)")


def _header_number(text: str) -> int:
    """A header value: 0x-prefixed hex, else decimal (leading zeros allowed, as C reads them)."""
    return int(text, 16) if text[:2].lower() == "0x" else int(text, 10)


# -- record .dat (nv_small traces) ------------------------------------------------

_RECORD = _LazyPattern(
    r"\{\s*offset\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*size\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,"
    r"\s*payload\s*:\s*([^{}]*)\}"  # a payload never holds a brace: scans stay linear
)


_STRAY = _LazyPattern(r"[^\s{},]")


def read_record_dat(path: str | Path) -> list[tuple[int, bytes]]:
    """Parse an nv_small ``.dat``: ``{offset:0x0, size:4, payload:0x00 0x20 ...} ,``.

    Returns (offset, bytes) records; raises SimError naming file:line on bad input.
    """
    parsed = _parse_record_dat(Path(path))
    if isinstance(parsed, list):
        return parsed
    offsets, sizes, data = parsed
    ends = np.cumsum(sizes).tolist()
    return [(offset, data[end - size:end])
            for offset, size, end in zip(offsets.tolist(), sizes.tolist(), ends, strict=True)]


@record
class RecordFile:
    """What a record ``.dat`` file (or a raw ``.bin`` one) loads: ``runs`` are its records,
    each one that starts where the previous ended joined to it (:func:`record_runs`: the
    same bytes written in the same order), ``extent`` the end of its furthest record
    (:func:`record_dat_extent`)."""

    runs: list[tuple[int, bytes]]
    extent: int


def read_record_file(path: str | Path) -> RecordFile:
    """The runs and extent of a record ``.dat`` file (:func:`read_record_dat`'s records,
    joined without making an object per record)."""
    # a name as text is read as such (pathlib's parse costs a few microseconds a file):
    # one that pathlib would give the suffix .bin (a trailing "/" or "." is dropped) is
    # made a Path, and so is any that a message names (the general parse's)
    if not isinstance(path, str) or path.endswith((".bin", "/", ".")):
        path = path if isinstance(path, Path) else Path(path)  # Path(a Path) parses it again
        if path.suffix == ".bin":
            return _raw_record_file(path)
    raw = read_bytes(path)
    region = _one_region(raw) if len(raw) <= ONE_REGION_BYTES else None
    if region is not None:
        return region
    parsed = _parse_record_dat(path, raw)
    if isinstance(parsed, list):
        return RecordFile(record_runs(parsed), record_dat_extent(parsed))
    offsets, sizes, data = parsed
    ends = offsets + sizes
    # the records after which a run ends (the next starts elsewhere than where it ended)
    cuts = np.flatnonzero(offsets[1:] != ends[:-1])
    if not len(cuts):  # one run: the usual file
        return RecordFile([(int(offsets[0]), data)], int(ends[-1]))
    starts = [int(offsets[0]), *offsets[cuts + 1].tolist()]  # of each run
    bounds = [0, *np.cumsum(sizes)[cuts].tolist(), len(data)]  # of each run's bytes in data
    runs = [(start, data[bounds[i]:bounds[i + 1]]) for i, start in enumerate(starts)]
    return RecordFile(runs, int(ends.max()))


def _raw_record_file(path: Path) -> RecordFile:
    """A ``.bin`` memory file (``nvdla-sim loadable --trace-memory bin``): the bytes to load
    from the mem_load's address on, as they are (NVIDIA's benches read only ``.dat``).  One
    load may not pass the per-access limit: a larger file is refused before it is read."""
    data = _read_bytes(path)
    if not data:
        raise SimError(f"{path}: holds no bytes to load")
    return RecordFile([(0, data)], len(data))


def _parse_record_dat(path: Path | str, raw: bytes | None = None
                      ) -> tuple[np.ndarray, np.ndarray, bytes] | list:
    """A file as gen and NVIDIA's tools write it: (offsets, sizes, every payload joined);
    any other file: the record list of the general parse (which names a bad line).
    ``raw``: the file's bytes, when the caller has read them.  A name as text is made a
    Path only for the general parse (pathlib's parse costs more than the usual file's)."""
    parsed = _canonical_records(read_bytes(path) if raw is None else raw)
    if parsed is not None:
        return parsed
    return _parse_record_text(path if isinstance(path, Path) else Path(path))


def _parse_record_text(path: Path) -> list[tuple[int, bytes]]:
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


# one record line as gen and NVIDIA's tools write it (offsets below 2**60, sizes below 10**6)
_CANONICAL_RECORD = _LazyPattern(
    rb"\{offset:0x([0-9a-fA-F]{1,15}), size:([1-9][0-9]{0,5}), payload:"
    rb"((?:0x[0-9a-fA-F]{2} )*0x[0-9a-fA-F]{2})\} ,\n")
_OFFSET_HEAD = b"{offset:0x"  # how a canonical record line starts
_OFFSET_ROW = np.frombuffer(_OFFSET_HEAD, np.uint8)


def _records_end(raw: bytes) -> int | None:
    """Just past the newline ending the last record line of a file framed as gen and
    NVIDIA's tools frame it (a ``{`` line first, a ``}`` line last), else None."""
    if not raw.startswith(b"{\n"):
        return None
    if raw.endswith(b"\n}\n"):
        return len(raw) - 2
    if raw.endswith(b"\n}"):
        return len(raw) - 1
    return None


def _canonical_records(raw: bytes) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """(offsets, sizes, the payloads joined) of a record file in the layout gen and
    NVIDIA's tools write: a ``{`` line, one ``{offset:0xHEX, size:N, payload:0xHH ..} ,``
    line per record, a ``}`` line.  Every record line is checked and decoded as a row of
    one array (:func:`_record_rows`: records of one size), but a last one of another size
    (a shorter last record), read alone; None for anything else (the general parse then
    reads it, and names the line of a fault)."""
    stop = _records_end(raw)
    if stop is None or stop <= 2:
        return None
    arr = np.frombuffer(raw, np.uint8)
    ends = (arr[2:stop] == 10).nonzero()[0] + 3  # just past each record line's newline
    # each line starts "{offset:0x": _record_rows checks its lines', _record_line a last one's
    if len(ends) > 1 and _size_text(raw, 2, int(ends[0])) == _size_text(
            raw, int(ends[-2]), int(ends[-1])):
        rows = _record_rows(raw, ends)  # the last record is as long as the first: one more row
        if rows is not None:
            return rows
    last = _record_line(raw, int(ends[-2]) if len(ends) > 1 else 2, int(ends[-1]))
    if last is None:
        return None
    offset, size, payload = last
    if len(ends) == 1:
        return np.array([offset], np.int64), np.array([size], np.int64), payload
    rows = _record_rows(raw, ends[:-1])
    if rows is None:
        return None
    offsets, sizes, data = rows
    return np.append(offsets, offset), np.append(sizes, size), data + payload


#: Files up to this size try :func:`_one_region` first: it spares a small file's fixed
#: costs, but on large ones its checks take longer than :func:`_canonical_records` (a 1 MB
#: region 15 ms against 11.5).
ONE_REGION_BYTES = 1 << 18


def _one_region(raw: bytes) -> RecordFile | None:
    """The one run of a record file as gen writes a whole region: canonical lines
    (:data:`_CANONICAL_RECORD`) of the first line's size, each at the offset where the
    previous one ended, in lower-case hex without leading zeros, then a last line of any
    size at the offset that follows (a file of one record line: that line's record).
    Such lines are known but for their payload digits, so all of them are checked in one
    pass, their payload digits masked out, against the text such lines have (made once
    per region start and record size: :func:`_region_template`), and the payload digits
    of each block of equally long lines (offsets of one digit count) are read through one
    strided view: a few calls, where :func:`_canonical_records` makes a few dozen over the
    file (a small trace loads one or two small files).  None for any other file
    (:func:`_canonical_records` then reads it; whatever this accepts, it accepts as well
    and reads as the same run)."""
    stop = _records_end(raw)
    if stop is None:
        return None
    first_end = raw.find(b"\n", 2, stop) + 1
    if first_end == stop:  # one record line: the file's one run
        end = _record_line(raw, 2, stop)
        return None if end is None else RecordFile([(end[0], end[2])], end[0] + end[1])
    if not 0 < first_end < stop:
        return None  # no record line: _canonical_records reads it
    first = _CANONICAL_RECORD.fullmatch(raw, 2, first_end)
    if first is None:
        return None
    size, start = int(first.group(2)), int(first.group(1), 16)
    if first.end(3) - first.start(3) != 5 * size - 1 or first.group(1) != b"%x" % start:
        return None
    last = raw.rfind(b"\n", 0, stop - 1) + 1  # where the last record line starts
    widths = _one_region_widths(raw, last, start, size, first_end - first.end(1))
    if widths is None:
        return None  # not one region (records of zeros left out, say): told from the
        # length, before any other work, as such a file goes to _canonical_records
    end = _record_line(raw, last, stop)
    if end is None:
        return None
    tail = raw[first.end(1):first_end]
    payload = first.start(3) - first.end(1)  # where the payload starts in the tail
    if widths[-1][0] > 15:  # the widest offsets come last
        return None
    text, mask = _region_template(start, size, tail, payload, last - 2)
    if not text.startswith((np.ndarray(last - 2, np.uint8, raw, 2) & mask[:last - 2]).tobytes()):
        return None
    offset, pos, digits = start, 2, []
    for width, lines in widths:
        line = len(_OFFSET_HEAD) + width + len(tail)
        digits.append(np.ndarray((lines, size), "S2", raw,
                                 pos + len(_OFFSET_HEAD) + width + payload + 2,
                                 (line, 5)).tobytes())
        pos += lines * line
        offset += lines * size
    if end[0] != offset:
        return None
    try:
        data = bytes.fromhex(b"".join(digits).decode("latin-1"))
    except ValueError:
        return None
    if len(data) != offset - start:  # fromhex passed over whitespace
        return None
    return RecordFile([(start, data + end[2])], offset + end[1])


def _one_region_widths(raw: bytes, last: int, start: int, size: int, tail: int
                       ) -> list[tuple[int, int]] | None:
    """:func:`_offset_widths` up to the offset of the line at ``last`` if ``raw[2:last]`` is
    as long as the lines of records of ``size`` bytes from offset ``start`` up to it, each
    line ``{offset:0x``, the offset in hex without leading zeros and ``tail`` bytes more;
    else None."""
    try:
        end = int(raw[last + len(_OFFSET_HEAD):raw.find(b",", last, last + 40)], 16)
    except ValueError:
        return None
    records, rest = divmod(end - start, size)
    if rest or records < 1:
        return None
    widths = list(_offset_widths(start, end, size))
    total = sum(lines * (len(_OFFSET_HEAD) + width + tail) for width, lines in widths)
    return widths if total == last - 2 else None


#: (first offset, record size, line tail, payload) -> the text and mask of the lines of
#: records from that offset on (:func:`_region_template`), as many as a file has asked for yet
_REGION_TEMPLATES: dict[tuple, tuple[bytes, np.ndarray]] = {}
_REGION_TEMPLATES_KEPT = 32  # keys kept (files of one record size from one offset share one)


def _region_template(offset: int, size: int, tail: bytes, payload: int, length: int
                     ) -> tuple[bytes, np.ndarray]:
    """(text, mask) of the record lines of offsets ``offset``, ``offset + size`` ... : each
    line ``{offset:0x<hex>`` and ``tail`` (a canonical line's, its payload ``0xHH 0xHH ..``
    from ``payload`` on) with its payload's hex digits zero, and the mask (read-only) that
    zeroes those digits of such lines (:func:`_line_mask` of each line's offset width):
    ``length`` bytes of them or more (a file's lines are checked as a prefix of them, all
    in one pass whatever their offsets' widths).  Files of one shape (region start, record
    size) share them, so the heads' text is made once, not per file."""
    after = payload + 5 * size - 1  # just past the payload
    key = (offset, size, tail[:payload], tail[after:])
    made = _REGION_TEMPLATES.get(key)
    if made is not None and len(made[0]) >= length:
        return made
    have = 0 if made is None else len(made[0])
    length = max(length, 2 * have)  # a longer file next: made again at most log2 times
    lines = -(-length // (len(_OFFSET_HEAD) + 1 + len(tail)))  # enough: offsets of a digit
    masked = b"%s%s0x\0\0%s" % (key[2], b"0x\0\0 " * (size - 1), key[3])
    end = offset + lines * size
    text = b"".join([b"{offset:0x%x%s" % (o, masked) for o in range(offset, end, size)])
    mask = np.frombuffer(b"".join([_line_mask(width, len(tail), payload, size).tobytes() * count
                                   for width, count in _offset_widths(offset, end, size)]),
                         np.uint8)
    if len(_REGION_TEMPLATES) >= _REGION_TEMPLATES_KEPT:
        _REGION_TEMPLATES.clear()
    made = _REGION_TEMPLATES[key] = text, mask
    return made


@functools.lru_cache(maxsize=256)
def _line_mask(width: int, tail: int, payload: int, size: int) -> np.ndarray:
    """The mask (read-only) that zeroes the payload's hex digits of a record line whose
    offset has ``width`` hex digits: what :func:`_fixed_tail_columns` keeps of the
    ``tail`` after the offset, all of the head before it."""
    mask = np.full(len(_OFFSET_HEAD) + width + tail, 0xFF, np.uint8)
    mask[len(_OFFSET_HEAD) + width:] *= _fixed_tail_columns(tail, payload, size)
    mask.flags.writeable = False
    return mask


def _offset_widths(start: int, end: int, size: int):
    """(hex digits, lines) of the blocks of record lines of ``size`` bytes from offset
    ``start`` up to ``end``, each block the lines whose offsets have one digit count."""
    offset = start
    while offset < end:
        width = len(b"%x" % offset)
        lines = min(-(-(16 ** width - offset) // size), (end - offset) // size)
        yield width, lines
        offset += lines * size


def _size_text(raw: bytes, start: int, end: int) -> bytes:
    """The ``, size:N`` of the record line ``raw[start:end]`` (or what stands there)."""
    return raw[raw.find(b", size:", start, end):raw.find(b", payload:", start, end)]


def _record_line(raw: bytes, start: int, end: int) -> tuple[int, int, bytes] | None:
    """(offset, size, payload) of the record line ``raw[start:end]``, None unless canonical."""
    m = _CANONICAL_RECORD.fullmatch(raw, start, end)
    if m is None:
        return None
    offset, size, payload = m.groups()
    if len(payload) != 5 * int(size) - 1:  # the size disagrees with the payload
        return None
    return int(offset, 16), int(size), bytes.fromhex(payload.replace(b"0x", b"").decode())


def _record_rows(raw: bytes, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """(offsets, sizes, payload bytes) of the record lines ending at ``ends`` (the first
    starting at 2, each next where the previous ended), when every one is laid out as the
    first (``{offset:0x``, its offset's digits, the first one's tail) but for its offset's
    and payload's digits.
    The lines are rows aligned on their ends: what follows the offset (size, payload,
    end) has the same columns in every line of one size, the offset's digits take what
    is left after ``{offset:0x``."""
    first = _CANONICAL_RECORD.fullmatch(raw, 2, int(ends[0]))
    if first is None:
        return None
    size = int(first.group(2))
    if first.end(3) - first.start(3) != 5 * size - 1:
        return None
    tail = int(ends[0]) - first.end(1)  # ", size:N, payload:0xHH ...} ,\n"
    payload = first.start(3) - first.end(1)  # where the payload starts in the tail
    digits = np.empty_like(ends)  # of each line's offset: what its length leaves
    digits[0] = ends[0] - 2
    np.subtract(ends[1:], ends[:-1], out=digits[1:])
    digits -= len(_OFFSET_HEAD) + tail
    most = int(digits.max())
    if digits.min() < 1 or most > 15:
        return None
    if len(ends) >= VIEWED_LINES:
        cuts = np.flatnonzero(digits[1:] != digits[:-1]) + 1  # where the width changes
        if len(ends) >= VIEWED_LINES * (len(cuts) + 1):
            return _record_blocks(raw, ends, digits, cuts, tail, payload, size)
    starts = np.empty_like(ends)  # of each record line: 2, then where the previous ended
    starts[0], starts[1:] = 2, ends[:-1]
    if not (_rows_at(raw, starts, len(_OFFSET_HEAD)) == _OFFSET_ROW).all():
        return None  # a line not starting "{offset:0x" (compared in one pass: bytes.count
        # of a long file's line heads took a third of its parse)
    tails = _rows_at(raw, ends - tail, tail)
    if ((tails != tails[0]) & _fixed_tail_columns(tail, payload, size)).any():
        return None
    pairs = np.ndarray((len(ends), size), "<u2", tails, payload + 2, (tail, 5))  # "HH"
    try:
        data = bytes.fromhex(pairs.tobytes().decode("latin-1"))
    except ValueError:
        return None
    if len(data) != pairs.size:  # fromhex passed over whitespace
        return None
    # the ``most`` bytes before each tail: an offset's digits, right-aligned, after bytes
    # of its line's head (and, for a first line of few digits, of the file's start)
    columns, weights = _digit_columns(most)
    values = _HEX_DIGIT[_rows_at(raw, np.maximum(ends - tail - most, 0), most)]
    values[columns < (most - digits)[:, None]] = 0  # not the offset's
    if values.max() > 0xF:
        return None
    offsets = values.astype(np.int64) @ weights
    return offsets, np.full(len(ends), size, np.int64), data


#: :func:`_record_rows` reads the lines through views of blocks of equally long lines (no
#: copy of every line) when the blocks hold this many lines each on average: a block costs
#: a dozen calls, as much as copying a few hundred lines
VIEWED_LINES = 256


def _record_blocks(raw: bytes, ends: np.ndarray, digits: np.ndarray, cuts: np.ndarray,
                   tail: int, payload: int, size: int
                   ) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """:func:`_record_rows`' answer for its lines ending at ``ends`` (``digits``: each
    one's offset digits; ``cuts``: the lines where that count changes), each block of
    consecutive lines of one offset width read through a view of the text, a row per line
    (a line's offset, the tail checked against the first line's, the payload's digits),
    not through copies of every line (the same checks, a few calls a block)."""
    head = len(_OFFSET_HEAD)
    first_tail = np.frombuffer(raw, np.uint8, tail, int(ends[0]) - tail)
    fixed = _fixed_tail_columns(tail, payload, size)
    bounds = [0, *cuts.tolist(), len(ends)]
    offsets, pairs = [], []
    for start, stop in pairwise(bounds):
        width = int(digits[start])
        line = head + width + tail
        at = int(ends[start]) - line  # where the block's first line starts
        rows = np.ndarray((stop - start, line), np.uint8, raw, at, (line, 1))
        if (rows[:, :head] != _OFFSET_ROW).any() or \
                ((rows[:, head + width:] != first_tail) & fixed).any():
            return None
        values = _HEX_DIGIT[rows[:, head:head + width]]
        if values.max() > 0xF:
            return None
        offsets.append(values.astype(np.int64) @ _digit_columns(width)[1])
        pairs.append(np.ndarray((stop - start, size), "<u2", raw,
                                at + head + width + payload + 2, (line, 5)).tobytes())
    try:
        data = bytes.fromhex(b"".join(pairs).decode("latin-1"))
    except ValueError:
        return None
    if len(data) != len(ends) * size:  # fromhex passed over whitespace
        return None
    return np.concatenate(offsets), np.full(len(ends), size, np.int64), data


def _rows_at(raw: bytes, positions: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes of ``raw`` at each of ``positions``, as rows of a new array."""
    return np.ndarray((len(raw) - width + 1, width), np.uint8, raw, 0, (1, 1))[positions]


@functools.cache
def _digit_columns(digits: int) -> tuple[np.ndarray, np.ndarray]:
    """(0 .. digits-1, the weight of each of ``digits`` hex digits of a number)."""
    return np.arange(digits), np.int64(16) ** np.arange(digits - 1, -1, -1, dtype=np.int64)


@functools.lru_cache(maxsize=256)
def _fixed_tail_columns(tail: int, payload: int, size: int) -> np.ndarray:
    """The columns of a record line's tail (:func:`_record_rows`) that no two lines of one
    size may differ in: all but the payload's hex digits."""
    fixed = np.ones(tail, bool)
    fixed[payload + 2:payload + 5 * size:5] = fixed[payload + 3:payload + 5 * size:5] = False
    return fixed


@functools.cache
def _hex_pairs() -> np.ndarray:
    """Two hex digits read as a little-endian uint16 -> their byte value (0xFFFF: not hex)."""
    table = np.full(1 << 16, 0xFFFF, np.uint16)
    digits = np.flatnonzero(_HEX_DIGIT <= 15)
    high, low = np.meshgrid(digits, digits, indexing="ij")
    table[high | (low << 8)] = (_HEX_DIGIT[high] << 4) | _HEX_DIGIT[low]
    return table


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


def format_record_dat(data: bytes, record: int = 4) -> str:
    """Render bytes as nv_small ``.dat`` records (offsets relative to the start)."""
    return record_dat_bytes(data, record).decode("ascii")


def record_dat_bytes(data: bytes, record: int = 4, skip_zero: bool = False) -> bytes:
    """:func:`format_record_dat` as ASCII bytes (``skip_zero``: :func:`record_dat_chunks`')."""
    return b"".join(record_dat_parts(data, record, skip_zero))


def live_records(rows: np.ndarray, kernel: bool | None = None) -> np.ndarray:
    """Which records ``rows`` (n, record) uint8 hold a non-zero byte.  Records of whole
    64-bit words are tested a word at a time (``any`` along a short axis of bytes is a
    slow reduction: on a network's weights it took a tenth of a recording), in one pass
    by a numba kernel (``kernel``; by default once numba is loaded): AlexNet's 200 MB of
    weights in 0.009 s against 0.029 s by numpy's pass per word."""
    n, record = rows.shape
    if record % 8 or not rows.flags.c_contiguous:
        return rows.any(axis=1)
    words = rows.view(np.uint64)
    if kernel or (kernel is None and numba_loaded()):
        live = np.empty(n, np.bool_)
        _live_words(words, live)
        return live
    live = words[:, 0] != 0
    for i in range(1, record // 8):
        live |= words[:, i] != 0
    return live


@njit
def _live_words(words, live):
    """``live[i]``: whether row ``i`` of ``words`` holds a non-zero word."""
    for i in range(words.shape[0]):
        any_bit = words[i, 0]
        for j in range(1, words.shape[1]):
            any_bit |= words[i, j]
        live[i] = any_bit != 0


#: Text bytes a chunk of :func:`record_dat_chunks` holds, about: small enough to stay in
#: the processor's cache while it is filled and written, large enough that the calls
#: per chunk cost nothing next to its bytes
CHUNK_TEXT = 1 << 19


def record_dat_chunks(data: bytes, record: int = 4, skip_zero: bool = False,
                      lines: int | None = None, kernel: bool | None = None) -> Iterator:
    """:func:`format_record_dat` as ASCII buffers (bytes, uint8 arrays) to be written one
    after another (``sim.files.write_atomically`` takes them), rendered a chunk of
    ``lines`` record lines at a time (by default about :data:`CHUNK_TEXT` bytes).
    ``skip_zero`` leaves out the whole records that are all zero (for memory the trace
    fills with zeros first).  A yielded buffer holds its text only until the next is
    asked for: its buffer is filled again (:func:`record_dat_parts` keeps them).

    A record's line has a fixed shape once its offset's hex digit count is known, so the
    lines of one digit count are rendered in one buffer of lines filled once with the
    line's template (braces, ``, size:N, payload:``, the ``0x`` and spaces of the
    tokens): each chunk writes over it only the offsets' digits and each byte's two hex
    digits (one 16-bit store through a strided view).  Rendering and writing 120 MB of
    weights (780 MB of text) took 0.35-0.6 s of CPU so, 0.65-1.2 s (and up to 3 s more
    on a busy machine) with an array of each whole block's text: no fresh memory to
    fault in, the template written once, a chunk still in the cache when written.

    ``kernel``: the digits written by a numba kernel (:func:`_fill_record_lines`, a
    quarter of the time) or by numpy; by default by the kernel once numba is loaded (a
    network's run: its import would cost more than it saves on most traces), asked
    again at each chunk.
    """
    return record_dat_text(data, record, skip_zero, lines, kernel)[1]


def record_dat_text(data: bytes, record: int = 4, skip_zero: bool = False,
                    lines: int | None = None, kernel: bool | None = None,
                    live: np.ndarray | None = None) -> tuple[int, Iterator]:
    """:func:`record_dat_chunks`' buffers, and before them the bytes they hold in all (a
    file's size known before it is written: ``sim.files.write_hidden`` reserves its
    blocks at once).  ``live``: with ``skip_zero``, :func:`live_records` of the data's
    whole records if the caller has it already (a tenth of rendering AlexNet's weights)."""
    raw = np.frombuffer(data, np.uint8)
    full = raw.size // record
    rows = raw[:full * record].reshape(full, record)
    index = None
    if skip_zero:
        index = np.flatnonzero(live_records(rows) if live is None else live)
    count = full if index is None else index.size
    head = b"{offset:0x"
    rest = b"%s%s} ,\n" % (f", size:{record}, payload:".encode(),
                           b" ".join([b"0x__"] * record))  # the digits to be filled
    blocks = []  # (first line, line after the last, offset digits) of each width
    first = 0  # of the lines (records or live records) not in a block yet
    for digits in range(1, 17):
        # the records whose offsets have ``digits`` hex digits: those below 16**digits
        below = -(-16 ** digits // record)
        stop = min(count, below if index is None else int(np.searchsorted(index, below)))
        if stop > first:
            blocks.append((first, stop, digits))
            first = stop
        if first == count:
            break
    last = b""  # the partial record's line
    tail = raw[full * record:]
    if tail.size:
        payload = " ".join(f"0x{b:02x}" for b in tail.tolist())
        last = f"{{offset:{full * record:#x}, size:{tail.size}, payload:{payload}}} ,\n".encode()
    size = 4 + len(last) + sum((stop - first) * (len(head) + digits + len(rest))
                               for first, stop, digits in blocks)

    def chunks() -> Iterator:
        yield b"{\n"
        for first, stop, digits in blocks:
            yield from _record_lines(rows, index, first, stop, digits, head, rest, lines,
                                     kernel)
        if last:
            yield last
        yield b"}\n"

    return size, chunks()


def _record_lines(rows: np.ndarray, index: np.ndarray | None, first: int, stop: int,
                  digits: int, head: bytes, rest: bytes, lines: int | None,
                  kernel: bool | None = None) -> Iterator:
    """The lines of records ``first`` up to ``stop`` (of ``rows``, or of the rows ``index``
    names), each offset written with ``digits`` hex digits: ``head`` offset ``rest``,
    ``rest``'s ``__`` placeholders filled with the bytes' hex digits, in chunks of
    ``lines`` lines of one reused buffer.  The digits come from the numba kernel where
    ``kernel`` says so (by default: once numba is loaded), else from ``binascii.hexlify``
    (lowercase, the high digit first, so a byte's two digits are one little-endian uint16
    store): three times faster than looking each byte up in a numpy table."""
    record = rows.shape[1]
    template = np.frombuffer(head + b"0" * digits + rest, np.uint8)
    width = template.size
    lines = min(lines or max(1, CHUNK_TEXT // width), stop - first)
    block = np.empty((lines, width), np.uint8)
    block[:] = template
    offset_digits = block[:, len(head):len(head) + digits]
    pairs = np.ndarray((lines, record), np.uint16, buffer=block,
                       offset=len(head) + digits + rest.index(b"__"),
                       strides=(width, 5))  # each token is "0xNN" and a space: 5 bytes
    payload_at = len(head) + digits + rest.index(b"0x__")
    for start in range(first, stop, lines):
        n = min(lines, stop - start)
        if kernel or (kernel is None and numba_loaded()):
            _fill_record_lines(rows, _NO_INDEX if index is None else index, index is not None,
                               start, start + n, block.reshape(-1), width, len(head),
                               digits, payload_at, *_token_words())
            yield block[:n]
            continue
        if index is None:
            numbers, chunk = np.arange(start, start + n, dtype=np.int64), rows[start:start + n]
        else:
            numbers = index[start:start + n].astype(np.int64)
            chunk = rows[numbers]
        # every offset as the big-endian hex digits of a 32-bit word (offsets below 4 GB:
        # half the text of 64-bit words; a tenth less rendering) or of a 64-bit one,
        # of which the last ``digits`` are its own
        word = 4 if digits <= 8 else 8
        text = binascii.hexlify((numbers * record).astype(f">u{word}").tobytes())
        offset_digits[:n] = np.frombuffer(text, np.uint8).reshape(n, 2 * word)[
            :, 2 * word - digits:]
        pairs[:n] = np.frombuffer(binascii.hexlify(np.ascontiguousarray(chunk)),
                                  np.uint16).reshape(n, record)
        yield block[:n]


_NO_INDEX = np.zeros(0, np.int64)


@functools.cache
def _token_words() -> tuple[np.ndarray, np.ndarray]:
    """Each byte's payload token as a little-endian 64-bit word to store at the token's
    first byte: ``0xNN 0x`` and a zero (the next token's store writes over the last three
    bytes), and the last token of a line, ``0xNN} ,\n`` (the line's end, exactly)."""
    def words(text: str) -> np.ndarray:
        return np.frombuffer(b"".join(
            (f"0x{b:02x}" + text).encode().ljust(8, b"\0") for b in range(256)), "<u8")

    return words(" 0x"), words("} ,\n")


@intrinsic
def _store_word(typingctx, array, position, word):
    """``array[position:position + 8] = word`` (uint8 array, uint64 word, little-endian):
    one store at any byte, which numba's array indexing cannot make (eight byte stores
    were not merged: seven times slower)."""
    from numba.core import types

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        at = builder.gep(data, [context.cast(builder, args[1], sig.args[1], types.int64)])
        value = context.cast(builder, args[2], sig.args[2], types.uint64)
        pointer = builder.bitcast(at, context.get_value_type(types.uint64).as_pointer())
        builder.store(value, pointer, align=1)
        return context.get_dummy_value()

    if not (isinstance(array, types.Array) and array.dtype == types.uint8):
        return None
    return types.none(array, position, word), codegen


@njit(boundscheck=False)
def _fill_record_lines(rows, index, sparse, first, stop, out, width, offset_at, digits,
                       payload_at, tokens, lasts):
    """The digits of lines ``first`` up to ``stop`` (:func:`_record_lines`') written into
    ``out``, consecutive lines of ``width`` bytes already holding their template: the
    offset's ``digits`` hex digits at ``offset_at`` (of the row ``index[k]`` if
    ``sparse``, else ``k``), then every payload token whole from ``payload_at`` to the
    line's end, one 64-bit store each (``tokens``, ``lasts``: :func:`_token_words`).
    Rendering AlexNet's 200 MB of weights (760 MB of text) took 0.05 s so, 0.22 s by
    binascii and numpy."""
    record = rows.shape[1]
    if (stop - first) * width > out.size or payload_at + 5 * record - 1 + 4 != width:
        raise ValueError("record lines: the buffer does not fit the lines")
    for k in range(first, stop):
        row = index[k] if sparse else k
        line = (k - first) * width
        offset = row * record
        for j in range(digits):
            nibble = (offset >> (4 * (digits - 1 - j))) & 15
            out[line + offset_at + j] = nibble + 48 + (nibble > 9) * 39  # 0-9, a-f
        at = line + payload_at
        for j in range(record - 1):
            _store_word(out, at + 5 * j, tokens[rows[row, j]])
        _store_word(out, at + 5 * (record - 1), lasts[rows[row, record - 1]])


def record_dat_parts(data: bytes, record: int = 4, skip_zero: bool = False) -> list:
    """:func:`record_dat_chunks`'s buffers, each kept (as bytes)."""
    return [bytes(chunk) for chunk in record_dat_chunks(data, record, skip_zero)]


# -- hex .dat (the nv_full trace player's dumps) ---------------------------------

def read_hex_dat(path: str | Path) -> bytes:
    """Parse an nv_full trace-player memory file: whitespace-separated hex bytes.

    Header lines (``key = value``, ``dumped memory,...``, rules of ``=``) are
    skipped; every other token must be a hex byte.  Files whose lines all look
    like the first (the usual layout) are decoded as one array; other
    well-formed files (every token ``0xHH``) in one call; anything else goes
    token by token to find the line to blame.
    """
    raw = read_bytes(path)  # a name as text stays text unless a message names it
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
        data = _read_hex_tokens(Path(path))
    if not data:
        raise SimError(f"{Path(path)}: holds no data (expected lines of hex bytes, 0xHH ...)")
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
    if lines > 1 and ((body != line).any(axis=0) & fixed).any():
        return None
    steps = np.diff(xs)
    if steps.size == 0 or (steps == steps[0]).all():  # evenly spaced: read "HH" in place
        step = int(steps[0]) if steps.size else 2
        pairs = np.ndarray((lines, xs.size), "<u2", raw, start + int(xs[0]) + 1, (width, step))
    else:
        pairs = body[:, xs + 1].astype(np.uint16) | (body[:, xs + 2].astype(np.uint16) << 8)
    values = _hex_pairs()[pairs]
    if values.max() > 0xFF:
        return None
    tail = raw[start + lines * width:].decode("latin-1")
    rest = _hex_bytes(tail) if tail.strip() else b""
    return None if rest is None else values.astype(np.uint8).tobytes() + rest


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


# -- hex words and $readmemh (RTL benches) ---------------------------------------

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


# -- any format -----------------------------------------------------------------

#: dump format -> file suffix: NVDLA's hex ``.dat`` (the trace player's dump),
#: raw binary, plain hex words (one a line) and ``$readmemh`` images (``@`` word
#: addresses).  Words are little-endian: the byte at the lowest address is the
#: least significant byte of its word.
MEMORY_FILE_FORMATS = {"dat": ".dat", "bin": ".bin", "hex": ".hex", "readmemh": ".mem"}
_TEXT_SUFFIXES = (".hex", ".mem", ".vmh", ".txt", ".readmemh")


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
        image = read_record_file(path)
        buf = bytearray(check_extent(image.extent, f"{path}: records", limits))
        for off, payload in image.runs:
            buf[off : off + len(payload)] = payload
        return bytes(buf)
    return read_hex_dat(path)


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
        return None, read_bytes(path)
    head = _read_text(path)[:4096]
    data = load_image(path)
    m = _HEADER.search(head)
    if m and "payload" not in head:
        return _header_number(m.group(1)), data
    return None, data


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
