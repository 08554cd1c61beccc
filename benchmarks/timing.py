"""The one timing helper the benchmark scripts share (run them as ``python benchmarks/X.py``)."""

import time


def verdict(value: float, goal: float, unit: str = "s") -> str:
    """``(goal 5 s: met)`` or ``... missed``: lower is better."""
    return f"(goal {goal:g} {unit}: {'met' if value <= goal else 'missed'})"


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
