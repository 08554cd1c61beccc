"""The wheel adds one top-level name to site-packages, ``sim``, with its data inside."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_packages_have_one_top_level_name_and_their_data():
    core = pytest.importorskip("setuptools._distutils.core")
    cwd = os.getcwd()
    os.chdir(REPO)  # setuptools reads pyproject.toml from the working folder
    try:
        dist = core.run_setup(str(REPO / "setup.py"), stop_after="config")
    finally:
        os.chdir(cwd)
    assert {p.split(".")[0] for p in dist.packages} == {"sim"}
    assert {"sim.regs", "sim.traces", "sim.firmware"} <= set(dist.packages)
    for package in dist.packages:  # every package's folder exists where the mapping says
        mapped = dist.package_dir.get(package, package.replace(".", "/"))
        assert (REPO / mapped / "__init__.py").is_file(), package
    data = dist.package_data
    assert "*.regmap" in data["sim.regs"] and (REPO / "regs" / "nvdla.regmap").is_file()
    assert data["sim.traces"] == ["*/*/*"]
