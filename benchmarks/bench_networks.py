"""Every compiled network in ../shared/networks, as a user runs it: wall time per network.

    python benchmarks/bench_networks.py [--shared ../shared] [--firmware KMD_DIR] [--repeat N]

Each network runs as ``nvdla-sim loadable`` in a fresh process (one untimed
run first builds the firmware and compiles the kernels, so the timed runs are
warm); printed beside its hardware layer count, the time per layer, and the
process's own start-up (``nvdla-sim --help``) measured in the same run as the
reference a layer's cost is read against.  NVIDIA's KMD firmware comes from
--firmware, else $NVDLA_KMD, else ~/nvdla-sw/kmd.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import add_inputs


def _run(cmd: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one run; (nan, its last error line) when it fails."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        return float("nan"), (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return wall, done.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_inputs(p)
    p.add_argument("--repeat", type=int, default=2, help="timed runs per network (best kept)")
    args = p.parse_args()
    networks = sorted(Path(args.shared, "networks").glob("*/*/*.nvdla"))
    if not networks or not Path(args.firmware, "firmware").is_dir():
        print("no networks or no NVIDIA firmware: nothing to measure")
        return 0
    cli = [sys.executable, "-m", "sim.cli"]
    start_up = min(_run([*cli, "--help"])[0] for _ in range(3))
    print(f"process start-up (nvdla-sim --help): {start_up:.2f} s")
    print(f"{'network':32} {'layers':>6} {'wall s':>8} {'ms/layer':>9} {'/ start-up':>11}")
    for loadable in networks:
        folder = loadable.parent
        config = folder.parent.name
        cmd = [*cli, "loadable", str(loadable), "--firmware", str(args.firmware), "--config",
               config]
        if (folder / "input.bin").is_file():
            cmd += ["--input", str(folder / "input.bin")]
        with tempfile.TemporaryDirectory() as tmp:
            runs = [_run([*cmd, "-o", f"{tmp}/out{i}"]) for i in range(args.repeat + 1)]
        wall, out = min(runs[1:])  # the first run builds, compiles and caches: untimed
        found = re.search(r"(\d+) hardware layers?\b", out)
        name = f"{config}/{folder.name}"
        if not found:
            print(f"{name:32} failed: {out}")
            continue
        layers = int(found.group(1))
        print(f"{name:32} {layers:6d} {wall:8.2f} {1000 * wall / layers:9.1f} "
              f"{wall / start_up:10.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
