"""Errors with structure (sim/errors.py): context travels as data, never as message text.

An error keeps its class while context is added (a trace op's file:line, a gen layer), its
one line (``str``) stays ``<context>: <where>: <reason>``, and no code in sim/ decides what
happened by reading an error's message: a check over sim/ fails if such matching comes back.
"""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest

from sim.cli import main
from sim.configs import get_config
from sim.dram import MemoryFault
from sim.errors import (
    CheckFailed,
    ConfigurationError,
    NotImplementedFeature,
    ReportedError,
    SimError,
    SpecError,
    located,
)
from sim.gen.spec import LayerSpec
from sim.trace.player import TracePlayer, TraceResult, TraceStatus, run_trace

SIM = Path(__file__).resolve().parents[2] / "sim"

# -- no matching on error messages ------------------------------------------------------------

TEXT_TESTS = {"startswith", "endswith", "find", "index", "partition", "split", "removeprefix"}
# An error is known by its class and attributes: no exception to the rule
ALLOWED: set[tuple[str, str]] = set()


def _error_names(tree: ast.AST) -> set[str]:
    """Names that hold an exception: ``except ... as NAME`` and parameters annotated with an
    error class (``fault: MemoryFault``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            text = ast.unparse(node.annotation)
            if text.endswith(("Error", "Fault", "Failed", "Feature", "Exception")):
                names.add(node.arg)
    return names


def message_matching(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, code) of every place that reads an error's message to decide
    something: ``str(exc).startswith(..)``, ``msg = str(exc); msg.startswith(..)``,
    ``"..." in str(exc)``, ``result.message.startswith(..)``."""
    tree = ast.parse(source)
    errors = _error_names(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def is_error_text(node, texts) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("str", "repr") and node.args:
            arg = node.args[0]
            return isinstance(arg, ast.Name) and arg.id in errors
        if isinstance(node, ast.Attribute):  # exc.args, result.message
            return node.attr == "message" or (node.attr == "args" and isinstance(
                node.value, ast.Name) and node.value.id in errors)
        if isinstance(node, ast.Subscript):
            return is_error_text(node.value, texts)
        return isinstance(node, ast.Name) and node.id in texts

    texts: set[str] = set()  # names assigned an error's text (msg = str(exc))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and is_error_text(node.value, texts):
            texts.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def function_of(node) -> str:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name
        return ""

    found = []
    for node in ast.walk(tree):
        hit = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in TEXT_TESTS and is_error_text(node.func.value, texts):
            hit = node
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn))
                                                   for op in node.ops) \
                and any(is_error_text(c, texts) for c in node.comparators):
            hit = node
        if hit is not None:
            found.append((hit.lineno, function_of(hit), ast.unparse(hit)))
    return found


def test_no_code_in_sim_matches_error_messages():
    found, allowed_seen = [], set()
    for path in sorted(SIM.rglob("*.py")):
        rel = path.relative_to(SIM).as_posix()
        for line, function, code in message_matching(path.read_text()):
            if (rel, function) in ALLOWED:
                allowed_seen.add((rel, function))
            else:
                found.append(f"sim/{rel}:{line}: {code}")
    assert not found, ("decide by the error's class or its where/reason attributes "
                       "(sim/errors.py), not by its message:\n" + "\n".join(found))
    assert allowed_seen == ALLOWED, f"no longer needed: {ALLOWED - allowed_seen}"


@pytest.mark.parametrize("code", [
    # what sim/ did before errors had structure: each must be caught
    "try:\n    f()\nexcept SimError as exc:\n    msg = str(exc)\n"
    "    if msg.startswith(op.where) or msg.startswith('not implemented'):\n        raise\n",
    "try:\n    f()\nexcept SimError as exc:\n"
    "    if str(exc).startswith('layer '):\n        raise\n",
    "def _is_invalid(result):\n    return not result.message.startswith('not implemented')\n",
    "def f(fault: MemoryFault):\n    return str(fault).startswith('NVDLA_')\n",
    "try:\n    f()\nexcept SimError as e:\n    if 'not implemented' in str(e):\n        pass\n",
])
def test_the_check_finds_message_matching(code):
    assert message_matching(code)


def test_the_check_leaves_other_text_alone():
    code = ("try:\n    f()\nexcept SimError as exc:\n    if isinstance(exc, SpecError):\n"
            "        raise\nif line.startswith('//') or name.startswith('_'):\n    pass\n")
    assert not message_matching(code)


# -- context is data, added without changing the class ----------------------------------------

def test_str_joins_context_where_and_reason():
    exc = ConfigurationError("nv_small has no winograd", where="NVDLA_CDMA.D_MISC_CFG_0")
    assert str(exc) == "NVDLA_CDMA.D_MISC_CFG_0: nv_small has no winograd"
    assert exc.locate("t.cfg:7") is exc
    exc.locate("t.cfg:7").locate("NVDLA_CDMA.D_MISC_CFG_0")  # a place already named: once
    assert type(exc) is ConfigurationError and exc.where == "NVDLA_CDMA.D_MISC_CFG_0"
    assert exc.context == ["t.cfg:7"] and exc.reason == "nv_small has no winograd"
    assert str(exc) == "t.cfg:7: NVDLA_CDMA.D_MISC_CFG_0: nv_small has no winograd"
    plain = SimError("cannot read")
    assert str(plain) == "cannot read" and plain.where == "" and plain.context == []
    assert str(plain.locate("a.dat")) == "a.dat: cannot read" and plain.where == "a.dat"


def test_located_adds_the_place_and_keeps_the_class():
    with pytest.raises(MemoryFault) as info, located("input.txn:3"):
        raise MemoryFault("load_mem 0x0+0x10 is outside pri_mem")
    assert info.value.where == "input.txn:3"
    assert str(info.value) == "input.txn:3: load_mem 0x0+0x10 is outside pri_mem"


@pytest.mark.parametrize("exc", [
    SimError("bad", where="NVDLA_SDP.D_DST_BASE_ADDR").locate("t.cfg:2"),
    CheckFailed("CRC differs", where="t.cfg:9"),
    NotImplementedFeature("CACC", "48-bit accumulator saturation"),
    SpecError("nv_small has no winograd", where="layer 0 (c).mode"),
])
def test_errors_survive_pickling(exc):  # worker processes, Dask
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert (back.where, back.reason, back.context) == (exc.where, exc.reason, exc.context)


def test_check_failed_is_its_own_outcome():
    assert issubclass(CheckFailed, ReportedError) and not issubclass(CheckFailed, SimError)
    assert CheckFailed.exit_code == 1 and SimError.exit_code == 2


def _txn(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "nv_full" / "t"
    folder.mkdir(parents=True)
    (folder / "input.txn").write_text(text)
    return folder / "input.txn"


def test_check_failed_in_a_trace_op_keeps_its_class_and_the_ops_line(tmp_path):
    trace = _txn(tmp_path, "write_reg 0xffff1000 0x80000000\n# poll\n"
                           "read_reg 0xffff1000 0xffffffff 0x1\n")
    with pytest.raises(CheckFailed) as info:
        TracePlayer(trace, "nv_full").play()
    exc = info.value
    assert exc.where == f"{trace}:3" and exc.context == []
    assert exc.reason == "NVDLA_BDMA.CFG_SRC_ADDR_LOW_0 reads 0x80000000 (mask 0xffffffff), " \
                         "expected 0x1"
    assert str(exc) == f"{exc.where}: {exc.reason}"
    result = run_trace(trace.parent)
    assert result.status is TraceStatus.FAIL and result.message == str(exc)


def test_a_subclass_raised_in_a_trace_op_stays_that_subclass(tmp_path):
    trace = _txn(tmp_path, "load_mem 0x80000000 0x7000000000 src.dat\n")
    with pytest.raises(MemoryFault) as info:
        TracePlayer(trace, "nv_full").play()
    assert info.value.where == f"{trace}:1"
    assert info.value.reason.startswith("load_mem 0x80000000+0x7000000000 exceeds")
    assert str(info.value) == f"{trace}:1: {info.value.reason}"


def test_not_implemented_is_a_subclass_not_a_message_prefix(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "nv_small" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text("check_nothing(x);\n")

    def unmodelled(self, op):
        raise NotImplementedFeature("CACC", "48-bit accumulator saturation")

    monkeypatch.setattr(TracePlayer, "_op_check_nothing", unmodelled)
    result = run_trace(folder)
    assert result.status is TraceStatus.ERROR and result.not_implemented
    assert result.message == "not implemented: CACC 48-bit accumulator saturation"
    assert main(["run", str(folder)]) == 1  # a gap of the simulator, not invalid input (2)
    assert "ERROR nv_small/t" in capsys.readouterr().out


def test_gen_layer_errors_name_the_layer_and_key():
    layer = LayerSpec(0, "conv", "c", "int8", (8, 4, 4))
    with pytest.raises(SpecError) as info:
        layer.require(get_config("nv_small"), "winograd", "mode")
    assert info.value.where == "layer 0 (c).mode"
    assert str(info.value) == "layer 0 (c).mode: nv_small has no winograd"


# -- the verdict is an Enum whose values are the strings reports print ------------------------

def test_trace_status_values_and_json():
    assert [s.value for s in TraceStatus] == ["pass", "fail", "error"]
    result = TraceResult("t", "nv_small", "fail", "x")  # a string still builds one
    assert result.status is TraceStatus.FAIL and result.status == "fail"
    assert f"{result.status.upper():5}|{result.status}" == "FAIL |fail"
    doc = json.loads(json.dumps(result.as_json()))
    assert doc["status"] == "fail" and type(result.as_json()["status"]) is str
