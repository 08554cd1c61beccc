"""The shortcuts that make a small trace cheap, held to the plain paths they stand for.

* a record ``.dat`` as gen writes it is decoded as one array of lines aligned on their
  ends (``_canonical_records``), and one of a whole region (offsets following each
  other) block by block against its lines' template (``_one_region``): whatever is
  changed in it, the result (or the rejection) is the record-by-record parse's, and an
  unchanged file does take the array path (and the region path, when it is one);
* a ``.cfg`` text is split and matched in one pass (``_numbered_lines``): every op, its
  ``file:line`` and every error are what the line-by-line parse gives, whatever the
  line breaks;
* an ``input.txn`` write_reg (read_reg) line is read as ``parse_int`` reads its two
  (three) numbers;
* a feature layout is made once per set of arguments (and its line offsets once per
  layout): the same layout, or the same error naming the same register, as made anew;
* a cube's atoms are viewed in a contiguous buffer without ``as_strided``: the same view
  (values, strides, write permission) as ``as_strided`` makes;
* a trace folder's file is found from one listing of the folder, as the globbing
  search found it;
* a memory file's plain name is joined to the trace's folder as text, and a memory file
  named as text is read without a Path: the same path, bytes, or error, as pathlib's;
* a trace file of ASCII bytes without a carriage return is decoded without a text layer:
  the same text (or error) as pathlib's read_text.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

import sim.memfiles as memfiles
from sim.dma import feature
from sim.errors import SimError
from sim.trace import cfg, txn
from sim.trace.ops import Op, read_trace
from sim.trace.player import TracePlayer, find_trace_file

# -- record .dat ---------------------------------------------------------------------------


def _gen_file(rng: random.Random, size: int, record: int, skip_zero: bool) -> bytes:
    data = bytearray(rng.getrandbits(8) for _ in range(size))
    if skip_zero:  # whole records of zeros, left out of the file (offsets jump)
        for start in range(0, size - record + 1, record):
            if rng.random() < 0.4:
                data[start:start + record] = bytes(record)
    return memfiles.record_dat_bytes(bytes(data), record) if not skip_zero else b"".join(
        bytes(part) for part in memfiles.record_dat_parts(bytes(data), record, True))


def _read(path):
    try:
        image = memfiles.read_record_file(path)
        return image.runs, image.extent
    except SimError as exc:
        return str(exc).split(":")[-1]  # the reason


def _array_and_plain(tmp_path, raw: bytes):
    """read_record_file's runs and extent (or its rejection), and the same with the
    shortcuts off (the record-by-record parse)."""
    path = tmp_path / "m.dat"
    path.write_bytes(raw)
    fast = _read(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memfiles, "_well_formed_records", lambda _text: None)
        patch.setattr(memfiles, "_canonical_records", lambda _raw: None)
        for shortcut in SHORTCUTS:
            patch.setattr(memfiles, shortcut, lambda _raw: None)
        return fast, _read(path)


SHORTCUTS = ("_one_region", "_canonical_records")


def _only(tmp_path, raw: bytes, shortcut: str):
    """read_record_file's runs and extent (or its rejection) with only ``shortcut`` on."""
    path = tmp_path / "m.dat"
    path.write_bytes(raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memfiles, "_well_formed_records", lambda _text: None)
        for off in SHORTCUTS:
            if off != shortcut:
                patch.setattr(memfiles, off, lambda _raw: None)
        return _read(path)


# (bytes, record size, records of zeros left out): offsets of 1 to 5 hex digits, a short
# last record, a single line, two lines
FILES = [(32, 32, False), (64, 32, False), (37, 32, False), (300, 4, False),
         (0x1100, 32, False), (0x1100 + 5, 32, True), (0x10040, 64, True), (7, 8, False),
         (2 * 48 + 1, 48, False)]
FAULT_CHARS = "0123456789abcdefABCDEFxXgG ,:{}\n\r\t-"


@pytest.mark.parametrize("size,record,skip_zero", FILES)
def test_gen_record_files_take_the_array_path(size, record, skip_zero):
    raw = _gen_file(random.Random(size), size, record, skip_zero)
    assert memfiles._canonical_records(raw) is not None
    # a region with no records left out (one line or more) takes the region path
    assert (memfiles._one_region(raw) is not None) == (not skip_zero)


@pytest.mark.parametrize("size,record,skip_zero", FILES)
def test_region_and_array_paths_read_the_same(tmp_path, size, record, skip_zero):
    """Each shortcut alone gives the record-by-record parse's runs and extent."""
    raw = _gen_file(random.Random(size + 1), size, record, skip_zero)
    path = tmp_path / "m.dat"
    path.write_bytes(raw)
    plain = _array_and_plain(tmp_path, raw)[1]
    for off in ("_one_region", "_canonical_records"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(memfiles, off, lambda _raw: None)
            assert _read(path) == plain, off


# _record_rows reads a file's lines through views of its blocks of equally long lines
# (VIEWED_LINES: when they are long; 0: always) or through copies of every line (never)
ROW_PATHS = pytest.mark.parametrize("viewed", [0, 1 << 62], ids=["blocks", "rows"],
                                    indirect=True)


@pytest.fixture
def viewed(request, monkeypatch):
    monkeypatch.setattr(memfiles, "VIEWED_LINES", request.param)
    return request.param


@pytest.mark.parametrize("size,record,skip_zero", FILES)
@pytest.mark.parametrize("seed", range(4))
@ROW_PATHS
def test_record_files_decode_as_record_by_record(tmp_path, size, record, skip_zero, seed,
                                                 viewed):
    rng = random.Random(seed * 1000 + size)
    raw = _gen_file(rng, size, record, skip_zero)
    fast, plain = _array_and_plain(tmp_path, raw)
    assert fast == plain
    for _ in range(25):  # one character changed, inserted or deleted at a time
        where = rng.randrange(len(raw))
        char = rng.choice(FAULT_CHARS).encode()
        edit = rng.randrange(3)
        if edit == 0:
            faulty = raw[:where] + char + raw[where + 1:]
        elif edit == 1:
            faulty = raw[:where] + char + raw[where:]
        else:
            faulty = raw[:where] + raw[where + 1:]
        fast, plain = _array_and_plain(tmp_path, faulty)
        assert fast == plain, (where, char, edit)


@ROW_PATHS
def test_region_files_of_one_shape_read_as_record_by_record(tmp_path, viewed):
    """Region files from one offset with one record size share the text of their lines'
    heads (``_region_template``, grown as longer files come): files shorter and longer than
    the last, and ones whose offsets differ from it in one digit, read as the plain parse."""
    rng = random.Random(7)
    for lines in (5, 40, 3, 40, 700, 2, 90):
        raw = memfiles.record_dat_bytes(rng.randbytes(32 * lines + 5), 32)
        assert memfiles._one_region(raw) is not None
        fast, plain = _array_and_plain(tmp_path, raw)
        assert fast == plain
        for _ in range(6):  # an offset's digit changed, still a well-formed line
            heads = [i for i in range(len(raw)) if raw.startswith(b"{offset:0x", i)]
            where = rng.choice(heads) + len(b"{offset:0x")
            digit = raw[where:where + 1]
            faulty = raw[:where] + rng.choice([d for d in b"123456789abcdef"
                                               if bytes([d]) != digit]).to_bytes(1, "big") \
                + raw[where + 1:]
            assert memfiles._one_region(faulty) is None
            fast, plain = _array_and_plain(tmp_path, faulty)
            assert fast == plain


@pytest.mark.parametrize("text", [
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03 0x04} ,\n",
    # a line of another size amid the lines: the general parse reads it
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:1, payload:0x03} ,\n"
    "{offset:0x3, size:2, payload:0x05 0x06} ,\n",
    # offsets of 16 hex digits, upper-case digits, an offset running backwards
    "{offset:0x10, size:1, payload:0xAB} ,\n{offset:0x1234567890abcdef, size:1, payload:0x01} ,\n"
    "{offset:0x0, size:1, payload:0x02} ,\n",
    "{offset:0xFFF, size:1, payload:0xAb} ,\n{offset:0x1000, size:1, payload:0x01} ,\n"
    "{offset:0x8, size:1, payload:0x02} ,\n",
    # a size that disagrees with the payload, on the first and on a middle line
    "{offset:0x0, size:3, payload:0x01 0x02} ,\n{offset:0x2, size:3, payload:0x03 0x04} ,\n",
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03 0x0} ,\n"
    "{offset:0x4, size:2, payload:0x05 0x06} ,\n",
    # whitespace where a payload digit belongs
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x 3 0x04} ,\n"
    "{offset:0x4, size:2, payload:0x05 0x06} ,\n",
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x   0x04} ,\n"
    "{offset:0x4, size:2, payload:0x05 0x06} ,\n",
    # a line not starting "{offset:0x": first, middle, last, and a last line too short
    "{offset:0X0, size:1, payload:0x01} ,\n{offset:0x1, size:1, payload:0x02} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n {offset:0x1, size:1, payload:0x02} ,\n"
    "{offset:0x2, size:1, payload:0x03} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{offset:0x1, size:1, payload:0x02} ,\n"
    "{Offset:0x2, size:1, payload:0x03} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{o} ,\n",
    # a last line of the first's size read as one more row: faulty, or with longer offsets
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03 0xZ4} ,\n",
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03 0x04},\n",
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03} ,\n",
    "{offset:0x0, size:2, payload:0x01 0x02} ,\n{offset:0x2, size:2, payload:0x03 0x04 0x05} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{offset:0x123456789abcd, size:1, payload:0x02} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{offset:0x1, size:1, payload:0x02} ,\n"
    "{offset:0x2, size:12, payload:0x03} ,\n",
    # rising offsets with gaps (records of zeros left out), across digit counts; a last
    # line inside the one before it (the extent is that line's end); offsets in upper
    # case, with a leading zero, falling, repeated
    "{offset:0xe, size:2, payload:0x01 0x02} ,\n{offset:0x12, size:2, payload:0x03 0x04} ,\n"
    "{offset:0x100, size:2, payload:0x05 0x06} ,\n{offset:0x1000, size:1, payload:0x07} ,\n",
    "{offset:0x0, size:4, payload:0x01 0x02 0x03 0x04} ,\n"
    "{offset:0x10, size:4, payload:0x05 0x06 0x07 0x08} ,\n{offset:0x11, size:1, payload:0x09} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{offset:0xA, size:1, payload:0x02} ,\n"
    "{offset:0xb, size:1, payload:0x03} ,\n",
    "{offset:0x0, size:1, payload:0x01} ,\n{offset:0x010, size:1, payload:0x02} ,\n"
    "{offset:0x11, size:1, payload:0x03} ,\n",
    "{offset:0x100, size:1, payload:0x01} ,\n{offset:0x10, size:1, payload:0x02} ,\n"
    "{offset:0x200, size:1, payload:0x03} ,\n",
    "{offset:0x10, size:1, payload:0x01} ,\n{offset:0x10, size:1, payload:0x02} ,\n"
    "{offset:0x20, size:1, payload:0x03} ,\n",
])
@ROW_PATHS
def test_record_files_by_hand_decode_as_record_by_record(tmp_path, text, viewed):
    raw = ("{\n" + text + "}\n").encode()
    fast, plain = _array_and_plain(tmp_path, raw)
    assert fast == plain
    for shortcut in SHORTCUTS:
        assert _only(tmp_path, raw, shortcut) == plain, shortcut


# -- .cfg text -------------------------------------------------------------------------------

CFG_LINES = [
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x100000000);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1_0);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0xzz);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 010);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1); // note",
    "reg_write(.X_0, 0x1);",
    "poll_reg_equal(NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0, 0x8);",
    "poll_reg_equal(NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0, 0x8); // why",
    "poll_reg_equal(NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0, 0x1ffffffff);",
    "poll_reg_equal(NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0, 0xq);",
    "poll_reg_equal(NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0,0x8);",
    'mem_load(pri_mem, 0x80000000, "conv_in.dat");',
    'mem_load(pri_mem, 0x80000000, "a,b.dat");',
    'mem_load(pri_mem, 0x80000000, "a//b.dat"); // c',
    "mem_init(pri_mem, 0x80000000, 0x6c0, ALL_ZERO);",
    "intr_notify(CACC_0, sync_id_0);",
    "check_crc(sync_id_1, 1, 0x80400000, 0x140, 0x2468ace0);",
    "// a comment",
    "{",
    "",
    "   ",
    "bogus(1);",
    "reg_write(NVDLA_SDP.D_OP_ÉNABLE_0, 0x1);",
    # commands as gen writes them, read without _parse_line's splitting: errors in the
    # order _convert reads the arguments, arities, a command that is none
    "mem_init(pri_mem, 0xzz, 0xyy, ALL_ZERO);",
    "mem_init(pri_mem, 0x80000000, 0x10000000000000000, ALL_ZERO);",
    "check_crc(sync_id_1, 2, 0x80400000, 0x140, 0x1ffffffff);",
    "check_crc(sync_id_1, 1, 0x80400000, 0x140);",
    'mem_load(pri_mem, 0x80000000, "x-y.dat");',
    'mem_load(pri_mem, 0xq, "x.dat");',
    "intr_notify(sync_id_0);",
    "intr_notify(CACC_0, sync_id_0, extra);",
    "sync_notify(a, b);",
    "check_nothing(x, y);",
    "reg_write(X_0, 5);",
    "reg_read(X_0);",
    "bogus(a, b);",
]
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]


def _whole_text(text: str, comments: bool):
    return cfg.parse(text, "t.cfg", comments)


def _line_by_line(text: str, comments: bool):
    """The ops the parse of each line of ``text.splitlines()`` gives, or the first error."""
    ops = []
    for lineno, line in enumerate(text.splitlines(), 1):
        quick = cfg._REG_WRITE.match(line)
        where = f"t.cfg:{lineno}"
        if quick is not None:
            reg, value, note = quick.groups()
            ops.append(cfg.RegWrite(reg, cfg.parse_int(value, where, "register value", 32),
                                    where=where, note=note.strip() if note else ""))
            continue
        op = cfg._parse_line(where, line, comments)
        if op is not None:
            ops.append(op)
    return ops


def _outcome(parse, text: str, comments: bool):
    try:
        return [(type(op).__name__, vars(op)) for op in parse(text, comments)]
    except SimError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("seed", range(12))
def test_cfg_text_parses_as_line_by_line(seed):
    rng = random.Random(seed)
    good = [line for line in CFG_LINES[:20] if "0xzz" not in line and "0xq" not in line
            and "1ffffffff" not in line and "100000000" not in line and "010" not in line]
    for _ in range(40):
        lines = [rng.choice(good if rng.random() < 0.8 else CFG_LINES)
                 for _ in range(rng.randint(0, 12))]
        breaks = [rng.choice(BREAKS) if rng.random() < 0.15 else "\n" for _ in lines]
        text = "".join(line + brk for line, brk in zip(lines, breaks, strict=True))
        if rng.random() < 0.3:
            text = text.rstrip("\n")
        comments = rng.random() < 0.5
        assert _outcome(_whole_text, text, comments) == \
            _outcome(_line_by_line, text, comments), repr(text)
        if not comments:  # the player's form: plain writes as tuples, made ops here
            assert _outcome(_bare, text, comments) == _outcome(_whole_text, text, comments)


def _bare(text: str, comments: bool):
    assert not comments
    return [cfg.RegWrite(op[0], op[1], where=f"t.cfg:{op[2]}") if type(op) is tuple else op
            for op in cfg._parse_text(text, "t.cfg", False, bare=True)]


# -- input.txn ---------------------------------------------------------------------------------

TXN_WRITES = ["0xffff1234 0x5", "0xffff1234 0x5 0x7", "0XFFFF1234 0X5", "0xffffffff 0xffffffff",
              "0x1ffffffff 0x1", "0xffff0001 0x100000000", "-1 0x1", "0x1 -0x1", "0xzz 1",
              "12 010", "12 10", "0b101 0o7", "0x1_0 0x2", "٣ 0x1", "0x1", ""]


def _plain_write(args: str, where: str, note: str):
    """What the general path makes of ``write_reg ARGS``: each number through parse_int."""
    words = args.split()
    if len(words) < 2:
        raise SimError(f"write_reg takes 2 arguments, got {len(words)}", where=where)
    addr = cfg.parse_int(words[0], where, "address", 32)
    return txn.RegWrite(txn.csb_to_byte(addr), cfg.parse_int(words[1], where, "value", 32),
                        where=where, note=note)


@pytest.mark.parametrize("args", TXN_WRITES)
@pytest.mark.parametrize("note", ["", "a note"])
def test_txn_write_reg_reads_its_numbers_as_parse_int(args, note):
    line = f"write_reg {args}" + (f" # {note}" if note else "")
    assert _outcome(lambda text, _c: txn.parse(text, "input.txn"), line, False) == \
        _outcome(lambda _text, _c: [_plain_write(args, "input.txn:1", note)], line, False)


TXN_POLLS = ["0xffff1234 0xff 0x5", "0XFFFF1234 0XFF 0X5", "0xffff1234 0xffffffff 0xffffffff",
             "0xffff1234 0x1ffffffff 0x1", "0xffff1234 0x1 0x100000000", "0x1ffffffff 0x1 0x1",
             "-1 0x1 0x1", "0x1 -0x1 0x1", "0x1 0x1 0xzz", "12 010 3", "0b101 0o7 0x1_0",
             "٣ 0x1 0x1", "0x1 0x2", "0x1 0x2 0x3 0x4", ""]


def _plain_poll(args: str, where: str, note: str):
    """What the general path makes of ``read_reg ARGS``: each number through parse_int."""
    words = args.split()
    if len(words) != 3:
        raise SimError(f"read_reg takes 3 arguments, got {len(words)}", where=where)
    reg = txn.csb_to_byte(cfg.parse_int(words[0], where, "address", 32))
    return cfg.PollReg(reg, cfg.parse_int(words[1], where, "mask", 32),
                       cfg.parse_int(words[2], where, "value", 32), where=where, note=note)


@pytest.mark.parametrize("args", TXN_POLLS)
@pytest.mark.parametrize("note", ["", "a note"])
def test_txn_read_reg_reads_its_numbers_as_parse_int(args, note):
    line = f"read_reg {args}" + (f" # {note}" if note else "")
    assert _outcome(lambda text, _c: txn.parse(text, "input.txn"), line, False) == \
        _outcome(lambda _text, _c: [_plain_poll(args, "input.txn:1", note)], line, False)


# -- trace folders ---------------------------------------------------------------------------

@pytest.mark.parametrize("files,dirs,want", [
    (["input.txn", "a.cfg"], [], "input.txn"),
    (["a.cfg", "x.dat"], [], "a.cfg"),
    ([".cfg"], [], ".cfg"),
    (["a.CFG"], [], "no input.txn or .cfg"),
    (["a.cfg", "b.cfg"], [], "several .cfg"),
    ([], [], "no input.txn or .cfg"),
    (["a.cfg"], ["input.txn"], "a.cfg"),  # a folder named input.txn is no trace
    ([], ["d.cfg"], "d.cfg"),  # as the glob found it: any entry named *.cfg
])
def test_trace_folder_file_is_found_as_the_glob_found_it(tmp_path, files, dirs, want):
    for name in files:
        (tmp_path / name).write_text("")
    for name in dirs:
        (tmp_path / name).mkdir()
    got = []
    for names in (None, os.listdir(tmp_path)):  # listed here, or by the caller (regress)
        try:
            got.append(find_trace_file(tmp_path, names).name)
        except SimError as exc:
            got.append(str(exc))
    assert want in got[0]
    assert got[1] == got[0]


def test_a_trace_file_or_nothing_is_found_as_before(tmp_path):
    trace = tmp_path / "t.cfg"
    trace.write_text("")
    assert find_trace_file(trace) == trace
    with pytest.raises(SimError, match="no such trace file or folder"):
        find_trace_file(tmp_path / "missing")


# a memory file's name as a trace line gives it: plain, with folders, odd, missing, a folder
FILE_NAMES = ["m.dat", "./m.dat", "sub/m.dat", "sub//m.dat", "..", ".", "", "missing.dat",
              "sub", "m.bin", "a\0b.dat"]


def _found(player, name):
    try:
        return str(player._file(Op(where="t.cfg:3"), name))
    except Exception as exc:  # noqa: BLE001 -- the error is the result compared
        return type(exc).__name__, str(exc)


def _pathlib_found(folder, name):
    """What the player's _file gave before: the pathlib join and Path.is_file."""
    path = folder / name
    if not path.is_file():
        return "SimError", f"t.cfg:3: memory file {name!r} not found next to the trace"
    return str(path)


@pytest.mark.parametrize("trace", ["t.cfg", "./t.cfg", "/abs"])
def test_memory_files_are_found_as_pathlib_finds_them(tmp_path, monkeypatch, trace):
    """A plain name is joined as text: the same path (as text), or the same error."""
    (tmp_path / "m.dat").write_bytes(b"{\n}\n")
    (tmp_path / "m.bin").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.dat").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    trace_file = tmp_path / "t.cfg" if trace == "/abs" else Path(trace)
    player = TracePlayer(trace_file, "nv_full")
    for name in FILE_NAMES:
        assert _found(player, name) == _pathlib_found(trace_file.parent, name), name


def _loaded(read, path):
    try:
        return read(path)
    except Exception as exc:  # noqa: BLE001 -- the error is the result compared
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("name", ["m.dat", "m.bin", "x.bin/", "x.bin/.", "..bin", "gone.dat",
                                  "sub", "sub/", "bad.dat", "hex.dat", "a\0b.dat"])
def test_memory_files_named_as_text_read_as_paths(tmp_path, monkeypatch, name):
    """read_record_file and read_hex_dat of a name as text: what they give its Path."""
    monkeypatch.chdir(tmp_path)
    Path("m.dat").write_bytes(memfiles.record_dat_bytes(bytes(range(40)), 32))
    Path("m.bin").write_bytes(b"\1\2")
    Path("sub").mkdir()
    Path("bad.dat").write_bytes(b"{\n{offset:0x0, size:2, payload:0x01} ,\n}\n")
    Path("hex.dat").write_bytes(b"start_address = 0x0\n0x01 0x02\n\x01\x02\n")
    for read in (memfiles.read_record_file, memfiles.read_hex_dat):
        assert _loaded(read, name) == _loaded(read, Path(name)), (read.__name__, name)


# -- feature layouts -------------------------------------------------------------------------

LAYOUTS = [  # (shape, precision, atom, line stride, surface stride, batch stride, batch)
    ((16, 4, 5), "int8", 32, None, None, None, 1),
    ((40, 3, 3), "int16", 32, 0x80, 0x200, None, 1),
    ((2, 40, 3, 3), "fp16", 32, 0x80, 0x200, 0x800, 1),
    ((8, 2, 2), "int8", 8, 16, 32, 64, 2),
    ((8, 2, 2), "int8", 8, 8, 32, None, 1),  # a line stride smaller than a line
    ((8, 2, 2), "int8", 8, 0x41, None, None, 1),  # misaligned
    ((8, 0, 2), "int8", 8, None, None, None, 1),  # no lines
    ((8, 2), "int8", 8, None, None, None, 1),
    ((8, 2, 2), "int9", 8, None, None, None, 1),
    ((1 << 20, 1 << 12, 1 << 10), "int8", 32, None, None, None, 1),  # past the limit
]


def _layout_or_error(make, args, what):
    try:
        layout = make(*args, what=what)
    except Exception as exc:  # noqa: BLE001 -- the error is the result compared
        return type(exc).__name__, str(exc)
    return layout, layout.lines()[1], layout.lines()[0].tolist()


def _anew(*args, what):
    return feature._feature_layout(*args, what=what)


@pytest.mark.parametrize("args", LAYOUTS)
def test_feature_layouts_are_made_as_anew(args):
    for what in ("NVDLA_SDP.D_DST_BASE_ADDR", "", "NVDLA_PDP.D_SRC_BASE_ADDR"):
        want = _layout_or_error(_anew, args, what)
        for numbers in (args, (args[0], args[1], *(None if v is None else np.int64(v)
                                                   for v in args[2:]))):
            for _ in range(2):  # made, then from the cache
                assert _layout_or_error(feature.feature_layout, numbers, what) == want


def test_line_offsets_are_each_line_once_and_read_only():
    layout = feature.feature_layout((40, 3, 5), "int8", 32, 0xC0, 0x300, 0x1000, 2)
    offsets, line = layout.lines()
    want = [n * 0x1000 + s * 0x300 + h * 0xC0 for n in range(2) for s in range(2)
            for h in range(3)]
    assert offsets.tolist() == want and line == 5 * 32
    with pytest.raises(ValueError):
        offsets[0] = 1


@pytest.mark.parametrize("args", LAYOUTS[:4])
@pytest.mark.parametrize("base", [0, 32, 96])
@pytest.mark.parametrize("writeable", [False, True])
def test_atom_views_are_what_as_strided_makes(args, base, writeable):
    from numpy.lib.stride_tricks import as_strided

    layout = feature.feature_layout(*args)
    data = np.random.default_rng(base).integers(0, 256, 2 * (base + layout.extent) + 7,
                                                dtype=np.uint8)
    buffers = [data, np.frombuffer(data.tobytes(), np.uint8), data[::2]]  # read-only; strided
    for buf in buffers:
        view = feature._atom_view(buf, base, layout, writeable)
        start = buf[base:]
        step = start.strides[0]
        shape = (layout.batch, layout.surfaces, layout.height, layout.width,
                 layout.atom_bytes)
        want = as_strided(start, shape, (layout.batch_stride * step,
                                              layout.surface_stride * step,
                                              layout.line_stride * step,
                                              layout.atom_bytes * step, step),
                          writeable=writeable)
        assert view.shape == want.shape and view.strides == want.strides
        assert view.flags.writeable == want.flags.writeable
        np.testing.assert_array_equal(view, want)
        assert np.shares_memory(view, buf)


@pytest.mark.parametrize("raw", [
    b"", b"reg_write(X_0, 0x1);\n", b"a\r\nb\rc\n", b"a\x0bb\x1cc\n", b"caf\xc3\xa9\n",
    b"bad \xff\xfe byte\n", b"\xef\xbb\xbfbom\n", b"no newline at the end",
])
def test_read_trace_reads_as_read_text(tmp_path, raw):
    """read_trace's fast path (ASCII bytes without a carriage return) and its general one
    give what pathlib's read_text gives, for every kind of file."""
    path = tmp_path / "t.cfg"
    path.write_bytes(raw)
    assert read_trace(path) == read_trace(str(path)) == path.read_text(errors="replace")


def test_read_trace_names_an_unreadable_file(tmp_path):
    for path in (tmp_path / "missing.cfg", tmp_path):
        with pytest.raises(SimError) as error:
            read_trace(path)
        with pytest.raises(OSError) as os_error:
            path.read_text()
        assert str(error.value) == f"{path}: cannot read ({os_error.value.strerror})"
