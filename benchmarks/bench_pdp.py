"""PDP pooling throughput against numpy doing the same reduction, in the same run.

Cases (112 x 112 x 64 input):
* int8 3x3 max pooling, stride 2, padding 1 at the top and left (the windows end on
  the last input line, so the hardware is given no padding at the bottom and right);
* fp16 7x7 average pooling, stride 1, no padding (bit-exact fp17 datapath
  vs numpy's float32 mean, which is not bit-exact and only sets the pace).

Prints input elements per second for the simulator's datapath
(``sim.pdp.pooling.pool_split``), for a whole memory-to-memory layer through
a ``Machine`` (PDP_RDMA read, pooling, write DMA) and for numpy, and the
ratio numpy / simulator.  Run: ``python benchmarks/bench_pdp.py``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from timing import best_of

from sim.dma import pack_feature
from sim.machine import Machine
from sim.pdp.pooling import AVERAGE, FP16, INT8, MAX, PoolConfig, pool_split, window_span

C, H, W = 64, 112, 112


def out_size(n, k, s, pad):
    return (n + 2 * pad - k) // s + 1


def far_pad(n, out, k, s, pad):
    """The padding the last window reaches past the input (the PDP's windows must end on
    the last padded line: sim.pdp.pooling.check_tiling)."""
    return max(0, window_span(out, k, s) - (n + pad))


def numpy_max(x, k, s, pad):
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad)), constant_values=-128)
    win = sliding_window_view(padded, (k, k), axis=(1, 2))[:, ::s, ::s]
    return win.max(axis=(3, 4))


def numpy_avg(x, k, s):
    win = sliding_window_view(x.astype(np.float32), (k, k), axis=(1, 2))[:, ::s, ::s]
    return win.mean(axis=(3, 4)).astype(np.float16)


def datapath(x, cfg, pad):
    hout = out_size(H, cfg.kernel_height, cfg.stride_height, pad)
    wout = out_size(W, cfg.kernel_width, cfg.stride_width, pad)
    out = np.zeros((x.shape[0], hout, wout), dtype=np.int64)
    pool_split(x, out, 0, wout, cfg, pad)
    return out


def layer(prec, data, cfg, pad):
    """A whole PDP layer on nv_full; returns a function running it once."""
    hout = out_size(H, cfg.kernel_height, cfg.stride_height, pad)
    wout = out_size(W, cfg.kernel_width, cfg.stride_width, pad)
    pdp = {
        "D_DATA_CUBE_IN_WIDTH_0": W - 1, "D_DATA_CUBE_IN_HEIGHT_0": H - 1,
        "D_DATA_CUBE_IN_CHANNEL_0": C - 1, "D_DATA_CUBE_OUT_WIDTH_0": wout - 1,
        "D_DATA_CUBE_OUT_HEIGHT_0": hout - 1, "D_DATA_CUBE_OUT_CHANNEL_0": C - 1,
        "D_OPERATION_MODE_CFG_0": cfg.method | 1 << 4,
        "D_POOLING_KERNEL_CFG_0": (cfg.kernel_width - 1) | (cfg.kernel_height - 1) << 8
        | (cfg.stride_width - 1) << 16 | (cfg.stride_height - 1) << 20,
        "D_RECIP_KERNEL_WIDTH_0": cfg.recip_width, "D_RECIP_KERNEL_HEIGHT_0": cfg.recip_height,
        "D_POOLING_PADDING_CFG_0": pad | pad << 4 | far_pad(W, wout, cfg.kernel_width,
                                                            cfg.stride_width, pad) << 8
        | far_pad(H, hout, cfg.kernel_height, cfg.stride_height, pad) << 12,
        "D_SRC_BASE_ADDR_LOW_0": 0x8000_0000, "D_SRC_LINE_STRIDE_0": W * 32,
        "D_SRC_SURFACE_STRIDE_0": H * W * 32, "D_DST_BASE_ADDR_LOW_0": 0x9000_0000,
        "D_DST_LINE_STRIDE_0": wout * 32, "D_DST_SURFACE_STRIDE_0": hout * wout * 32,
        "D_DST_RAM_CFG_0": 1, "D_DATA_FORMAT_0": cfg.precision.code,
    }
    rdma = {
        "D_DATA_CUBE_IN_WIDTH_0": W - 1, "D_DATA_CUBE_IN_HEIGHT_0": H - 1,
        "D_DATA_CUBE_IN_CHANNEL_0": C - 1, "D_FLYING_MODE_0": 1,
        "D_SRC_BASE_ADDR_LOW_0": 0x8000_0000, "D_SRC_LINE_STRIDE_0": W * 32,
        "D_SRC_SURFACE_STRIDE_0": H * W * 32, "D_SRC_RAM_CFG_0": 1,
        "D_DATA_FORMAT_0": cfg.precision.code,
    }
    image, _ = pack_feature(data, atom_bytes=32, precision=prec)

    def run():
        m = Machine("nv_full")
        m.load(0x8000_0000, image)
        for name, value in pdp.items():
            m.write_reg(f"NVDLA_PDP.{name}", value)
        for name, value in rdma.items():
            m.write_reg(f"NVDLA_PDP_RDMA.{name}", value)
        m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
        m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
        m.run()

    return run


def report(name, t_sim, t_layer, t_np):
    n = C * H * W
    print(f"{name}: datapath {n / t_sim / 1e6:8.1f} Melem/s | layer {n / t_layer / 1e6:8.1f} "
          f"Melem/s | numpy {n / t_np / 1e6:8.1f} Melem/s | numpy/datapath {t_sim / t_np:6.1f}x"
          f" | numpy/layer {t_layer / t_np:6.1f}x")


def main():
    rng = np.random.default_rng(0)
    x8 = rng.integers(-128, 128, size=(C, H, W)).astype(np.int8)
    cfg = PoolConfig(precision=INT8, method=MAX, kernel_width=3, kernel_height=3,
                     stride_width=2, stride_height=2, pad_top=1, pad_bottom=1)
    x64 = x8.astype(np.int64)
    ref = numpy_max(x8, 3, 2, 1)
    assert np.array_equal(datapath(x64, cfg, 1), ref), "int8 max differs from numpy"
    report("int8 3x3/2 max   ", best_of(lambda: datapath(x64, cfg, 1)),
           best_of(layer("int8", x8, cfg, 1)), best_of(lambda: numpy_max(x8, 3, 2, 1)))

    xf = rng.standard_normal((C, H, W)).astype(np.float16)
    bits = xf.view(np.uint16).astype(np.int64)
    recip = 0x7092  # fp17 of 1/7: 2**-3 * (1 + 146/1024)
    cfg = PoolConfig(precision=FP16, method=AVERAGE, kernel_width=7, kernel_height=7,
                     stride_width=1, stride_height=1, pad_top=0, pad_bottom=0,
                     recip_width=recip, recip_height=recip)
    report("fp16 7x7/1 avg   ", best_of(lambda: datapath(bits, cfg, 0), repeat=1),
           best_of(layer("fp16", xf.view(np.uint16), cfg, 0), repeat=1),
           best_of(lambda: numpy_avg(xf, 7, 1)))


if __name__ == "__main__":
    main()
