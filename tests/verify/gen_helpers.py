"""Helpers shared by the ``nvdla-sim gen`` key tests: spec files, the register fields a
trace writes (decoded through the register map) and gen's one-line refusals."""

from __future__ import annotations

import pytest

from sim import regs
from sim.cli import main
from sim.errors import SimError
from sim.gen import generate
from sim.trace.cfg import parse_cfg

REGS = regs.load()


def write_spec(tmp_path, body: str, config: str = "nv_full", seed: int = 5,
               name: str = "spec", head: str = ""):
    """A one-layer spec file: ``head`` then ``body`` under its [[layer]]."""
    path = tmp_path / f"{name}.toml"
    path.write_text(f'config = "{config}"\nseed = {seed}\n[[layer]]\n{head}{body}\n')
    return path


def written(folder, unit: str):
    """(the fields of the last write of each register of ``unit``, the LUT table writes
    by table id) of the trace in ``folder``."""
    fields: dict[str, int] = {}
    tables: dict[int, list[int]] = {0: [], 1: []}
    table = None
    for op in parse_cfg(next(folder.glob("*.cfg"))):
        if op.cmd != "reg_write" or not op.args[0].startswith(unit + "."):
            continue
        reg = REGS.by_name(op.args[0])
        decoded = {f.name.lower(): (op.args[1] >> f.lsb) & ((1 << (f.msb - f.lsb + 1)) - 1)
                   for f in reg.fields}
        if reg.name == "S_LUT_ACCESS_CFG_0":
            table = decoded["lut_table_id"]
            tables[table] = []
        elif reg.name == "S_LUT_ACCESS_DATA_0":
            tables[table].append(decoded["lut_data"])
        fields.update(decoded)
    return fields, tables


def assert_refused(tmp_path, capsys, spec, message: str) -> None:
    """gen refuses ``spec`` with ``message`` (a regex): a SpecError, and on the command line
    exit 2 with one line, no traceback."""
    with pytest.raises(SimError, match=message):
        generate(spec, tmp_path / "out")
    assert main(["gen", str(spec), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
