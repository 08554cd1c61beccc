"""SDP_RDMA reads its operand streams when its layer starts (D_OP_ENABLE), not when the SDP
computes: a fused layer's operands are what memory held when the firmware enabled the SDP.

Facts from NVIDIA's C-model (checked with traces replayed on it): the RDMA starts a group as
soon as it is enabled and the layer before has been handed to the SDP; a layer whose data do
not fit the SDP's operand FIFOs (147456 elements each) holds the RDMA until the SDP drains them.

The values are quarters, so every sum is exact in fp16 and the expected outputs are plain
arithmetic.
"""

import numpy as np
import pytest
from sim.regs.enums import FP16

from sim.chains import SDP, SDP_RDMA
from sim.dma import pack_feature, read_feature
from sim.dma.operands import operand_format, pack_operand
from sim.dram import PAGE_BITS
from sim.machine import LayerContext, Machine
from sim.program.sdp import program_operand, program_x, program_y, put
from sim.sdp.engine import process_sdp
from sim.sdp.fetch import FIFO_ELEMENTS

UNITS = (SDP, SDP_RDMA)
BN_ALU_SUM = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=1)


def quarters(rng, shape, limit):
    return (rng.integers(-4 * limit, 4 * limit, size=shape) / 4).astype(np.float16)


def fp16(values):
    return np.asarray(values, np.float16).view(np.uint16)


def program(m, group, shape, *, dst, x1=None, x2=None, operands=None, src=None, cube=None):
    """One fp16 SDP layer in register group ``group``: on the fly when ``src`` is None."""
    c, h, w = shape
    for unit in UNITS:
        m.write_reg(f"{unit}.S_POINTER_0", group)
        m.write_reg(f"{unit}.D_DATA_CUBE_WIDTH_0", w - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_HEIGHT_0", h - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_CHANNEL_0", c - 1)
    flying = src is None
    if not flying:
        data, layout = pack_feature(fp16(cube), precision="fp16", atom_bytes=32)
        m.load(src, data)
        m.write_reg("NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0", src)
        m.write_reg("NVDLA_SDP_RDMA.D_SRC_LINE_STRIDE_0", layout.line_stride)
        m.write_reg("NVDLA_SDP_RDMA.D_SRC_SURFACE_STRIDE_0", layout.surface_stride)
        put(m, "NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0", src_ram_type=1)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=int(flying),
        in_precision=FP16.code, proc_precision=FP16.code, out_precision=FP16.code)
    for name in ("bs", "bn", "ew"):
        program_operand(m, name, (operands or {}).get(name), "fp16")
    m.write_reg("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0", dst)
    m.write_reg("NVDLA_SDP.D_DST_LINE_STRIDE_0", w * 32)
    m.write_reg("NVDLA_SDP.D_DST_SURFACE_STRIDE_0", w * h * 32)
    put(m, "NVDLA_SDP.D_DST_DMA_CFG_0", dst_ram_type=1)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", flying_mode=int(flying))
    put(m, "NVDLA_SDP.D_DATA_FORMAT_0", proc_precision=FP16.code, out_precision=FP16.code)
    put(m, "NVDLA_SDP.D_CVT_SCALE_0", cvt_scale=1)
    program_x(m, "bs", x1)
    program_x(m, "bn", x2)
    program_y(m, None)


def overwrite(m, addr, values, per_element=True):
    """Store a new one-component fp16 operand over the old one (a layer writing it)."""
    fmt = operand_format("bias", "fp16", 2, 1, per_element)
    m.load(addr, pack_operand(fp16(values), fmt, m.config)[0])


def output(m, dst, shape):
    _, h, w = shape
    return read_feature(m.memory(1), dst, shape, "fp16", 32, w * 32, w * h * 32).view(np.float16)


def test_fused_layer_adds_the_shortcut_memory_held_at_its_enable():
    """ResNet's shortcut layer: conv -> BS bias (per channel) -> BN + shortcut cube (per
    element) -> ReLU, fp16.  The firmware enables the SDP while the layer producing the
    shortcut still runs; the sum takes the cube as it was then (here: its first contents)."""
    rng = np.random.default_rng(7)
    shape = (16, 5, 6)
    acc = quarters(rng, shape, 8).astype(np.float32)  # what CACC delivers, fp32
    bias = quarters(rng, shape[0], 2)
    before = quarters(rng, shape, 4)  # the shortcut cube when the SDP is enabled
    after = quarters(rng, shape, 4)  # what the producing layer writes afterwards
    m = Machine("nv_full")
    ops = {"bs": dict(use="alu", array=fp16(bias)),
           "bn": dict(use="alu", array=fp16(before), per_element=True)}
    program(m, 0, shape, dst=0x8040_0000, operands=ops,
            x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=1),
            x2={**BN_ALU_SUM, "relu_bypass": 0})
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    overwrite(m, 0x8200_0000, after)
    process_sdp(LayerContext(m, {SDP: 0, SDP_RDMA: 0}), acc)
    sums = acc + bias.astype(np.float32)[:, None, None]
    got = output(m, 0x8040_0000, shape)
    np.testing.assert_array_equal(got, np.maximum(sums + before, 0).astype(np.float16))
    assert not np.array_equal(got, np.maximum(sums + after, 0).astype(np.float16))


@pytest.mark.parametrize("side,fits", [(96, True), (97, False)])
def test_rdma_waits_while_the_layer_before_fills_the_fifos(side, fits):
    """Group 1 is enabled while group 0 (RDMA enabled, SDP not yet) waits; then group 1's
    operand changes.  Group 0's data fit the FIFOs (16x96x96 = 147456 elements): group 1
    started at its enable and took the old operand.  They do not (16x97x97): group 1
    started only once group 0 computed, and took the new one."""
    assert (16 * side * side <= FIFO_ELEMENTS) == fits
    rng = np.random.default_rng(side)
    m = Machine("nv_full")
    big = (16, side, side)
    program(m, 0, big, src=0x8000_0000, cube=quarters(rng, big, 4), dst=0x8400_0000,
            x2=BN_ALU_SUM, operands={"bn": dict(use="alu", array=fp16(quarters(rng, big, 4)),
                                                per_element=True, addr=0x8800_0000)})
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    small = (16, 4, 4)
    cube, old = quarters(rng, small, 4), quarters(rng, small, 4)
    new = (old.astype(np.float32) + 1).astype(np.float16)
    program(m, 1, small, src=0x8a00_0000, cube=cube, dst=0x8b00_0000, x2=BN_ALU_SUM,
            operands={"bn": dict(use="alu", array=fp16(old), per_element=True,
                                 addr=0x8c00_0000)})
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    overwrite(m, 0x8c00_0000, new)
    for unit in UNITS:
        m.write_reg(f"{unit}.S_POINTER_0", 0)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    assert m.run() == 2
    operand = old if fits else new
    want = (cube.astype(np.float32) + operand.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(output(m, 0x8b00_0000, small), want)


@pytest.mark.parametrize("window", [(0x1000, 0x40), (0x1020, 0x40), (0x2000, 0x40)],
                         ids=["covered", "overlapping", "apart"])
def test_fetched_view_lends_memory_only_where_no_window_covers_it(window):
    """A read through what a layer fetched (Fetched.view): the fetched bytes over memory's,
    whether it copies (read_array) or lends memory's own bytes (read_view); it lends
    only reads no fetched window meets."""
    from sim.dram import Memory
    from sim.sdp.fetch import Fetched, Window

    mem = Memory()
    mem.write(0x1000, np.arange(0x100, dtype=np.uint8))
    fetched = np.full(0x40, 0xAB, np.uint8)  # what memory held when the layer started
    view = Fetched((Window(mem, 0x1000, fetched),)).view(mem)
    addr, size = window
    lent = view.read_view(addr, size)
    np.testing.assert_array_equal(lent, view.read_array(addr, size))
    expected = mem.read_array(addr, size)
    lo, hi = max(addr, 0x1000), min(addr + size, 0x1040)
    if lo < hi:
        expected[lo - addr: hi - addr] = 0xAB
    np.testing.assert_array_equal(lent, expected)
    assert np.shares_memory(lent, mem._pages[addr >> PAGE_BITS]) == (lo >= hi)


def test_rdma_nan_inf_counters_land_in_the_rdma_group():
    """NVIDIA's RTL latches SDP_RDMA's D_STATUS_NAN/INF_INPUT_NUM into the group the RDMA
    itself ran (NV_NVDLA_SDP_RDMA_reg.v: dp2reg_d<g>_set when the RDMA's own group g
    completes); the nvdlav1 C-model stores them in the SDP core's group instead.  Firmware
    numbers the RDMA's groups apart from the SDP's (a fused layer uses no RDMA), so they
    differ: here the SDP runs group 1 and its RDMA group 0, as after a fused convolution
    layer that ran SDP group 0 without its RDMA."""
    rng = np.random.default_rng(3)
    shape = (16, 3, 4)
    cube = quarters(rng, shape, 4)
    flat = cube.reshape(-1)
    flat[rng.permutation(flat.size)[:7]] = np.inf
    flat[rng.permutation(flat.size)[:5]] = np.nan  # may cover an Inf: counted as found
    nans, infs = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
    m = Machine("nv_full")
    m.regfile.consumer[SDP] = 1  # the fused layer's SDP group done, its RDMA never ran
    program(m, 1, shape, dst=0x8040_0000, src=0x8100_0000, cube=cube)
    m.write_reg("NVDLA_SDP_RDMA.S_POINTER_0", 0)
    for name in ("D_DATA_CUBE_WIDTH_0", "D_DATA_CUBE_HEIGHT_0", "D_DATA_CUBE_CHANNEL_0"):
        m.write_reg(f"NVDLA_SDP_RDMA.{name}", m.read_reg(f"NVDLA_SDP.{name}"))
    program_rdma_source(m, cube, 0x8100_0000)
    put(m, "NVDLA_SDP_RDMA.D_PERF_ENABLE_0", perf_nan_inf_count_en=1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    assert m.run() == 1
    counts = {}
    for group in (0, 1):
        m.write_reg("NVDLA_SDP_RDMA.S_POINTER_0", group)
        counts[group] = (m.read_reg("NVDLA_SDP_RDMA.D_STATUS_NAN_INPUT_NUM_0"),
                         m.read_reg("NVDLA_SDP_RDMA.D_STATUS_INF_INPUT_NUM_0"))
    assert counts == {0: (nans, infs), 1: (0, 0)}
    assert nans and infs


def program_rdma_source(m, cube, src):
    """The RDMA half of :func:`program` again, in the group S_POINTER now selects."""
    _, layout = pack_feature(fp16(cube), precision="fp16", atom_bytes=32)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0", src)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_LINE_STRIDE_0", layout.line_stride)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_SURFACE_STRIDE_0", layout.surface_stride)
    put(m, "NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0", src_ram_type=1)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=0, in_precision=FP16.code,
        proc_precision=FP16.code, out_precision=FP16.code)
    for name in ("bs", "bn", "ew"):
        program_operand(m, name, None, "fp16")
