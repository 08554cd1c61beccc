"""benchmarks/bench_layers.py: which layers it calls fully connected, and its clock's MACs."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from .benchmark_module import load_benchmark

NETWORKS = Path(__file__).resolve().parents[2].parent / "shared" / "networks"


def _layer(out, kernel, inputs):
    return SimpleNamespace(out_width=out[0], out_height=out[1], kernel_width=kernel[0],
                           kernel_height=kernel[1], in_width=inputs[0], in_height=inputs[1])


# (decoded direct layer or None, fully connected?)
KIND_CASES = [
    (_layer((1, 1), (6, 6), (6, 6)), True),  # AlexNet's fc6: the kernel covers the input
    (_layer((1, 1), (1, 1), (1, 1)), True),  # fc7: a 1x1 input
    (_layer((1, 1), (3, 3), (5, 5)), False),  # one pixel out of a larger input (stride)
    (_layer((2, 1), (4, 4), (5, 4)), False),  # two pixels out
    (None, False),  # image input or Winograd: never fully connected
]


@pytest.mark.parametrize(("layer", "fully"), KIND_CASES)
def test_kind(monkeypatch, layer, fully):
    bench = load_benchmark("bench_layers", monkeypatch)
    assert (bench._kind(layer) == "fully connected") == fully


def test_totals_per_kind(monkeypatch):
    bench = load_benchmark("bench_layers", monkeypatch)
    layers = [("convolution", 10, 0.5), ("fully connected", 3, 0.25), ("convolution", 4, 1.0)]
    assert bench._totals(layers) == {"fully connected": (1, 3, 0.25),
                                     "convolution": (2, 14, 1.5)}


def test_clock_counts_the_runs_macs(monkeypatch, nvidia_kmd):
    """Over LeNet, the clock's layers add up to the run's own MAC count, and it finds the
    prototxt's inner product layers (and only those) fully connected."""
    folder = NETWORKS / "nv_full" / "lenet"
    if not (folder / "lenet.nvdla").is_file():
        pytest.skip(f"{folder} is absent: no compiled LeNet")
    from sim.runtime import read_loadable, run_loadable_bytes

    bench = load_benchmark("bench_layers", monkeypatch)
    clock = bench.LayerClock()
    result = run_loadable_bytes(read_loadable(folder / "lenet.nvdla"), nvidia_kmd, "nv_full",
                                {0: (folder / "input.bin").read_bytes()}, layers=clock)
    assert sum(macs for _, macs, _ in clock.layers) == result.macs > 0
    inner = len(re.findall(r'type:\s*"InnerProduct"', (folder / "lenet.prototxt").read_text()))
    assert [kind for kind, _, _ in clock.layers].count("fully connected") == inner > 0
    assert all(seconds > 0 for _, _, seconds in clock.layers)
