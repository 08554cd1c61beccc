"""SDP fp16 datapath: X stages in fp32, NaN/Inf inputs with and without NAN_TO_ZERO, the
SDP_RDMA NaN/Inf input counters, the NaN output counter and fp16/int16 outputs."""

import numpy as np
import pytest

from sim.program.sdp import counter, run_sdp

from .reference import fp16_input, is_fp16_inf, is_fp16_nan, round_half_away, to_fp16_bits

SHAPE = (12, 2, 3)
RNG = np.random.default_rng(11)
NAN, NAN2, INF, NINF = 0x7E00, 0xFC01, 0x7C00, 0xFC00


def _h(x) -> int:
    return int(np.array(x, dtype=np.float16).view(np.uint16))


def _cube(specials=True):
    vals = RNG.uniform(-50, 50, size=SHAPE).astype(np.float16).view(np.uint16)
    if specials:
        vals[0, 0, 0], vals[1, 0, 1], vals[2, 1, 2], vals[3, 1, 0] = NAN, INF, NINF, NAN2
        vals[4, 0, 0] = 0x0001  # smallest denormal
        vals[5, 1, 1] = 0x7BFF  # 65504
    return vals


CASES = [
    # name, X1 settings, X2 settings, fp32 reference on finite inputs
    ("pass", None, None, lambda x: x),
    ("alu sum reg", dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=_h(1.5)), None,
     lambda x: x + np.float32(1.5)),
    ("alu max reg", dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=_h(-2.0)), None,
     lambda x: np.maximum(x, np.float32(-2.0))),
    ("alu min, mul", dict(bypass=0, alu_bypass=0, alu_algo=1, alu_operand=_h(10.0)),
     dict(bypass=0, mul_bypass=0, mul_operand=_h(-0.75)),
     lambda x: np.minimum(x, np.float32(10)) * np.float32(-0.75)),
    ("prelu", dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=_h(0.125)), None,
     lambda x: np.where(x >= 0, x, x * np.float32(0.125))),
    ("relu", None, dict(bypass=0, relu_bypass=0), lambda x: np.maximum(x, np.float32(0))),
    ("mul overflow", dict(bypass=0, mul_bypass=0, mul_operand=_h(4096.0)), None,
     lambda x: x * np.float32(4096)),
]


@pytest.mark.parametrize("name,x1,x2,ref", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("flush", [0, 1])
def test_fp16_layer(name, x1, x2, ref, flush):
    cube = _cube()
    out, m = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", x1=x1, x2=x2,
                     nan_to_zero=flush)
    nan = is_fp16_nan(cube)
    x = fp16_input(cube)
    if flush:
        x = np.where(nan, np.float32(0), x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = to_fp16_bits(ref(x))
    finite = ~nan | bool(flush)
    assert np.array_equal(out[finite], want[finite])
    if not flush:
        # a NaN input propagates bit for bit through every stage here
        assert np.array_equal(out[nan], cube[nan])
    # counters: SDP_RDMA counts raw inputs (before the flush); the padding lanes are zero
    assert counter(m, "D_STATUS_NAN_INPUT_NUM_0", "NVDLA_SDP_RDMA") == int(nan.sum())
    assert counter(m, "D_STATUS_INF_INPUT_NUM_0", "NVDLA_SDP_RDMA") == int(is_fp16_inf(cube).sum())
    assert counter(m, "D_STATUS_NAN_OUTPUT_NUM_0") == int(is_fp16_nan(out).sum())
    assert counter(m, "D_STATUS_NAN_OUTPUT_NUM_0") == (0 if flush else int(nan.sum()))
    saturated = int(np.count_nonzero(out & 0x7FFF == 0x7BFF))
    assert counter(m, "D_PERF_OUT_SATURATION_0") == saturated


def test_inf_becomes_fp32_max():
    """fp16 Inf reads as +-3.40282e38: halving it still overflows fp16 to +-65504."""
    cube = np.array([INF, NINF, _h(2.0)] * 4, dtype=np.uint16).reshape(12, 1, 1)
    out, _ = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16",
                     x1=dict(bypass=0, mul_bypass=0, mul_operand=_h(2.0 ** -14)))
    vals = out.view(np.float16).ravel()[:3]
    assert vals[0] == 65504 and vals[1] == -65504 and vals[2] == np.float16(2.0 ** -13)


def test_nan_operand_flush():
    """A NaN operand becomes +0 with NAN_TO_ZERO (ALU: x + 0 = x), else propagates."""
    cube = np.full((4, 1, 2), _h(3.0), dtype=np.uint16)
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=NAN)
    out, _ = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", x1=x1, nan_to_zero=1)
    assert np.all(out == _h(3.0))
    out, m = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", x1=x1, nan_to_zero=0)
    assert np.all(is_fp16_nan(out))
    assert counter(m, "D_STATUS_NAN_OUTPUT_NUM_0") == 16 * 2  # whole atoms, padding included


def test_fp16_to_int16():
    """fp16 processing with int16 output: round half away from zero, saturate."""
    vals = [2.5, -2.5, 0.49, 40000.0, -40000.0, 7.0, -0.5, 1.5]
    cube = np.array(vals * 2, dtype=np.float16).view(np.uint16).reshape(16, 1, 1)
    out, _ = run_sdp("nv_full", cube, in_prec="fp16", out_prec="int16")
    want = [max(-32768, min(32767, round_half_away(v))) for v in vals] * 2
    assert out.ravel().tolist() == want


def test_fp16_per_element_operands():
    cube = _cube(specials=False)
    mul = RNG.uniform(-4, 4, size=SHAPE).astype(np.float16)
    alu = RNG.uniform(-4, 4, size=SHAPE).astype(np.float16)
    both = np.stack([alu.view(np.uint16), mul.view(np.uint16)])
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1)
    out, _ = run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", x1=x1,
                     operands={"bs": dict(array=both, use="both", size=2, per_element=True)})
    want = to_fp16_bits((fp16_input(cube) + alu.astype(np.float32)) * mul.astype(np.float32))
    assert np.array_equal(out, want)
