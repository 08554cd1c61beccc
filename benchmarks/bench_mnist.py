"""MNIST (NVIDIA's NN_L0_0 loadable) end to end: whole process and per task.

    python benchmarks/bench_mnist.py [--shared ../shared] [--firmware KMD_DIR] [--repeat N]

NVIDIA's KMD firmware comes from --firmware, else $NVDLA_KMD, else ~/nvdla-sw/kmd.

Runs ``nvdla-sim loadable`` as a user would (a fresh process, warm caches:
one untimed run first builds the firmware and compiles the kernels), then
the same run 1 + N times in this process with the time of each task.  The
first in-process run loads what a process loads once (modules, kernels,
tables), so the warm runs show the DLA task's own cost: its time per hardware
layer is the fixed cost a layer carries (decode, dispatch, DMA set-up, the
firmware's round trips) plus the layer's arithmetic.  Goals: under 2 s wall for the
whole process on 2 cores; the DLA task, warm, under 30 ms.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import USER_ENV, add_inputs, verdict

GOAL_SECONDS = 2.0
GOAL_DLA_MS = 30.0  # the DLA task of a warm in-process run (LeNet: 6 hardware layers)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_inputs(p)
    p.add_argument("--repeat", type=int, default=3, help="warm in-process runs (default 3)")
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
        subprocess.run([*cmd, f"{tmp}/warm"], check=True, capture_output=True,
                       env=USER_ENV)  # builds, compiles
        start = time.perf_counter()
        subprocess.run([*cmd, f"{tmp}/timed"], check=True, capture_output=True, env=USER_ENV)
        whole = time.perf_counter() - start

    from sim.runtime import read_loadable, run_loadable_bytes

    data = read_loadable(loadable)
    # the first run loads what a process loads once; the others are warm
    runs = [run_loadable_bytes(data, kmd, "nv_full") for _ in range(1 + max(args.repeat, 1))]
    for i, result in enumerate(runs):
        print(f"in process, {'warm' if i else 'first'} run: {result.seconds:.3f} s "
              f"({result.tasks} tasks, {result.hw_layers} hardware layers)")
        for label, seconds in result.task_seconds:
            print(f"  {label:12} {seconds * 1000:8.1f} ms")
    warm = [1000 * sum(s for label, s in r.task_seconds if label.startswith("DLA"))
            for r in runs[1:]]
    layers = max(runs[1].hw_layers, 1)
    print(f"warm DLA task (second run in this process): {warm[0]:.1f} ms, "
          f"{warm[0] / layers:.1f} ms per hardware layer; best of {len(warm)} warm runs "
          f"{min(warm):.1f} ms, {min(warm) / layers:.1f} ms per layer "
          f"{verdict(min(warm), GOAL_DLA_MS, 'ms')}")
    print(f"whole process: {whole:.2f} s {verdict(whole, GOAL_SECONDS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
