"""SDP Y stage and LUT in fp16 precision (fp32 core, fp17 interpolation), and one-byte
per-channel operands at int16 precision (16-byte operand atoms)."""

import numpy as np
import pytest

from sim.program.sdp import OPERAND_BASE, counter, put, run_sdp

from .reference import fp16_input, out_cvt, to_fp16_bits, x_stage

RNG = np.random.default_rng(21)


def _f32(x):
    return int(np.array(x, dtype=np.float32).view(np.uint32))


def _h(x):
    return int(np.array(x, dtype=np.float16).view(np.uint16))


@pytest.mark.parametrize("name,y,ref", [
    ("mul reg", dict(bypass=0, mul_bypass=0, mul_operand=_f32(-1.5)),
     lambda x, a: x * np.float32(-1.5)),
    ("alu sum reg", dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=_f32(0.25)),
     lambda x, a: x + np.float32(0.25)),
    ("prelu then max", dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=_f32(0.5),
                            alu_bypass=0, alu_algo=0, alu_operand=_f32(-3.0)),
     lambda x, a: np.maximum(np.where(x >= 0, x, x * np.float32(0.5)), np.float32(-3.0))),
    ("alu min mem", dict(bypass=0, alu_bypass=0, alu_algo=1, alu_src=1),
     lambda x, a: np.minimum(x, a)),
])
def test_y_fp16(name, y, ref):
    shape = (16, 2, 2)
    cube = RNG.uniform(-20, 20, size=shape).astype(np.float16).view(np.uint16)
    alu = RNG.uniform(-20, 20, size=shape).astype(np.float16)
    operands = {}
    if y.get("alu_src"):
        operands["ew"] = dict(array=alu.view(np.uint16), use="alu", size=2, per_element=True)
    out, _ = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", y=y, operands=operands)
    want = to_fp16_bits(ref(fp16_input(cube), alu.astype(np.float32)))
    assert np.array_equal(out, want)


def test_lut_fp16_exact_points():
    """fp16 LUT: LO linear (start 0, select -2: entry = x * 4) with LE (exponent mode) always
    underflowing; values on entries, between entries, and both extrapolations (LO chosen by
    the underflow and the hybrid priorities)."""
    le = [_h(k * 0.5) for k in range(65)]
    lo = [_h(-k) for k in range(257)]
    lut = dict(le_function=0, le_start=_f32(1e6), le_index_offset=0xFE,  # offset -2
               lo_start=_f32(0.0), lo_index_select=0xFE, lo_end=_f32(64.0),
               le_end=_f32(1e9), lo_slope_oflow_scale=_h(2.0), lo_slope_uflow_scale=_h(3.0),
               hybrid_priority=1, uflow_priority=1, oflow_priority=1)
    xs = [1.0, 2.5, 10.25, 63.0, 70.0, -2.0, 0.125, 31.5, 40.0, 5.0, 6.125, 50.0, 0.5, 3.0,
          12.0, 100.0]
    cube = np.array(xs, dtype=np.float16).view(np.uint16).reshape(16, 1, 1)
    out, m = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16",
                     y=dict(bypass=0, lut_bypass=0), lut=lut, le=le, lo=lo)
    want = []
    for x in xs:
        if x <= 0:  # LO underflow (LO priority): lo[0] + (x - start) * 3
            want.append(0 + x * 3.0)
        elif x * 4 >= 256:  # LO overflow: lo[256] + (x - end) * 2
            want.append(-256 + (x - 64.0) * 2.0)
        else:  # LO hit (hybrid priority LO): interpolate between -k and -(k+1)
            want.append(-x * 4)
    got = out.view(np.float16).astype(np.float64).ravel().tolist()
    assert got == want
    assert counter(m, "D_PERF_LUT_UFLOW_0") == sum(x <= 0 for x in xs)
    assert counter(m, "D_PERF_LUT_OFLOW_0") == sum(x * 4 >= 256 for x in xs)
    assert counter(m, "D_PERF_LUT_LO_HIT_0") == sum(0 < x * 4 < 256 for x in xs)


def test_one_byte_per_channel_operand_int16():
    """int16 processing with a one-byte per-channel BRDMA stream: 16 operands per 16 bytes."""
    shape = (24, 2, 2)
    cube = RNG.integers(-1000, 1000, size=shape).astype(np.int16)
    mul = RNG.integers(-128, 128, size=32).astype(np.int8)
    _, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16",
                   x1=dict(bypass=0, mul_bypass=0, mul_src=1, mul_shift=3), go=False)
    m.load(OPERAND_BASE["bs"], mul.view(np.uint8))
    put(m, "NVDLA_SDP_RDMA.D_BRDMA_CFG_0", brdma_disable=0, brdma_data_use=0, brdma_data_size=0,
        brdma_data_mode=0, brdma_ram_type=1)
    m.write_reg("NVDLA_SDP_RDMA.D_BS_BASE_ADDR_LOW_0", OPERAND_BASE["bs"])
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.run()
    from sim.dma import read_feature
    from sim.program.sdp import DST
    got = read_feature(m.memory(1), DST, shape, "int16", 32, 2 * 32, 4 * 32)
    want = np.array([[[out_cvt(x_stage(int(cube[c, h, w]), 0, int(mul[c]), mul_bypass=0,
                                       mul_shift=3), 0, 1, 0, 16)[0] for w in range(2)]
                      for h in range(2)] for c in range(24)])
    assert np.array_equal(got, want)
