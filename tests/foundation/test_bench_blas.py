"""benchmarks/bench_networks.py names the OpenBLAS kernels its runs use: the ones an
OPENBLAS_CORETYPE forces, asked of a fresh process started with it."""

import os
import platform

import pytest

from .benchmark_module import load_benchmark


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="OpenBLAS's x86 core types: ignored on other processors")
@pytest.mark.parametrize("core", ["Haswell", "Sandybridge"])
def test_a_forced_core_type_is_the_one_named(core, monkeypatch):
    bench = load_benchmark("bench_networks", monkeypatch)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if bench.blas_core(env) == "unknown":
        pytest.skip("numpy's BLAS is not its bundled OpenBLAS")
    assert bench.blas_core({**env, "OPENBLAS_CORETYPE": core}) == core
