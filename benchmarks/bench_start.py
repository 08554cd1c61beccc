"""Process start and small layers: import time, a warm small trace, regress time per trace.

    python benchmarks/bench_start.py [--shared ../shared]

Goals (issue "Speed"): a warm ``nvdla-sim run`` of a small int8 trace <= 0.2 s
as a whole process; the mean time per trace inside ``regress`` over
``oracle-traces/nv_full`` <= 5 ms.  Import time is printed for reference.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_SMALL, GOAL_PER_TRACE = 0.2, 0.005


def whole_process(args) -> float:
    subprocess.run([sys.executable, "-m", "sim.cli", *args], check=True, capture_output=True)
    start = time.perf_counter()  # the second run: caches warm
    subprocess.run([sys.executable, "-m", "sim.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default=str(ROOT.parent / "shared"))
    args = p.parse_args()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sim.trace"], check=True)
    imports = time.perf_counter() - start
    bare = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - bare
    print(f"import sim.trace: {imports - bare:.3f} s (beyond the interpreter's {bare:.3f} s)")
    small = ROOT / "traces/nv_small/pdp_9x11x16_3x3s2_max_int8"
    seconds = whole_process(["run", str(small), "--config", "nv_small"])
    print(f"small int8 trace, warm, whole process: {seconds:.3f} s (goal {GOAL_SMALL} s: "
          f"{'met' if seconds <= GOAL_SMALL else 'missed'})")
    oracle = Path(args.shared) / "oracle-traces" / "nv_full"
    if oracle.is_dir():
        from sim.regress import discover
        from sim.trace import run_trace

        items = discover(oracle)
        for config, path in items:  # warm-up: numba kernels load once per process
            run_trace(path, config or "nv_full")
        start = time.perf_counter()
        for config, path in items:
            run_trace(path, config or "nv_full")
        per = (time.perf_counter() - start) / len(items)
        verdict = "met" if per <= GOAL_PER_TRACE else "missed"
        print(f"regress, oracle nv_full: {per * 1000:.1f} ms per trace over {len(items)} "
              f"(goal {GOAL_PER_TRACE * 1000:.0f} ms: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
