"""A standalone SDP layer whose stages are elementwise computes on its elements in the order
of their atoms (sim.sdp.engine.in_atom_order): the output bytes, the counters and the layer's
memory accesses are those of the (C, H, W) path, which the other layers keep."""

import numpy as np
import pytest

from sim.program.sdp import DST, counter, run_sdp
from sim.sdp import engine

SUM, MAX = 2, 0  # ALU algorithms
DECIDE = engine.in_atom_order
ADD_ELEMENTS = dict(bypass=0, alu_bypass=0, alu_algo=SUM, alu_src=1, relu_bypass=1)
ADD_RELU = dict(ADD_ELEMENTS, relu_bypass=0)
SATURATING = dict(bypass=0, alu_bypass=1, mul_bypass=0, mul_operand=30000, relu_bypass=1)


def _values(rng, shape, dtype):
    """Integers over the dtype's range; fp16: quarters, NaNs and infinities among them."""
    if dtype == np.float16:
        values = (rng.integers(-4000, 4000, shape) / 4).astype(np.float16)
        values.ravel()[:3] = (np.nan, np.inf, -np.inf)
        return values
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _operand(rng, c, h, w, dtype, use="alu", per_element=True):
    shape = (c, h, w) if per_element else (c,)
    return dict(use=use, per_element=per_element, array=_values(rng, shape, dtype))


# (config, precision, channels, height, width, x1, x1 operand, x2, x2 operand, cvt, atoms)
CASES = [
    ("nv_large", "int8", 64, 9, 11, ADD_ELEMENTS, "element", None, None, (0, 1, 0), True),
    ("nv_large", "int8", 256, 14, 14, ADD_RELU, "element", None, None, (3, 5, 2), True),
    ("nv_large", "int8", 40, 3, 5, ADD_RELU, "element", None, None, (-7, 3, 1), True),
    ("nv_large", "int8", 64, 1, 1, ADD_ELEMENTS, "element", None, None, (0, 1, 0), True),
    ("nv_full", "int16", 16, 3, 3, ADD_ELEMENTS, "element", SATURATING, None, (0, 1, 0), True),
    ("nv_small", "int8", 16, 5, 7, dict(ADD_RELU, alu_algo=MAX), "element", None, None,
     (0, 1, 0), True),
    ("nv_full", "int16", 48, 4, 6, ADD_RELU, "element", None, None, (100, 3, 4), True),
    ("nv_full", "int8", 64, 5, 5, ADD_ELEMENTS, "element",
     dict(bypass=0, alu_bypass=1, mul_bypass=0, mul_src=0, mul_operand=3, mul_shift=1,
          relu_bypass=1), None, (0, 1, 0), True),  # a register operand too
    ("nv_full", "fp16", 48, 5, 7, ADD_RELU, "element", None, None, (0, 1, 0), True),
    ("nv_full", "fp16", 16, 2, 3, ADD_ELEMENTS, "element",
     dict(bypass=0, alu_bypass=1, mul_bypass=0, mul_operand=0x7BFF, relu_bypass=1), None,
     (0, 1, 0), True),  # fp16 infinities out
    ("nv_large", "int8", 96, 4, 5, ADD_RELU, "element16", None, None, (0, 1, 0), True),
    ("nv_large", "int8", 64, 5, 5, ADD_ELEMENTS, "channel", None, None, (0, 1, 0), False),
    ("nv_large", "int8", 64, 5, 5, ADD_ELEMENTS, "element", ADD_ELEMENTS, "channel",
     (0, 1, 0), False),
    ("nv_large", "int8", 64, 5, 5, ADD_ELEMENTS, "both", None, None, (0, 1, 0), False),
]


def _run(case, in_atoms: bool, monkeypatch):
    config, prec, c, h, w, x1, x1_op, x2, x2_op, cvt, _ = case
    rng = np.random.default_rng(c * h * w)
    dtype = {"int8": np.int8, "int16": np.int16, "fp16": np.float16}[prec]
    cube = _values(rng, (c, h, w), dtype)
    operands = {}
    for name, kind in (("bs", x1_op), ("bn", x2_op)):
        if kind == "both":
            spec = _operand(rng, c, h, w, dtype, "both")
            spec["array"] = np.stack([spec["array"], _operand(rng, c, h, w, dtype)["array"]])
            operands[name] = spec
        elif kind == "element16":  # two-byte values for an int8 layer
            operands[name] = dict(_operand(rng, c, h, w, np.int16), size=2)
        elif kind is not None:
            operands[name] = _operand(rng, c, h, w, dtype, per_element=kind == "element")
    decided = []

    def spy(layer, cp, atom_bytes):
        decided.append(DECIDE(layer, cp, atom_bytes))
        return decided[-1] and in_atoms

    monkeypatch.setattr(engine, "in_atom_order", spy)
    out, m = run_sdp(config, cube, in_prec=prec, out_prec=prec, x1=x1, x2=x2, cvt=cvt,
                     operands=operands)
    memory = m.memory(1).read(DST - 256, 2 * cube.nbytes + 512)
    counters = [counter(m, name) for name in ("D_PERF_OUT_SATURATION_0",
                                               "D_STATUS_NAN_OUTPUT_NUM_0")]
    counters += [counter(m, name, "NVDLA_SDP_RDMA") for name in (
        "D_STATUS_NAN_INPUT_NUM_0", "D_STATUS_INF_INPUT_NUM_0")]
    return out, memory, counters, decided


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}x{c[3]}x{c[4]}-{c[6]}"
                                              f"{'-' + c[8] if c[8] else ''}" for c in CASES])
def test_atom_order_gives_the_bytes_and_counters_of_the_planar_path(case, monkeypatch):
    atoms = _run(case, True, monkeypatch)
    planar = _run(case, False, monkeypatch)
    assert atoms[3] == planar[3] == [case[-1]]
    np.testing.assert_array_equal(atoms[0], planar[0])
    assert atoms[1] == planar[1]
    assert atoms[2] == planar[2]


def test_some_case_saturates():
    """The table reaches the saturation counter (the case multiplying by 30000)."""
    case = next(c for c in CASES if c[7] is SATURATING)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _run(case, True, monkeypatch)[2][0] > 0
