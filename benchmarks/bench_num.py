"""Throughput of the sim.num primitives against numpy's own float arithmetic.

Each primitive runs over the same 10**7 random bit patterns as a numpy
reference operation on the float16/float32 view of those patterns (fp17 has no
numpy type: its operations are timed against float32).  Prints seconds and
the ratio ours/numpy; the goal is at most 10x for add/mul and conversions.

Both sides take the best of ``--repeat`` runs; on a shared machine the
ratios still move by a factor of about 2 from run to run.

    python benchmarks/bench_num.py [--n 10000000] [--repeat 5]
"""

import argparse
import time

import numpy as np

import sim.num

# primitive -> (input dtype of the bit patterns, numpy reference on float views)
_F16, _F32 = np.float16, np.float32
REFERENCES = {
    "fp16_add": (np.uint16, lambda a, b: a.view(_F16) + b.view(_F16)),
    "fp16_sub": (np.uint16, lambda a, b: a.view(_F16) - b.view(_F16)),
    "fp16_mul": (np.uint16, lambda a, b: a.view(_F16) * b.view(_F16)),
    "fp16_max": (np.uint16, lambda a, b: np.maximum(a.view(_F16), b.view(_F16))),
    "fp16_min": (np.uint16, lambda a, b: np.minimum(a.view(_F16), b.view(_F16))),
    "fp17_add": (np.uint32, lambda a, b: a.view(_F32) + b.view(_F32)),
    "fp17_sub": (np.uint32, lambda a, b: a.view(_F32) - b.view(_F32)),
    "fp17_mul": (np.uint32, lambda a, b: a.view(_F32) * b.view(_F32)),
    "fp17_max": (np.uint32, lambda a, b: np.maximum(a.view(_F32), b.view(_F32))),
    "fp17_min": (np.uint32, lambda a, b: np.minimum(a.view(_F32), b.view(_F32))),
    "fp32_add": (np.uint32, lambda a, b: a.view(_F32) + b.view(_F32)),
    "fp32_sub": (np.uint32, lambda a, b: a.view(_F32) - b.view(_F32)),
    "fp32_mul": (np.uint32, lambda a, b: a.view(_F32) * b.view(_F32)),
    "fp32_max": (np.uint32, lambda a, b: np.maximum(a.view(_F32), b.view(_F32))),
    "fp32_min": (np.uint32, lambda a, b: np.minimum(a.view(_F32), b.view(_F32))),
    "fp16_to_fp17": (np.uint16, lambda a: a.view(_F16).astype(_F32)),
    "fp16_to_fp32": (np.uint16, lambda a: a.view(_F16).astype(_F32)),
    "fp17_to_fp16": (np.uint32, lambda a: a.view(_F32).astype(_F16)),
    "fp17_to_fp32": (np.uint32, lambda a: a.view(_F32).astype(np.float64)),
    "fp32_to_fp16": (np.uint32, lambda a: a.view(_F32).astype(_F16)),
    "fp32_to_fp17": (np.uint32, lambda a: a.view(_F32).astype(_F16)),
    "uint16_to_fp17": (np.uint16, lambda a: a.astype(_F32) * _F32(1 / 65536)),
}


def best_time(fn, args, repeat: int) -> float:
    fn(*(a[:16] for a in args))  # compile / load the cached kernels first
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(2024)
    patterns = {
        np.uint16: [rng.integers(0, 1 << 16, args.n, dtype=np.uint16) for _ in range(2)],
        np.uint32: [rng.integers(0, 1 << 32, args.n, dtype=np.uint32) for _ in range(2)],
    }
    print(f"{'primitive':16} {'sim.num s':>10} {'numpy s':>10} {'ratio':>7}")
    for name, (dtype, reference) in REFERENCES.items():
        ours = getattr(sim.num, name)
        operands = patterns[dtype][: ours.__code__.co_argcount]
        with np.errstate(all="ignore"):
            t_numpy = best_time(reference, operands, args.repeat)
        t_ours = best_time(ours, operands, args.repeat)
        print(f"{name:16} {t_ours:10.4f} {t_numpy:10.4f} {t_ours / t_numpy:7.1f}")


if __name__ == "__main__":
    main()
