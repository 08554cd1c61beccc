"""Direct convolution speed against numpy's float64 matmul of the same im2col problem.

For a 28x28x64 input and 64 kernels of 3x3x64 (padding 1: 28x28x64 out; the
largest such square whose whole fp16 input fits nv_full's eight data banks),
int8 and fp16, times the simulator's convolution pipeline (CDMA fetch from
memory, CSC/CMAC/CACC) and numpy's float64 (64 x 576) @ (576 x 3136) matmul
of the same problem in the same run, and prints the ratio (goal for int8:
within 1.2x of the matmul) and, for fp16, the MACs per second and core (goal:
250 M; the fp16 MAC runs on every core).

    python benchmarks/bench_conv.py [--size 28] [--channels 64] [--kernels 64] [--repeat 3]
"""

import argparse

import numpy as np
from timing import best_of, verdict

from sim.conv.direct import compute_direct_layer as compute_layer
from sim.conv.layer import decode_layer
from sim.jit import cores
from sim.machine import LayerContext, Machine
from sim.program.conv import UNITS, program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=28)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--kernels", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, c, k = args.size, args.channels, args.kernels
    rng = np.random.default_rng(0)

    cols = rng.standard_normal((c * 9, n * n))
    wmat = rng.standard_normal((k, c * 9))
    t_numpy = best_of(lambda: wmat @ cols, args.repeat, warm_up=False)
    print(f"numpy float64 matmul ({k}x{c * 9}) @ ({c * 9}x{n * n}): {t_numpy * 1e3:8.2f} ms")

    for precision in ("int8", "fp16"):
        if precision == "int8":
            x = rng.integers(-128, 128, (c, n, n)).astype(np.int8)
            w = rng.integers(-128, 128, (k, c, 3, 3)).astype(np.int8)
        else:
            x = rng.standard_normal((c, n, n)).astype(np.float16).view(np.uint16)
            w = (rng.standard_normal((k, c, 3, 3)) * 0.1).astype(np.float16).view(np.uint16)
        m = Machine("nv_full")
        program(m, x, w, precision=precision, pad=(1, 1, 1, 1), truncate=8)
        ctx = LayerContext(m, {u: 0 for u in UNITS})
        layer = decode_layer(ctx)
        compute_layer(ctx, layer)  # compile / warm up
        t_sim = best_of(lambda ctx=ctx, layer=layer: compute_layer(ctx, layer), args.repeat,
                        warm_up=False)
        ratio = t_sim / t_numpy
        line = (f"simulator {precision:5} {n}x{n}x{c} -> 3x3x{c}x{k}: {t_sim * 1e3:9.2f} ms  "
                f"= {ratio:7.2f} x numpy float64 matmul")
        if precision == "int8":
            line += f" {verdict(ratio, 1.2, 'x')}"
        else:
            rate = n * n * k * c * 9 / t_sim / cores() / 1e6
            line += f", {rate:.0f} M MAC/s per core {verdict(rate, 250, 'M', at_least=True)}"
        print(line)


if __name__ == "__main__":
    main()
