"""Trace text has one writer per format (``sim.trace.cfg.format``, ``sim.trace.txn.format``).

Random ops survive format -> parse in both formats; the ops keep the player's generic
interface (``cmd``/``args``) that the RTL planner and the vocabulary check read; and every
trace this project writes -- the bundled traces, what the tools regenerate, gen's folders, the
firmware recorder's ``.cfg`` -- is exactly what the formatter writes for its ops.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import SimError
from sim.trace import cfg, txn
from sim.trace.ops import (
    ALL_BITS,
    CheckCrc,
    CheckNothing,
    Comment,
    DumpMem,
    IntrNotify,
    LoadMem,
    MemInit,
    MemLoad,
    PollReg,
    RegRead,
    RegWrite,
    Sync,
    Wait,
)

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "traces"
SPECS = sorted((REPO / "examples" / "specs").glob("*.toml"))

# -- random ops ----------------------------------------------------------------------------

U32 = st.integers(0, 0xFFFFFFFF)
U64 = st.integers(0, (1 << 64) - 1)
TOKEN = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
REG_NAME = st.from_regex(r"NVDLA_[A-Z0-9_]{1,8}\.[A-Z0-9_]{1,20}", fullmatch=True)
FILE = st.from_regex(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,20}", fullmatch=True)
# a comment: one line, kept without the blanks around it
TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
               max_size=30).map(str.strip)
NOTE = st.one_of(st.just(""), TEXT)
CSB_REG = st.integers(0, 0xFFFF).map(lambda word: word << 2)  # byte address of a CSB word


CFG_OPS = st.one_of(
    st.builds(RegWrite, REG_NAME, U32, note=NOTE),
    st.builds(RegRead, REG_NAME, note=NOTE),
    st.builds(PollReg, REG_NAME, st.just(ALL_BITS), U32, note=NOTE),
    st.builds(IntrNotify, st.one_of(st.just(""), TOKEN), TOKEN, note=NOTE),
    st.builds(CheckNothing, TOKEN, note=NOTE),
    st.builds(CheckCrc, TOKEN, st.sampled_from(["pri_mem", "sec_mem"]), U64, U64, U32,
              note=NOTE),
    st.builds(MemInit, TOKEN, U64, st.one_of(U64, FILE), TOKEN, note=NOTE),
    st.builds(MemLoad, TOKEN, U64, FILE, note=NOTE),
    st.builds(Sync, st.sampled_from(["sync_notify", "sync_wait"]),
              st.lists(TOKEN, min_size=1, max_size=3).map(tuple), note=NOTE),
    st.builds(Comment, TEXT),
)

TXN_OPS = st.one_of(
    st.builds(RegWrite, CSB_REG, U32, note=NOTE),
    st.builds(PollReg, CSB_REG, U32, U32, note=NOTE),
    st.builds(Wait, note=NOTE),
    st.builds(LoadMem, U64, U64, FILE, note=NOTE),
    st.builds(DumpMem, U64, U64, FILE, note=NOTE),
    st.builds(Comment, TEXT),
)


@pytest.mark.parametrize("module, ops", [(cfg, CFG_OPS), (txn, TXN_OPS)],
                         ids=["cfg", "txn"])
def test_ops_round_trip(module, ops):
    @settings(max_examples=300, deadline=None)
    @given(st.lists(ops, max_size=12))
    def round_trip(ops):
        text = module.format(ops)
        assert module.parse(text, comments=True) == ops
        assert module.format(module.parse(text, comments=True)) == text

    round_trip()


def test_where_is_not_part_of_an_op():
    (a,) = cfg.parse("reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);", "a.cfg")
    (b,) = cfg.parse("\n// x\nreg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);", "b.cfg")
    assert a == b and (a.where, b.where) == ("a.cfg:1", "b.cfg:3")
    assert cfg.parse("// a comment\n{\n}\n") == []  # comments only when asked for


@pytest.mark.parametrize("module, op, problem", [
    (cfg, Wait(), "no .cfg syntax"),
    (cfg, PollReg("NVDLA_GLB.S_INTR_STATUS_0", 0x40, 0x40), "compares all bits"),
    (txn, RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 1), "by byte address"),
    (txn, IntrNotify("SDP_0", "sync_id_0"), "no input.txn syntax"),
])
def test_an_op_the_format_cannot_say_is_refused(module, op, problem):
    with pytest.raises(ValueError, match=problem):
        module.format([op])


# -- the generic interface the player, sim/rtl/plan.py and the vocabulary check read ------

@pytest.mark.parametrize("module, line, cmd, args", [
    (cfg, "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1); // go", "reg_write",
     ("NVDLA_SDP.D_OP_ENABLE_0", 1)),
    (cfg, "reg_read(NVDLA_GLB.S_INTR_STATUS_0);", "reg_read", ("NVDLA_GLB.S_INTR_STATUS_0",)),
    (cfg, "poll_reg_equal(NVDLA_CDP.D_PERF_0, 0x5);", "poll_reg", ("NVDLA_CDP.D_PERF_0",
                                                                   ALL_BITS, 5)),
    (cfg, "intr_notify(SDP_0, sync_id_3);", "intr_notify", ("SDP_0", "sync_id_3")),
    (cfg, "intr_notify(sync_id_3);", "intr_notify", ("", "sync_id_3")),
    (cfg, "check_nothing(sync_id_3);", "check_nothing", ("sync_id_3",)),
    (cfg, "check_crc(sync_id_0, 1, 0x80, 0x20, 0xdeadbeef);", "check_crc",
     ("sync_id_0", "pri_mem", 0x80, 0x20, 0xDEADBEEF)),
    (cfg, 'mem_init(pri_mem, 0x80, "a.dat", ALL_ZERO);', "mem_init",
     ("pri_mem", 0x80, "a.dat", "ALL_ZERO")),
    (cfg, "mem_init(sec_mem, 0x80, 0x40, ALL_ZERO);", "mem_init",
     ("sec_mem", 0x80, 0x40, "ALL_ZERO")),
    (cfg, 'mem_load(pri_mem, 0x80, "a.dat");', "mem_load", ("pri_mem", 0x80, "a.dat")),
    (cfg, "sync_wait(SDP_0, sync_id_0);", "nop", ("sync_wait", "SDP_0", "sync_id_0")),
    (txn, "write_reg 0xffff1000 0x5 # NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", "reg_write",
     (0x4000, 5)),
    (txn, "read_reg 0xffff0003 0x40 0x40", "poll_reg", (0xC, 0x40, 0x40)),
    (txn, "wait", "wait", ()),
    (txn, "load_mem 0x80000000 0x40 src.dat", "load_hex", (0x80000000, 0x40, "src.dat")),
    (txn, "dump_mem 0x80000000 0x40 dst.dat", "dump_mem", (0x80000000, 0x40, "dst.dat")),
])
def test_ops_keep_the_generic_interface(module, line, cmd, args):
    (op,) = module.parse(line, "t")
    assert (op.cmd, op.args, op.where) == (cmd, args, "t:1")
    failure = op.fail("reason")
    assert isinstance(failure, SimError) and str(failure) == "t:1: reason"


# -- every writer writes the formatter's text --------------------------------------------------

def _trace_files(root: Path) -> list[Path]:
    return sorted([*root.rglob("*.cfg"), *root.rglob("input.txn")])


def assert_formatter_text(path: Path) -> None:
    """The file is exactly what the formatter writes for the ops it parses into."""
    module = txn if path.suffix == ".txn" else cfg
    text = path.read_text()
    ops = module.parse(text, str(path), comments=True)
    assert ops and module.format(ops) == text, path


@pytest.mark.parametrize("trace", _trace_files(TRACES), ids=lambda p: p.parent.name)
def test_bundled_trace_is_the_formatters_text(trace):
    assert_formatter_text(trace)


@pytest.fixture
def tools(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "tools"))

    def load(name: str, root: Path):
        module = importlib.import_module(name)
        monkeypatch.setattr(module, "ROOT", root)
        return module

    return load


TOOLS = [
    pytest.param("make_example_traces", "", id="make_example_traces"),
    pytest.param("make_unit_traces", "", id="make_unit_traces"),
    pytest.param("make_mode_traces", "nv_full", id="make_mode_traces"),
]


@pytest.mark.parametrize("name, sub", TOOLS)
def test_tools_regenerate_the_bundled_traces(tmp_path, tools, capsys, name, sub):
    out = tmp_path / "traces"
    tools(name, out / sub if sub else out).main()
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert written
    for rel in written:
        assert (out / rel).read_bytes() == (TRACES / rel).read_bytes(), rel
    for trace in _trace_files(out):
        assert_formatter_text(trace)


def test_gen_writes_the_formatters_text(tmp_path):
    from sim.gen import generate

    for spec in SPECS:
        generate(spec, tmp_path / spec.stem, fmt="both")
    traces = _trace_files(tmp_path)
    assert len(traces) == 2 * len(SPECS)
    for trace in traces:
        assert_formatter_text(trace)


def test_recorder_writes_the_formatters_text(tmp_path, monkeypatch):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: the test firmware cannot be built")
    monkeypatch.syspath_prepend(str(REPO / "tests"))  # the minikmd fixture's package
    from firmware.minikmd_task import MINIKMD, Program
    from firmware.test_firmware import _input, _loadable, bdma_op

    from sim.cli import main

    p = Program("nv_full")
    bdma_op(p, 1, 2)  # input tensor -> output tensor
    (tmp_path / "in.bin").write_bytes(_input("nv_full")[1])
    trace = tmp_path / "trace" / "run.cfg"
    assert main(["loadable", _loadable(tmp_path, p), "--config", "nv_full", "--firmware",
                 str(MINIKMD), "--input", str(tmp_path / "in.bin"), "--trace-out", str(trace),
                 "-o", str(tmp_path / "out")]) == 0
    assert_formatter_text(trace)
    ops = cfg.parse_cfg(trace, comments=True)
    assert {type(op) for op in ops} >= {Comment, RegWrite, IntrNotify, MemLoad}
    assert any(isinstance(op, CheckCrc) for op in ops)


def test_no_other_code_writes_trace_text():
    """Trace syntax is written only by the two formatters (a command followed by its
    argument list in an f-string, anywhere else in sim/ or tools/, is a second writer)."""
    commands = ("reg_write(", "poll_reg_equal(", "intr_notify(", "check_crc(",
                "check_nothing(", "mem_load(", "mem_init(", "write_reg {", "read_reg {",
                "load_mem {", "dump_mem {")
    writers = {REPO / "sim" / "trace" / "cfg.py", REPO / "sim" / "trace" / "txn.py"}
    found = []
    for path in sorted([*(REPO / "sim").rglob("*.py"), *(REPO / "tools").glob("*.py")]):
        if path in writers:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if any(f'f"{c}' in line or f"f'{c}" in line for c in commands):
                found.append(f"{path.relative_to(REPO)}:{lineno}: {line.strip()}")
    assert found == []
