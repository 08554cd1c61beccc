"""The CDP engine through the register interface: memory in, memory and counters out."""

import numpy as np
import pytest

from sim.dma import pack_feature, unpack_feature
from sim.errors import ConfigurationError
from sim.machine import Machine

from .reference import Lut, Table, lrn_pixel

SRC, DST = 0x80000000, 0x80100000
FORMATS = {"int8": 0, "int16": 1, "fp16": 2}
COUNTERS = ("D_NAN_INPUT_NUM_0", "D_INF_INPUT_NUM_0", "D_NAN_OUTPUT_NUM_0", "D_OUT_SATURATION_0",
            "D_PERF_LUT_UFLOW_0", "D_PERF_LUT_OFLOW_0", "D_PERF_LUT_HYBRID_0",
            "D_PERF_LUT_LE_HIT_0", "D_PERF_LUT_LO_HIT_0")


def program_lut(m, le, lo):
    for table_id, values in ((0, le), (1, lo)):
        m.write_reg("NVDLA_CDP.S_LUT_ACCESS_CFG_0", (1 << 17) | (table_id << 16))
        for v in values:
            m.write_reg("NVDLA_CDP.S_LUT_ACCESS_DATA_0", int(v) & 0xFFFF)


def run_layer(config, cube, precision, *, setup=None, raw_memory=None, rdma_format=None,
              **cdp):
    """Load ``cube`` (C, H, W), program one CDP layer, run it; returns (output, counters).

    ``setup(machine)`` programs the LUT first; ``raw_memory(data, layout)``
    may alter the input's memory image.
    """
    m = Machine(config)
    if setup is not None:
        setup(m)
    atom = m.config.atom_bytes
    data, layout = pack_feature(cube, atom_bytes=atom, precision=precision)
    if raw_memory is not None:
        data = raw_memory(data, layout)
    m.load(SRC, data)
    c, h, w = cube.shape
    rdma = {"D_DATA_CUBE_WIDTH_0": w - 1, "D_DATA_CUBE_HEIGHT_0": h - 1,
            "D_DATA_CUBE_CHANNEL_0": c - 1, "D_SRC_BASE_ADDR_LOW_0": SRC,
            "D_SRC_LINE_STRIDE_0": layout.line_stride,
            "D_SRC_SURFACE_STRIDE_0": layout.surface_stride, "D_SRC_DMA_CFG_0": 1,
            "D_DATA_FORMAT_0": FORMATS[rdma_format or precision]}
    regs = {"D_DST_BASE_ADDR_LOW_0": DST, "D_DST_LINE_STRIDE_0": layout.line_stride,
            "D_DST_SURFACE_STRIDE_0": layout.surface_stride, "D_DST_DMA_CFG_0": 1,
            "D_DATA_FORMAT_0": FORMATS[precision]}
    regs.update(cdp)
    for name, value in rdma.items():
        m.write_reg(f"NVDLA_CDP_RDMA.{name}", value)
    for name, value in regs.items():
        m.write_reg(f"NVDLA_CDP.{name}", value)
    m.write_reg("NVDLA_CDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_CDP.D_OP_ENABLE_0", 1)
    m.run()
    assert m.interrupt_set("CDP", 0)
    out = unpack_feature(m.read_memory(DST, layout.extent), 0, (layout.surfaces * layout.group,
                         h, w), (layout.line_stride, layout.surface_stride),
                         atom_bytes=atom, precision=precision)
    counters = {name: m.read_reg(f"NVDLA_CDP.{name}") for name in COUNTERS}
    return out, counters


@pytest.mark.parametrize("config,window", [("nv_small", 5), ("nv_full", 9), ("nv_large", 3)])
def test_int8_layer_matches_reference(config, window):
    rng = np.random.default_rng(window)
    cube = rng.integers(-128, 128, (13, 3, 4)).astype(np.int8)
    le = rng.integers(-2000, 2000, 65)
    lo = rng.integers(-2000, 2000, 257)
    counts = Machine(config).config.cdp_saturation_counter
    lut_regs = {"S_LUT_CFG_0": 0x21, "S_LUT_INFO_0": (7 << 16) | (9 << 8),
                "S_LUT_LE_END_LOW_0": 64 << 9, "S_LUT_LO_START_LOW_0": 0x40,
                "S_LUT_LO_END_LOW_0": 0x40 + (256 << 7), "S_LUT_LE_SLOPE_SCALE_0": 0x0003fffd,
                "S_LUT_LE_SLOPE_SHIFT_0": (2 << 5) | 1}
    regs = {"D_LRN_CFG_0": (window - 3) // 2, "D_DATIN_OFFSET_0": 0xff05, "D_DATIN_SCALE_0": 3,
            "D_DATIN_SHIFTER_0": 1, "D_DATOUT_OFFSET_0": 0x10, "D_DATOUT_SCALE_0": 0x35,
            "D_DATOUT_SHIFTER_0": 16, "D_PERF_ENABLE_0": 2}

    def setup(m):
        program_lut(m, le, lo)
        for name, value in lut_regs.items():
            m.write_reg(f"NVDLA_CDP.{name}", value)

    out, counters = run_layer(config, cube, "int8", setup=setup, **regs)

    ref = Lut(Table(list(le), 0, 64 << 9, 9, uscale=-3, ushift=1, oscale=3, oshift=2),
              Table(list(lo), 0x40, 0x40 + (256 << 7), 7), oflow_lo=True)
    c, h, w = cube.shape
    padded = out.shape[0]
    saturated = 0
    for y in range(h):
        for x in range(w):
            col, sat = lrn_pixel([int(v) for v in cube[:, y, x]] + [0] * (padded - c), c,
                                 padded, 8, window, ref, (0xff05, 3, 1), (0x10, 0x35, 16))
            np.testing.assert_array_equal(out[:, y, x], col)
            saturated += sat
    # nvdlav1's RTL counts saturated outputs; the later RTL ties the register to 0
    assert counters["D_OUT_SATURATION_0"] == (saturated if counts else 0)
    assert not counts or saturated > 0  # the case saturates: the count is tested
    assert counters["D_PERF_LUT_UFLOW_0"] == ref.counts["uflow"]
    assert counters["D_PERF_LUT_OFLOW_0"] == ref.counts["oflow"]
    assert counters["D_PERF_LUT_HYBRID_0"] == ref.counts["hybrid"]
    assert counters["D_PERF_LUT_LE_HIT_0"] == ref.counts["le_hit"]
    assert counters["D_PERF_LUT_LO_HIT_0"] == ref.counts["lo_hit"]


FP16_INF = 4292870144.0  # fp16 Inf enters as the largest fp17 value


@pytest.mark.parametrize("nan_to_zero", [0, 1])
def test_fp16_specials_and_counters(nan_to_zero):
    """Inf -> +/-4292870144, NaN flush, NaN/Inf counters, padding channels from memory.

    With SQSUM_BYPASS and MUL_BYPASS the output is the LUT of x itself.  Both
    tables overflow for x >= 256 and underflow for x <= 0; the priorities pick
    LO, whose slopes are 2**-24 and whose end/start are 0, so y = x * 2**-24
    (exact in fp16 for these values).
    """
    values = np.array([np.inf, -np.inf, 65504, -65504, 300, -1000, np.nan, 256, 4096, -3,
                       1024, -np.inf], np.float16)
    cube = values.reshape(12, 1, 1)

    def garbage_in_padding(data, layout):
        data = data.copy()
        pad = np.array([np.nan, np.inf, -np.inf, 1.0], np.float16).view(np.uint8)
        data[24:32] = pad  # channels 12..15 of the only atom
        return data

    def setup(m):
        program_lut(m, np.zeros(65), np.zeros(257))
        m.write_reg("NVDLA_CDP.S_LUT_CFG_0", 0x31)  # LE linear, uflow/oflow priority LO
        m.write_reg("NVDLA_CDP.S_LUT_LO_SLOPE_SCALE_0", 0x00010001)  # 2**-24 both
        m.write_reg("NVDLA_CDP.S_LUT_LE_END_LOW_0", 0x42800000)  # 64.0

    out, counters = run_layer("nv_full", cube, "fp16", setup=setup,
                              raw_memory=garbage_in_padding, D_FUNC_BYPASS_0=3,
                              D_NAN_FLUSH_TO_ZERO_0=nan_to_zero)

    x = values.astype(np.float64)
    x[np.isposinf(x)] = FP16_INF
    x[np.isneginf(x)] = -FP16_INF
    want = (x * 2.0 ** -24).astype(np.float16)
    got = out[:12, 0, 0].view(np.float16)
    finite = ~np.isnan(values)
    np.testing.assert_array_equal(got[finite].view(np.uint16), want[finite].view(np.uint16))
    if nan_to_zero:
        assert got[6].view(np.uint16) == 0
    else:
        assert np.isnan(got[6])
    assert (out[12:, 0, 0] == 0).all()  # padding channels are computed from 0
    assert counters["D_NAN_INPUT_NUM_0"] == 2  # data and padding, before the flush
    assert counters["D_INF_INPUT_NUM_0"] == 5
    assert counters["D_NAN_OUTPUT_NUM_0"] == (0 if nan_to_zero else 1)
    under = int(np.count_nonzero(values[finite] <= 0)) + 1 + 4  # NaN (or 0) and padding
    assert counters["D_PERF_LUT_UFLOW_0"] == under
    assert counters["D_PERF_LUT_OFLOW_0"] == 16 - under
    assert counters["D_OUT_SATURATION_0"] == 0


@pytest.mark.parametrize("window", [3, 5, 7, 9])
def test_fp16_square_sum_window(window):
    """Without bypasses the window sums x**2 of neighbours (zeros beyond the cube).

    Index selects of -8 make both tables overflow for every sum >= 1/256; the
    overflow priority picks LO, whose slope is 1 and end 0, so y = x * s.
    Every sum is exact; the product is rounded once, as numpy's float16 cast.
    """
    values = np.array([1, 2, 3, 0.5, -4, 1.5, 0.25, -2, 0.75, 3.5, -1, 2.5, 0, 1.25],
                      np.float16)
    cube = values.reshape(14, 1, 1)

    def setup(m):
        program_lut(m, np.zeros(65), np.zeros(257))
        m.write_reg("NVDLA_CDP.S_LUT_CFG_0", 0x31)
        m.write_reg("NVDLA_CDP.S_LUT_INFO_0", (0xF8 << 16) | (0xF8 << 8))
        m.write_reg("NVDLA_CDP.S_LUT_LO_SLOPE_SCALE_0", 0x3c003c00)  # 1.0 both
        m.write_reg("NVDLA_CDP.S_LUT_LE_END_LOW_0", 0x3f800000)

    out, counters = run_layer("nv_full", cube, "fp16", setup=setup,
                              D_LRN_CFG_0=(window - 3) // 2)
    half = window // 2
    x = values.astype(np.float64)
    padded = np.concatenate([np.zeros(half), x, np.zeros(half + 2)])  # 16 channels written
    s = sum(padded[j:j + 16] ** 2 for j in range(window))
    want = (np.concatenate([x, [0.0, 0.0]]) * s).astype(np.float16)
    np.testing.assert_array_equal(out[:, 0, 0].view(np.float16), want)
    assert counters["D_PERF_LUT_OFLOW_0"] == int(np.count_nonzero(s > 0))
    assert counters["D_PERF_LUT_UFLOW_0"] == int(np.count_nonzero(s == 0))


def test_mismatched_formats_are_rejected():
    cube = np.zeros((8, 1, 1), np.int8)
    with pytest.raises(ConfigurationError, match="D_DATA_FORMAT"):
        run_layer("nv_full", cube, "int8", rdma_format="int16")


def test_fp16_needs_a_configuration_with_fp16():
    cube = np.zeros((8, 1, 1), np.float16)
    with pytest.raises(ConfigurationError, match="fp16"):
        run_layer("nv_small", cube, "fp16")
