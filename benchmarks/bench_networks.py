"""Every compiled network in ../shared/networks, as a user runs it: time, MACs, MAC/s, peak RSS.

    python benchmarks/bench_networks.py [--shared ../shared] [--firmware KMD_DIR]
        [--repeat N] [--only TEXT]

Each network runs as ``nvdla-sim loadable`` in a fresh process (one untimed
run first builds the firmware and compiles the kernels, so the timed runs are
warm; the best of --repeat is kept).  Printed per network: its precision, hardware
layers, the whole process's wall time and per layer, the multiply-accumulates
the run counted (the summary line's MACs: each convolution's logical MACs,
sim.runtime.macs) and MACs per wall second, the run's own time inside the process
(the summary line's) and MACs per second of it, the process's peak RSS (its own
``ru_maxrss`` from ``os.wait4``, the firmware process it waits for included), and
the references measured in the same run: the process's own start-up
(``nvdla-sim --help``) and the time a float64 matrix product (numpy ``@``) of
the same MAC count takes on this machine.

Goals on 2 cores (issue "Speed"): fp16 networks of the ResNet-50 class (here:
>= 1 G MACs) at >= 1 G MAC/s; int8 networks near the float64-matmul limit of
the same MACs, which the issue states as ResNet-50 int8 in 0.4 s (read here as:
int8 networks of ResNet-50's size, >= INT8_CLASS_MACS, at its 3.9 G MACs in 0.4 s
or faster); peak RSS under 2 GiB.  The matmul's time and the whole process's
multiple of it are printed beside, for reference: here the start-up alone (some
0.08 s) takes longer than ResNet-50's matmul, and a small network's time is
mostly that start-up and the firmware's work layer by layer.  NVIDIA's KMD
firmware comes from --firmware, else $NVDLA_KMD, else ~/nvdla-sw/kmd.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import (
    USER_ENV,
    compiled_networks,
    matmul_seconds,
    network_arguments,
    peak_rss_gib,
    verdict,
)

GOAL_FP16_MACS_PER_S = 1e9
FP16_CLASS_MACS = 1e9  # an fp16 network this large is judged by the MAC/s goal
INT8_CLASS_MACS = 3.5e9  # an int8 network this large is judged by the ResNet-50 figure
GOAL_INT8_MACS_PER_S = 3.9e9 / 0.4  # ResNet-50 int8 (3.9 G MACs) in 0.4 s
GOAL_RSS_GIB = 2.0
HALF = 2  # the loadable's tensor data type of fp16 (int8 is 4)


def _run(cmd: list[str]) -> tuple[float, str, float]:
    """(wall seconds, stdout, peak RSS GiB) of one run; (nan, last error line, nan) if it
    fails."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=USER_ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            lines = err.read().strip().splitlines() or ["(no message)"]
            return float("nan"), lines[-1], float("nan")
        return wall, out.read(), peak_rss_gib(usage)


#: Asked of a fresh process (OpenBLAS picks its kernels as numpy loads): the kernel set of
#: numpy's bundled OpenBLAS, or "unknown" for another BLAS.
BLAS_CORE_SCRIPT = """
import ctypes, glob, os, numpy
libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs",
                              "*openblas*"))
names = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
         "openblas_get_corename")
for lib in map(ctypes.CDLL, libs):
    for name in names:
        get = getattr(lib, name, None)
        if get is not None:
            get.restype = ctypes.c_char_p
            print(get().decode())
            raise SystemExit
print("unknown")
"""


def blas_core(env: dict) -> str:
    """The OpenBLAS kernels a process started with ``env`` runs its matrix products on."""
    try:
        out = subprocess.run([sys.executable, "-c", BLAS_CORE_SCRIPT], env=env,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _blas_line() -> str:
    """Which BLAS kernels the runs use: an OPENBLAS_CORETYPE in the environment overrides
    OpenBLAS's own choice (on this project's AVX-512 machine, Haswell's kernels forced ran
    the products at 0.6x the speed of the SkylakeX ones OpenBLAS picks), so it names both."""
    used = blas_core(USER_ENV)
    forced = USER_ENV.get("OPENBLAS_CORETYPE")
    if not forced:
        return f"BLAS kernels: {used}"
    own = blas_core({k: v for k, v in USER_ENV.items() if k != "OPENBLAS_CORETYPE"})
    return f"BLAS kernels: {used} (OPENBLAS_CORETYPE={forced}; OpenBLAS's own choice: {own})"


def _precision(loadable: Path) -> str:
    from sim.runtime import read_loadable
    from sim.runtime.runner import input_tensor

    return "fp16" if input_tensor(read_loadable(loadable), 0).data_type == HALF else "int8"


def _goal(precision: str, macs: int, wall: float) -> str:
    if precision == "fp16":
        if macs < FP16_CLASS_MACS:
            return "(fp16 goal for >= 1 G MACs only)"
        return verdict(macs / wall / 1e9, GOAL_FP16_MACS_PER_S / 1e9, "G MAC/s", at_least=True)
    if macs < INT8_CLASS_MACS:
        return "(int8 goal for ResNet-50-sized networks only)"
    return verdict(macs / wall / 1e9, GOAL_INT8_MACS_PER_S / 1e9, "G MAC/s", at_least=True)


def main() -> int:
    args = network_arguments(__doc__.splitlines()[0], repeat=2)
    networks = compiled_networks(args)
    if not networks:
        return 0
    cli = [sys.executable, "-m", "sim.cli"]
    start_up = min(_run([*cli, "--help"])[0] for _ in range(3))
    print(f"process start-up (nvdla-sim --help): {start_up:.2f} s")
    print(_blas_line())
    print(f"{'network':28} {'prec':4} {'layers':>6} {'wall s':>7} {'run s':>6} {'ms/layer':>8} "
          f"{'MACs':>9} {'MAC/s':>8} {'run MAC/s':>9} {'matmul s':>9} {'x matmul':>9} "
          f"{'RSS GiB':>7}  goals")
    worst_rss = 0.0
    for loadable in networks:
        folder = loadable.parent
        config = folder.parent.name
        name = f"{config}/{folder.name}"
        cmd = [*cli, "loadable", str(loadable), "--firmware", str(args.firmware), "--config",
               config]
        if (folder / "input.bin").is_file():
            cmd += ["--input", str(folder / "input.bin")]
        with tempfile.TemporaryDirectory() as tmp:
            runs = [_run([*cmd, "-o", f"{tmp}/out{i}"]) for i in range(args.repeat + 1)]
        timed = runs[1:]  # the first run builds, compiles and caches: untimed
        wall, out, _ = min(timed, key=lambda run: run[0])
        rss = max(run[2] for run in timed)
        layers = re.search(r"(\d+) hardware layers?\b", out)
        macs = re.search(r"(\d+) MACs?\b", out)
        if not (layers and macs):
            print(f"{name:28} failed: {out.strip()}")
            continue
        layers, macs = int(layers.group(1)), int(macs.group(1))
        # the summary's own time: the run inside the process, start-up (Python, numpy,
        # numba and its kernel cache, the firmware's build check) left out
        run = re.search(r"\(([\d.]+)s\)\s*$", out.strip())
        run = float(run.group(1)) if run else float("nan")
        worst_rss = max(worst_rss, rss)
        precision = _precision(loadable)
        matmul = matmul_seconds(macs)
        print(f"{name:28} {precision:4} {layers:6d} {wall:7.2f} {run:6.2f} "
              f"{1000 * wall / layers:8.1f} {macs / 1e9:8.3f}G {macs / wall / 1e9:7.3f}G "
              f"{macs / run / 1e9:8.3f}G {matmul:9.4f} "
              f"{wall / matmul:8.0f}x {rss:7.2f}  {_goal(precision, macs, wall)} "
              f"{verdict(rss, GOAL_RSS_GIB, 'GiB')}", flush=True)
    print(f"peak RSS of any network: {worst_rss:.2f} GiB {verdict(worst_rss, GOAL_RSS_GIB, 'GiB')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
