"""Process start and small layers: import time, a warm small trace, regress time per trace.

    python benchmarks/bench_start.py [--shared ../shared]

Goals (issue "Speed"): a warm ``nvdla-sim run`` of a small int8 trace <= 0.2 s
and of a GoogLeNet-conv2-sized int16 3x3 layer (56x56x64 in, 192 kernels, from
``input.txn``) <= 0.25 s, each as a whole process; the mean time per trace
inside ``regress`` over ``oracle-traces/nv_full`` <= 5 ms.  Import time, and
where the GoogLeNet-sized layer's time goes inside the process (trace
parsing, memory files, convolution, SDP, write DMA), are printed for
reference.

Processes run as on a user's machine: Python may cache its bytecode (a
``PYTHONDONTWRITEBYTECODE`` in the environment is dropped), and "warm" means
the second run.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import verdict

ROOT = Path(__file__).resolve().parents[1]
GOAL_SMALL, GOAL_GOOGLENET, GOAL_PER_TRACE = 0.2, 0.25, 0.005
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The 56x56x64 int16 input does not fit nv_full's CBUF data banks, so (as a
# compiler splits it) the layer runs as two 28-row halves, two hardware layers.
GOOGLENET_HALF = """
[[layer]]
unit = "conv"
precision = "int16"
input = [64, 28, 56]
kernels = 192
kernel = [3, 3]
pad = 1
sdp = { bias = 5, relu = true, cvt = [0, 1, 8] }
"""
GOOGLENET_CONV2 = 'config = "nv_full"\nseed = 3\n' + GOOGLENET_HALF * 2


def run(args, **kw):
    return subprocess.run([sys.executable, *args], check=True, capture_output=True, env=ENV,
                          **kw)


def whole_process(args, repeat: int = 5) -> float:
    """Best of ``repeat`` warm runs (the first, untimed, warms the caches)."""
    run(["-m", "sim.cli", *args])
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run(["-m", "sim.cli", *args])
        best = min(best, time.perf_counter() - start)
    return best


STAGES = (  # (label, module, function) timed inside a run
    ("trace parsing", "sim.trace.txn", "parse_txn"),
    ("memory files (.dat)", "sim.memfiles", "read_hex_dat"),
    ("convolution (CDMA..CACC)", "sim.conv.modes", "compute_conv_layer"),
    ("SDP", "sim.sdp.engine", "process_sdp"),
    ("write DMA", "sim.dma.feature", "write_feature"),
)


def stage_times(trace: Path, config: str) -> tuple[float, dict]:
    """Run ``trace`` in this process (twice: warm) and time the STAGES of the second run.

    Each function is wrapped wherever a ``sim`` module holds it, so calls
    through imported names are timed too.
    """
    import importlib

    from sim.trace import run_trace

    spent = {}

    def timed(label, func):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
        return wrapper

    for label, module, name in STAGES:
        func = getattr(importlib.import_module(module), name)
        wrapper = timed(label, func)
        for mod in [m for n, m in sys.modules.items() if n.startswith("sim")]:
            for attr, value in list(vars(mod).items()):
                if value is func:
                    setattr(mod, attr, wrapper)
    run_trace(trace, config)
    spent.clear()
    start = time.perf_counter()
    run_trace(trace, config)
    return time.perf_counter() - start, dict(spent)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default=str(ROOT.parent / "shared"))
    args = p.parse_args()
    run(["-c", "import sim.trace"])
    start = time.perf_counter()
    run(["-c", "import sim.trace"])
    imports = time.perf_counter() - start
    bare = time.perf_counter()
    run(["-c", "pass"])
    bare = time.perf_counter() - bare
    print(f"import sim.trace: {imports - bare:.3f} s (beyond the interpreter's {bare:.3f} s)")
    small = ROOT / "traces/nv_small/pdp_9x11x16_3x3s2_max_int8"
    seconds = whole_process(["run", str(small), "--config", "nv_small"])
    print(f"small int8 trace, warm, whole process: {seconds:.3f} s {verdict(seconds, GOAL_SMALL)}")
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "googlenet_conv2.toml"
        spec.write_text(GOOGLENET_CONV2)
        trace = Path(tmp) / "googlenet_conv2"
        run(["-m", "sim.cli", "gen", str(spec), "-o", str(trace), "--format", "txn"])
        seconds = whole_process(["run", str(trace), "--config", "nv_full"])
        inside, stages = stage_times(trace, "nv_full")
    print(f"int16 3x3 conv 56x56x64 -> 192 from input.txn, warm, whole process: {seconds:.3f} s "
          f"{verdict(seconds, GOAL_GOOGLENET)}")
    print(f"  inside the process: {inside * 1e3:.0f} ms of simulation")
    for label, spent in stages.items():
        print(f"    {label:26} {spent * 1e3:6.1f} ms")
    print(f"    {'other':26} {(inside - sum(stages.values())) * 1e3:6.1f} ms")
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
        print(f"regress, oracle nv_full: {per * 1000:.1f} ms per trace over {len(items)} "
              f"{verdict(per * 1000, GOAL_PER_TRACE * 1000, 'ms')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
