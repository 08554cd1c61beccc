"""A script of benchmarks/ loaded as a module, for tests of its helpers."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str, monkeypatch):
    """benchmarks/<name>.py as a module, its folder on sys.path (its ``timing`` helper) for
    the test's duration."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench
