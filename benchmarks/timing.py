"""The helpers the benchmark scripts share (run them as ``python benchmarks/X.py``)."""

import os
import time
from pathlib import Path


def add_inputs(parser) -> None:
    """--shared (default ../shared) and --firmware (default $NVDLA_KMD, else ~/nvdla-sw/kmd:
    where NVIDIA's KMD firmware is unpacked, outside the project)."""
    parser.add_argument("--shared", type=Path,
                        default=Path(__file__).resolve().parents[1].parent / "shared")
    parser.add_argument("--firmware", type=Path, default=Path(
        os.environ.get("NVDLA_KMD") or Path.home() / "nvdla-sw" / "kmd"))


def verdict(value: float, goal: float, unit: str = "s", at_least: bool = False) -> str:
    """``(goal 5 s: met)`` or ``... missed``: lower is better unless ``at_least``."""
    met = value >= goal if at_least else value <= goal
    return f"(goal {'>= ' if at_least else ''}{goal:g} {unit}: {'met' if met else 'missed'})"


def best_of(fn, repeat: int = 3, warm_up: bool = True) -> float:
    """The shortest of ``repeat`` timed calls of ``fn()``, in seconds.

    ``warm_up`` calls ``fn`` once untimed first (numba compilation, caches).
    """
    if warm_up:
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
