"""benchmarks/bench_layers.py: which layers it calls fully connected, and its clock's MACs."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
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
    assert bench._totals(layers, [7, 2, 1]) == {"fully connected": (1, 3, 2, 0.25),
                                                "convolution": (2, 14, 8, 1.5)}
    with pytest.raises(ValueError, match="2 layers counted, 3 timed"):
        bench._totals(layers, [7, 2])


@pytest.mark.parametrize(("ratio", "fc_macs", "text"), [
    (1.16, 58_700_000, "(goal >= 1 x: met)"),  # AlexNet's three layers
    (0.95, 58_700_000, "(goal >= 1 x: missed)"),
    (0.75, 2_048_000, "(goal for AlexNet-class layers, >= 10 M MACs, only)"),  # a head
])
def test_goal_judges_alexnet_class_layers(monkeypatch, ratio, fc_macs, text):
    bench = load_benchmark("bench_layers", monkeypatch)
    assert bench._goal(ratio, fc_macs) == text


def _geometry(out, stride=(1, 1), dilation=(1, 1), pad=(0, 0)):
    """A layer's geometry but its kernel's size (the case's weights give it)."""
    return dict(out_height=out[0], out_width=out[1], stride_y=stride[0], stride_x=stride[1],
                dilation_y=dilation[0], dilation_x=dilation[1], pad_top=pad[0], pad_left=pad[1])


def _products_by_hand(data, weights, pad, layer):
    """Every (pixel, kernel, tap) product, one at a time: both operands non-zero?"""
    n, _, h, w = data.shape
    count = 0
    for b in range(n):
        for oy in range(layer.out_height):
            for ox in range(layer.out_width):
                for k, c, r, s in np.ndindex(weights.shape):
                    iy = oy * layer.stride_y + r * layer.dilation_y - layer.pad_top
                    ix = ox * layer.stride_x + s * layer.dilation_x - layer.pad_left
                    x = data[b, c, iy, ix] if 0 <= iy < h and 0 <= ix < w else pad
                    count += bool(x) and bool(weights[k, c, r, s])
    return count


# (data N, C, H, W; weights K, R, S; layer geometry; pad element non-zero)
PRODUCT_CASES = [
    ((1, 8, 1, 1), (5, 1, 1), _geometry((1, 1)), False),  # a 1x1 fully connected layer
    ((1, 3, 4, 4), (4, 4, 4), _geometry((1, 1)), False),  # the kernel covers the input
    ((1, 4, 5, 6), (3, 3, 3), _geometry((5, 6), pad=(1, 1)), False),  # padded, zero pad
    ((1, 4, 5, 6), (3, 3, 3), _geometry((5, 6), pad=(1, 1)), True),  # a non-zero pad element
    ((2, 3, 9, 7), (2, 3, 2), _geometry((4, 3), stride=(2, 3)), False),  # batches, strides
    ((1, 2, 9, 9), (3, 3, 3), _geometry((5, 6), dilation=(2, 1), pad=(0, 2)), True),
    ((1, 5, 6, 6), (4, 2, 2), _geometry((4, 4), stride=(2, 2), pad=(1, 1)), True),  # bottom pad
]


@pytest.mark.parametrize(("data_shape", "kernel_shape", "geometry", "pad"), PRODUCT_CASES)
def test_nonzero_products_against_each_product(monkeypatch, data_shape, kernel_shape,
                                               geometry, pad):
    bench = load_benchmark("bench_layers", monkeypatch)
    rng = np.random.default_rng(7)
    data = rng.random(data_shape) < 0.6
    k, r, s = kernel_shape
    layer = SimpleNamespace(kernel_height=r, kernel_width=s, **geometry)
    weights = rng.random((k, data_shape[1], r, s)) < 0.5
    expected = _products_by_hand(data, weights, pad, layer)
    assert 0 < expected < data.size * weights.size
    assert bench.nonzero_products(data, weights, pad, layer) == expected


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


def test_counter_counts_lenets_nonzero_products(monkeypatch, nvidia_kmd):
    """Over LeNet, each convolution layer's non-zero products: at most its logical MACs, and
    fewer where its data hold zeros (ReLU before the inner products)."""
    folder = NETWORKS / "nv_full" / "lenet"
    if not (folder / "lenet.nvdla").is_file():
        pytest.skip(f"{folder} is absent: no compiled LeNet")
    from sim.runtime import read_loadable, run_loadable_bytes

    bench = load_benchmark("bench_layers", monkeypatch)
    loadable = read_loadable(folder / "lenet.nvdla")
    inputs = {0: (folder / "input.bin").read_bytes()}
    counter, clock = bench.ProductCounter(), bench.LayerClock()
    run_loadable_bytes(loadable, nvidia_kmd, "nv_full", inputs, layers=counter)
    run_loadable_bytes(loadable, nvidia_kmd, "nv_full", inputs, layers=clock)
    pairs = list(zip(counter.products, (macs for _, macs, _ in clock.layers), strict=True))
    assert all(0 < products <= macs for products, macs in pairs)
    assert any(products < macs for products, macs in pairs)
