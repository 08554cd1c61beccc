"""The PDP's pooling windows must end on the last padded line of a surface and the last
padded column of a line (in split mode, of the last split): register literals of legal and
illegal layers.

Each row is the NVDLA_PDP registers of an int8 layer of 24 channels (three surfaces) on
nv_small; PDP_RDMA gets the same cube, split and input widths.  Every row was run on
NVIDIA's nv_small RTL (Verilator) with random input: the LEGAL and TOLERATED rows pool as
simulated, each ILLEGAL row hangs (no PDP interrupt) or writes other data from the second
surface on.  TOLERATED rows break limits of the programming guide (each split tiled
exactly, the splits adding up to the cube) that the RTL pools as simulated.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from sim.dma import pack_feature, unpack_feature
from sim.errors import ConfigurationError
from sim.machine import LayerContext, Machine
from sim.pdp.engine import pool_from_sdp
from sim.program.pdp import Pooling, program_pdp, program_pdp_rdma

from .reference import pool_int

SRC, DST = 0x8000_0000, 0x8040_0000
IN_W, IN_H = "D_DATA_CUBE_IN_WIDTH_0", "D_DATA_CUBE_IN_HEIGHT_0"
OUT_W, OUT_H = "D_DATA_CUBE_OUT_WIDTH_0", "D_DATA_CUBE_OUT_HEIGHT_0"
MODE, KERNEL, PAD = "D_OPERATION_MODE_CFG_0", "D_POOLING_KERNEL_CFG_0", "D_POOLING_PADDING_CFG_0"
P_IN, P_OUT = "D_PARTIAL_WIDTH_IN_0", "D_PARTIAL_WIDTH_OUT_0"

# MODE: POOLING_METHOD 1:0, FLYING_MODE 4 (1 = from memory), SPLIT_NUM 15:8.
# KERNEL: width-1 3:0, height-1 11:8, stride width-1 19:16, stride height-1 23:20.
# PAD: left 2:0, top 6:4, right 10:8, bottom 14:12.
# P_IN/P_OUT: first-1 9:0, last-1 19:10, mid-1 29:20.
LEGAL = {
    # oracle pdp_3 with the bottom padding its last window uses: 19x6, kernel 1x7 stride 1x2,
    # top 2, bottom 3, two splits of 9 and 10 columns
    "pdp_3, bottom padding 3": {IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 2, MODE: 0x110,
                                KERNEL: 0x100600, PAD: 0x3020, P_IN: 0x2408, P_OUT: 0x2408},
    "pdp_3, bottom 5, 4 lines": {IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 3, MODE: 0x110,
                                 KERNEL: 0x100600, PAD: 0x5020, P_IN: 0x2408, P_OUT: 0x2408},
    "pdp_3 without split": {IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 2, MODE: 0x10,
                            KERNEL: 0x100600, PAD: 0x3020, P_IN: 18, P_OUT: 18},
    # 6x6, kernel 3x3 stride 2: right and bottom padding 1
    "3x3/2, right+bottom 1": {IN_W: 5, IN_H: 5, OUT_W: 2, OUT_H: 2, MODE: 0x11,
                              KERNEL: 0x110202, PAD: 0x1100, P_IN: 5, P_OUT: 2},
    # 19x4, kernel 3x1 stride 2: splits 9 + 10 columns (overlap 1) -> 4 + 5 outputs
    "two splits 9+10": {IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x111, KERNEL: 0x10002,
                        PAD: 0, P_IN: 0x2408, P_OUT: 0x1003},
    # the same in three splits of 7, 6, 6 columns -> 3 outputs each
    "three splits 7+6+6": {IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x211,
                           KERNEL: 0x10002, PAD: 0, P_IN: 0x501406, P_OUT: 0x200802},
    # 18x4 with left padding 1: splits 8 + 10
    "two splits, left padding": {IN_W: 17, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x111,
                                 KERNEL: 0x10002, PAD: 1, P_IN: 0x2407, P_OUT: 0x1003},
    # 17x4, kernel 2 stride 3 (stride > kernel): splits 8 + 9 -> 3 + 3
    "kernel < stride, two splits": {IN_W: 16, IN_H: 3, OUT_W: 5, OUT_H: 3, MODE: 0x111,
                                    KERNEL: 0x20001, PAD: 0, P_IN: 0x2007, P_OUT: 0x802},
}

ILLEGAL = {
    # oracle pdp_3 as recorded: the bottom padding's last line is in no window
    "pdp_3": ({IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 2, MODE: 0x110, KERNEL: 0x100600,
               PAD: 0x4020, P_IN: 0x2408, P_OUT: 0x2408},
              PAD, "PAD_TOP 2 + 6 input lines + PAD_BOTTOM 4 = 12 lines, but 3 output lines "
              "of kernel 7, stride 2 span 11 (PAD_BOTTOM 3 would end them there)"),
    "pdp_3 without split": ({IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 2, MODE: 0x10,
                             KERNEL: 0x100600, PAD: 0x4020, P_IN: 18, P_OUT: 18},
                            PAD, "PAD_BOTTOM 3 would end them there"),
    "pdp_3 with bottom padding 2": ({IN_W: 18, IN_H: 5, OUT_W: 18, OUT_H: 1, MODE: 0x110,
                                     KERNEL: 0x100600, PAD: 0x2020, P_IN: 0x2408,
                                     P_OUT: 0x2408},
                                    PAD, "PAD_BOTTOM 1 would end them there"),
    # 6 lines, kernel 3 stride 2, no padding: the last line is in no window
    "unused last line": ({IN_W: 2, IN_H: 5, OUT_W: 2, OUT_H: 1, MODE: 0x11, KERNEL: 0x100200,
                          PAD: 0, P_IN: 2, P_OUT: 2},
                         PAD, "the last input line is in no window"),
    "fewer lines than fit": ({IN_W: 2, IN_H: 5, OUT_W: 2, OUT_H: 1, MODE: 0x11,
                              KERNEL: 0x200, PAD: 0, P_IN: 2, P_OUT: 2},
                             PAD, "the last 2 input lines are in no window"),
    # 6 columns, kernel 3 stride 2, right padding 2 of which the windows use 1
    "right padding too wide": ({IN_W: 5, IN_H: 1, OUT_W: 2, OUT_H: 1, MODE: 0x11,
                                KERNEL: 0x10002, PAD: 0x200, P_IN: 5, P_OUT: 2},
                               PAD, "PAD_LEFT 0 + 6 input columns + PAD_RIGHT 2 = 8 columns, "
                               "but 3 output columns of kernel 3, stride 2 span 7"),
    # splits of 9 + 12 on a 19-wide cube: the last split's 13 columns hold 5 windows of 11
    "last split too wide": ({IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x111,
                             KERNEL: 0x10002, PAD: 0, P_IN: 0x2c08, P_OUT: 0x1003},
                            P_IN, "the last of 2 splits' 13 input columns (overlap 1 included) "
                            "+ PAD_RIGHT 0 = 13 columns, but 5 output columns of kernel 3, "
                            "stride 2 span 11 (the last 2 input columns are in no window)"),
    # the first split's 8 columns hold 3 windows, not 4 (refused before: windows must fit)
    "first split too narrow": ({IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x111,
                                KERNEL: 0x10002, PAD: 0, P_IN: 0x2807, P_OUT: 0x1003},
                               P_OUT, "4 output columns but only 3 kernel windows fit in 8"),
}

TOLERATED = {
    # 19 wide, kernel 3 stride 2: a middle split of 7 columns (+1 overlap) for 3 windows
    # of 7; the last split starts a column later
    "mid split too wide": {IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x211,
                           KERNEL: 0x10002, PAD: 0, P_IN: 0x601406, P_OUT: 0x200802},
    "first split too wide": {IN_W: 18, IN_H: 3, OUT_W: 7, OUT_H: 3, MODE: 0x111,
                             KERNEL: 0x10002, PAD: 0, P_IN: 0x1c09, P_OUT: 0xc03},
    # splits of 9 + 8 columns writing 4 + 4 of the cube's 9 output columns
    "split outputs short of the cube": {IN_W: 18, IN_H: 3, OUT_W: 8, OUT_H: 3, MODE: 0x111,
                                        KERNEL: 0x10002, PAD: 0, P_IN: 0x1c08, P_OUT: 0xc03},
    # 9 + 8 columns tile 8 outputs, but the cube is 19 wide
    "split inputs short of the cube": {IN_W: 18, IN_H: 3, OUT_W: 7, OUT_H: 3, MODE: 0x111,
                                       KERNEL: 0x10002, PAD: 0, P_IN: 0x1c08, P_OUT: 0xc03},
}


def layer(regs: dict) -> Machine:
    """A nv_small machine with PDP (from memory) and PDP_RDMA programmed by ``regs``."""
    m = Machine("nv_small")
    w, h = regs[IN_W] + 1, regs[IN_H] + 1
    ow, oh = regs[OUT_W] + 1, regs[OUT_H] + 1
    kernel, mode = regs[KERNEL], regs[MODE]
    pdp = {**regs, "D_DATA_CUBE_IN_CHANNEL_0": 23, "D_DATA_CUBE_OUT_CHANNEL_0": 23,
           "D_RECIP_KERNEL_WIDTH_0": 0x10000 // ((kernel & 0xF) + 1),
           "D_RECIP_KERNEL_HEIGHT_0": 0x10000 // ((kernel >> 8 & 0xF) + 1),
           "D_SRC_BASE_ADDR_LOW_0": SRC, "D_SRC_LINE_STRIDE_0": 8 * w,
           "D_SRC_SURFACE_STRIDE_0": 8 * w * h, "D_DST_BASE_ADDR_LOW_0": DST,
           "D_DST_LINE_STRIDE_0": 8 * ow, "D_DST_SURFACE_STRIDE_0": 8 * ow * oh,
           "D_DST_RAM_CFG_0": 1}
    for n in range(1, 8):  # padding value -3
        pdp[f"D_POOLING_PADDING_VALUE_{n}_CFG_0"] = -3 * n & 0x7FFFF
    rdma = {IN_W: regs[IN_W], IN_H: regs[IN_H], "D_DATA_CUBE_IN_CHANNEL_0": 23,
            "D_FLYING_MODE_0": 1, "D_SRC_BASE_ADDR_LOW_0": SRC, "D_SRC_LINE_STRIDE_0": 8 * w,
            "D_SRC_SURFACE_STRIDE_0": 8 * w * h, "D_SRC_RAM_CFG_0": 1,
            MODE: mode >> 8 & 0xFF, KERNEL: (kernel & 0xF) | (kernel >> 16 & 0xF) << 4,
            PAD: regs[PAD] & 7, P_IN: regs[P_IN]}
    for unit, values in (("NVDLA_PDP", pdp), ("NVDLA_PDP_RDMA", rdma)):
        for name, value in values.items():
            m.write_reg(f"{unit}.{name}", value)
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    return m


@pytest.mark.parametrize("regs", [*LEGAL.values(), *TOLERATED.values()],
                         ids=[*LEGAL.keys(), *TOLERATED.keys()])
def test_legal_and_tolerated_tilings_run(regs):
    m = layer(regs)
    assert m.run() == 1
    assert m.interrupt_set("PDP", 0)


@pytest.mark.parametrize("regs, register, message", ILLEGAL.values(), ids=ILLEGAL.keys())
def test_illegal_tilings_are_rejected(regs, register, message):
    with pytest.raises(ConfigurationError) as info:
        layer(regs).run()
    text = str(info.value)
    assert text.startswith(f"NVDLA_PDP.{register}: ") and message in text, text
    assert "\n" not in text


def test_on_the_fly_input_obeys_the_rule():
    """The rule holds for a cube from the SDP as well (the preprocessor feeds the same core)."""
    m = Machine("nv_small")
    regs = {IN_W: 2, IN_H: 5, OUT_W: 2, OUT_H: 1, MODE: 0x1, KERNEL: 0x100200, PAD: 0,
            "D_DATA_CUBE_IN_CHANNEL_0": 7, "D_DATA_CUBE_OUT_CHANNEL_0": 7,
            "D_DST_BASE_ADDR_LOW_0": DST, "D_DST_LINE_STRIDE_0": 24,
            "D_DST_SURFACE_STRIDE_0": 48, "D_DST_RAM_CFG_0": 1}
    for name, value in regs.items():
        m.write_reg(f"NVDLA_PDP.{name}", value)
    ctx = LayerContext(m, {"NVDLA_PDP": 0})
    with pytest.raises(ConfigurationError, match="the last input line is in no window"):
        pool_from_sdp(ctx, np.zeros((8, 6, 3), np.int8))
    m.write_reg(f"NVDLA_PDP.{PAD}", 0x1000)  # bottom padding 1: windows end on it
    m.write_reg(f"NVDLA_PDP.{OUT_H}", 2)
    pool_from_sdp(ctx, np.zeros((8, 6, 3), np.int8))


# -- the programming helper never breaks the rule ---------------------------------------

POOLS = [
    # (C, H, W), kernel (h, w), stride (h, w), pad (left, right, top, bottom)
    ((8, 6, 19), (7, 1), (2, 1), (0, 0, 2, 4)),  # pdp_3: bottom padding 4 -> 3
    ((8, 6, 6), (3, 3), (2, 2), (0, 0, 0, 0)),  # last line and column in no window
    ((8, 6, 6), (3, 3), (2, 2), (0, 2, 0, 2)),  # right/bottom padding 2 -> 1
    ((8, 9, 11), (3, 3), (2, 2), (1, 1, 1, 1)),  # already exact
    ((8, 7, 10), (2, 4), (3, 3), (1, 3, 1, 1)),  # stride > kernel
]


def feature_layout(shape):
    """The strides of a dense int8 cube on nv_small (all program_pdp reads of a layout)."""
    _, h, w = shape
    return SimpleNamespace(line_stride=8 * w, surface_stride=8 * w * h)


@pytest.mark.parametrize("shape, kernel, stride, pad", POOLS)
def test_program_pdp_tiles_exactly_and_pools_the_same(shape, kernel, stride, pad):
    pool = Pooling("average", kernel, stride, pad, pad_value=-5)
    x = np.random.default_rng(sum(shape)).integers(-128, 128, size=shape).astype(np.int8)
    m = Machine("nv_small")
    out_h, out_w = pool.out_size(*shape[1:])
    src_lay, dst_lay = feature_layout(shape), feature_layout((8, out_h, out_w))
    data, _ = pack_feature(x, atom_bytes=8, precision="int8", line_stride=src_lay.line_stride,
                           surface_stride=src_lay.surface_stride)
    m.load(SRC, data)
    program_pdp_rdma(m, shape, "int8", pool, (SRC, src_lay))
    program_pdp(m, shape, "int8", pool, (DST, dst_lay), src=(SRC, src_lay))
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    assert m.run() == 1  # the rule would raise
    image = m.pri_mem.read_array(DST, dst_lay.surface_stride)
    got = unpack_feature(image, 0, (8, out_h, out_w), (dst_lay.line_stride,
                                                       dst_lay.surface_stride),
                         atom_bytes=8, precision="int8")
    (kh, kw), (sh, sw) = kernel, stride
    want = pool_int(x, (kw, kh), (sw, sh), pad, "avg", -5, (0x10000 // kw, 0x10000 // kh))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("size, kernel, stride, pad, fitted", [
    # (H, W), kernel, stride, (left, right, top, bottom) -> (H, W, bottom, right) programmed
    ((6, 19), (7, 1), (2, 1), (0, 0, 2, 4), (6, 19, 3, 0)),
    ((6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (5, 5, 0, 0)),
    ((6, 6), (3, 3), (2, 2), (0, 2, 0, 2), (6, 6, 1, 1)),
    ((9, 11), (3, 3), (2, 2), (1, 1, 1, 1), (9, 11, 1, 1)),
    ((7, 10), (2, 4), (3, 3), (1, 3, 1, 1), (7, 10, 0, 2)),
])
def test_fit(size, kernel, stride, pad, fitted):
    assert Pooling("max", kernel, stride, pad, 0).fit(*size) == fitted


def test_fit_always_tiles():
    """Every pooling gen can ask for (padding below the kernel) is programmed so that the
    windows end on the last padded line, with as many windows and no more input."""
    for n in range(1, 13):
        for k in range(1, 6):
            for s in range(1, 6):
                for lo in range(k):
                    for hi in range(k):
                        if n + lo + hi < k:
                            continue
                        pool = Pooling("max", (k, 1), (s, 1), (0, 0, lo, hi), 0)
                        h, _, pb, _ = pool.fit(n, 1)
                        out = pool.out_size(n, 1)[0]
                        assert lo + h + pb == (out - 1) * s + k, (n, k, s, lo, hi)
                        assert h <= n and pb <= hi and (h == n or pb == 0)


def test_program_pdp_on_the_fly_refuses_input_no_window_reaches():
    m = Machine("nv_small")
    pool = Pooling("max", (3, 3), (2, 2), (0, 0, 0, 0), 0)
    dst = (DST, feature_layout((8, 2, 2)))
    with pytest.raises(ConfigurationError, match="D_DATA_CUBE_IN_HEIGHT_0: .* leaves the last "
                       "line of the 6x6 input in no window"):
        program_pdp(m, (8, 6, 6), "int8", pool, dst)
