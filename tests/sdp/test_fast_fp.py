"""The fp16 SDP's float32 pass (sim.sdp.fast_fp) gives the rules' bits and counters.

Each layer runs twice, with the float32 pass and with the rules on every
element, on inputs crowded with what float32 reads differently: NaN, Inf,
denormals, zeros of both signs, values whose products and sums underflow or
overflow fp32 and fp16.
"""

import numpy as np
import pytest

from sim.program.sdp import counter, run_sdp
from sim.sdp import fast_fp

COUNTERS = ("D_PERF_OUT_SATURATION_0", "D_STATUS_NAN_OUTPUT_NUM_0",
            "D_STATUS_NAN_INPUT_NUM_0", "D_STATUS_INF_INPUT_NUM_0")


def f16(x) -> int:
    return int(np.array(x, np.float16).view(np.uint16))


def f32(x) -> int:
    return int(np.array(x, np.float32).view(np.uint32))


def crowded_fp16(rng, shape) -> np.ndarray:
    """fp16 patterns over the whole exponent range, a fifth of them zeros, Inf, NaN or
    denormals."""
    n = int(np.prod(shape))
    bits = ((rng.integers(0, 2, n) << 15) | (rng.integers(1, 31, n) << 10)
            | rng.integers(0, 1024, n))
    odd = rng.random(n) < 0.2
    bits[odd] = rng.choice([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFD01, 0x0001, 0x83FF],
                           n)[odd]
    return bits.astype(np.uint16).reshape(shape)


def negated(cube: np.ndarray, rng) -> np.ndarray:
    """``-cube`` in half the places (exact zero sums), ``cube`` in the others."""
    flip = rng.random(cube.shape) < 0.5
    return np.where(flip, cube ^ 0x8000, cube).astype(np.uint16)


LAYERS = {
    "x1 sum+mul+relu, x2 per-element mul, y mul+sum": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=f16(0.5), mul_bypass=0,
                mul_operand=f16(-300.0), relu_bypass=0),
        x2=dict(bypass=0, mul_bypass=0, mul_src=1),
        y=dict(bypass=0, mul_bypass=0, mul_operand=f32(1e-30), alu_bypass=0, alu_algo=2,
               alu_operand=f32(-1e-38))),
    "x1 max with -0, then relu": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=f16(-0.0), relu_bypass=0)),
    "x2 prelu": dict(x2=dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=f16(-2.0))),
    "y min with a memory operand": dict(y=dict(bypass=0, alu_bypass=0, alu_algo=1, alu_src=1)),
    "y max of the data and its negation": dict(
        y=dict(bypass=0, alu_bypass=0, alu_algo=0, alu_src=1), ew="negated"),
    "y mul into the fp32 underflow band": dict(
        y=dict(bypass=0, mul_bypass=0, mul_operand=f32(2.0 ** -120))),
    "y mul past the fp32 maximum": dict(
        y=dict(bypass=0, mul_bypass=0, mul_operand=f32(2.0 ** 118))),
    "fp16 output denormals": dict(
        y=dict(bypass=0, mul_bypass=0, mul_operand=f32(2.0 ** -12))),
    "fp16 output overflow": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=f16(1024.0))),
    "x2 sums cancelling to zero": dict(
        x2=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1), bn="negated"),
}


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("nan_to_zero", [0, 1])
def test_float32_pass_matches_the_rules(name, nan_to_zero, monkeypatch):
    rng = np.random.default_rng(len(name) + nan_to_zero)
    shape = (32, 6, 7)
    cube = crowded_fp16(rng, shape)
    spec = dict(LAYERS[name])
    operands = {}
    for unit, stage in (("bn", "x2"), ("ew", "y")):
        cfg = spec.get(stage, {})
        if cfg.get("mul_src") or cfg.get("alu_src"):
            values = negated(cube, rng) if spec.get(unit) == "negated" \
                else crowded_fp16(rng, shape)
            operands[unit] = dict(array=values, use="mul" if cfg.get("mul_src") else "alu",
                                  size=2, per_element=True)
        spec.pop(unit, None)
    kw = dict(in_prec="fp16", out_prec="fp16", nan_to_zero=nan_to_zero, operands=operands,
              **spec)
    fast, m_fast = run_sdp("nv_full", cube, **kw)
    monkeypatch.setattr(fast_fp, "applies", lambda *args: False)
    rules, m_rules = run_sdp("nv_full", cube, **kw)
    assert np.array_equal(fast, rules)
    for reg in COUNTERS:
        assert counter(m_fast, reg) == counter(m_rules, reg), reg
