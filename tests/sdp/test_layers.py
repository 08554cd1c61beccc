"""SDP layer plumbing: invalid register combinations, missing hardware features, on-the-fly
input from CACC (batches, Winograd), output to the PDP, and the nv_small EW traces."""

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim import jit
from sim.chains import SDP, SDP_RDMA
from sim.dma import read_feature
from sim.dma.align import ceil_div
from sim.errors import ConfigurationError
from sim.machine import LayerContext, Machine
from sim.program.sdp import DST, counter, put, run_sdp
from sim.sdp.engine import process_sdp

from .reference import out_cvt, x_stage

CUBE8 = np.arange(-40, 40, dtype=np.int8)[:48].reshape(16, 1, 3)
CUBE16 = CUBE8.astype(np.int16)
CUBEH = CUBE8.astype(np.float16).view(np.uint16)


@pytest.mark.parametrize("config,cube,in_prec,out_prec,kw,message", [
    ("nv_full", CUBE8, "int8", "fp16", {}, "OUT_PRECISION=fp16"),
    ("nv_full", CUBEH, "fp16", "int8", {}, "IN_PRECISION=fp16"),
    ("nv_full", CUBE8, "int8", "int8", dict(proc_prec="fp16"), "PROC_PRECISION"),
    ("nv_small", CUBE8, "int8", "int8", dict(y=dict(bypass=0)), "D_DP_EW_CFG_0"),
    ("nv_small", CUBE8, "int8", "int8", dict(y=dict(bypass=0, lut_bypass=0)), "no sdp ew"),
    ("nv_medium_512", CUBE8, "int8", "int8", dict(y=dict(bypass=0, lut_bypass=0)),
     "no sdp ew"),
    ("nv_small", CUBE8, "int8", "int8",
     dict(operands={"ew": dict(array=CUBE8[:, 0, 0], use="alu")}), "D_ERDMA_CFG_0"),
    ("nv_small", CUBE16, "int16", "int16", {}, "does not support int16"),
    ("nv_full", CUBE8, "int8", "int8", dict(x1=dict(bypass=0, alu_bypass=0, alu_src=1)),
     "BRDMA is disabled"),
    ("nv_full", CUBE8, "int8", "int8",
     dict(x1=dict(bypass=0, mul_bypass=0, mul_src=1),
          operands={"bs": dict(array=CUBE8[:, 0, 0], use="alu")}), "carries no MUL operand"),
    ("nv_full", CUBE16, "int16", "int16",
     dict(y=dict(bypass=0, alu_bypass=0, alu_algo=3), cvt=(0, 2, 0)), "EQL"),
])
def test_invalid_combination(config, cube, in_prec, out_prec, kw, message):
    with pytest.raises(ConfigurationError, match=message) as info:
        run_sdp(config, cube, in_prec=in_prec, out_prec=out_prec, **kw)
    assert "\n" not in str(info.value)


def test_offline_batch_rejected():
    _, m = run_sdp("nv_full", CUBE8, in_prec="int8", out_prec="int8", go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", batch_number=1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    with pytest.raises(ConfigurationError, match="BATCH_NUMBER"):
        m.run()


def _flying_machine(shape, batch=1, winograd=0, x1=None, proc="int16", out="int16"):
    """SDP programmed for on-the-fly input; returns (machine, LayerContext, out strides)."""
    c, h, w = shape
    m = Machine("nv_full")
    _, m = run_sdp("nv_full", np.zeros(shape, dtype=np.int16), in_prec=proc, out_prec=out,
                   x1=x1, machine=m, go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", flying_mode=1, winograd=winograd,
        batch_number=batch - 1)
    put(m, "NVDLA_SDP.D_DATA_FORMAT_0", proc_precision=Precision(proc).code,
        out_precision=Precision(out).code)
    line = w * 32
    surface = h * line
    m.write_reg("NVDLA_SDP.D_DST_LINE_STRIDE_0", line)
    m.write_reg("NVDLA_SDP.D_DST_SURFACE_STRIDE_0", surface)
    m.write_reg("NVDLA_SDP.D_DST_BATCH_STRIDE_0", surface * ceil_div(c, 16) + 64)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    return m, LayerContext(m, {SDP: 0}), (line, surface, surface * ceil_div(c, 16) + 64)


@pytest.mark.parametrize("batch,winograd", [(1, 0), (3, 0), (1, 1)])
def test_on_the_fly_int(batch, winograd):
    rng = np.random.default_rng(batch)
    shape = (20, 4, 4)
    acc = rng.integers(-(1 << 20), 1 << 20, size=(batch,) + shape).astype(np.int32)
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=300, mul_bypass=0,
              mul_operand=3, mul_shift=8)
    m, ctx, (line, surface, bstride) = _flying_machine(shape, batch, winograd, x1)
    process_sdp(ctx, acc if batch > 1 else acc[0])
    assert ctx.counters  # the saturation counter at least
    for n in range(batch):
        got = read_feature(m.memory(1), DST + n * bstride, shape, "int16", 32, line, surface)
        want = np.vectorize(lambda v: out_cvt(x_stage(int(v), 300, 3, alu_bypass=0, alu_algo=2,
                                                      mul_bypass=0, mul_shift=8), 0, 1, 0,
                                              16)[0])(acc[n])
        assert np.array_equal(got, want)


def test_on_the_fly_fp32_input():
    """fp16 processing takes CACC's fp32 patterns as they are (no fp16 rounding first)."""
    shape = (16, 1, 2)
    vals = np.full(shape, 1.0 + 2.0 ** -12, dtype=np.float32)  # not representable in fp16
    m, ctx, (line, surface, _) = _flying_machine(
        shape, x1=dict(bypass=0, mul_bypass=0, mul_operand=0x6400), proc="fp16", out="fp16")
    process_sdp(ctx, vals.view(np.uint32))
    got = read_feature(m.memory(1), DST, shape, "fp16", 32, line, surface)
    want = (vals * np.float32(1024.0)).astype(np.float16).view(np.uint16)
    assert np.array_equal(got, want)


def test_on_the_fly_shape_mismatch():
    m, ctx, _ = _flying_machine((16, 2, 2))
    with pytest.raises(ConfigurationError, match="CACC cube"):
        process_sdp(ctx, np.zeros((16, 2, 3), dtype=np.int32))


def test_flying_layer_needs_rdma_only_for_memory_operands():
    from sim.chains import sdp_chain
    m, _, _ = _flying_machine((16, 2, 2))
    assert SDP_RDMA not in sdp_chain(m)
    put(m, "NVDLA_SDP.D_DP_BS_CFG_0", bs_bypass=0, bs_alu_bypass=0, bs_mul_bypass=1,
        bs_relu_bypass=1)
    # (the group is armed: inspect the producer group, which is the consumer one here)
    put(m, "NVDLA_SDP.D_DP_BS_ALU_CFG_0", bs_alu_src=1)
    assert SDP_RDMA in sdp_chain(m)


EW_TRACES = ["sdp_3x3x33_ew_int8_reg_0", "sdp_3x3x33_ew_le_lin_int8",
             "sdp_3x3x33_ew_le_exp_int8", "sdp_3x3x32_ew_lo_lin_int8"]


@pytest.mark.parametrize("name", EW_TRACES)
def test_nv_small_ew_traces(shared_dir, name):
    """NVIDIA's nv_small EW/LUT traces (disabled in nv_small's own test list) program the Y
    stage, which nv_small lacks: a clear error there; with 8-byte atoms and a Y stage
    (nv_small_256_full) their expected CRCs match."""
    from sim.trace.player import run_trace
    folder = shared_dir / "nvdla-traces" / "nv_small" / name
    small = run_trace(folder, config="nv_small")
    assert small.status == "error" and "nv_small has no sdp ew" in small.message
    result = run_trace(folder, config="nv_small_256_full")
    assert result.status == "pass", result.message


def test_chunked_pipeline_matches(monkeypatch):
    """Large cubes run in chunks on several threads: same output and counters."""
    import sim.sdp.pipeline as pipeline

    rng = np.random.default_rng(9)
    cube = rng.integers(-3000, 3000, size=(40, 5, 7)).astype(np.int16)
    bs = rng.integers(-500, 500, size=(2, 40, 5, 7)).astype(np.int16)
    kw = dict(in_prec="int16", out_prec="int16",
              x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1,
                      mul_shift=6),
              y=dict(bypass=0, lut_bypass=0),
              lut=dict(lo_start=-2000, lo_index_select=4, le_start=-5000, le_function=1,
                       le_index_select=8),
              le=list(range(65)), lo=[3 * k - 300 for k in range(257)],
              operands={"bs": dict(array=bs, use="both", size=2, per_element=True)})
    one, m1 = run_sdp("nv_full", cube, **kw)
    monkeypatch.setattr(pipeline, "PARALLEL_MIN", 1)
    monkeypatch.setattr(jit, "cores", lambda: 3)
    monkeypatch.setattr(pipeline, "BLOCK", 4 * 5 * 7)  # ten blocks of four channels
    many, m2 = run_sdp("nv_full", cube, **kw)
    assert np.array_equal(one, many)
    for name in ("D_PERF_OUT_SATURATION_0", "D_PERF_LUT_LO_HIT_0", "D_PERF_LUT_UFLOW_0",
                 "D_PERF_LUT_OFLOW_0", "D_PERF_LUT_HYBRID_0"):
        assert counter(m1, name) == counter(m2, name)


def test_output_to_pdp_int16():
    """OUTPUT_DST=PDP: the PDP pools the SDP's int16 output (int16 processing, 10 channels)."""
    rng = np.random.default_rng(4)
    shape = (10, 4, 4)
    cube = rng.integers(-128, 128, size=shape).astype(np.int16)
    x1 = dict(bypass=0, mul_bypass=0, mul_operand=300)
    _, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16", x1=x1, go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", output_dst=1)
    pdp_dst = 0x8800_0000
    regs = {
        "D_DATA_CUBE_IN_WIDTH_0": 3, "D_DATA_CUBE_IN_HEIGHT_0": 3, "D_DATA_CUBE_IN_CHANNEL_0": 9,
        "D_DATA_CUBE_OUT_WIDTH_0": 1, "D_DATA_CUBE_OUT_HEIGHT_0": 1,
        "D_DATA_CUBE_OUT_CHANNEL_0": 9, "D_OPERATION_MODE_CFG_0": 1,  # max, on the fly
        "D_POOLING_KERNEL_CFG_0": 1 | 1 << 8 | 1 << 16 | 1 << 20,  # 2x2, stride 2
        "D_DST_BASE_ADDR_LOW_0": pdp_dst, "D_DST_LINE_STRIDE_0": 2 * 32,
        "D_DST_SURFACE_STRIDE_0": 4 * 32, "D_DST_RAM_CFG_0": 1, "D_DATA_FORMAT_0": 1,
    }
    for name, value in regs.items():
        m.write_reg(f"NVDLA_PDP.{name}", value)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.run()
    sdp = np.vectorize(lambda v: out_cvt(x_stage(int(v), 0, 300, mul_bypass=0), 0, 1, 0,
                                         16)[0])(cube)
    want = sdp.reshape(10, 2, 2, 2, 2).max(axis=(2, 4))
    got = read_feature(m.memory(1), pdp_dst, (10, 2, 2), "int16", 32, 64, 128)
    assert np.array_equal(got, want)
    assert m.interrupt_set("SDP", 0) and m.interrupt_set("PDP", 0)
    assert not m.read_array(DST, 64).any()  # the SDP itself wrote nothing


def test_output_to_pdp_converts_no_precision():
    """The programming guide forbids a precision conversion on the way to the PDP."""
    cube = np.zeros((8, 2, 2), np.int8)
    _, m = run_sdp("nv_full", cube, in_prec="int8", out_prec="int16", go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", output_dst=1)
    for name, value in {"D_DATA_CUBE_IN_WIDTH_0": 1, "D_DATA_CUBE_IN_HEIGHT_0": 1,
                        "D_DATA_CUBE_IN_CHANNEL_0": 7, "D_DATA_CUBE_OUT_CHANNEL_0": 7,
                        "D_OPERATION_MODE_CFG_0": 1,  # max, on the fly
                        "D_POOLING_KERNEL_CFG_0": 1 | 1 << 8 | 1 << 16 | 1 << 20,  # 2x2, /2
                        "D_DST_BASE_ADDR_LOW_0": 0x8800_0000, "D_DST_LINE_STRIDE_0": 32,
                        "D_DST_SURFACE_STRIDE_0": 32, "D_DST_RAM_CFG_0": 1,
                        "D_DATA_FORMAT_0": 1}.items():
        m.write_reg(f"NVDLA_PDP.{name}", value)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    with pytest.raises(ConfigurationError, match="sdp.pdp_same_precision"):
        m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
        m.run()


def test_unused_strides_are_ignored():
    """A 1x1 cube moves as one run of atoms; a single line or surface ignores its stride."""
    cube = np.arange(40, dtype=np.int8).reshape(40, 1, 1)
    _, m = run_sdp("nv_small", cube, in_prec="int8", out_prec="int8", go=False)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_LINE_STRIDE_0", 0x1234567)
    m.write_reg("NVDLA_SDP.D_DST_LINE_STRIDE_0", 0x7654321)
    m.write_reg("NVDLA_SDP.D_DST_SURFACE_STRIDE_0", 8)  # 1x1 output: surface-packed (one atom)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_SURFACE_STRIDE_0", 0x999)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.run()
    assert np.array_equal(m.read_array(DST, 40).view(np.int8), cube.ravel())


def test_one_by_one_output_must_be_surface_packed():
    """A 1x1xC output with a surface stride other than one atom stops (sdp.one_by_one_packed)."""
    cube = np.arange(40, dtype=np.int8).reshape(40, 1, 1)
    _, m = run_sdp("nv_small", cube, in_prec="int8", out_prec="int8", go=False)
    m.write_reg("NVDLA_SDP.D_DST_SURFACE_STRIDE_0", 0x1000)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    with pytest.raises(ConfigurationError, match="sdp.one_by_one_packed"):
        m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
        m.run()


@pytest.mark.parametrize("field,value,message", [
    ("proc_precision", 1, "PROC_PRECISION \\(int16\\) differs"),
    ("flying_mode", 1, "FLYING_MODE differs"),
])
def test_rdma_sdp_disagree(field, value, message):
    _, m = run_sdp("nv_full", CUBE8, in_prec="int8", out_prec="int8", go=False)
    fields = dict(flying_mode=0, in_precision=0, proc_precision=0, out_precision=0)
    fields[field] = value
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", **fields)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    with pytest.raises(ConfigurationError, match=message):
        m.run()
