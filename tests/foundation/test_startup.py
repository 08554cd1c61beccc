"""A process starts light: it imports what its command and its trace use, nothing more.

Each check runs a fresh interpreter and reads ``sys.modules`` at its end (never a
clock): the help texts load no simulator, a pooling trace loads no convolution,
SDP, CDP or Rubik code, and nothing loads numba unless a kernel runs.  Also here:
the values that make this possible (the CLI's own copy of the dump formats, the
register map's cache, the hand-written trace op classes) behave as what they
stand in for.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim import regs
from sim.trace.ops import Comment, IntrNotify, Op, PollReg, RegWrite, Sync, Wait, reg_write_op

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "traces" / "nv_small"

# modules of the units a trace does not use, and numba: loaded only when needed
CONV = ("sim.conv.layer", "sim.conv.cdma", "sim.conv.modes", "sim.dma.weights")
SDP = ("sim.sdp.config", "sim.sdp.fetch", "sim.sdp.rdma", "sim.sdp.pipeline", "sim.rules")
CDP = ("sim.cdp.config", "sim.cdp.lrn")
RUBIK = ("sim.dma.rubik",)
SIMULATOR = ("numpy", "sim.regs", "sim.configs", "sim.machine", "sim.memfiles")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def run_command(*argv: str) -> str:
    """Python code running ``nvdla-sim ARGV`` in-process, its exit status ignored."""
    return (f"import contextlib, io\nfrom sim.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()), "
            f"contextlib.redirect_stderr(io.StringIO()):\n"
            f"    try:\n        main({list(argv)!r})\n    except SystemExit:\n        pass")


@pytest.mark.parametrize("argv", [(), ("--help",), ("run", "--help"), ("regress", "--help"),
                                  ("gen", "--help"), ("diff", "--help"), ("rtl", "--help"),
                                  ("loadable", "--help")])
def test_help_loads_no_simulator(argv):
    loaded = modules_after(run_command(*argv))
    assert not loaded & set(SIMULATOR), argv


def test_cli_package_loads_no_command():
    loaded = modules_after("import sim.cli")
    assert not {m for m in loaded if m.startswith("sim.cli.")}
    assert not loaded & set(SIMULATOR)


def test_the_loadable_runtime_reads_flatbuffers_itself():
    """The loadable reader reads its tables with struct: the flatbuffers package (its
    checks cost more than the reading) stays unloaded."""
    assert "flatbuffers" not in modules_after("import sim.runtime")


@pytest.mark.parametrize("trace, unused", [
    ("pdp_9x11x16_3x3s2_max_int8", CONV + SDP + CDP + RUBIK),
    ("cdp_3x4x13_lrn5_lut_int8", CONV + SDP + RUBIK + ("sim.pdp.pooling",)),
    ("conv_6x7x6_3x3x6x10_pad_int8", CDP + RUBIK),
])
def test_a_trace_loads_only_its_units(trace, unused):
    code = run_command("run", str(SMALL / trace), "--config", "nv_small")
    loaded = modules_after(code + "\nfrom sim.trace import run_trace\n"
                           f"assert run_trace({str(SMALL / trace)!r}, 'nv_small').status == "
                           "'pass'")
    assert not loaded & set(unused)
    assert "numba" not in loaded  # no int8 layer of these runs a kernel


def test_the_runtime_and_firmware_load_neither_logging_nor_ctypes_util():
    """Their loggers wait for logging to be loaded by someone who may listen, and libm is
    opened by its soname (ctypes.util's find_library only where that fails)."""
    loaded = modules_after("import sim.runtime, sim.firmware, sim.num.host\n"
                           "sim.num.host.expf([0.0])")
    assert not loaded & {"logging", "ctypes.util"}


def test_the_runtime_and_firmware_load_no_memory_file_format():
    """A loadable's run reads and writes no memory file: the memory loads the formats only
    when it loads or dumps one (sim.dram.Memory.load_file, dump_file)."""
    loaded = modules_after("import sim.runtime, sim.firmware, sim.cli.loadable\n"
                           "from sim.machine import Machine\n"
                           "Machine('nv_small').pri_mem.write(0, b'1')")
    assert "sim.memfiles" not in loaded


def test_trace_formats_load_without_the_player():
    loaded = modules_after("import sim.trace.cfg, sim.trace.txn")
    assert "sim.machine" not in loaded and "sim.trace.player" not in loaded


def test_the_cli_dump_formats_are_the_memory_file_formats():
    from sim.cli.run import DUMP_FORMATS
    from sim.memfiles import MEMORY_FILE_FORMATS

    assert DUMP_FORMATS == tuple(MEMORY_FILE_FORMATS)


def test_every_command_has_its_help_line():
    from sim.cli import COMMAND_HELP, SUBCOMMANDS, _module

    assert list(COMMAND_HELP) == list(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        assert _module(name).HELP == COMMAND_HELP[name]


# -- the register map's cache --------------------------------------------------------------

def same_map(a: regs.RegisterMap, b: regs.RegisterMap) -> bool:
    return (list(a) == list(b)
            and all(fa.enum == fb.enum and fa.stored == fb.stored
                    for ra, rb in zip(a, b, strict=True)
                    for fa, fb in zip(ra.fields, rb.fields, strict=True))
            and {n: u.bases for n, u in a.units.items()} == {n: u.bases for n, u in b.units.items()}
            and a._by_addr == b._by_addr)


def test_register_map_cache_serves_only_the_same_table(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    text = regs.TABLE.read_text()
    parsed = []

    def parse(table):
        def run():
            parsed.append(table)
            return regs.parse_table(table)
        return run

    first = regs.cached_map(text, parse(text))
    again = regs.cached_map(text, parse(text))
    assert parsed == [text] and same_map(again, first) and same_map(again, regs.load())
    # another table (an edited file) is parsed, never served the stored map
    edited = text.replace("reset=0x10001", "reset=0x10002", 1)
    assert edited != text
    other = regs.cached_map(edited, parse(edited))
    assert parsed == [text, edited]
    assert other.by_name("NVDLA_CFGROM.CFGROM_HW_VERSION_0").reset_value() == 0x10002
    # a broken cache file is parsed around (and replaced)
    for path in tmp_path.glob("regmap-*.pickle"):
        path.write_bytes(b"not a pickle")
    assert same_map(regs.cached_map(text, parse(text)), first) and len(parsed) == 3
    assert same_map(regs.cached_map(text, parse(text)), first) and len(parsed) == 3


def test_register_map_without_a_writable_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocked / "below"))  # cannot be a folder
    text = regs.TABLE.read_text()
    assert same_map(regs.cached_map(text, lambda: regs.parse_table(text)), regs.load())


def test_the_cached_map_holds_the_reset_words_a_fresh_map_works_out(tmp_path, monkeypatch):
    """load() stores its map with every unit's reset words worked out (a machine reads
    them at once); served from the cache file, they are those a fresh parse gives."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    regs.load.cache_clear()
    try:
        stored, served = regs.load(), (regs.load.cache_clear(), regs.load())[1]
    finally:
        regs.load.cache_clear()
    assert list(tmp_path.glob("regmap-*.pickle")) and served is not stored
    fresh = regs.parse_table(regs.TABLE.read_text())
    for unit in fresh.units:
        for double_buffered in (False, True):
            key = (unit, double_buffered)
            assert key in served._resets  # held, not worked out again
            assert served._resets[key] == fresh.reset_words(unit, double_buffered), key


def test_register_values_behave_as_frozen_records():
    a, b = regs.parse_table(regs.TABLE.read_text()), regs.load()
    reg = a.by_name("NVDLA_SDP.D_OP_ENABLE_0")
    assert reg == b.by_name("NVDLA_SDP.D_OP_ENABLE_0") and reg is not b.by_name(reg.full_name)
    assert hash(reg) == hash(b.by_name(reg.full_name))
    assert reg != a.by_name("NVDLA_PDP.D_OP_ENABLE_0")
    assert repr(reg.fields[0]).startswith("Field(name='OP_EN', msb=0, lsb=0, access='rw'")
    with pytest.raises(AttributeError):
        reg.name = "X"
    assert pickle.loads(pickle.dumps(reg)) == reg


# -- trace ops: what their dataclasses did -------------------------------------------------

def test_ops_compare_by_type_note_and_arguments_never_where():
    op = RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 1, where="a.cfg:3")
    assert op == RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 1, where="b.cfg:9")
    assert op == reg_write_op("NVDLA_SDP.D_OP_ENABLE_0", 1, "c.cfg:1", "")
    assert hash(op) == hash(reg_write_op("NVDLA_SDP.D_OP_ENABLE_0", 1, "c.cfg:1", ""))
    assert op != RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 1, note="x")
    assert op != RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 0)
    assert PollReg("R", 1, 2) != RegWrite("R", 2) and Wait() == Wait(where="x")
    assert Op() == Op() and Wait() != Op()
    assert len({op, RegWrite("NVDLA_SDP.D_OP_ENABLE_0", 1), Comment("c")}) == 2


def test_op_repr_args_and_immutability():
    assert repr(RegWrite("R", 1, where="f:1")) == "RegWrite(where='f:1', note='', reg='R', value=1)"
    assert repr(Wait(note="n")) == "Wait(where='', note='n')"
    assert repr(Sync("sync_wait")) == "Sync(where='', note='', command='sync_wait', operands=())"
    assert Sync("sync_wait", ("a", "b")).args == ("sync_wait", "a", "b")
    assert IntrNotify("SDP_0", "s").args == ("SDP_0", "s") and Wait().args == ()
    assert RegWrite.__match_args__ == ("reg", "value")
    op = RegWrite("R", 1, where="f:1", note="n")
    with pytest.raises(AttributeError):
        op.value = 2
    with pytest.raises(AttributeError):
        del op.reg
    copy = pickle.loads(pickle.dumps(op))
    assert copy == op and copy.where == "f:1" and copy.fail("bad").where == "f:1"
    with pytest.raises(TypeError):
        RegWrite("R")  # as the dataclass: every argument is required


@pytest.mark.parametrize("preset, want", [(None, "1"), ("3", "3")])
def test_the_cli_keeps_the_blas_to_one_thread_unless_told(preset, want):
    """numpy's BLAS threads spin after each product on the cores the firmware needs; the
    simulator splits products over its own threads, and a user's setting wins."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    probe = ("import os, sys; from sim.cli import main; main(['--help']); "
             "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[-2:] == [want, "False"]


def test_the_command_runs_with_the_cycle_collector_rare():
    """``nvdla-sim`` (sim.cli.console) runs its command with the youngest generation
    collected every RARE_COLLECTIONS allocations, not Python's default 700."""
    probe = ("import gc, sim.cli as cli\n"
             "cli.main = lambda: print(gc.get_threshold()[0]) or 0\n"
             "cli.console()")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, check=True)
    from sim.cli import RARE_COLLECTIONS

    assert int(done.stdout) == RARE_COLLECTIONS != 700


def test_the_memory_files_patterns_compile_at_their_first_use():
    """A process that reads no memory file compiles none of their patterns; one that does
    gets re.compile's own pattern's answers."""
    probe = subprocess.run([sys.executable, "-c", "import sim.memfiles as m\n"
                            "print(sorted(vars(m._HEADER)), sorted(vars(m._CANONICAL_RECORD)))"],
                           cwd=REPO, capture_output=True, text=True, check=True)
    assert probe.stdout.split() == ["['_args']", "['_args']"]
    from sim.memfiles import _LazyPattern
    for args, text in [((r"size\s*=\s*(\d+)",), "a size = 12"),
                       ((rb"\{offset:0x([0-9a-f]+)\}",), b"{offset:0x1f}"),
                       ((r"[^\s{},]", 0), " { , x")]:
        lazy, compiled = _LazyPattern(*args), re.compile(*args)
        assert lazy.search(text).groups() == compiled.search(text).groups()
        assert lazy.search(text).span() == compiled.search(text).span()
        assert lazy.findall(text) == compiled.findall(text)
