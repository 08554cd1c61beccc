"""The wheel adds one top-level name to site-packages, ``sim``, with its data inside."""

import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_packages_have_one_top_level_name_and_their_data(monkeypatch):
    """What setup.py hands setuptools (caught at ``setup``: no setuptools internals, which
    change between its releases) and pyproject.toml's package data."""
    setuptools = pytest.importorskip("setuptools")
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    given = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: given.update(kwargs))
    monkeypatch.chdir(REPO)  # find_packages looks in the working folder
    runpy.run_path(str(REPO / "setup.py"))
    packages, package_dir = given["packages"], given["package_dir"]
    assert {p.split(".")[0] for p in packages} == {"sim"}
    assert {"sim.regs", "sim.traces", "sim.firmware"} <= set(packages)
    for package in packages:  # every package's folder exists where the mapping says
        mapped = package_dir.get(package, package.replace(".", "/"))
        assert (REPO / mapped / "__init__.py").is_file(), package
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    assert "*.regmap" in data["sim.regs"] and (REPO / "regs" / "nvdla.regmap").is_file()
    assert data["sim.traces"] == ["*/*/*"]
