"""SDP integer datapath: X1/X2 options, operands from registers and memory, the output
convertor and its saturation counter, against the reference of reference.py."""

import numpy as np
import pytest

from sim.program.sdp import counter, run_sdp

from .reference import out_cvt, x_stage

SHAPE = (20, 3, 5)  # channels not a multiple of the atom
RNG = np.random.default_rng(7)


def _cube(prec):
    info = np.iinfo(np.int8 if prec == "int8" else np.int16)
    lo, hi = (info.min, info.max) if prec == "int8" else (-3000, 3000)
    return RNG.integers(lo, hi + 1, size=SHAPE).astype(info.dtype)


def _operand(kind, per_element, size, shape=SHAPE):
    lo, hi = (-128, 127) if size == 1 else (-2000, 2000)
    dims = shape if per_element else shape[:1]
    if kind == "both":
        return RNG.integers(lo, hi + 1, size=(2,) + dims).astype(np.int8 if size == 1 else np.int16)
    return RNG.integers(lo, hi + 1, size=dims).astype(np.int8 if size == 1 else np.int16)


def _expand(arr, per_element):
    arr = np.asarray(arr, dtype=np.int64)
    return arr if per_element else arr[:, None, None] * np.ones(SHAPE, dtype=np.int64)


# (name, in precision, out precision, X1 settings, X2 settings, memory operands, cvt)
CASES = [
    ("bypass int8", "int8", "int8", None, None, {}, (0, 1, 0)),
    ("x1 alu sum reg shift", "int8", "int8",
     dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=-37, alu_shift=3), None, {},
     (0, 1, 3)),
    ("x1 alu max reg", "int8", "int8",
     dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=5), None, {}, (0, 1, 0)),
    ("x1 alu min reg", "int16", "int16",
     dict(bypass=0, alu_bypass=0, alu_algo=1, alu_operand=-100), None, {}, (0, 1, 0)),
    ("x1 mul reg shift", "int8", "int8",
     dict(bypass=0, mul_bypass=0, mul_operand=-300, mul_shift=6), None, {}, (0, 1, 0)),
    ("x1 prelu", "int8", "int8",
     dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=77, mul_shift=5), None, {}, (0, 1, 0)),
    ("x1 relu, x2 mul", "int16", "int16", dict(bypass=0, relu_bypass=0),
     dict(bypass=0, mul_bypass=0, mul_operand=1234, mul_shift=9), {}, (10, 3, 4)),
    ("shift without multiplier", "int8", "int8", dict(bypass=0, mul_shift=2), None, {},
     (0, 1, 0)),
    ("bs per-channel alu mem", "int8", "int8",
     dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, alu_shift=1), None,
     {"bs": ("alu", False, 1)}, (0, 1, 1)),
    ("bs per-element mul mem 2 bytes", "int8", "int16",
     dict(bypass=0, mul_bypass=0, mul_src=1, mul_shift=4), None,
     {"bs": ("mul", True, 2)}, (0, 1, 0)),
    ("bn both per-element", "int16", "int16", None,
     dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1, mul_shift=8,
          relu_bypass=0),
     {"bn": ("both", True, 2)}, (-5, 2, 1)),
    ("bs both per-channel int8 bytes, bn max", "int8", "int8",
     dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1, mul_shift=5),
     dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=-20),
     {"bs": ("both", False, 1)}, (3, -2, 2)),
    ("int16 in, fp16 out", "int16", "fp16",
     dict(bypass=0, mul_bypass=0, mul_operand=3), None, {}, (0, 1, 0)),
    ("saturating convertor", "int16", "int16",
     dict(bypass=0, mul_bypass=0, mul_operand=2000), None, {}, (0, 1, 0)),
]


@pytest.mark.parametrize("name,in_prec,out_prec,x1,x2,mem,cvt", CASES,
                         ids=[c[0] for c in CASES])
def test_int_layer(name, in_prec, out_prec, x1, x2, mem, cvt):
    cube = _cube(in_prec)
    operands, expanded = {}, {}
    for dma, (use, per_element, size) in mem.items():
        arr = _operand(use, per_element, size)
        operands[dma] = dict(array=arr, use=use, size=size, per_element=per_element)
        comps = arr if use == "both" else arr[None]
        full = [_expand(comp, per_element) for comp in comps]
        if use == "both":
            expanded[dma] = {"alu": full[0], "mul": full[1]}
        else:
            expanded[dma] = {use: full[0]}
    out, m = run_sdp("nv_full", cube, in_prec=in_prec, out_prec=out_prec, x1=x1, x2=x2, cvt=cvt,
                     operands=operands)

    want = np.zeros(SHAPE, dtype=np.int64)
    sat_count = 0
    bits = 8 if out_prec == "int8" else 16
    for idx in np.ndindex(SHAPE):
        v = int(cube[idx])
        for dma, stage in (("bs", x1), ("bn", x2)):
            if stage is None:
                continue
            ops = expanded.get(dma, {})
            settings = {k: stage.get(k, d) for k, d in (
                ("alu_bypass", 1), ("alu_algo", 0), ("alu_shift", 0), ("mul_bypass", 1),
                ("prelu", 0), ("mul_shift", 0), ("relu_bypass", 1))}
            alu = int(ops["alu"][idx]) if "alu" in ops and stage.get("alu_src") else \
                stage.get("alu_operand", 0)
            mul = int(ops["mul"][idx]) if "mul" in ops and stage.get("mul_src") else \
                stage.get("mul_operand", 0)
            v = x_stage(v, alu, mul, **settings)
        if out_prec == "fp16":
            want[idx] = v * cvt[1]  # exact integers below 2048 here
        else:
            want[idx], flag = out_cvt(v, cvt[0], cvt[1], cvt[2], bits)
            sat_count += flag
    if out_prec == "fp16":
        got = out.view(np.float16).astype(np.float64)
        assert np.array_equal(got, np.clip(want, -65504, 65504).astype(np.float16))
    else:
        assert np.array_equal(out.astype(np.int64), want)
        # pad lanes are counted too: compare only when the padding computes to no saturation
        assert counter(m, "D_PERF_OUT_SATURATION_0") >= sat_count
        if name == "saturating convertor":
            assert sat_count > 0


def test_saturation_counter_exact():
    """Every element saturates at the int17 stage; padding lanes (zero input) do not."""
    cube = np.full((8, 2, 2), 100, dtype=np.int16)  # 8 channels: half an int16 atom
    out, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16",
                     x1=dict(bypass=0, mul_bypass=0, mul_operand=30000), cvt=(0, 1, 0))
    assert np.all(out == 32767)
    assert counter(m, "D_PERF_OUT_SATURATION_0") == 8 * 2 * 2


def test_nv_small_int8_layer():
    """8-byte atoms: the same arithmetic with nv_small's memory layout."""
    cube = _cube("int8")
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=9, mul_bypass=0, mul_operand=-3,
              mul_shift=1, relu_bypass=0)
    out, _ = run_sdp("nv_small", cube, in_prec="int8", out_prec="int8", x1=x1)
    want = np.vectorize(lambda v: out_cvt(x_stage(int(v), 9, -3, alu_bypass=0, alu_algo=2,
                                                  mul_bypass=0, mul_shift=1, relu_bypass=0),
                                          0, 1, 0, 8)[0])(cube)
    assert np.array_equal(out, want)
