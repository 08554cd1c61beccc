"""benchmarks/bench_networks.py's goal for each network: fp16 by MAC/s from 1 G MACs up,
int8 by the issue's ResNet-50 figure (3.9 G MACs in 0.4 s) for networks of that size."""

import pytest

from .benchmark_module import load_benchmark

# (precision, MACs, wall seconds, the verdict's text)
GOAL_CASES = [
    ("fp16", 3_900_000_000, 1.2, "(goal >= 1 G MAC/s: met)"),  # ResNet-50: 3.25 G MAC/s
    ("fp16", 1_170_000_000, 1.3, "(goal >= 1 G MAC/s: missed)"),  # 0.9 G MAC/s
    ("fp16", 3_157_000, 0.2, "(fp16 goal for >= 1 G MACs only)"),  # LeNet
    ("int8", 3_897_000_000, 0.31, "(goal >= 9.75 G MAC/s: met)"),  # ResNet-50 in 0.31 s
    ("int8", 3_897_000_000, 0.41, "(goal >= 9.75 G MAC/s: missed)"),  # past 0.4 s
    ("int8", 1_853_000_000, 0.2, "(int8 goal for ResNet-50-sized networks only)"),
]


@pytest.mark.parametrize(("precision", "macs", "wall", "text"), GOAL_CASES)
def test_goal(monkeypatch, precision, macs, wall, text):
    bench = load_benchmark("bench_networks", monkeypatch)
    assert bench._goal(precision, macs, wall) == text
