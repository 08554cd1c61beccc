"""Image-input and Winograd layer speed against numpy's float64 matmul of the same problem.

Image: a 224x224 RGBA image (T_A8B8G8R8) processed as int8 and as fp16, 32
kernels of 3x3 (padding 1).  Winograd: a 56x56x64 int16 / fp16 cube, 64
kernels of 3x3 (padding 1+3).  Times the simulator's CDMA -> CACC pipeline
and, in the same run, numpy's float64 (K x C*R*S) @ (C*R*S x H'*W') matmul of
the same convolution, and prints the ratios; for fp16 also the layer's MACs
per second and core, counted as a direct convolution counts them (K*C*R*S
per output; goal: 250 M), and the multiplications the CMAC really does
(Winograd: 16 per 2x2 outputs and channel instead of 36).

    python benchmarks/bench_conv_modes.py [--repeat 3] [--size 224] [--wsize 56]
"""

import argparse

import numpy as np
from timing import best_of, verdict

from sim.conv.modes import compute_conv_layer
from sim.dma.weights import winograd_weights
from sim.jit import cores
from sim.machine import LayerContext, Machine
from sim.program.conv_modes import UNITS, program_image, program_winograd


def layer_runner(program_fn, *args, **kw):
    m = Machine("nv_full")
    program_fn(m, *args, **kw)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    return lambda: compute_conv_layer(ctx)


def matmul_time(repeat, k, crs, pixels):
    a = np.random.default_rng(1).standard_normal((k, crs))
    b = np.random.default_rng(2).standard_normal((crs, pixels))
    return best_of(lambda: a @ b, repeat, warm_up=False)


def mac_rate(macs: int, seconds: float, cmac: int | None = None) -> str:
    rate = macs / seconds / cores() / 1e6
    line = f", {rate:.0f} M MAC/s per core {verdict(rate, 250, 'M', at_least=True)}"
    if cmac:
        line += f", {cmac / seconds / cores() / 1e6:.0f} M CMAC multiplications/s per core"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--wsize", type=int, default=56)
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    n, k = args.size, 32
    image = rng.integers(0, 256, (4, n, n), dtype=np.uint8)
    for precision in ("int8", "fp16"):
        if precision == "int8":
            w = rng.integers(-9, 9, (k, 4, 3, 3)).astype(np.int8)
        else:
            w = (rng.standard_normal((k, 4, 3, 3)) * 0.1).astype(np.float16).view(np.uint16)
        run = layer_runner(program_image, image, w, fmt="T_A8B8G8R8", precision=precision,
                           cvt=(128, 1, 0), pad=(1, 1, 1, 1))
        run()
        t_sim = best_of(run, args.repeat, warm_up=False)
        t_np = matmul_time(args.repeat, k, 36, n * n)
        print(f"image {precision} {n}x{n}x4 -> {k}: sim {t_sim * 1e3:.1f} ms, "
              f"numpy {t_np * 1e3:.1f} ms, ratio {t_sim / t_np:.1f}x"
              + (mac_rate(n * n * k * 36, t_sim) if precision == "fp16" else ""))

    s, c, k = args.wsize, 64, 64
    for precision in ("int16", "fp16"):
        x = rng.integers(-50, 50, (c, s, s))
        w3 = rng.integers(-5, 5, (k, c, 3, 3))
        if precision == "fp16":
            x = x.astype(np.float16).view(np.uint16)
            w4 = winograd_weights(w3.astype(np.float16).view(np.uint16), precision)
        else:
            x = x.astype(np.int16)
            w4 = winograd_weights(w3.astype(np.int16), precision, scale=4)
        run = layer_runner(program_winograd, x, w4, precision=precision, pad=(1, 3, 1, 3),
                           out_size=(s, s), truncate=2 if precision == "int16" else 0)
        run()
        t_sim = best_of(run, args.repeat, warm_up=False)
        t_np = matmul_time(args.repeat, k, 9 * c, s * s)
        print(f"winograd {precision} {s}x{s}x{c} -> {k}: sim {t_sim * 1e3:.1f} ms, "
              f"numpy {t_np * 1e3:.1f} ms, ratio {t_sim / t_np:.1f}x"
              + (mac_rate(s * s * 9 * c * k, t_sim, s * s // 4 * 16 * c * k)
                 if precision == "fp16" else ""))


if __name__ == "__main__":
    main()
