"""Bounded fuzzing of every parser a user feeds (the long run is ``tools/fuzz.py``).

Each input is accepted or rejected with a one-line SimError naming the file
(and line, where there is one); nothing else may escape.
"""

import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cli import layout as layout_cli
from sim.errors import CheckFailed, SimError
from sim.memfiles import load_image, read_hex_dat, read_memory_file, read_record_dat
from sim.trace.cfg import parse_cfg
from sim.trace.player import run_trace
from sim.trace.txn import parse_txn

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

NUMBERS = st.one_of(st.integers(-(1 << 70), 1 << 70).map(hex), st.integers(-5, 1 << 40).map(str),
                    st.sampled_from(["0xzz", "", "1e3", "0x", "--1", "0b2"]))
NAMES = st.sampled_from(["NVDLA_SDP.D_OP_ENABLE_0", "NVDLA_BDMA.CFG_OP_0", "NVDLA_X.Y_0",
                         "nvdla_sdp.d_op_enable_0", "NVDLA_SDP", "", "SDP_0", "cdma_dat_0"])
FILES = st.sampled_from(['"x.dat"', '"missing.dat"', "x.dat", '"', '""'])
ARG = st.one_of(NUMBERS, NAMES, FILES, st.text(max_size=8))
CMDS = ["reg_write", "reg_read", "poll_reg_equal", "intr_notify", "mem_init", "mem_load",
        "check_crc", "check_nothing", "sync_notify", "sync_wait", "frob"]
CFG_LINE = st.one_of(
    st.builds(lambda c, a, end: f"{c}({', '.join(a)}){end}", st.sampled_from(CMDS),
              st.lists(ARG, max_size=6), st.sampled_from([";", "", ");", " // c", "(("])),
    st.text(max_size=40))
TXN_LINE = st.one_of(
    st.builds(lambda c, a: " ".join([c, *a]),
              st.sampled_from(["load_mem", "write_reg", "read_reg", "wait", "dump_mem", "x"]),
              st.lists(st.one_of(NUMBERS, FILES, st.text(max_size=6)), max_size=5)),
    st.text(max_size=40))


def _check_rejection(exc: Exception, path: Path) -> None:
    msg = str(exc)
    assert "\n" not in msg.strip(), msg
    assert msg.startswith(str(path)), msg


def _parse(parser, text: str, name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        (Path(tmp) / "x.dat").write_text("{offset:0x0, size:1, payload:0x01},\n")
        path.write_text(text, errors="replace")
        try:
            parser(path)
        except SimError as exc:
            _check_rejection(exc, path)


@FUZZ
@given(st.lists(CFG_LINE, max_size=12))
def test_cfg_parser(lines):
    _parse(parse_cfg, "\n".join(lines), "t.cfg")


@FUZZ
@given(st.lists(TXN_LINE, max_size=12))
def test_txn_parser(lines):
    _parse(parse_txn, "\n".join(lines), "input.txn")


RECORD = st.builds(
    lambda o, s, p, b: f"{b[0]}{{offset:{o}, size:{s}, payload:{' '.join(p)}}}{b[1]} ,",
    NUMBERS, NUMBERS, st.lists(st.one_of(st.integers(0, 300).map(hex), st.text(max_size=3)),
                               max_size=6),
    st.sampled_from([("", ""), ("{", ""), ("", "}"), ("{", "}")]))


@FUZZ
@given(st.lists(st.one_of(RECORD, st.text(max_size=20)), max_size=8))
def test_record_dat(lines):
    _parse(read_record_dat, "{\n" + "\n".join(lines) + "\n}\n", "m.dat")
    _parse(load_image, "{\n" + "\n".join(lines) + "\n}\n", "m.dat")


def _records_or_error(text: str, bulk: bool):
    import sim.memfiles as memfiles

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.dat"
        path.write_text(text, errors="replace")
        saved = memfiles._well_formed_records, memfiles._canonical_records
        if not bulk:
            memfiles._well_formed_records = lambda _text: None
            memfiles._canonical_records = lambda _raw: None
        try:
            records = memfiles.read_record_dat(path)
            image = memfiles.read_record_file(path)
            assert image.runs == memfiles.record_runs(records)
            assert image.extent == memfiles.record_dat_extent(records)
            return records
        except SimError as exc:
            return str(exc).split(":")[-1]  # the reason (the paths differ)
        finally:
            memfiles._well_formed_records, memfiles._canonical_records = saved


@FUZZ
@given(st.lists(st.one_of(RECORD, st.text(max_size=20)), max_size=8),
       st.sampled_from(["0x", "0X"]))
def test_record_dat_in_bulk_is_record_by_record(lines, prefix):
    """Files without a fault are parsed in bulk (as arrays when laid out as gen writes
    them); whatever the file, the result (or the rejection) is the record-by-record
    parse's."""
    text = "{\n" + "\n".join(lines).replace("0x", prefix) + "\n}\n"
    assert _records_or_error(text, True) == _records_or_error(text, False)


GEN_RECORD = st.tuples(st.one_of(st.integers(0, 1 << 20), st.integers(0, 1 << 64),
                                 st.just(None)),  # None: follows on from the last record
                       st.binary(min_size=1, max_size=40))


@FUZZ
@given(st.lists(GEN_RECORD, min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 1 << 20), st.sampled_from(list("0x9aFG ,{}\n:-\r"))),
                max_size=2),
       st.booleans())
def test_record_dat_as_gen_writes_it(records, faults, last_newline):
    """The layout gen writes is decoded as arrays: whatever is changed in it, the result (or
    the rejection) is the record-by-record parse's."""
    lines, end = ["{"], 0
    for offset, payload in records:
        offset = end if offset is None else offset
        end = offset + len(payload)
        lines.append(f"{{offset:{offset:#x}, size:{len(payload)}, payload:"
                     f"{' '.join(f'0x{b:02x}' for b in payload)}}} ,")
    text = "\n".join(lines) + ("\n}\n" if last_newline else "\n}")
    for where, char in faults:
        where %= len(text)
        text = text[:where] + char + text[where + 1:]
    assert _records_or_error(text, True) == _records_or_error(text, False)


@FUZZ
@given(st.lists(st.lists(st.one_of(st.integers(-2, 300).map(hex), st.text(max_size=4)),
                         max_size=8).map(" ".join), max_size=8))
def test_hex_dat(lines):
    _parse(read_hex_dat, "\n".join(lines), "h.dat")


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["r.bin", "r.dat"]))
def test_binary_garbage_images(data, name):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            load_image(path)
        except SimError as exc:
            _check_rejection(exc, path)


DIMS = st.one_of(st.integers(1, 9), st.sampled_from([0, -1, 1 << 31, 1 << 20, 8193]))
FORMATS = ["feature", "bias", "ew", "weight-dc", "weight-winograd", "weight-img", "dvsdk",
           "kneron-4w4c8b", "R8", "A8B8G8R8", "Y8___U8V8_N444", "bogus"]


@FUZZ
@given(st.sampled_from(FORMATS), st.lists(DIMS, min_size=1, max_size=4),
       st.sampled_from([np.int8, np.uint8, np.int16, np.float16, np.float32, np.bool_]),
       st.lists(st.sampled_from(["--line-stride", "--surface-stride", "--x-offset"]),
                max_size=2),
       st.sampled_from(["0", "1", "32", "-32", hex(1 << 40)]),
       st.sampled_from([None, "int8", "int16", "fp16"]), st.binary(max_size=512))
def test_layout_inputs(fmt, dims, dtype, opts, value, precision, image):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shape = ",".join(map(str, dims))
        np.save(tmp / "a.npy", np.ones([d for d in dims if 0 < d < 64], dtype=dtype))
        (tmp / "i.bin").write_bytes(image)
        extra = [x for o in opts for x in (o, value)]
        extra += ["--precision", precision] if precision else []
        for argv in (["pack", fmt, str(tmp / "a.npy"), str(tmp / "o.bin"), *extra],
                     ["unpack", fmt, str(tmp / "i.bin"), str(tmp / "o.npy"), "--shape", shape,
                      *extra]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code = layout_cli.main(argv)
                except SystemExit as exc:  # argparse's usage error
                    code = exc.code
            assert code in (0, 2), err.getvalue()
            if code == 2:
                assert "Traceback" not in err.getvalue()
                # one error line (argparse prints its usage above a usage error)
                assert err.getvalue().strip().splitlines()[-1].startswith("nvdla-sim layout")


@pytest.fixture(scope="module")
def bundled_traces():
    root = Path(__file__).resolve().parents[2] / "traces"
    return sorted(root.glob("nv_small/*/*.cfg")) + sorted(root.glob("nv_full/*/input.txn"))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_bundled_traces_run_or_stop_cleanly(bundled_traces, data):
    """Random register values in real traces: the machine stops with a SimError, never crashes."""
    trace = data.draw(st.sampled_from(bundled_traces))
    lines = trace.read_text().splitlines()
    writes = [i for i, line in enumerate(lines) if line.startswith(("reg_write(", "write_reg "))]
    for i in data.draw(st.lists(st.sampled_from(writes), min_size=1, max_size=4)):
        value = data.draw(st.one_of(st.integers(0, 0xFFFFFFFF), st.sampled_from([0, 1, 0x1FFF])))
        if lines[i].startswith("reg_write("):
            name = lines[i].split("(", 1)[1].split(",", 1)[0]
            lines[i] = f"reg_write({name}, {value:#x});"
        else:
            lines[i] = f"write_reg {lines[i].split()[1]} {value:#x}"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / trace.parent.parent.name / trace.parent.name
        folder.mkdir(parents=True)
        for f in trace.parent.iterdir():
            (folder / f.name).symlink_to(f)
        (folder / trace.name).unlink()
        (folder / trace.name).write_text("\n".join(lines) + "\n")
        result = run_trace(folder)
    assert "internal error" not in result.message, result.message
    assert "\n" not in result.message


def test_check_failed_is_not_a_crash():
    assert not issubclass(CheckFailed, SimError)  # a failed check is its own outcome


def test_unclosed_records_are_rejected_in_one_pass(tmp_path):
    """Records whose closing brace is missing: a scan per record to the end of the file made
    this take minutes (fuzz finding); the parser must stay linear."""
    path = tmp_path / "m.dat"
    path.write_text("{\n" + "{offset:0x0, size:1, payload:0x00 ,\n" * 20000)
    with pytest.raises(SimError, match=r"m\.dat:2: not a memory record"):
        read_record_dat(path)


def test_readmemh_far_apart_addresses_are_refused_before_allocating(tmp_path):
    path = tmp_path / "m.mem"
    path.write_text("@0\n01\n@ffffffffff\n02\n")
    with pytest.raises(SimError, match=r"m\.mem: @addresses 0x0\.\.0xffffffffff.*limit"):
        read_memory_file(path)


@FUZZ
@given(st.lists(st.one_of(
    st.builds(lambda a: f"@{a}", st.one_of(st.integers(0, 1 << 44).map(lambda v: f"{v:x}"),
                                           st.text(max_size=4))),
    st.lists(st.one_of(st.integers(0, 1 << 64).map(lambda v: f"{v:x}"), st.text(max_size=3)),
             max_size=6).map(" ".join),
    st.sampled_from(["// start_address=0x10 size=0x8", "// start_address=0xzz", "//"])),
    max_size=10), st.sampled_from(["w.hex", "w.mem", "w.txt"]))
def test_hex_word_files(lines, name):
    _parse(read_memory_file, "\n".join(lines), name)


def test_gen_spec_asking_for_terabytes_is_refused_before_allocating(tmp_path, capsys):
    from sim.cli import main

    spec = tmp_path / "big.toml"
    spec.write_text('config = "nv_full"\n[[layer]]\nunit = "sdp"\ninput = [8192, 8192, 8192]\n'
                    'precision = "int16"\n')
    assert main(["gen", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "layer 0" in err and "limit" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
