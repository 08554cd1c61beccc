"""PDP layers on a Machine: PDP_RDMA reads, split mode, write DMA, counters, on the fly."""

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim.dma import pack_feature, unpack_feature
from sim.errors import ConfigurationError, SimError
from sim.machine import LayerContext, Machine
from sim.pdp.engine import pool_from_sdp

from .reference import fp17, out_size, pool_float, pool_int, split_widths

SRC, DST = 0x8000_0000, 0x8040_0000
METHOD = {"avg": 0, "max": 1, "min": 2}


def program(m, *, prec, shape, k, s, pads, method, out_widths=None, pad_value=0, recip=None,
            nan_to_zero=0, flying=False, src_strides, dst_strides, dst_ram=1):
    """Write a PDP (+ PDP_RDMA) layer; ``out_widths`` (first, mids..., last) enables split."""
    c, h, w = shape
    kw, kh = k
    sw, sh = s
    pl, pr, pt, pb = pads
    hout, wout = out_size(h, kh, sh, pt, pb), out_size(w, kw, sw, pl, pr)
    if recip is None:
        recip = (round(65536 / kw), round(65536 / kh))
    split_num, pin, pout = 0, 0, 0
    if out_widths:
        assert sum(out_widths) == wout, "test geometry: split output widths must add up"
        split_num = len(out_widths) - 1
        first, mid, last = split_widths(w, kw, sw, pl, out_widths)
        pin = (first - 1) | (last - 1) << 10 | (mid - 1) << 20
        omid = out_widths[1] if len(out_widths) > 2 else 1
        pout = (out_widths[0] - 1) | (out_widths[-1] - 1) << 10 | (omid - 1) << 20
    pdp = {
        "D_DATA_CUBE_IN_WIDTH_0": w - 1, "D_DATA_CUBE_IN_HEIGHT_0": h - 1,
        "D_DATA_CUBE_IN_CHANNEL_0": c - 1, "D_DATA_CUBE_OUT_WIDTH_0": wout - 1,
        "D_DATA_CUBE_OUT_HEIGHT_0": hout - 1, "D_DATA_CUBE_OUT_CHANNEL_0": c - 1,
        "D_OPERATION_MODE_CFG_0": METHOD[method] | (0 if flying else 1) << 4 | split_num << 8,
        "D_NAN_FLUSH_TO_ZERO_0": nan_to_zero, "D_PARTIAL_WIDTH_IN_0": pin,
        "D_PARTIAL_WIDTH_OUT_0": pout,
        "D_POOLING_KERNEL_CFG_0": (kw - 1) | (kh - 1) << 8 | (sw - 1) << 16 | (sh - 1) << 20,
        "D_RECIP_KERNEL_WIDTH_0": recip[0], "D_RECIP_KERNEL_HEIGHT_0": recip[1],
        "D_POOLING_PADDING_CFG_0": pl | pt << 4 | pr << 8 | pb << 12,
        "D_SRC_BASE_ADDR_LOW_0": SRC, "D_SRC_LINE_STRIDE_0": src_strides[0],
        "D_SRC_SURFACE_STRIDE_0": src_strides[1], "D_DST_BASE_ADDR_LOW_0": DST,
        "D_DST_LINE_STRIDE_0": dst_strides[0], "D_DST_SURFACE_STRIDE_0": dst_strides[1],
        "D_DST_RAM_CFG_0": dst_ram, "D_DATA_FORMAT_0": Precision(prec).code,
    }
    for n in range(1, 8):
        value = fp17(n * pad_value) if prec == "fp16" else (n * pad_value) & 0x7FFFF
        pdp[f"D_POOLING_PADDING_VALUE_{n}_CFG_0"] = value
    for name, value in pdp.items():
        m.write_reg(f"NVDLA_PDP.{name}", value)
    if flying:
        return hout, wout
    rdma = {
        "D_DATA_CUBE_IN_WIDTH_0": w - 1, "D_DATA_CUBE_IN_HEIGHT_0": h - 1,
        "D_DATA_CUBE_IN_CHANNEL_0": c - 1, "D_FLYING_MODE_0": 1,
        "D_SRC_BASE_ADDR_LOW_0": SRC, "D_SRC_LINE_STRIDE_0": src_strides[0],
        "D_SRC_SURFACE_STRIDE_0": src_strides[1], "D_SRC_RAM_CFG_0": 1,
        "D_DATA_FORMAT_0": Precision(prec).code, "D_OPERATION_MODE_CFG_0": split_num,
        "D_POOLING_KERNEL_CFG_0": (kw - 1) | (sw - 1) << 4, "D_PARTIAL_WIDTH_IN_0": pin,
    }
    for name, value in rdma.items():
        m.write_reg(f"NVDLA_PDP_RDMA.{name}", value)
    return hout, wout


def launch(m):
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    assert m.run() == 1


def layer(config, prec, x, *, out_widths=None, gap=0, **kw):
    """Run one memory-to-memory layer; returns (machine, output cube)."""
    m = Machine(config)
    atom = m.config.atom_bytes
    c, h, w = x.shape
    line = w * atom + gap
    data, _ = pack_feature(x, atom_bytes=atom, precision=prec, line_stride=line,
                           surface_stride=h * line + gap)
    m.load(SRC, data)
    k, s, pads = kw["k"], kw["s"], kw["pads"]
    hout = out_size(h, k[1], s[1], pads[2], pads[3])
    wout = out_size(w, k[0], s[0], pads[0], pads[1])
    dline = wout * atom + 2 * atom
    dst_strides = (dline, hout * dline + atom)
    program(m, prec=prec, shape=x.shape, out_widths=out_widths, src_strides=(line, h * line + gap),
            dst_strides=dst_strides, **kw)
    launch(m)
    ram = kw.get("dst_ram", 1)
    image = m.memory(ram).read_array(DST, dst_strides[1] * 4)
    out = unpack_feature(image, 0, (c, hout, wout), dst_strides, atom_bytes=atom, precision=prec)
    return m, out


GEOMETRY = [
    # kernel, stride, pads, split output widths
    ((3, 3), (2, 2), (1, 1, 1, 0), None),
    ((3, 3), (2, 2), (1, 1, 1, 0), (3, 2, 2)),
    ((2, 2), (2, 1), (0, 1, 0, 1), (3, 4)),
    ((4, 2), (2, 2), (2, 1, 0, 0), (2, 1, 1, 3)),
    ((2, 3), (3, 1), (1, 0, 2, 2), (2, 3)),  # stride > kernel: negative overlap
]


@pytest.mark.parametrize("config", ["nv_small", "nv_full"])
@pytest.mark.parametrize("method", ["max", "min", "avg"])
@pytest.mark.parametrize("k, s, pads, out_widths", GEOMETRY)
def test_int8_layers_with_and_without_split(config, method, k, s, pads, out_widths):
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(11, 6, 13)).astype(np.int8)
    _, got = layer(config, "int8", x, k=k, s=s, pads=pads, method=method, pad_value=-3,
                   out_widths=out_widths, gap=config == "nv_full" and 32)
    recip = (round(65536 / k[0]), round(65536 / k[1]))
    want = pool_int(x, k, s, pads, method, -3, recip)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("method", ["max", "avg"])
def test_int16_layer(method):
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, size=(20, 5, 7)).astype(np.int16)
    k, s, pads = (3, 2), (2, 1), (1, 1, 0, 1)
    _, got = layer("nv_full", "int16", x, k=k, s=s, pads=pads, method=method, pad_value=1000,
                   out_widths=(2, 2))
    want = pool_int(x, k, s, pads, method, 1000, (round(65536 / 3), 0x8000), bits=16)
    assert np.array_equal(got, want)


def fp16_input(seed, shape):
    rng = np.random.default_rng(seed)
    x = rng.integers(-16, 17, size=shape).astype(np.float16)
    return x.view(np.uint16)


@pytest.mark.parametrize("flush", [0, 1])
def test_fp16_counters_and_nan_flush(flush):
    bits = fp16_input(5, (20, 4, 6))  # 20 channels: two surfaces of 16
    bits[0, 0, 0] = 0x7E00  # NaN
    bits[17, 3, 5] = 0xFC01  # NaN (second surface)
    bits[3, 1, 2] = 0x7C00  # +Inf
    bits[4, 2, 2] = 0xFC00  # -Inf
    m, got = layer("nv_full", "fp16", bits, k=(2, 2), s=(2, 2), pads=(0, 0, 0, 0),
                   method="max", nan_to_zero=flush, out_widths=(1, 2))
    reg = lambda name: m.read_reg(f"NVDLA_PDP.{name}")  # noqa: E731
    assert reg("D_NAN_INPUT_NUM_0") == 2 and reg("D_INF_INPUT_NUM_0") == 2
    assert reg("D_NAN_OUTPUT_NUM_0") == (0 if flush else 2)
    x = bits.view(np.float16).astype(np.float64)
    if flush:
        x[np.isnan(x)] = 0.0
        want = pool_float(x, (2, 2), (2, 2), (0, 0, 0, 0), "max").astype(np.float16)
        assert np.array_equal(got.view(np.float16), want)
    assert got[3, 0, 1] == 0x7C00  # Inf kept by max
    assert m.interrupt_set("PDP", 0)


def test_fp16_average_layer_to_cv_sram():
    bits = fp16_input(9, (16, 6, 8))
    k, s, pads = (2, 2), (2, 2), (1, 1, 1, 1)
    _, got = layer("nv_full", "fp16", bits, k=k, s=s, pads=pads, method="avg", pad_value=1.0,
                   recip=(fp17(0.5), fp17(0.5)), dst_ram=0)
    want = pool_float(bits.view(np.float16).astype(np.float64), k, s, pads, "avg", 1.0)
    assert np.array_equal(got.view(np.float16), want.astype(np.float16))


def flying_context(config, prec, shape, method, k, s, pads, flying=True):
    m = Machine(config)
    atom = m.config.atom_bytes
    c, h, w = shape
    hout, wout = out_size(h, k[1], s[1], pads[2], pads[3]), out_size(w, k[0], s[0], pads[0],
                                                                     pads[1])
    dst = (wout * atom, hout * wout * atom)
    program(m, prec=prec, shape=shape, k=k, s=s, pads=pads, method=method, flying=flying,
            src_strides=(0, 0), dst_strides=dst)
    return m, LayerContext(m, {"NVDLA_PDP": 0}), (c, hout, wout), dst


def test_pool_from_sdp_on_the_fly():
    x = np.random.default_rng(1).integers(-128, 128, size=(12, 5, 6)).astype(np.int8)
    k, s, pads = (3, 2), (1, 2), (1, 1, 0, 1)
    m, ctx, shape, dst = flying_context("nv_small", "int8", x.shape, "avg", k, s, pads)
    pool_from_sdp(ctx, x)
    image = m.pri_mem.read_array(DST, dst[1] * 2)
    got = unpack_feature(image, 0, shape, dst, atom_bytes=8, precision="int8")
    want = pool_int(x, k, s, pads, "avg", 0, (round(65536 / 3), 0x8000))
    assert np.array_equal(got, want)
    assert ctx.counters[("NVDLA_PDP", "D_NAN_OUTPUT_NUM_0")] == 0


def test_pool_from_sdp_checks_mode_and_shape():
    m, ctx, _, _ = flying_context("nv_small", "int8", (8, 4, 4), "max", (2, 2), (2, 2),
                                  (0, 0, 0, 0), flying=False)
    with pytest.raises(ConfigurationError, match="FLYING_MODE"):
        pool_from_sdp(ctx, np.zeros((8, 4, 4), np.int8))
    m, ctx, _, _ = flying_context("nv_small", "int8", (8, 4, 4), "max", (2, 2), (2, 2),
                                  (0, 0, 0, 0))
    with pytest.raises(ConfigurationError, match="does not match"):
        pool_from_sdp(ctx, np.zeros((8, 4, 5), np.int8))


def bad_layer(config, prec="int8", **override):
    m = Machine(config)
    program(m, prec=prec, shape=(8, 4, 4), k=(2, 2), s=(2, 2), pads=(0, 0, 0, 0), method="max",
            src_strides=(0x100, 0x400), dst_strides=(0x100, 0x400))
    for name, value in override.items():
        m.write_reg(name.replace("__", "."), value)
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    m.run()


@pytest.mark.parametrize("config, prec, override, error, message", [
    ("nv_full", "int8", {"NVDLA_PDP__D_DATA_FORMAT_0": 3}, ConfigurationError, "INPUT_DATA"),
    ("nv_small", "int16", {}, ConfigurationError, "does not support int16"),
    ("nv_full", "int8", {"NVDLA_PDP__D_OPERATION_MODE_CFG_0": 0x13}, ConfigurationError,
     "POOLING_METHOD"),
    ("nv_full", "int8", {"NVDLA_PDP__D_DATA_CUBE_OUT_WIDTH_0": 5}, ConfigurationError,
     "kernel windows fit"),
    ("nv_full", "int8", {"NVDLA_PDP_RDMA__D_DATA_CUBE_IN_HEIGHT_0": 6}, ConfigurationError,
     "CUBE_IN_HEIGHT"),
    ("nv_full", "int8", {"NVDLA_PDP_RDMA__D_DATA_FORMAT_0": 2}, ConfigurationError,
     "INPUT_DATA differs"),
])
def test_bad_registers_raise_one_line_errors(config, prec, override, error, message):
    with pytest.raises(error, match=message) as info:
        bad_layer(config, prec, **override)
    assert "\n" not in str(info.value) and isinstance(info.value, SimError)


def test_split_on_the_fly_is_invalid_programming():
    m, ctx, _, _ = flying_context("nv_small", "int8", (8, 4, 4), "max", (2, 2), (2, 2),
                                  (0, 0, 0, 0))
    m.write_reg("NVDLA_PDP.D_OPERATION_MODE_CFG_0", 1 | 1 << 8)
    with pytest.raises(ConfigurationError, match="SPLIT_NUM 1 with on-the-fly input"):
        pool_from_sdp(ctx, np.zeros((8, 4, 4), np.int8))


def test_pool_from_sdp_batches():
    x = np.arange(-64, 64, dtype=np.int8).reshape(8, 4, 4)
    m, ctx, shape, dst = flying_context("nv_small", "int8", x.shape, "max", (2, 2), (2, 2),
                                        (0, 0, 0, 0))
    pool_from_sdp(ctx, x[None])  # a batch of one is the cube itself
    got = unpack_feature(m.pri_mem.read_array(DST, dst[1]), 0, shape, dst, atom_bytes=8,
                         precision="int8")
    assert np.array_equal(got, pool_int(x, (2, 2), (2, 2), (0, 0, 0, 0), "max"))
    with pytest.raises(ConfigurationError, match="2 batches sent to the PDP on the fly"):
        pool_from_sdp(ctx, np.stack([x, x]))
