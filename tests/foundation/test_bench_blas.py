"""benchmarks/bench_networks.py names the OpenBLAS kernels its runs use: the ones an
OPENBLAS_CORETYPE forces, asked of a fresh process started with it."""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its ``timing`` helper
    spec = importlib.util.spec_from_file_location("bench_networks", ROOT / "benchmarks" /
                                                  "bench_networks.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.parametrize("core", ["Haswell", "Sandybridge"])
def test_a_forced_core_type_is_the_one_named(core, monkeypatch):
    bench = _bench(monkeypatch)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if bench.blas_core(env) == "unknown":
        pytest.skip("numpy's BLAS is not its bundled OpenBLAS")
    assert bench.blas_core({**env, "OPENBLAS_CORETYPE": core}) == core
