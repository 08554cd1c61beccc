"""NVDLA and RTL memory files: each format's reader and writer side by side.

Record ``.dat`` (``{offset, size, payload}`` lines of the nv_small traces), hex
``.dat`` (the nv_full trace player's dumps), raw binary, plain hex words and
``$readmemh`` images (RTL benches).  ``load_image`` and ``read_memory_file``
read any of them; ``format_memory_file`` and ``write_memory_file`` write one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import SimError
from .files import write_atomically
from .limits import DEFAULT_LIMITS, MemoryLimits, check_extent

# -- shared: reading files, hex tokens, header lines ----------------------------

def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None


def _read_bytes(path: Path, limits: MemoryLimits = DEFAULT_LIMITS) -> bytes:
    try:
        check_extent(path.stat().st_size, str(path), limits)
        return path.read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None


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


_HEADER = re.compile(r"start_address\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_SIZE = re.compile(r"size\s*=\s*(0x[0-9a-fA-F]+|\d+)")


def _header_number(text: str) -> int:
    """A header value: 0x-prefixed hex, else decimal (leading zeros allowed, as C reads them)."""
    return int(text, 16) if text[:2].lower() == "0x" else int(text, 10)


# -- record .dat (nv_small traces) ------------------------------------------------

_RECORD = re.compile(
    r"\{\s*offset\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*size\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*,"
    r"\s*payload\s*:\s*([^{}]*)\}"  # a payload never holds a brace: scans stay linear
)


_STRAY = re.compile(r"[^\s{},]")


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


@dataclass(frozen=True)
class RecordFile:
    """What a record ``.dat`` file loads: ``runs`` are its records, each one that starts
    where the previous ended joined to it (:func:`record_runs`: the same bytes written in
    the same order), ``extent`` the end of its furthest record (:func:`record_dat_extent`)."""

    runs: list[tuple[int, bytes]]
    extent: int


def read_record_file(path: str | Path) -> RecordFile:
    """The runs and extent of a record ``.dat`` file (:func:`read_record_dat`'s records,
    joined without making an object per record)."""
    parsed = _parse_record_dat(Path(path))
    if isinstance(parsed, list):
        return RecordFile(record_runs(parsed), record_dat_extent(parsed))
    offsets, sizes, data = parsed
    ends = offsets + sizes
    first = [0, *(np.flatnonzero(offsets[1:] != ends[:-1]) + 1).tolist()]  # of each run
    positions = [0, *np.cumsum(sizes).tolist()]  # of each record's payload in data
    starts = offsets[first].tolist()
    runs = [(start, data[positions[i]:positions[j]])
            for start, i, j in zip(starts, first, [*first[1:], len(offsets)], strict=True)]
    return RecordFile(runs, int(ends.max()))


def _parse_record_dat(path: Path) -> tuple[np.ndarray, np.ndarray, bytes] | list:
    """A file as gen and NVIDIA's tools write it: (offsets, sizes, every payload joined);
    any other file: the record list of the general parse (which names a bad line)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    parsed = _canonical_records(raw)
    if parsed is not None:
        return parsed
    return _parse_record_text(path)


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
_CANONICAL_RECORD = re.compile(
    rb"\{offset:0x([0-9a-fA-F]{1,15}), size:([1-9][0-9]{0,5}), payload:"
    rb"((?:0x[0-9a-fA-F]{2} )*0x[0-9a-fA-F]{2})\} ,\n")
_MOST_LAYOUTS = 64  # more different line layouts than this: the general parse


def _canonical_records(raw: bytes) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """(offsets, sizes, the payloads joined) of a record file in the layout gen and
    NVIDIA's tools write: a ``{`` line, one ``{offset:0xHEX, size:N, payload:0xHH ..} ,``
    line per record, a ``}`` line.  Consecutive lines of one length are checked and
    decoded as the rows of one array against the first of them (the offset and payload
    digits vary, nothing else may); None for anything else (the general parse then reads
    it, and names the line of a fault)."""
    if raw.endswith(b"\n}\n"):
        stop = len(raw) - 2  # just past the newline ending the last record line
    elif raw.endswith(b"\n}"):
        stop = len(raw) - 1
    else:
        return None
    if not raw.startswith(b"{\n") or stop <= 2:
        return None
    arr = np.frombuffer(raw, np.uint8)
    ends = np.flatnonzero(arr[2:stop] == 10) + 3  # just past each record line's newline
    widths = np.empty_like(ends)  # of each line, with its newline (the first starts at 2)
    widths[0] = ends[0] - 2
    np.subtract(ends[1:], ends[:-1], out=widths[1:])
    firsts = [0, *(np.flatnonzero(widths[1:] != widths[:-1]) + 1).tolist()]  # of each layout
    if len(firsts) > _MOST_LAYOUTS:
        return None
    offsets, sizes, counts, data = [], [], [], []
    for first, last in zip(firsts, [*firsts[1:], len(widths)], strict=True):
        rows, width = last - first, int(widths[first])
        decoded = _record_rows(raw, arr, int(ends[first]) - width, rows, width)
        if decoded is None:
            return None
        offsets.append(decoded[0])
        sizes.append(decoded[1])
        counts.append(rows)
        data.append(decoded[2])
    sizes = np.repeat(np.array(sizes, np.int64), counts)  # each layout's size, per record
    if len(offsets) == 1:
        return offsets[0], sizes, data[0]
    return np.concatenate(offsets), sizes, b"".join(data)


def _record_rows(raw: bytes, arr: np.ndarray, start: int, rows: int,
                 width: int) -> tuple[np.ndarray, int, bytes] | None:
    """(offsets, size, payload bytes) of ``rows`` record lines of ``width`` bytes (with
    their newline) at ``start``, when every one is laid out as the first."""
    m = _CANONICAL_RECORD.fullmatch(raw, start, start + width)
    if m is None:
        return None
    size = int(m.group(2))
    (o0, o1), (p0, p1) = m.span(1), m.span(3)
    if p1 - p0 != 5 * size - 1:  # the size disagrees with the payload
        return None
    o0, o1, p0 = o0 - start, o1 - start, p0 - start
    body = arr[start:start + rows * width].reshape(rows, width)
    fixed, weights = _record_layout(width, o0, o1, p0, size)
    if rows > 1 and ((body != body[0]).any(axis=0) & fixed).any():
        return None
    pairs = np.ndarray((rows, size), "<u2", raw, start + p0 + 2, (width, 5))  # "HH" of 0xHH
    values = _hex_pairs()[pairs]
    digits = _HEX_DIGIT[body[:, o0:o1]]
    if values.max() > 0xFF or digits.max() > 0xF:
        return None
    offsets = (digits * weights).sum(axis=1, dtype=np.int64)
    return offsets, size, values.astype(np.uint8).tobytes()


@functools.lru_cache(maxsize=256)
def _record_layout(width: int, o0: int, o1: int, p0: int,
                   size: int) -> tuple[np.ndarray, np.ndarray]:
    """(the columns of a record line that no two lines of the layout may differ in, the
    weights of its offset's hex digits)."""
    fixed = np.ones(width, bool)
    fixed[o0:o1] = False
    fixed[p0 + 2:p0 + 5 * size:5] = fixed[p0 + 3:p0 + 5 * size:5] = False
    return fixed, np.int64(16) ** np.arange(o1 - o0 - 1, -1, -1, dtype=np.int64)


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


_HEX_PAIRS = np.frombuffer(b"".join(b"%02x" % b for b in range(256)), np.uint16)  # "NN"
_NIBBLES = np.frombuffer(b"0123456789abcdef", np.uint8)


def format_record_dat(data: bytes, record: int = 4) -> str:
    """Render bytes as nv_small ``.dat`` records (offsets relative to the start)."""
    return record_dat_bytes(data, record).decode("ascii")


def record_dat_bytes(data: bytes, record: int = 4) -> bytes:
    """:func:`format_record_dat` as ASCII bytes."""
    return b"".join(record_dat_parts(data, record))


def record_dat_parts(data: bytes, record: int = 4, skip_zero: bool = False) -> list:
    """:func:`format_record_dat` as a list of ASCII buffers (bytes, uint8 arrays) to be
    written one after another (``sim.files.write_atomically`` takes the list), rendered
    without a loop over the lines and never joined in memory.  ``skip_zero`` leaves out
    the whole records that are all zero (for memory the trace fills with zeros first).

    A record's line has a fixed shape once its offset's hex digit count is known, so the
    lines are rendered in blocks of equal digit counts: each block is a 2-D byte array
    filled with the line's template (braces, ``, size:N, payload:``, the ``0x`` and
    spaces of the tokens), into which the offsets' digits and each byte's two hex
    digits (one 16-bit store through a strided view) are written.
    """
    raw = np.frombuffer(bytes(data), np.uint8)
    full = raw.size // record
    rows = raw[:full * record].reshape(full, record)
    index = np.flatnonzero(rows.any(axis=1)) if skip_zero else np.arange(full)
    head, mid, end = b"{offset:0x", f", size:{record}, payload:".encode(), b" ,\n"
    tokens = b" ".join([b"0x__"] * record) + b"}"  # the payload, its digits to be filled
    parts = [b"{\n"]
    offsets = index.astype(np.int64) * record
    # the lines whose offsets have d hex digits (up to 16**d - 1) make one block
    limits = np.searchsorted(offsets, 16 ** np.arange(1, 17, dtype=np.int64))
    first = 0
    for digits, stop in enumerate(limits.tolist(), start=1):
        if stop > first:
            parts.append(_record_block(rows[index[first:stop]], offsets[first:stop], digits,
                                       head, mid + tokens + end))
            first = stop
    tail = raw[full * record:]
    if tail.size:
        payload = " ".join(f"0x{b:02x}" for b in tail.tolist())
        parts.append(f"{{offset:{full * record:#x}, size:{tail.size}, payload:{payload}}} ,\n"
                     .encode())
    parts.append(b"}\n")
    return parts


def _record_block(rows: np.ndarray, offsets: np.ndarray, digits: int, head: bytes,
                  rest: bytes) -> np.ndarray:
    """The lines of records ``rows`` (n, record) at ``offsets``, each offset written with
    ``digits`` hex digits: ``head`` offset ``rest``, ``rest``'s ``__`` placeholders filled
    with the bytes' hex digits."""
    n, record = rows.shape
    template = np.frombuffer(head + b"0" * digits + rest, np.uint8)
    width = template.size
    block = np.empty((n, width), np.uint8)
    block[:] = template
    shifts = 4 * np.arange(digits - 1, -1, -1, dtype=np.int64)
    block[:, len(head):len(head) + digits] = _NIBBLES[(offsets[:, None] >> shifts) & 15]
    first_pair = len(head) + digits + rest.index(b"__")
    pairs = np.ndarray((n, record), np.uint16, buffer=block, offset=first_pair,
                       strides=(width, 5))  # each token is "0xNN" and a space: 5 bytes
    pairs[:] = _HEX_PAIRS[rows]
    return block


# -- hex .dat (the nv_full trace player's dumps) ---------------------------------

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
