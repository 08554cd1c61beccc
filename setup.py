"""Packaging: one top-level name, ``sim``.

The design card keeps the register table (``regs/``) and the example traces
(``traces/``) beside ``sim/``; installed, they are ``sim.regs`` and
``sim.traces``, so a wheel adds nothing but ``sim`` to site-packages (PyPI's
unrelated ``traces`` stays untouched).  Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["sim", "sim.*"]) + ["sim.regs", "sim.traces"],
    package_dir={"sim.regs": "regs", "sim.traces": "traces"},
)
