"""Throughput of the sim.dma layouts on large cubes and weights.

Times pack/unpack of a feature cube (unpacked strides, through a flat
buffer and through the read_feature/write_feature memory helpers), a DC
weight set and an RGBA image.  Prints seconds per operation and MB/s.

    python benchmarks/bench_layout.py [--size 256] [--channels 64] [--repeat 3]
"""

import argparse

import numpy as np
from timing import best_of

from sim.configs import get_config
from sim.dma import pack_feature, read_feature, unpack_feature, write_feature
from sim.dma.pixel import pack_pixels, unpack_pixels
from sim.dma.weights import pack_weight_dc, unpack_weight_dc
from sim.dram import Memory


def timed(label: str, nbytes: int, repeat: int, fn) -> None:
    best = best_of(fn, repeat, warm_up=False)
    print(f"{label:32} {best * 1e3:9.2f} ms  {nbytes / best / 1e6:9.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="cube width and height")
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cfg = get_config("nv_full")
    rng = np.random.default_rng(0)
    n, c = args.size, args.channels
    for precision, dtype in (("int8", np.int8), ("fp16", np.uint16)):
        cube = rng.integers(0, 100, (c, n, n)).astype(dtype)
        ls = (n + 1) * cfg.atom_bytes
        data, layout = pack_feature(cube, cfg, line_stride=ls)
        timed(f"pack_feature {precision}", cube.nbytes, args.repeat,
              lambda cube=cube, ls=ls: pack_feature(cube, cfg, line_stride=ls))
        timed(f"unpack_feature {precision}", cube.nbytes, args.repeat,
              lambda data=data, layout=layout, cube=cube, p=precision:
              unpack_feature(data, 0, cube.shape, layout, cfg, precision=p))
        mem = Memory()
        timed(f"write_feature {precision}", cube.nbytes, args.repeat,
              lambda mem=mem, cube=cube, p=precision, layout=layout:
              write_feature(mem, 0x100000, cube, p, 32, layout.line_stride,
                            layout.surface_stride))
        timed(f"read_feature {precision}", cube.nbytes, args.repeat,
              lambda mem=mem, cube=cube, p=precision, layout=layout:
              read_feature(mem, 0x100000, cube.shape, p, 32, layout.line_stride,
                           layout.surface_stride))
    w = rng.integers(-100, 100, (256, 256, 3, 3)).astype(np.int8)
    stream = pack_weight_dc(w, "int8", cfg)
    timed("pack_weight_dc int8", w.nbytes, args.repeat, lambda: pack_weight_dc(w, "int8", cfg))
    timed("unpack_weight_dc int8", w.nbytes, args.repeat,
          lambda: unpack_weight_dc(stream, w.shape, "int8", cfg))
    img = rng.integers(0, 256, (4, n, n)).astype(np.uint8)
    planes, layout = pack_pixels(img, "T_A8B8G8R8")
    timed("pack_pixels T_A8B8G8R8", img.nbytes, args.repeat,
          lambda: pack_pixels(img, "T_A8B8G8R8"))
    timed("unpack_pixels T_A8B8G8R8", img.nbytes, args.repeat,
          lambda: unpack_pixels(planes, "T_A8B8G8R8", n, n, layout.line_strides))


if __name__ == "__main__":
    main()
