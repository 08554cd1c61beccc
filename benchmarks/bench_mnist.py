"""MNIST (NVIDIA's NN_L0_0 loadable) end to end: whole process and per task.

    python benchmarks/bench_mnist.py [--shared ../shared] [--firmware KMD_DIR]

NVIDIA's KMD firmware comes from --firmware, else $NVDLA_KMD, else ~/nvdla-sw/kmd.

Runs ``nvdla-sim loadable`` as a user would (a fresh process, warm caches:
one untimed run first builds the firmware and compiles the kernels), then
the same run in this process with the time of each task.  Goal: under 2 s
wall for the whole process on 2 cores.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import add_inputs

GOAL_SECONDS = 2.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_inputs(p)
    args = p.parse_args()
    sw, kmd = Path(args.shared) / "nvdla-sw", Path(args.firmware)
    loadable = sw / "regression/flatbufs/kmd/NN/NN_L0_0_fbuf"
    for need in (loadable, kmd / "firmware"):
        if not need.exists():
            print(f"{need} is absent: nothing to measure")
            return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "sim.cli", "loadable", str(loadable), "--firmware",
               str(kmd), "-o"]  # a new output folder each run: loadable never overwrites one
        subprocess.run([*cmd, f"{tmp}/warm"], check=True, capture_output=True)  # builds, compiles
        start = time.perf_counter()
        subprocess.run([*cmd, f"{tmp}/timed"], check=True, capture_output=True)
        whole = time.perf_counter() - start

    from sim.runtime import read_loadable, run_loadable_bytes

    result = run_loadable_bytes(read_loadable(loadable), kmd, "nv_full")
    for label, seconds in result.task_seconds:
        print(f"  {label:12} {seconds * 1000:8.1f} ms")
    print(f"in process: {result.seconds:.2f} s ({result.tasks} tasks, {result.hw_layers} "
          f"hardware layers)")
    verdict = "meets" if whole <= GOAL_SECONDS else "misses"
    print(f"whole process: {whole:.2f} s ({verdict} the goal of {GOAL_SECONDS:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
