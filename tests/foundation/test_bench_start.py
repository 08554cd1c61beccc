"""benchmarks/bench_start.py's breakdown of a trace's time: it times the functions the
player calls, and leaves them as it found them (the regress figure is timed after it)."""

import importlib
import sys
from pathlib import Path

from .benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "nv_small" / "conv_6x7x6_3x3x6x10_pad_int8"


def test_stage_times_times_the_players_calls_and_unwraps_them(monkeypatch):
    bench = load_benchmark("bench_start", monkeypatch)
    held = {(module, name): getattr(importlib.import_module(module), name)
            for _, module, name in bench.STAGES}
    seconds, stages = bench.stage_times(TRACE, "nv_small")
    assert seconds > 0 and stages["trace parsing (.cfg)"] > 0
    assert stages["memory files (record .dat)"] > 0 and "SDP" in stages
    for (module, name), func in held.items():
        assert getattr(sys.modules[module], name) is func, name
    from sim.trace import player

    assert player.parse_bare is held["sim.trace.cfg", "parse_bare"]
