"""Direct convolution speed against numpy's float64 matmul of the same im2col problem.

For a 28x28x64 input and 64 kernels of 3x3x64 (padding 1: 28x28x64 out; the
largest such square whose whole fp16 input fits nv_full's eight data banks),
int8 and fp16, times the simulator's convolution pipeline (CDMA fetch from
memory, CSC/CMAC/CACC) and numpy's float64 (64 x 576) @ (576 x 3136) matmul
of the same problem in the same run, and prints the ratio (goal for int8:
within 1.2x of the matmul) and, for fp16, the MACs per second and core (goal:
1 G; the fp16 MAC runs on every core), and the fp16 MAC kernel alone on one
thread (``fp16_tile_dots``: one block of the layer's lanes and kernels against
a tile of 128 pixels, and of 64 as in a 7x7 layer), which a shared machine disturbs
less; and the processor time the fp16 layer took (all its threads): on a machine
whose cores also run other work, wall time per core understates the simulator,
processor time does not. The fp16 layer's preparation outside the kernel follows,
per weight on one thread (the weights' transpose, from an unpacked array and from their DC
stream as networks give it (unpacked in the same pass), their Booth rows, the data's
operands).
Then two AlexNet-class fully connected fp16 layers through the MAC stage
(``conv_fp16``: one output pixel, every weight used once), 6x6x256 -> 4096 and
1x1x4096 -> 4096, their weights as their DC stream (as networks run them), their MACs
per second and core beside the convolution's (goal: no slower per MAC), and per
processor second (to set beside the convolution's on a busy machine).

    python benchmarks/bench_conv.py [--size 28] [--channels 64] [--kernels 64] [--repeat 3]
                                    [--no-fc]
"""

import argparse
import time
from types import SimpleNamespace

import numpy as np
from timing import best_of, verdict

from sim.conv import mac_fp16
from sim.conv.direct import compute_direct_layer as compute_layer
from sim.conv.layer import decode_layer
from sim.conv.mac_fp16 import conv_fp16
from sim.dma.align import ceil_div
from sim.dma.weights import dc_stream, pack_weight_dc
from sim.jit import cores
from sim.machine import LayerContext, Machine
from sim.num import mac
from sim.num.mac import fp16_mac_operands, fp16_tile_dots, fp16_weight_rows, tile_scratch
from sim.program.conv import UNITS, program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=28)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--kernels", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-fc", action="store_true", help="skip the fully connected layers")
    args = parser.parse_args()
    n, c, k = args.size, args.channels, args.kernels
    rng = np.random.default_rng(0)

    cols = rng.standard_normal((c * 9, n * n))
    wmat = rng.standard_normal((k, c * 9))
    # a millisecond or two: best of many, or the machine's hiccups decide the ratio
    quick = max(args.repeat, QUICK_REPEAT)
    t_numpy = best_of(lambda: wmat @ cols, quick, warm_up=False)
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
        t_sim, t_cpu = wall_and_cpu(lambda ctx=ctx, layer=layer: compute_layer(ctx, layer),
                                    quick if precision == "int8" else args.repeat)
        ratio = t_sim / t_numpy
        line = (f"simulator {precision:5} {n}x{n}x{c} -> 3x3x{c}x{k}: {t_sim * 1e3:9.2f} ms  "
                f"= {ratio:7.2f} x numpy float64 matmul")
        if precision == "int8":
            line += f" {verdict(ratio, 1.2, 'x')}"
        else:
            conv_rate = n * n * k * c * 9 / t_sim / cores() / 1e6
            line += (f", {conv_rate:.0f} M MAC/s per core "
                     f"{verdict(conv_rate, 1000, 'M', at_least=True)}")
        print(line)
        if precision == "fp16":
            # a machine whose cores run other work gives the layer's threads less than
            # a core each: the processor time the layer took tells its own speed
            cpu_rate = n * n * k * c * 9 / t_cpu / 1e6
            print(f"  fp16 layer: {t_cpu * 1e3:.2f} ms of processor time on {cores()} threads "
                  f"({t_cpu / t_sim:.2f} cores busy of {cores()}) = {cpu_rate:.0f} M MAC "
                  f"per processor second")
        if precision == "fp16":
            kernel_rate(x, w, args.repeat)
            # a 7x7 layer's tile (49 pixels in two steps of 32): the work per lane group
            # and kernel that does not grow with the pixels weighs more there
            kernel_rate(x, w, args.repeat, pixels=64)
            prep_rate(rng, args.repeat)
    if not args.no_fc:
        for size, channels in ((6, 256), (1, 4096)):
            fc_rate(rng, size, channels, 4096, args.repeat, conv_rate)


#: Runs the quick measurements (the matmul, the int8 layer: a few milliseconds) take the
#: best of, at least.
QUICK_REPEAT = 30


def wall_and_cpu(fn, repeat):
    """The shortest wall time of ``repeat`` calls of ``fn()`` and the processor time
    (every thread of the process) of the shortest-taking call, in seconds."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - start, time.process_time() - cpu))
    return best


def on_cache_lines(array: np.ndarray, line: int = 64) -> np.ndarray:
    """A copy of ``array`` starting on a cache line: the kernel's 512-bit loads and stores
    from arrays that start elsewhere touch two lines, and numpy places arrays on 16 bytes,
    so its figure swung between about 0.7 and 1.2 G MAC/s from one process to the next."""
    buf = np.empty(array.nbytes + line, np.uint8)
    skip = -buf.ctypes.data % line
    copy = buf[skip:skip + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def kernel_rate(x, w, repeat, pixels=128):
    """The fp16 MAC kernel alone, one thread: the first ``pixels`` input pixels (all
    channels) against every kernel's weights at position (0, 0)."""
    c, k = x.shape[0], w.shape[0]
    d_sign, d_sig, d_exp = fp16_mac_operands(x.reshape(c, -1)[:, :pixels])
    w_rows, w_exp4 = fp16_weight_rows(np.ascontiguousarray(w[:, :, 0, 0].T))
    n = d_sig.shape[1]
    arrays = (d_sign, d_sig, 4 * d_exp, w_rows, w_exp4)
    sums = (np.zeros((k, n), np.int32), np.zeros((k, n), np.uint32), np.zeros((k, n), np.uint32))
    args = (*map(on_cache_lines, arrays), tuple(map(on_cache_lines, tile_scratch(n))),
            *map(on_cache_lines, sums), (0, k))
    fp16_tile_dots(*args)  # compile / warm up
    t = best_of(lambda: [fp16_tile_dots(*args) for _ in range(20)], repeat, warm_up=False) / 20
    rate = c * k * n / t / 1e6
    print(f"fp16 MAC kernel alone ({c} lanes x {k} kernels x {n} pixels, one thread): "
          f"{t * 1e6:8.1f} us = {rate:.0f} M MAC/s {verdict(rate, 1000, 'M', at_least=True)}")


def prep_rate(rng, repeat, kernels=512, channels=512):
    """The fp16 layer's preparation outside the MAC kernel, one thread, per weight (value)
    of a 3x3 x ``channels`` x ``kernels`` layer (ResNet-50's largest): the weights'
    transpose (kernels innermost), their Booth rows and exponents, the data's operands, each
    into arrays made ahead (the layer keeps its buffers between layers)."""
    w = (rng.standard_normal((kernels, channels, 9)) * 0.02).astype(np.float16).view(np.uint16)
    n = w.size
    dst = np.empty((9, channels, kernels), np.uint16)
    squares = ceil_div(kernels, mac_fp16.SQUARE)
    lane_bits, lane_nan = np.zeros((squares, channels), np.uint16), np.zeros(squares, np.bool_)
    flat = dst.reshape(-1)
    rows, exp4 = np.empty(2 * n, np.uint64), np.empty(n, np.int32)
    sign, sig = np.empty(n, np.uint32), np.empty(n, np.uint32)
    # the weights as networks give them: their DC stream (a read-only view of the memory)
    packed = pack_weight_dc(w.reshape(kernels, channels, 3, 3), "fp16", mac_atomic_c=64,
                            mac_atomic_k=32)
    packed.flags.writeable = False
    stream = dc_stream(packed, (kernels, channels, 3, 3), "fp16", mac_atomic_c=64,
                       mac_atomic_k=32)
    specials = np.zeros((squares, 2), np.int64)
    steps = {"transpose": lambda: mac_fp16._kernels_innermost(w, dst, lane_bits, lane_nan,
                                                                (0, squares)),
             "transpose of the DC stream": lambda: mac_fp16._stream_innermost(
                 stream.elements, stream.base, stream.stride, stream.atomic_c, stream.group,
                 dst, lane_bits, specials, (0, squares)),
             "Booth rows": lambda: mac._weight_rows(flat, rows, exp4),
             "data operands": lambda: mac._data_operands(flat, sign, sig, exp4)}
    times = []
    for name, step in steps.items():
        step()  # compile / warm up
        times.append(f"{name} {best_of(step, repeat, warm_up=False) / n * 1e9:.2f}")
    print(f"fp16 preparation ({n} weights, one thread), ns a weight: {', '.join(times)}")


def fc_rate(rng, size, channels, kernels, repeat, conv_rate):
    """A fully connected fp16 layer (a size x size x channels input, kernels of its whole
    size: one output pixel) through the MAC stage, MACs per second and core.  The weights
    go in as networks give them: their DC stream (nv_full's MAC atomic C and K), whose
    runs the layer reads in place (an unpacked (K, C, R, S) array takes another path)."""
    x = rng.standard_normal((1, channels, size, size)).astype(np.float16).view(np.uint16)
    w = (rng.standard_normal((kernels, channels, size, size)) * 0.02).astype(np.float16)
    w = w.view(np.uint16)
    packed = pack_weight_dc(w, "fp16", mac_atomic_c=64, mac_atomic_k=32)
    packed.flags.writeable = False  # as the memory's view is
    stream = dc_stream(packed, w.shape, "fp16", mac_atomic_c=64, mac_atomic_k=32)
    layer = SimpleNamespace(pad_value=0, out_height=1, out_width=1, stride_y=1, stride_x=1,
                            dilation_y=1, dilation_x=1, pad_top=0, pad_left=0, batches=1,
                            channels=channels)
    conv_fp16(x, stream, layer, 64)  # compile / warm up
    t, t_cpu = wall_and_cpu(lambda: conv_fp16(x, stream, layer, 64), repeat)
    rate = w.size / t / cores() / 1e6
    print(f"fully connected fp16 {size}x{size}x{channels} -> {kernels} (DC stream): "
          f"{t * 1e3:9.2f} ms, {rate:.0f} M MAC/s per core (convolution: {conv_rate:.0f}) "
          f"{verdict(rate, round(conv_rate), 'M', at_least=True)}, "
          f"{w.size / t_cpu / 1e6:.0f} M MAC per processor second")

if __name__ == "__main__":
    main()
