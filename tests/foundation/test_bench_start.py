"""benchmarks/bench_start.py's breakdown of a trace's time: it times the functions the
player calls, and leaves them as it found them (the regress figure is timed after it)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "nv_small" / "conv_6x7x6_3x3x6x10_pad_int8"


def test_stage_times_times_the_players_calls_and_unwraps_them(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its ``timing`` helper
    spec = importlib.util.spec_from_file_location("bench_start", ROOT / "benchmarks" /
                                                  "bench_start.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    held = {(module, name): getattr(importlib.import_module(module), name)
            for _, module, name in bench.STAGES}
    seconds, stages = bench.stage_times(TRACE, "nv_small")
    assert seconds > 0 and stages["trace parsing (.cfg)"] > 0
    assert stages["memory files (record .dat)"] > 0 and "SDP" in stages
    for (module, name), func in held.items():
        assert getattr(sys.modules[module], name) is func, name
    from sim.trace import player

    assert player.parse_bare is held["sim.trace.cfg", "parse_bare"]
