"""Every register or field name written as a literal in the code resolves in the table.

An AST scan of ``sim/``, ``tools/``, ``tests/`` and ``benchmarks/``: string literals
shaped like ``NVDLA_X.Y_0`` or ``NVDLA_X.Y_0.FIELD``, and ``set_reg(m, unit,
"D_..._0", field=...)`` / ``write_fields(m, "NVDLA_X.Y_0", field=...)`` calls (the unit
a literal or a module-level constant), must name a register (and field) of
``regs/nvdla.regmap``.  A typo in one fails here instead of at run time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from sim.regs.enums import TYPED_FIELDS, AluAlgo, Precision, RamType

from sim import regs

ROOT = Path(__file__).resolve().parents[2]
DIRS = ("sim", "tools", "tests", "benchmarks")
NAME = re.compile(r"NVDLA_[A-Z0-9_]+\.[A-Z][A-Z0-9_]*_\d+(\.[A-Z][A-Z0-9_]*)?")
THIS = Path(__file__).resolve()
#: Names tests use on purpose to check that an unknown register is refused.
DELIBERATELY_UNKNOWN = {"NVDLA_X.Y_0", "NVDLA_SDP.D_NOPE_0", "NVDLA_SDP.D_BOGUS_0",
                        "NVDLA_CDP.D_PERF_0"}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "NVDLA_..."`` (and tuple) assignments."""
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = []
            if isinstance(target, ast.Name):
                pairs = [(target, node.value)]
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts, strict=False))
            for t, v in pairs:
                if isinstance(t, ast.Name) and isinstance(v, ast.Constant) \
                        and isinstance(v.value, str) and v.value.startswith("NVDLA_"):
                    found[t.id] = v.value
    return found


def _resolve(regmap, name: str, fields=()) -> str | None:
    """None when ``name`` (and each of ``fields``) exists, else what is missing."""
    parts = name.split(".")
    try:
        reg = regmap.by_name(".".join(parts[:2]))
    except KeyError:
        return f"register {'.'.join(parts[:2])}"
    for f in [*parts[2:], *fields]:
        try:
            reg.field(f.upper())
        except KeyError:
            return f"field {reg.full_name}.{f.upper()}"
    return None


def referenced_names():
    """(file:line, register name, field names) of every literal reference."""
    for top in DIRS:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.resolve() == THIS:
                continue
            tree = ast.parse(path.read_text(), str(path))
            consts = _constants(tree)
            where = path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and NAME.fullmatch(node.value):
                    yield f"{where}:{node.lineno}", node.value, ()
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    fields = tuple(k.arg for k in node.keywords if k.arg)
                    args = node.args
                    if node.func.id == "set_reg" and len(args) >= 3 \
                            and isinstance(args[2], ast.Constant) \
                            and isinstance(args[2].value, str):
                        unit = args[1]
                        unit = unit.value if isinstance(unit, ast.Constant) else \
                            consts.get(unit.id) if isinstance(unit, ast.Name) else None
                        if isinstance(unit, str):
                            yield f"{where}:{node.lineno}", f"{unit}.{args[2].value}", fields
                    elif node.func.id == "write_fields" and len(args) >= 2 \
                            and isinstance(args[1], ast.Constant) \
                            and isinstance(args[1].value, str) and NAME.fullmatch(args[1].value):
                        yield f"{where}:{node.lineno}", args[1].value, fields


def test_scan_finds_references():
    """The scan is not vacuous: it sees literal names and set_reg calls with fields."""
    found = list(referenced_names())
    assert len(found) > 200
    assert any(fields for _, _, fields in found)


def test_every_literal_register_name_is_in_the_table():
    regmap = regs.load()
    missing = []
    for where, name, fields in referenced_names():
        problem = _resolve(regmap, name, fields)
        if problem and not (where.startswith("tests/") and name in DELIBERATELY_UNKNOWN):
            missing.append(f"{where}: {name} -> no {problem}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("name, fields, problem", [
    ("NVDLA_SDP.D_DATA_FORMAT_0", (), None),
    ("NVDLA_SDP.D_DATA_FORMAT_0.PROC_PRECISION", (), None),
    ("NVDLA_SDP.D_DATA_FORMAT_0", ("out_precision",), None),
    ("NVDLA_SDP.D_NO_SUCH_0", (), "register NVDLA_SDP.D_NO_SUCH_0"),
    ("NVDLA_SDP.D_DATA_FORMAT_0.NOPE", (), "field NVDLA_SDP.D_DATA_FORMAT_0.NOPE"),
    ("NVDLA_SDP.D_DATA_FORMAT_0", ("nope",), "field NVDLA_SDP.D_DATA_FORMAT_0.NOPE"),
])
def test_resolve_can_fail(name, fields, problem):
    assert _resolve(regs.load(), name, fields) == problem


def test_typed_fields_agree_with_the_table():
    """The enums' codes are the table's, on every field they type (RAM types: CV/MC = 0/1)."""
    checked = 0
    for reg in regs.load():
        for f in reg.fields:
            cls = TYPED_FIELDS.get(f.name)
            if cls is not None and f.enum:
                codes = {m.name: (m.code if cls is Precision else int(m)) for m in cls}
                assert f.enum.items() <= codes.items(), f"{reg.full_name}.{f.name}"
                assert len(f.enum) >= 3, f"{reg.full_name}.{f.name}"
                checked += 1
            if f.name.endswith("RAM_TYPE") and f.enum:
                assert sorted(f.enum.values()) == [int(RamType.CV), int(RamType.MC)]
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("p, code, size, name", [
    (Precision.INT8, 0, 1, "int8"), (Precision.INT16, 1, 2, "int16"),
    (Precision.FP16, 2, 2, "fp16")])
def test_precision(p, code, size, name):
    assert (p.code, p.bytes, p.dtype.itemsize, str(p), f"{p}") == (code, size, size, name, name)
    assert Precision(name) is p and Precision.from_code(code) is p and p == name
    assert Precision.from_code(3) is None
    assert AluAlgo.EQL == 3
