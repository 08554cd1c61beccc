"""Trace parsers and player: both formats, checks, and one-line errors with file:line."""

import json
import subprocess
import sys
import zlib

import pytest

from sim.cli import main
from sim.errors import SimError
from sim.memfiles import format_hex_dat, format_record_dat
from sim.trace.cfg import parse_cfg
from sim.trace.player import run_trace
from sim.trace.txn import parse_txn

BDMA_TXN = """\
load_mem 0x80000000 0x40 src.dat
write_reg 0xffff1000 0x80000000 # NVDLA_BDMA.CFG_SRC_ADDR_LOW_0
write_reg 0xffff1002 0x80001000 # NVDLA_BDMA.CFG_DST_ADDR_LOW_0
write_reg 0xffff1004 0x1 # NVDLA_BDMA.CFG_LINE_0
write_reg 0xffff1005 0x3 # NVDLA_BDMA.CFG_CMD_0
write_reg 0xffff100c 0x1 # NVDLA_BDMA.CFG_OP_0
write_reg 0xffff100d 0x1 # NVDLA_BDMA.CFG_LAUNCH0_0
read_reg 0xffff100d 0x00000001 0x00000001
wait
read_reg 0xffff0003 0x00000040 0x00000040
dump_mem 0x80001000 0x40 dst.dat
"""


def make_txn(folder, expected: bytes, text=BDMA_TXN):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.txn").write_text(text)
    (folder / "src.dat").write_text(format_hex_dat(0, bytes(range(64))))
    (folder / "dst.dat").write_text(format_hex_dat(0x80001000, expected))
    return folder


def test_txn_trace_passes(tmp_path):
    result = run_trace(make_txn(tmp_path / "nv_full" / "t", bytes(range(64))))
    assert result.status == "pass", result.message
    assert result.config == "nv_full"


def test_txn_trace_reports_first_differing_address(tmp_path):
    expected = bytearray(range(64))
    expected[5] ^= 0xFF
    result = run_trace(make_txn(tmp_path / "nv_full" / "t", bytes(expected)))
    assert result.status == "fail"
    assert "0x80001005" in result.message and "input.txn:11" in result.message


def test_failing_register_read_never_hangs(tmp_path):
    text = BDMA_TXN.replace("read_reg 0xffff0003 0x00000040 0x00000040",
                            "read_reg 0xffff0003 0x00000040 0x00000000")
    result = run_trace(make_txn(tmp_path / "nv_full" / "t", bytes(range(64)), text))
    assert result.status == "fail" and "input.txn:10" in result.message


def cfg_trace(folder, crc, body=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.dat").write_text(format_record_dat(bytes(range(16))))
    text = body or (
        'mem_init(pri_mem, 0x80000000, 0x20, ALL_ZERO);\n'
        'mem_load(pri_mem, 0x80000000, "data.dat"); // comment\n'
        'reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x3);\n'
        'poll_reg_equal(NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0, 0x1);\n'
        f'check_crc(sync_id_0, 1, 0x80000000, 0x20, {crc:#x});\n'
    )
    (folder / "t.cfg").write_text(text)
    return folder


def test_cfg_trace_crc(tmp_path):
    crc = zlib.crc32(bytes(range(16)) + bytes(16))
    assert run_trace(cfg_trace(tmp_path / "nv_small" / "a", crc)).status == "pass"
    bad = run_trace(cfg_trace(tmp_path / "nv_small" / "b", crc ^ 1))
    assert bad.status == "fail" and "t.cfg:5" in bad.message


@pytest.mark.parametrize(
    "line, reason",
    [
        ("reg_write(NVDLA_SDP.D_BOGUS_0, 0x1);", "NVDLA_SDP.D_BOGUS_0"),
        ("reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0);", "takes 2..2 arguments"),
        ("frobnicate(1);", "unknown command"),
        ("reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0xzz);", "not a valid"),
        ('mem_load(pri_mem, 0x0, "missing.dat");', "missing.dat"),
        ("this is not a command", "not a trace command"),
        ("intr_notify(XYZ_0, id);", "unknown interrupt source"),
    ],
)
def test_malformed_cfg_is_an_error_with_file_and_line(tmp_path, line, reason):
    folder = cfg_trace(tmp_path / "nv_small" / "t", 0, body=f"// header\n{line}\n")
    result = run_trace(folder)
    assert result.status == "error"
    assert "t.cfg:2" in result.message and reason in result.message


@pytest.mark.parametrize(
    "line, reason",
    [("write_reg 0xffff1000", "takes 2 arguments"), ("jump 0x0", "unknown command"),
     ("read_reg 0xffffffff 0x1 0x1", "no register"), ("load_mem 0x0 0x10 nope.dat", "nope.dat")],
)
def test_malformed_txn_is_an_error_with_file_and_line(tmp_path, line, reason):
    folder = tmp_path / "nv_full" / "t"
    folder.mkdir(parents=True)
    (folder / "input.txn").write_text(f"# x\n{line}\n")
    result = run_trace(folder)
    assert result.status == "error"
    assert "input.txn:2" in result.message and reason in result.message


def test_parsers_return_operations(tmp_path):
    (tmp_path / "a.cfg").write_text('reg_write(NVDLA_SDP.S_POINTER_0, 0x1);\ncheck_nothing(x);\n')
    assert [op.cmd for op in parse_cfg(tmp_path / "a.cfg")] == ["reg_write", "check_nothing"]
    (tmp_path / "b.txn").write_text("write_reg 0xffff2c0e 0x1\nwait\n")
    ops = parse_txn(tmp_path / "b.txn")
    assert ops[0].args == (0xB038, 1) and ops[1].cmd == "wait"


def test_missing_config_is_an_error(tmp_path):
    folder = cfg_trace(tmp_path / "somewhere" / "t", 0)
    result = run_trace(folder)
    assert result.status == "error" and "--config" in result.message


def test_not_implemented_unit_is_reported_not_crashed(tmp_path):
    body = ("reg_write(NVDLA_CDP.D_OP_ENABLE_0, 0x1);\n"
            "reg_write(NVDLA_CDP_RDMA.D_OP_ENABLE_0, 0x1);\n"
            "intr_notify(CDP_0, id);\n")
    result = run_trace(cfg_trace(tmp_path / "nv_small" / "t", 0, body=body))
    assert result.status in ("error", "fail", "pass")
    assert "Traceback" not in result.message


def test_cli_exit_codes_and_json(tmp_path, capsys):
    good = make_txn(tmp_path / "nv_full" / "good", bytes(range(64)))
    assert main(["run", str(good), "--json", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["passed"] == 1 and doc["traces"][0]["status"] == "pass"
    bad = make_txn(tmp_path / "nv_full" / "bad", bytes(64))
    assert main(["run", str(bad)]) == 1
    assert main(["run", str(tmp_path / "nowhere")]) == 2
    assert "no such trace" in capsys.readouterr().err
    assert main(["run", str(good), "--config", "nv_huge"]) == 2


def test_regress_json_and_junit(tmp_path):
    make_txn(tmp_path / "root" / "nv_full" / "good", bytes(range(64)))
    make_txn(tmp_path / "root" / "nv_full" / "bad", bytes(64))
    code = main(["regress", str(tmp_path / "root"), "--json", str(tmp_path / "r.json"),
                 "--junit", str(tmp_path / "r.xml")])
    assert code == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (doc["passed"], doc["failed"], doc["errors"]) == (1, 1, 0)
    assert {t["name"] for t in doc["traces"]} == {"nv_full/good", "nv_full/bad"}
    xml = (tmp_path / "r.xml").read_text()
    assert 'tests="2"' in xml and "<failure" in xml


def test_console_script_prints_one_line_errors(tmp_path):
    out = subprocess.run([sys.executable, "-m", "sim.cli", "run", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_bundled_examples_pass():
    assert main(["run"]) == 0


def test_simerror_is_one_line():
    assert str(SimError("a: b")).count("\n") == 0


def _record_lines(data: bytes, record: int, skip_zero: bool) -> bytes:
    """Record .dat text line by line, the plain way."""
    lines = ["{\n"]
    for offset in range(0, len(data), record):
        chunk = data[offset:offset + record]
        if skip_zero and len(chunk) == record and not any(chunk):
            continue
        payload = " ".join(f"0x{b:02x}" for b in chunk)
        lines.append(f"{{offset:{offset:#x}, size:{len(chunk)}, payload:{payload}}} ,\n")
    lines.append("}\n")
    return "".join(lines).encode()


@pytest.mark.parametrize("size, record, skip_zero", [
    (0, 32, False), (3, 4, False), (4096 + 7, 4, False), (70_001, 32, True),
    (1 << 20, 32, False), (300, 32, True), (0x10000 + 40, 1, False), (0x1000 + 7, 3, True),
    (32 * 5, 32, True), (700, 12, False), (33, 8, True)])
@pytest.mark.parametrize("lines", [None, 1, 7, 256])
@pytest.mark.parametrize("kernel", [False, True])
def test_record_rendering_is_the_line_by_line_text(size, record, skip_zero, lines, kernel):
    """The vectorised renderer (hex digits by binascii and numpy, or by the numba kernel
    with ``kernel``; blocks of equal offset widths, chunks of ``lines`` lines of one
    reused buffer) writes what the plain line-by-line rendering does, zero records
    skipped on request: chunks ending mid-block, at a block's end and on a partial last
    record, offsets gaining digits mid-chunk, all-zero data (no record line at all when
    skipped) and every record size the recorder and gen use (4, 32) and others (1: a
    line holding only its last token)."""
    import numpy as np

    from sim.memfiles import (
        live_records,
        record_dat_bytes,
        record_dat_chunks,
        record_dat_parts,
        record_dat_text,
    )

    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8)
    data[size // 4: size // 2] = 0  # whole zero records among the others
    if size == 32 * 5:
        data[:] = 0  # nothing but zero records
    want = _record_lines(data.tobytes(), record, skip_zero)
    # each chunk is taken as it comes: its buffer is filled again for the next
    got = b"".join([bytes(chunk) for chunk in record_dat_chunks(data.tobytes(), record,
                                                                  skip_zero, lines, kernel)])
    assert got == want
    # the size told before the text, and the live records given (the recorder has them)
    full = size // record * record
    live = live_records(data[:full].reshape(-1, record)) if skip_zero else None
    told, chunks = record_dat_text(data.tobytes(), record, skip_zero, lines, kernel, live)
    assert b"".join([bytes(chunk) for chunk in chunks]) == want and told == len(want)
    if kernel:
        return
    assert b"".join(record_dat_parts(data.tobytes(), record, skip_zero)) == want
    assert record_dat_bytes(data.tobytes(), record, skip_zero) == want


def test_record_chunks_reuse_one_buffer_per_offset_width():
    """What makes the renderer fast (no fresh memory per chunk) is also why its chunks
    must be written before the next is asked for: two chunks of one block share memory."""
    import numpy as np

    from sim.memfiles import record_dat_chunks

    chunks = record_dat_chunks(bytes(range(256)) * 4, 32, lines=2)
    assert next(chunks) == b"{\n"
    assert bytes(next(chunks)).startswith(b"{offset:0x0, ")  # the one 1-digit offset
    one, two = next(chunks), next(chunks)  # offsets 0x20, 0x40 | 0x60, 0x80
    assert isinstance(one, np.ndarray) and np.shares_memory(one, two)
    assert bytes(one).startswith(b"{offset:0x60, size:32, payload:0x60 ")


@pytest.mark.parametrize("record", [4, 8, 32, 12])
@pytest.mark.parametrize("kernel", [False, True])
def test_live_records_are_those_with_a_nonzero_byte(record, kernel):
    """Word-at-a-time for records of whole 64-bit words (by numpy, or by the kernel with
    ``kernel``), bytes otherwise: the same rows."""
    import numpy as np

    from sim.memfiles import live_records

    rng = np.random.default_rng(record)
    rows = rng.integers(0, 256, (500, record), dtype=np.uint8)
    rows[rng.random(500) < 0.5] = 0
    rows[7] = 0
    rows[7, record - 1] = 1  # only the last byte set
    rows[8] = 0
    rows[8, 0] = 0x80  # only the first
    np.testing.assert_array_equal(live_records(rows, kernel), rows.any(axis=1))
    np.testing.assert_array_equal(live_records(rows[::2], kernel), rows[::2].any(axis=1))
    for byte in range(record):  # a record whose only non-zero byte is any one of its bytes
        one = np.zeros((3, record), np.uint8)
        one[1, byte] = 1 << (byte % 8)
        np.testing.assert_array_equal(live_records(one, kernel), [False, True, False])


CFG_WITH_FILE = """\
mem_init(pri_mem, 0x80000000, "{init}", ALL_ZERO);
mem_load(pri_mem, 0x80000000, "{load}");
intr_notify(SDP_0, sync_id_0);
"""


@pytest.mark.parametrize("trace,line", [
    (CFG_WITH_FILE.format(init="in.dat", load="x.dat"), "t.cfg:2"),  # mem_load's
    (CFG_WITH_FILE.format(init="x.dat", load="in.dat"), "t.cfg:1"),  # mem_init's size
    (BDMA_TXN.replace("src.dat", "x.dat"), "input.txn:1"),  # load_mem
    (BDMA_TXN.replace("dst.dat", "x.dat"), "input.txn:11"),  # dump_mem's expected bytes
])
@pytest.mark.parametrize("fault", ["missing", "folder", "malformed"])
def test_a_memory_file_that_is_not_there_or_bad_fails_its_line(tmp_path, trace, line, fault):
    """A missing file (or a folder in its place) is "not found next to the trace"; a file
    that is there but cannot be read as one fails as its reader says; at the op's line."""
    folder = make_txn(tmp_path / "nv_full" / "t", bytes(range(64)), trace)
    if line.startswith("t.cfg"):
        (folder / "input.txn").unlink()
        (folder / "t.cfg").write_text(trace)
        (folder / "in.dat").write_text(format_record_dat(bytes(range(64)), 32))
    if fault == "folder":
        (folder / "x.dat").mkdir()
    elif fault == "malformed":
        (folder / "x.dat").write_text("{\n{offset:0x0, size:2, payload:0x01} ,\n}\n" if
                                      line.startswith("t.cfg") else "0xzz 0x01\n")
    result = run_trace(folder)
    assert result.status == "error", result.message
    assert line in result.message
    if fault == "malformed":
        assert "not found" not in result.message and "x.dat" in result.message
    else:
        assert "memory file 'x.dat' not found next to the trace" in result.message


@pytest.mark.parametrize("digits, first_row", [(8, (1 << 27) - 5), (9, 1 << 27),
                                               (10, 1 << 31)])
@pytest.mark.parametrize("kernel", [False, True])
def test_record_offsets_past_4_gb_render_every_digit(digits, first_row, kernel):
    """Offsets of 8 hex digits or fewer come from 32-bit words, longer ones from 64-bit
    words (numpy's way; the kernel's digits are shifts of one 64-bit offset): the lines
    of records at 4 GB and past it (data too large to make, so a view repeating one
    record) are what the line-by-line rendering writes."""
    import numpy as np

    from sim.memfiles import _record_lines

    record = 32
    one = np.random.default_rng(digits).integers(0, 256, record, dtype=np.uint8)
    rows = np.lib.stride_tricks.as_strided(one, (first_row + 8, record), (0, 1))
    index = np.arange(first_row, first_row + 5, dtype=np.int64)
    rest = b", size:32, payload:" + b" ".join([b"0x__"] * record) + b"} ,\n"
    got = b"".join(bytes(chunk) for chunk in _record_lines(
        rows, index, 0, index.size, digits, b"{offset:0x", rest, 2, kernel))
    payload = " ".join(f"0x{b:02x}" for b in one.tolist())
    want = "".join(f"{{offset:{int(row) * record:#x}, size:32, payload:{payload}}} ,\n"
                   for row in index).encode()
    assert all(len(f"{int(row) * record:x}") == digits for row in index)
    assert got == want
