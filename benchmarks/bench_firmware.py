"""What running the firmware in its own process costs: the share of a run spent in its calls.

    python benchmarks/bench_firmware.py [--shared ../shared] [--firmware KMD_DIR]

Runs NVIDIA's MNIST loadable (NN_L0_0) and every network of ../shared/networks
in this process (warm: one untimed run first) and prints, beside each run's
wall time, the time inside the firmware's calls less the simulator's own work
in answering them (what is left: the firmware's code and the pipe both ways,
the price of the separate process).  Goal: under 10% of
the run.  NVIDIA's KMD firmware comes from --firmware, else $NVDLA_KMD, else
~/nvdla-sw/kmd.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from timing import add_inputs

GOAL = 0.10


def main() -> int:
    from sim.runtime import read_loadable, run_loadable_bytes

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_inputs(p)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    shared, kmd = Path(args.shared), Path(args.firmware)
    cases = [("MNIST (NN_L0_0)", shared / "nvdla-sw/regression/flatbufs/kmd/NN/NN_L0_0_fbuf",
              "nv_full", None)]
    for loadable in sorted((shared / "networks").glob("*/*/*.nvdla")):
        folder = loadable.parent
        cases.append((f"{folder.parent.name}/{folder.name}", loadable, folder.parent.name,
                      folder / "input.bin"))
    if not (kmd / "firmware").is_dir():
        print(f"{kmd}: no NVIDIA firmware: nothing to measure")
        return 0
    print(f"{'run':28} {'wall s':>8} {'firmware s':>11} {'share':>7}  goal {GOAL:.0%}")
    for name, path, config, data in cases:
        if not path.is_file():
            continue
        loadable = read_loadable(path)
        inputs = {0: data.read_bytes()} if data is not None else {}
        run_loadable_bytes(loadable, kmd, config, inputs)  # builds, compiles, warms caches
        best = min((run_loadable_bytes(loadable, kmd, config, inputs)
                    for _ in range(args.repeat)), key=lambda r: r.seconds)
        share = best.firmware_seconds / best.seconds
        print(f"{name:28} {best.seconds:8.3f} {best.firmware_seconds:11.3f} {share:7.1%}  "
              f"{'meets' if share < GOAL else 'misses'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
