"""CDP (LRN) speed against numpy computing the same window sums.

For a 56x56x192 int8 cube and a window of 5 channels, times the simulator's
whole CDP layer (CDP_RDMA read, input convertor, square sums, LE/LO lookup
with interpolation, product, output convertor, write) and, in the same run,
numpy computing the same int64 squared-window sums (pad, square, five
shifted adds).  Then the same cube in fp16 (the int8 values / 16) with an
AlexNet-like LUT (exponent LE table from 0, LO table overflowing), against
numpy's float32 window sums.  Prints elements per second and the ratios.

    python benchmarks/bench_cdp.py [--size 56] [--channels 192] [--window 5] [--repeat 3]
"""

import argparse

import numpy as np
from timing import best_of

from sim.dma import pack_feature
from sim.machine import Machine

SRC, DST = 0x80000000, 0x88000000


def numpy_sums(x: np.ndarray, window: int, dtype=np.int64) -> np.ndarray:
    """The squared-window sums over channels in ``dtype`` (int64: exact; float32: the fp16
    reference)."""
    half = window // 2
    a = np.pad(x.astype(dtype), ((half, half), (0, 0), (0, 0)))
    sq = a * a
    s = sq[: x.shape[0]].copy()
    for j in range(1, window):
        s += sq[j: j + x.shape[0]]
    return s


def fp16_bits(values) -> list:
    return [int(v) for v in np.asarray(values, np.float16).view(np.uint16)]


def program_lut(m: Machine, fp16: bool) -> None:
    cdp = "NVDLA_CDP."
    if fp16:  # AlexNet's shape: LE 1/(1+x)**0.75 by powers of two from 0, LO overflowing
        le = fp16_bits(1.0 / (1.0 + 2.0 ** np.arange(65)) ** 0.75)
        lo = fp16_bits(np.linspace(1.0, 0.5, 257))
    else:
        le = [4000 - 50 * i for i in range(65)]
        lo = [3000 - 10 * i for i in range(257)]
    for table, values in ((0, le), (1 << 16, lo)):
        m.write_reg(cdp + "S_LUT_ACCESS_CFG_0", (1 << 17) | table)
        for v in values:
            m.write_reg(cdp + "S_LUT_ACCESS_DATA_0", v)
    if fp16:
        one = int(np.float32(1.0).view(np.uint32))
        m.write_reg(cdp + "S_LUT_CFG_0", 0x0)  # LE in exponent mode
        m.write_reg(cdp + "S_LUT_INFO_0", 0x80 << 16)  # LO select -128
        m.write_reg(cdp + "S_LUT_LE_END_LOW_0", int(np.float32(2.0 ** 64).view(np.uint32)))
        m.write_reg(cdp + "S_LUT_LO_END_LOW_0", one)
    else:
        m.write_reg(cdp + "S_LUT_CFG_0", 0x1)
        m.write_reg(cdp + "S_LUT_INFO_0", (8 << 16) | (10 << 8))
        m.write_reg(cdp + "S_LUT_LE_END_LOW_0", 64 << 10)
        m.write_reg(cdp + "S_LUT_LO_END_LOW_0", 256 << 8)


def program_layer(m: Machine, layout, window: int, fp16: bool = False) -> None:
    c, h, w = layout.channels, layout.height, layout.width
    line, surface = layout.line_stride, layout.surface_stride
    cdp = "NVDLA_CDP."
    rdma = "NVDLA_CDP_RDMA."
    fmt = 2 if fp16 else 0
    program_lut(m, fp16)
    for name, value in (("D_DATA_CUBE_WIDTH_0", w - 1), ("D_DATA_CUBE_HEIGHT_0", h - 1),
                        ("D_DATA_CUBE_CHANNEL_0", c - 1), ("D_SRC_BASE_ADDR_LOW_0", SRC),
                        ("D_SRC_LINE_STRIDE_0", line), ("D_SRC_SURFACE_STRIDE_0", surface),
                        ("D_SRC_DMA_CFG_0", 1), ("D_DATA_FORMAT_0", fmt)):
        m.write_reg(rdma + name, value)
    for name, value in (("D_DST_BASE_ADDR_LOW_0", DST), ("D_DST_LINE_STRIDE_0", line),
                        ("D_DST_SURFACE_STRIDE_0", surface), ("D_DST_DMA_CFG_0", 1),
                        ("D_DATA_FORMAT_0", fmt), ("D_LRN_CFG_0", (window - 3) // 2),
                        ("D_DATOUT_SHIFTER_0", 12)):
        m.write_reg(cdp + name, value)


def run_once(m: Machine, layout, window, fp16: bool = False) -> None:
    for unit in ("NVDLA_CDP", "NVDLA_CDP_RDMA"):  # program the group that runs next
        consumer = (m.read_reg(f"{unit}.S_POINTER_0") >> 16) & 1
        m.write_reg(f"{unit}.S_POINTER_0", consumer)
    program_layer(m, layout, window, fp16)
    m.write_reg("NVDLA_CDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_CDP.D_OP_ENABLE_0", 1)
    if m.run() != 1:
        raise SystemExit("the CDP layer did not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=56)
    parser.add_argument("--channels", type=int, default=192)
    parser.add_argument("--window", type=int, default=5, choices=(3, 5, 7, 9))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, c, window = args.size, args.channels, args.window
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (c, n, n)).astype(np.int8)
    elements = x.size

    t_numpy = best_of(lambda: numpy_sums(x, window), args.repeat, warm_up=False)
    print(f"numpy window-{window} square sums {n}x{n}x{c}: {t_numpy * 1e3:8.2f} ms  "
          f"({elements / t_numpy / 1e6:7.1f} M elements/s)")

    m = Machine("nv_full")
    data, layout = pack_feature(x, m.config)
    m.load(SRC, data)
    run_once(m, layout, window)  # compile / warm up
    t_sim = best_of(lambda: run_once(m, layout, window), args.repeat, warm_up=False)
    print(f"simulator CDP LRN int8 window {window} {n}x{n}x{c}: {t_sim * 1e3:8.2f} ms  "
          f"({elements / t_sim / 1e6:7.1f} M elements/s) = {t_sim / t_numpy:6.2f} x numpy sums")

    h = (x.astype(np.float32) / 16).astype(np.float16)
    t_numpy16 = best_of(lambda: numpy_sums(h, window, np.float32), args.repeat, warm_up=False)
    print(f"numpy float32 window-{window} square sums {n}x{n}x{c}: {t_numpy16 * 1e3:8.2f} ms  "
          f"({elements / t_numpy16 / 1e6:7.1f} M elements/s)")
    data, layout = pack_feature(h, m.config)
    m.load(SRC, data)
    run_once(m, layout, window, fp16=True)
    t_sim16 = best_of(lambda: run_once(m, layout, window, fp16=True), args.repeat,
                      warm_up=False)
    print(f"simulator CDP LRN fp16 window {window} {n}x{n}x{c}: {t_sim16 * 1e3:8.2f} ms  "
          f"({elements / t_sim16 / 1e6:7.1f} M elements/s) = {t_sim16 / t_numpy16:6.2f} x "
          "numpy sums")


if __name__ == "__main__":
    main()
