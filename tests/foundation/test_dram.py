"""Sparse memory, .dat formats, fill patterns."""

import zlib

import numpy as np
import pytest

from sim.dma.align import ceil_div
from sim.dram import Memory, fill_pattern
from sim.errors import SimError
from sim.memfiles import (
    format_hex_dat,
    format_record_dat,
    read_hex_dat,
    read_record_dat,
    record_runs,
)


def test_unwritten_bytes_read_zero_and_writes_cross_pages():
    mem = Memory()
    assert mem.read(0x1234_5678_0000, 16) == bytes(16)
    data = np.arange(10000, dtype=np.uint32).view(np.uint8)
    mem.write(0xFFF0, data)
    assert np.array_equal(mem.read_array(0xFFF0, data.size), data)
    assert mem.read(0xFFF0 - 4, 4) == bytes(4)


@pytest.mark.parametrize("fill", [False, True], ids=["write", "zero-fill"])
def test_pages_from_slabs_hold_only_their_own_bytes(fill):
    """Pages come from slabs growing from FIRST_SLAB_PAGES to LAST_SLAB_PAGES pages: a long
    write (or zero fill) over pages held already and new ones leaves the bytes written,
    the held pages keep theirs outside it, and a later write into one page changes no
    other, slabs' neighbours included."""
    from sim.dram import FIRST_SLAB_PAGES, LAST_SLAB_PAGES, PAGE_SIZE

    rng = np.random.default_rng(int(fill))
    mem = Memory()
    base, n_pages = 0x4000_0000, 2 * LAST_SLAB_PAGES
    for page in (0, 3, 700):  # pages written before, inside the coming window
        mem.write(base + page * PAGE_SIZE, np.full(PAGE_SIZE, 0xEE, np.uint8))
    start, size = base + 123, n_pages * PAGE_SIZE - 123
    data = np.zeros(size, np.uint8) if fill else rng.integers(0, 256, size, dtype=np.uint8)
    if fill:
        mem.fill(start, size, "ALL_ZERO")
    else:
        mem.write(start, data)
    assert np.array_equal(mem.read_array(start, size), data)
    assert mem.read(base, 123) == b"\xee" * 123
    slabs = {id(page.base): len(page.base) for page in mem._pages.values()}
    # the pages a write (or a zero fill) makes are one slab's rows, in address order (one
    # view), after the slabs of 1 and 2 pages the three pages written first came from
    assert sorted(slabs.values()) == [FIRST_SLAB_PAGES, 2 * FIRST_SLAB_PAGES, n_pages - 3]
    assert LAST_SLAB_PAGES < n_pages - 3  # one slab, however many pages it takes
    assert mem._slab_view(base + 4 * PAGE_SIZE, 696 * PAGE_SIZE) is not None
    for page in (5, 6, 14, 700, 1000):  # across pages; 6 and 14 each start a slab
        at = base + page * PAGE_SIZE
        mem.write(at - 2, b"\x01\x02\x03\x04")
        got = mem.read_array(start, size)
        want = data.copy()
        want[at - 2 - start: at + 2 - start] = (1, 2, 3, 4)
        data = want
        assert np.array_equal(got, want)


@pytest.mark.parametrize("addr, size", [(0, 0), (5, 10), (0xFFF0, 40), (0x1_0000, 0x1_0000),
                                        (0x2_FFFF, 0x3_0002), (0x7_0000, 64)])
def test_read_bytes_are_the_array_bytes(addr, size):
    """``read`` (pages joined into bytes) gives ``read_array``'s bytes: within a page, across
    pages, and over pages never written (zeros)."""
    mem = Memory()
    rng = np.random.default_rng(size)
    mem.write(0x8, rng.integers(0, 256, 0x2_0000, dtype=np.uint8))  # pages 0-2
    mem.write(0x4_0000, rng.integers(0, 256, 0x1_0000, dtype=np.uint8))  # page 4, 3 unwritten
    got = mem.read(addr, size)
    assert isinstance(got, bytes) and got == mem.read_array(addr, size).tobytes()


def test_gather_scatter():
    mem = Memory()
    mem.write(100, bytes(range(50)))
    offs = np.array([[0, 10], [49, 3]])
    assert mem.gather(100, offs).tolist() == [[0, 10], [49, 3]]
    mem.scatter(100, np.array([1, 2]), np.array([200, 201], dtype=np.uint8))
    assert mem.read(100, 4) == bytes([0, 200, 201, 3])


def test_crc_matches_zlib():
    mem = Memory()
    payload = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8)
    mem.write(0x8000_0000, payload)
    assert mem.crc32(0x8000_0000, 6000) == zlib.crc32(payload.tobytes() + bytes(1000))


def test_access_outside_memory_is_an_error():
    mem = Memory("pri_mem", address_bits=32)
    with pytest.raises(SimError, match="outside"):
        mem.write(0xFFFF_FFFE, bytes(4))


@pytest.mark.parametrize(
    "pattern, addr, expect",
    [
        ("ALL_ZERO", 0, [0, 0, 0, 0]),
        ("ONES", 0, [0xFF] * 4),
        ("AFIVE", 0, [0xA5] * 4),
        ("FIVEA", 0, [0x5A] * 4),
        ("ADDR", 0x1000, [0x00, 0x10, 0x00, 0x00]),
        ("ADDR", 0x1006, [0x00, 0x00, 0x08, 0x10]),
    ],
)
def test_fill_patterns(pattern, addr, expect):
    assert fill_pattern(pattern, addr, 4).tolist() == expect


def test_random_fill_is_seeded():
    a = fill_pattern("RANDOM", 0, 64, seed=3)
    assert np.array_equal(a, fill_pattern("RANDOM", 0, 64, seed=3))
    assert not np.array_equal(a, fill_pattern("RANDOM", 0, 64, seed=4))


def test_unknown_pattern():
    with pytest.raises(SimError, match="pattern"):
        fill_pattern("STRIPES", 0, 4)


def test_record_dat_round_trip(tmp_path):
    data = bytes(range(37))
    path = tmp_path / "x.dat"
    path.write_text(format_record_dat(data))
    records = read_record_dat(path)
    buf = bytearray(37)
    for off, payload in records:
        buf[off : off + len(payload)] = payload
    assert bytes(buf) == data


def test_record_runs_join_adjacent_records_and_keep_the_order_of_writing():
    records = [(0, b"ab"), (2, b"cd"), (1, b"X"), (2, b"Y"), (10, b"z"), (11, b"")]
    assert record_runs(records) == [(0, b"abcd"), (1, b"XY"), (10, b"z")]
    image, replayed = bytearray(12), bytearray(12)
    for records_, buf in ((records, image), (record_runs(records), replayed)):
        for off, payload in records_:
            buf[off:off + len(payload)] = payload
    assert image == replayed


def test_hex_dat_round_trip(tmp_path):
    data = bytes(range(70))
    path = tmp_path / "x.dat"
    path.write_text(format_hex_dat(0x8000, data))
    assert read_hex_dat(path) == data


@pytest.mark.parametrize(
    "text, where",
    [
        ("{\n{offset:0x0, size:2, payload:0x01} ,\n}\n", ":2:"),
        ("{\n{offset:0x0, size:1, payload:0x01} ,\ngarbage\n}\n", ":3:"),
        ("{\n{offset:0x0, size:1, payload:0xzz} ,\n}\n", ":2:"),
        # the sizes add up to the bytes, but not record by record
        ("{\n{offset:0x0, size:2, payload:0x01} ,\n{offset:0x8, size:1, payload:0x02 0x03} ,"
         "\n}\n", ":2:"),
    ],
)
def test_malformed_record_dat_names_the_line(tmp_path, text, where):
    path = tmp_path / "bad.dat"
    path.write_text(text)
    with pytest.raises(SimError, match=where):
        read_record_dat(path)


def _hex_lines(data: bytes, per_line: int, token: str) -> str:
    rows = [data[i:i + per_line] for i in range(0, len(data), per_line)]
    return "".join("".join(token.format(b) for b in row) + "\n" for row in rows)


@pytest.mark.parametrize("layout", [
    ("header = 1\n", 16, "0x{:02x} "),      # NVIDIA's: token then space
    ("", 32, " 0x{:02x}"),                    # the generator's: space then token
    ("dumped memory\n====\n", 7, "0x{:02X}\t"),  # capitals, tabs, a short last line
])
@pytest.mark.parametrize("spoil", [None, "extra space", "bad digit"])
def test_hex_dat_layouts(tmp_path, layout, spoil):
    """Regular files decode as one array; a line that breaks the pattern still parses
    (or is blamed by line) through the token-by-token path."""
    header, per_line, token = layout
    data = bytes(np.random.default_rng(per_line).integers(0, 256, 200, dtype=np.uint8))
    lines = _hex_lines(data, per_line, token).splitlines(keepends=True)
    if spoil == "extra space":
        lines[3] = " " + lines[3]
    elif spoil == "bad digit":
        lines[3] = lines[3].replace("0x", "0xg", 1)
    path = tmp_path / "m.dat"
    path.write_text(header + "".join(lines))
    if spoil == "bad digit":
        with pytest.raises(SimError, match=rf"m.dat:{header.count(chr(10)) + 4}:"):
            read_hex_dat(path)
    else:
        assert read_hex_dat(path) == data


def test_malformed_hex_dat_names_the_line(tmp_path):
    path = tmp_path / "bad.dat"
    path.write_text("0x01 0x02\n0x03 0xgg\n")
    with pytest.raises(SimError, match=r"bad.dat:2:"):
        read_hex_dat(path)


@pytest.mark.parametrize("name, fmt", [("m.bin", "hex"), ("m.dat", "hex"), ("m.dat", "records")])
def test_dump_and_load_files(tmp_path, name, fmt):
    mem = Memory()
    data = np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8)
    mem.write(0x8000_0010, data)
    path = tmp_path / name
    mem.dump_file(0x8000_0010, 300, path, dat_format=fmt)
    other = Memory()
    assert other.load_file(0x100, path) == 300
    assert np.array_equal(other.read_array(0x100, 300), data)


def test_dump_file_rejects_unknown_format(tmp_path):
    with pytest.raises(SimError, match="hex or records"):
        Memory().dump_file(0, 4, tmp_path / "x.dat", dat_format="csv")
    assert not (tmp_path / "x.dat").exists()


@pytest.mark.parametrize("header, base", [("040", 40), ("0x40", 0x40), ("007", 7)])
def test_word_file_header_numbers_with_leading_zeros(tmp_path, header, base):
    """Found by tools/fuzz.py: a decimal with leading zeros was a Python ValueError."""
    from sim.memfiles import read_memory_file

    path = tmp_path / "w.hex"
    path.write_text(f"// start_address = {header}\n0102\n")
    addr, data = read_memory_file(path)
    assert addr == base and data == b"\x02\x01"


@pytest.mark.parametrize("size, record", [(0, 4), (1, 4), (31, 32), (32, 32), (33, 32),
                                          (100, 1), (4096, 32), (4099, 4),
                                          # offsets gaining a hex digit mid-file, records
                                          # that do not divide 16**k
                                          (300, 3), (0x1000 + 7, 3), (0x10000 + 5, 1),
                                          (0x10000 + 40, 32)])
def test_record_dat_is_written_record_by_record(size, record):
    """The vectorised writer gives, line for line, each record as the format spells it."""
    from sim.memfiles import format_record_dat

    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    lines = format_record_dat(data, record).splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    body = lines[1:-1]
    assert len(body) == ceil_div(size, record)
    for i, line in enumerate(body):
        chunk = data[i * record:(i + 1) * record]
        tokens = " ".join(format(b, "#04x") for b in chunk)
        assert line == f"{{offset:{hex(i * record)}, size:{len(chunk)}, payload:{tokens}}} ,"


def test_last_layer_write_is_exact_to_the_byte():
    """A recorder asks which in-layer write last touched a region: writes outside a layer
    (a CPU's) do not count, and neighbours on the same page are told apart."""
    from sim.dram import Memory

    mem = Memory()
    mem.log_layer_writes()
    mem.write(0x1000, bytes(16))  # outside a layer: a CPU write
    mem.begin_layer()
    mem.write(0x1000, bytes(16))  # 1
    mem.write(0x1400, bytes(16))  # 2, same 64 KiB page
    mem.end_layer()
    mem.begin_layer()
    mem.write(0x100F, b"\x01")  # 3: the last byte of the first region
    mem.end_layer()
    assert mem.layer_writes == 3
    assert mem.last_layer_write(0x1000, 16) == 3
    assert mem.last_layer_write(0x1000, 15) == 1
    assert mem.last_layer_write(0x1400, 16) == 2
    assert mem.last_layer_write(0x1010, 0x3F0) == 0


@pytest.mark.parametrize("size", [31, 32 * 40, 32 * 40 + 7, 0x10000 + 96])
def test_sparse_record_dat_leaves_out_only_zero_records(tmp_path, size):
    """A recorded load whose region is zero-filled first (mem_init) keeps only the records
    that are not all zero: filling zeros and loading the file gives the data back."""
    from sim.files import write_atomically
    from sim.memfiles import read_record_file, record_dat_parts

    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8)
    data[: size // 32 * 32].reshape(-1, 32)[rng.random(size // 32) < 0.6] = 0
    write_atomically(tmp_path / "m.dat", record_dat_parts(data.tobytes(), 32, skip_zero=True))
    image = read_record_file(tmp_path / "m.dat")
    filled = bytearray(size)
    records = 0
    for offset, payload in image.runs:
        filled[offset:offset + len(payload)] = payload
        records += ceil_div(len(payload), 32)
    assert bytes(filled) == data.tobytes()
    whole = data[: size // 32 * 32].reshape(-1, 32)
    assert records == np.count_nonzero(whole.any(axis=1)) + (size % 32 > 0)


class _Ear:
    """A memory listener that keeps what it hears."""

    def __init__(self):
        self.heard = []

    def wrote(self, memory, addr, size):
        self.heard.append((addr, size))


def _observed(mem, setting: str) -> _Ear:
    """``mem`` in a layer (``setting`` "layer") or heard by a listener ("listener"), as the
    write tests compare them; the listener (heard only in the latter)."""
    ear = _Ear()
    if setting == "layer":
        mem.begin_layer()
    if setting == "listener":
        mem.listeners.add(ear)
    return ear


def test_a_zero_fill_leaves_what_a_write_of_zeros_leaves():
    """Memory.fill's ALL_ZERO path (no buffer of zeros made) against Memory.write of one:
    bytes, pages held, errors; onto pages held or not, across page ends, in a layer or
    heard by a listener (where the fill writes as ever)."""
    from sim.dram import PAGE_SIZE, Memory, fill_pattern
    from sim.limits import MemoryLimits

    cases = [(0x10, 0x20), (PAGE_SIZE - 8, 16), (3 * PAGE_SIZE - 5, 2 * PAGE_SIZE + 9),
             (0x100, 0), (2 * PAGE_SIZE, PAGE_SIZE)]
    for addr, size in cases:
        for held in (False, True):
            for setting in ("plain", "layer", "listener", "tight"):
                outcomes = []
                for how in ("fill", "write"):
                    limits = MemoryLimits(resident=2 * PAGE_SIZE) if setting == "tight" \
                        else MemoryLimits()
                    mem = Memory(limits=limits)
                    if held:
                        mem.write(addr, b"\xff" * min(max(size, 1), PAGE_SIZE))
                    ear = _observed(mem, setting)
                    try:
                        if how == "fill":
                            mem.fill(addr, size, "all_zero")
                        else:
                            mem.write(addr, fill_pattern("ALL_ZERO", addr, size))
                        error = None
                    except Exception as exc:  # noqa: BLE001 - compared
                        error = (type(exc).__name__, str(exc))
                    outcomes.append((error, sorted(mem._pages), ear.heard, mem.layer_writes,
                                     mem.read(max(addr - 16, 0), size + 32)))
                assert outcomes[0] == outcomes[1], (addr, size, held, setting)


PAGE = 1 << 16


# (pages made in address order first, range read): whether it is a view of a slab
VIEW_CASES = [
    (True, (0x30004, 3 * PAGE)),  # pages 3-6 of the 4-page slab made by hold
    (True, (0x30000, 4 * PAGE)),
    (True, (0x3FFF0, 0x20)),  # two pages
    (False, (0x30004, 3 * PAGE)),  # pages made as the writes met them: backwards
    (True, (0x31000, 0x100)),  # one page: a view of it
    (False, (0x31000, 0x100)),
    (True, (0x30000, 9 * PAGE)),  # past the pages written: missing pages, a copy
    (True, (0x70000, 0x10)),  # one page never written: a copy (zeros)
]


@pytest.mark.parametrize("ordered, window", VIEW_CASES)
def test_read_view_reads_what_read_array_reads(ordered, window):
    mem = Memory()
    mem.write(0, b"\x01")  # other pages, made before
    mem.write(20 * PAGE, bytes(2 * PAGE))
    if ordered:
        mem.hold([(3 * PAGE, 4 * PAGE), (0x30000, 5)])
    rng = np.random.default_rng(window[1])
    for page in (6, 5, 4, 3):  # written backwards, as a loadable's blobs may come
        mem.write(page * PAGE, rng.integers(0, 256, PAGE, dtype=np.uint8))
    addr, size = window
    view = mem.read_view(addr, size)
    np.testing.assert_array_equal(view, mem.read_array(addr, size))
    is_view = not view.flags.writeable
    first, last = addr // PAGE, (addr + size - 1) // PAGE
    assert is_view == (3 <= first and last <= 6 and (ordered or first == last))
    if is_view:
        with pytest.raises(ValueError):
            view[0] = 1


def test_hold_makes_only_missing_pages_in_order_and_changes_no_byte():
    mem = Memory()
    mem.write(2 * PAGE + 7, b"\x05\x06")
    mem.hold([(PAGE, 3 * PAGE), (9 * PAGE, 1), (0, 0)])
    assert sorted(mem._pages) == [1, 2, 3, 9]
    assert mem.read(2 * PAGE + 7, 2) == b"\x05\x06"
    assert not mem.read_array(PAGE, 3 * PAGE)[np.r_[0:PAGE + 7, PAGE + 9:3 * PAGE]].any()
    # page 2 in the first slab; 1, 3 and 9 in address order in a slab of their own
    assert mem._pages[3].ctypes.data == mem._pages[1].ctypes.data + PAGE
    assert mem._pages[9].ctypes.data == mem._pages[3].ctypes.data + PAGE


def test_pages_held_together_are_one_view_however_many():
    """More pages than the doubling slabs would give in one (1, 2, 4...): one slab."""
    mem = Memory()
    mem.hold([(0, 40 * PAGE)])
    data = np.random.default_rng(3).integers(0, 256, 40 * PAGE, dtype=np.uint8)
    for page in reversed(range(40)):
        mem.write(page * PAGE, data[page * PAGE: (page + 1) * PAGE])
    view = mem.read_view(5, 40 * PAGE - 9)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, data[5: 40 * PAGE - 4])


@pytest.mark.parametrize("ranges", [[(0, 3 * PAGE)], [(0, PAGE), (1 << 40, PAGE)]],
                         ids=["over the limit", "outside the memory"])
def test_hold_makes_nothing_unless_every_page_may_be_made(ranges):
    from sim.errors import MemoryFault
    from sim.limits import MemoryLimits

    mem = Memory(address_bits=32, limits=MemoryLimits(resident=2 * PAGE))
    mem.hold(ranges)
    assert not mem._pages
    with pytest.raises(MemoryFault):  # what the writes meet, as before
        for addr, size in ranges:
            mem.write(addr, bytes(size))


# runs of a record file (offset, data) written from a base: in held pages, across page
# ends, into pages not held, past the address space, empty, not bytes
RUN_CASES = [
    [(0, b"\x01\x02"), (0x40, b"\x03" * 32), (0x20, b"\x04" * 40)],  # overlapping, in order
    [(PAGE - 3, b"\x05" * 8), (2 * PAGE + 1, b"\x06")],  # across a page end, a page not held
    [(0x10, b""), (0x11, bytearray(b"\x07\x08"))],
    [(0x30, b"\x09" * 4), ((1 << 32) - 2, b"\x0a" * 4), (0x50, b"\x0b")],  # fault midway
    [(off, bytes([off % 251]) * 3) for off in range(0, 3 * PAGE, 997)][::-1],  # many, gaps
    [(off, bytes([off % 7]) * 40) for off in range(0, 4000, 30)],  # many, overlapping
    [(off, b"\x0c" * 5) for off in range(PAGE // 2, 5 * PAGE, 5000)],  # into pages not held
    [(off, b"\x0d" * 2) for off in range(0, 600, 20)] + [(1 << 61, b"")],  # a far empty one
    # a far one whose end would wrap an int64 sum
    [(off, b"\x0f" * 2) for off in range(0, 1400, 20)] + [((1 << 63) - 4, b"\x10" * 8)],
]
MANY_WITH_GAPS = RUN_CASES[4]


@pytest.mark.parametrize("runs", RUN_CASES)
@pytest.mark.parametrize("setting", ["plain", "layer", "listener", "pages apart"])
@pytest.mark.parametrize("scatter", [1, 10**9], ids=["scattered", "one by one"])
def test_write_runs_leaves_what_a_write_of_each_run_leaves(runs, setting, scatter,
                                                            monkeypatch):
    """Memory.write_runs (a record file's runs, most into pages held) against a write of
    each run in turn: bytes, pages held, the first error, what a listener hears and the
    layer's write count; its runs scattered at once wherever it may, or one by one."""
    import sim.dram

    monkeypatch.setattr(sim.dram, "SCATTER_RUNS", scatter)
    monkeypatch.setattr(sim.dram, "SCATTER_MEAN_BYTES", 1 << 20)  # any run may be scattered

    base = 0x7000
    outcomes = []
    for how in ("runs", "writes"):
        mem = Memory(address_bits=32)
        if setting == "pages apart":  # held, but not in order in one slab
            for page in (3, 2, 1, 0):
                mem.write(base + page * PAGE, b"\x0e")
        mem.fill(base, 3 * PAGE, "ALL_ZERO")  # the pages of most runs, held (as mem_init does)
        ear = _observed(mem, setting)
        try:
            if how == "runs":
                mem.write_runs(base, runs)
            else:
                for offset, data in runs:
                    mem.write(base + offset, data)
            error = None
        except Exception as exc:  # noqa: BLE001 - compared
            error = (type(exc).__name__, str(exc))
        outcomes.append((error, sorted(mem._pages), ear.heard, mem.layer_writes,
                         mem.read(base - 16, 3 * PAGE)))
    assert outcomes[0] == outcomes[1]


def test_many_short_runs_over_one_slab_are_one_scatter(monkeypatch):
    """The case the scatter is for (many short runs over a region mem_init held) takes it:
    the comparison above would pass as well if it never did."""
    import sim.dram

    taken = []
    scatter = Memory._scatter_runs
    monkeypatch.setattr(Memory, "_scatter_runs",
                        lambda self, *args: taken.append(scatter(self, *args)) or taken[-1])
    monkeypatch.setattr(sim.dram, "SCATTER_RUNS", 1)
    mem = Memory(address_bits=32)
    mem.fill(0x7000, 3 * PAGE, "ALL_ZERO")
    mem.write_runs(0x7000, MANY_WITH_GAPS)
    assert taken == [True]
    for offset, data in MANY_WITH_GAPS:
        assert mem.read(0x7000 + offset, len(data)) == data


def test_a_zero_filled_region_is_read_as_one_view():
    """mem_init's zero fill makes the missing pages of a region together, in address order,
    as a write of it would: what is loaded there is read as a view, not copied."""
    mem = Memory()
    mem.write(0, b"\x01")  # a page made before, in the first slab
    mem.fill(0x10000 + 5, 3 * PAGE, "ALL_ZERO")
    data = np.random.default_rng(5).integers(0, 256, 3 * PAGE, dtype=np.uint8)
    mem.write_runs(0x10000 + 5, [(0, data[:PAGE].tobytes()), (PAGE, data[PAGE:].tobytes())])
    view = mem.read_view(0x10000 + 5, 3 * PAGE)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, data)
