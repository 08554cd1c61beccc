"""The helpers the benchmark scripts share (run them as ``python benchmarks/X.py``)."""

import os
import time
from pathlib import Path

#: The environment of the processes a benchmark starts, as on a user's machine: Python may
#: cache its bytecode (a ``PYTHONDONTWRITEBYTECODE`` here would recompile every module of
#: every run, about 0.15 s of each process).
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def add_inputs(parser) -> None:
    """--shared (default ../shared) and --firmware (default $NVDLA_KMD, else ~/nvdla-sw/kmd:
    where NVIDIA's KMD firmware is unpacked, outside the project)."""
    parser.add_argument("--shared", type=Path,
                        default=Path(__file__).resolve().parents[1].parent / "shared")
    parser.add_argument("--firmware", type=Path, default=Path(
        os.environ.get("NVDLA_KMD") or Path.home() / "nvdla-sw" / "kmd"))


def network_arguments(description: str, repeat: int):
    """The arguments of a benchmark over the compiled networks of ``<shared>/networks``:
    add_inputs's, ``--repeat`` (timed runs, the best kept) and ``--only TEXT``."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    add_inputs(parser)
    parser.add_argument("--repeat", type=int, default=repeat,
                        help="timed runs of each kind per network (best kept)")
    parser.add_argument("--only", metavar="TEXT", default="",
                        help="only the networks whose config/name holds TEXT")
    return parser.parse_args()


def compiled_networks(args) -> list[Path]:
    """The loadables of ``<shared>/networks/<config>/<name>/`` that ``--only`` selects; none
    (and a line saying so) without them or without NVIDIA's firmware."""
    networks = [n for n in sorted(Path(args.shared, "networks").glob("*/*/*.nvdla"))
                if args.only in f"{n.parent.parent.name}/{n.parent.name}"]
    if not networks or not Path(args.firmware, "firmware").is_dir():
        print("no networks or no NVIDIA firmware: nothing to measure")
        return []
    return networks


def network_inputs(loadable: Path) -> dict[int, bytes]:
    """The input a compiled network runs on (its folder's ``input.bin`` as input 0, else
    none: zeros), as ``sim.runtime.run_loadable_bytes`` takes it."""
    given = loadable.parent / "input.bin"
    return {0: given.read_bytes()} if given.is_file() else {}


def verdict(value: float, goal: float, unit: str = "s", at_least: bool = False) -> str:
    """``(goal 5 s: met)`` or ``... missed``: lower is better unless ``at_least``."""
    met = value >= goal if at_least else value <= goal
    return f"(goal {'>= ' if at_least else ''}{goal:g} {unit}: {'met' if met else 'missed'})"


def best_of(fn, repeat: int = 3, warm_up: bool = True) -> float:
    """The shortest of ``repeat`` timed calls of ``fn()``, in seconds.

    ``warm_up`` calls ``fn`` once untimed first (numba compilation, caches).
    """
    if warm_up:
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


MATMUL_ROWS, MATMUL_DEPTH = 256, 1152  # a convolution-like product: kernels x C*R*S
MATMUL_COLUMNS = (512, 4096)  # columns timed: counts outside are scaled linearly


def matmul_seconds(macs: int, repeat: int = 5) -> float:
    """Seconds a float64 matrix product (numpy ``@``, the machine's BLAS) of ``macs``
    multiply-accumulates takes here: the limit a convolution's time is read against.

    The product is (256 x 1152) @ (1152 x n), a convolution's weights times its im2col
    columns, with n columns for ``macs``, kept within 512..4096 (150 M..1.2 G MACs,
    where BLAS runs at full speed and a timing is long enough to trust) and the time
    scaled linearly to ``macs``: a throughput, not the call overhead of a tiny
    product; best of ``repeat``.
    """
    import numpy as np

    per_column = MATMUL_ROWS * MATMUL_DEPTH
    columns = min(max(-(-int(macs) // per_column), MATMUL_COLUMNS[0]), MATMUL_COLUMNS[1])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((MATMUL_ROWS, MATMUL_DEPTH))
    b = rng.standard_normal((MATMUL_DEPTH, columns))
    seconds = best_of(lambda: a @ b, repeat)
    return seconds * macs / (per_column * columns)


def peak_rss_gib(rusage) -> float:
    """``ru_maxrss`` of a ``resource.struct_rusage`` in GiB (Linux counts KiB)."""
    return rusage.ru_maxrss / 2**20
