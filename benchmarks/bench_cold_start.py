"""Cold start: the bundled examples with an empty numba cache, as a new user first runs them.

    python benchmarks/bench_cold_start.py

Goals (issue "Speed"): every bundled trace cold <= 3 s as a whole process, and
``nvdla-sim run`` of all of them cold <= 5 s.  Each measurement uses a fresh
cache folder (NUMBA_CACHE_DIR), so nothing compiled earlier helps.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import verdict

GOAL_TRACE, GOAL_ALL = 3.0, 5.0
ROOT = Path(__file__).resolve().parents[1]


def cold(args) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sim.cli", "run", *args], env=env, check=True,
                       capture_output=True)
        return time.perf_counter() - start


def main() -> int:
    traces = sorted(p for p in (ROOT / "traces").glob("*/*") if p.is_dir())
    worst = 0.0
    for trace in traces:
        seconds = cold([str(trace), "--config", trace.parent.name])
        worst = max(worst, seconds)
        print(f"  {trace.parent.name}/{trace.name:40} {seconds:6.2f} s")
    total = cold([])
    print(f"slowest single trace cold: {worst:.2f} s {verdict(worst, GOAL_TRACE)}")
    print(f"all bundled examples cold: {total:.2f} s {verdict(total, GOAL_ALL)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
