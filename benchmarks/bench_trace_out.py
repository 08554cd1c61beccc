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
the trace's size on disk of each way, and their ratios to the plain run; then ``cpu``, the
same ratios of CPU seconds (user and system, of every thread of this process and of the
firmware's process), which a machine busy with other work disturbs far less than the
seconds that pass.  Goal (issue "Speed"): recording adds at most the run's own time
again, a ratio of at most 2.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

from timing import compiled_networks, network_arguments, network_inputs, verdict

# numpy's BLAS with one thread, as ``nvdla-sim`` runs it (sim.cli.main, before numpy
# loads; a user's own setting wins): with a thread per core its threads spun on the core
# the recorder's render thread needed, and the runs measured were not the CLI's
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

GOAL_RATIO = 2.0
FORMS = ("dat", "bin")  # --trace-memory


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _clocks() -> tuple[float, float]:
    """(seconds passed, CPU seconds of this process and its finished children)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return time.perf_counter(), own.ru_utime + own.ru_stime + children.ru_utime + \
        children.ru_stime


def _timed(run, *args, **kwargs) -> tuple[float, float]:
    """(seconds, CPU seconds) of ``run(*args, **kwargs)``."""
    wall, cpu = _clocks()
    run(*args, **kwargs)
    end_wall, end_cpu = _clocks()
    return end_wall - wall, end_cpu - cpu


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
        loadable, inputs = read_loadable(path), network_inputs(path)
        run_loadable_bytes(loadable, args.firmware, config, inputs)  # loads what loads once
        plain, plain_cpu = [], []
        traced = {form: [] for form in FORMS}
        traced_cpu = {form: [] for form in FORMS}
        size = dict.fromkeys(FORMS, 0)
        for _ in range(args.repeat):
            wall, cpu = _timed(run_loadable_bytes, loadable, args.firmware, config, inputs)
            plain.append(wall)
            plain_cpu.append(cpu)
            for form in FORMS:
                with tempfile.TemporaryDirectory() as tmp:
                    wall, cpu = _timed(run_loadable_bytes, loadable, args.firmware, config,
                                       inputs, recorder_path=Path(tmp) / "trace.cfg",
                                       trace_memory=form)
                    traced[form].append(wall)
                    traced_cpu[form].append(cpu)
                    size[form] = _folder_bytes(Path(tmp))
        line = f"{config + '/' + path.parent.name:28} {min(plain):8.2f}"
        for form in FORMS:
            ratio = min(traced[form]) / min(plain)
            line += (f" {min(traced[form]):7.2f} {size[form] / 1e6:6.1f} {ratio:6.2f}  "
                     f"{verdict(ratio, GOAL_RATIO, 'x'):22}")
        print(line.rstrip(), flush=True)
        line = f"{'  cpu':28} {min(plain_cpu):8.2f}"
        for form in FORMS:
            ratio = min(traced_cpu[form]) / min(plain_cpu)
            line += f" {min(traced_cpu[form]):7.2f} {'':6} {ratio:6.2f}  {'':22}"
        print(line.rstrip(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
