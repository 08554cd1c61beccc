"""What ``--trace-out`` costs: each compiled network run with and without recording its trace.

    python benchmarks/bench_trace_out.py [--shared ../shared] [--firmware KMD_DIR]
        [--repeat N] [--only TEXT]

Each network in ``<shared>/networks`` (NVIDIA's KMD firmware from --firmware, else
$NVDLA_KMD, else ~/nvdla-sw/kmd) runs in this process: once untimed (modules,
kernels and the firmware's build load once per process), then ``--repeat`` times
plain and ``--repeat`` times recording its ``.cfg`` trace and memory files into a
fresh temporary folder (what ``nvdla-sim loadable --trace-out`` writes), alternating.
Printed per network: the best plain run, the best recording run, the trace's size
on disk, and their ratio.  Goal (issue "Speed"): recording adds at most the run's
own time again, a ratio of at most 2.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from timing import compiled_networks, network_arguments, verdict

GOAL_RATIO = 2.0


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> int:
    args = network_arguments(__doc__.splitlines()[0], repeat=3)
    networks = compiled_networks(args)
    if not networks:
        return 0
    from sim.runtime import read_loadable, run_loadable_bytes

    print(f"{'network':28} {'plain s':>8} {'traced s':>9} {'trace MB':>9} {'ratio':>6}  goal")
    for path in networks:
        config = path.parent.parent.name
        loadable = read_loadable(path)
        inputs = {}
        if (path.parent / "input.bin").is_file():
            inputs = {0: (path.parent / "input.bin").read_bytes()}
        run_loadable_bytes(loadable, args.firmware, config, inputs)  # loads what loads once
        plain, traced, size = [], [], 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_loadable_bytes(loadable, args.firmware, config, inputs)
            plain.append(time.perf_counter() - start)
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                run_loadable_bytes(loadable, args.firmware, config, inputs,
                                   recorder_path=Path(tmp) / "trace.cfg")
                traced.append(time.perf_counter() - start)
                size = _folder_bytes(Path(tmp))
        ratio = min(traced) / min(plain)
        print(f"{config + '/' + path.parent.name:28} {min(plain):8.2f} {min(traced):9.2f} "
              f"{size / 1e6:9.1f} {ratio:6.2f}  {verdict(ratio, GOAL_RATIO, 'x')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
