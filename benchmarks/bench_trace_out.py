"""What ``--trace-out`` costs: each compiled network run with and without recording its trace.

    python benchmarks/bench_trace_out.py [--shared ../shared] [--firmware KMD_DIR]
        [--repeat N] [--only TEXT]

Each network in ``<shared>/networks`` (NVIDIA's KMD firmware from --firmware, else
$NVDLA_KMD, else ~/nvdla-sw/kmd) runs in this process: once untimed (modules,
kernels and the firmware's build load once per process), then ``--repeat`` times
plain and ``--repeat`` times recording its ``.cfg`` trace and memory files into a
fresh temporary folder (what ``nvdla-sim loadable --trace-out`` writes), alternating,
both ways of writing its memories: record ``.dat`` text (the default, which NVIDIA's
C-model and RTL benches read) and raw ``.bin`` files (``--trace-memory bin``, read by
``nvdla-sim`` only).  Printed per network: the best plain run, the best recording run and
the trace's size on disk of each way, and their ratios to the plain run.  Goal (issue
"Speed"): recording adds at most the run's own time again, a ratio of at most 2.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from timing import compiled_networks, network_arguments, verdict

GOAL_RATIO = 2.0
FORMS = ("dat", "bin")  # --trace-memory


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> int:
    args = network_arguments(__doc__.splitlines()[0], repeat=3)
    networks = compiled_networks(args)
    if not networks:
        return 0
    from sim.runtime import read_loadable, run_loadable_bytes

    print(f"{'network':28} {'plain s':>8} {'.dat s':>7} {'MB':>6} {'ratio':>6}  {'goal':22}"
          f" {'.bin s':>7} {'MB':>6} {'ratio':>6}  goal")
    for path in networks:
        config = path.parent.parent.name
        loadable = read_loadable(path)
        inputs = {}
        if (path.parent / "input.bin").is_file():
            inputs = {0: (path.parent / "input.bin").read_bytes()}
        run_loadable_bytes(loadable, args.firmware, config, inputs)  # loads what loads once
        plain = []
        traced = {form: [] for form in FORMS}
        size = dict.fromkeys(FORMS, 0)
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_loadable_bytes(loadable, args.firmware, config, inputs)
            plain.append(time.perf_counter() - start)
            for form in FORMS:
                with tempfile.TemporaryDirectory() as tmp:
                    start = time.perf_counter()
                    run_loadable_bytes(loadable, args.firmware, config, inputs,
                                       recorder_path=Path(tmp) / "trace.cfg", trace_memory=form)
                    traced[form].append(time.perf_counter() - start)
                    size[form] = _folder_bytes(Path(tmp))
        line = f"{config + '/' + path.parent.name:28} {min(plain):8.2f}"
        for form in FORMS:
            ratio = min(traced[form]) / min(plain)
            line += (f" {min(traced[form]):7.2f} {size[form] / 1e6:6.1f} {ratio:6.2f}  "
                     f"{verdict(ratio, GOAL_RATIO, 'x'):22}")
        print(line.rstrip(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
