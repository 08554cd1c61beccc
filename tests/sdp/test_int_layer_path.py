"""The SDP's integer layer path (sim.sdp.stages.int_path_applies) gives the rules' bits and
saturation counts.

Each layer runs twice: on the layer path (signed values with bounds, int32 where they
fit, the convertor's input clipped to its window) and on the per-stage word path every
other layer takes.  Inputs span their whole range (int8/int16 from memory, int32 from
CACC), so clips, ReLU, saturations, both signs of the rounding and the window's edges
are all met.
"""

import itertools

import numpy as np
import pytest

from sim.num import sdp as num_sdp
from sim.program.sdp import counter, run_sdp
from sim.sdp import pipeline, stages
from sim.sdp.engine import padded_channels

RNG_SEED = 20261126
SHAPE = (40, 5, 7)  # channels not a multiple of the atom
NV_FULL_ATOM = 32


def _int_cube(rng, precision: str) -> np.ndarray:
    info = np.iinfo(np.int8 if precision == "int8" else np.int16)
    cube = rng.integers(info.min, info.max + 1, SHAPE)
    cube.flat[:4] = [info.min, info.max, 0, -1]
    return cube.astype(info.dtype)


def _operand(rng, per_element: bool, size: int, use: str) -> np.ndarray:
    info = np.iinfo(np.int8 if size == 1 else np.int16)
    dims = SHAPE if per_element else SHAPE[:1]
    if use == "both":
        dims = (2,) + dims
    return rng.integers(info.min, info.max + 1, dims).astype(info.dtype)


# name -> run_sdp arguments; "mem": {unit: (use, per_element, bytes)}
LAYERS = {
    "bias per channel, relu, int8 out": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=0),
        mem={"bs": ("alu", False, 2)}, cvt=(0, 25144, 15)),
    "element-wise sum, relu (a residual)": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=0),
        mem={"bs": ("alu", True, 1)}, cvt=(0, 31648, 15)),
    "sum without relu: both signs round": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, alu_shift=1),
        mem={"bs": ("alu", False, 2)}, cvt=(0, 18022, 9)),
    "max and min with registers, negative scale": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=-37),
        x2=dict(bypass=0, alu_bypass=0, alu_algo=1, alu_operand=90, relu_bypass=0),
        cvt=(-7, -300, 3)),
    "ALU shift past 15 saturates the operand": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, alu_shift=20),
        mem={"bs": ("alu", False, 2)}, cvt=(0, 1, 17)),
    "EQL in X adds": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=3, alu_operand=1000), cvt=(0, 1, 2)),
    "multiplier and shift, both per element": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1,
                mul_shift=6),
        mem={"bs": ("both", True, 2)}, cvt=(100, 3, 4)),
    "two stages, the second from memory per channel": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=-32768, mul_shift=24),
        x2=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1,
                mul_shift=14, relu_bypass=0),
        mem={"bn": ("both", False, 2)}, cvt=(0, 1, 0)),
    "shift without the multiplier": dict(x1=dict(bypass=0, mul_shift=3), cvt=(0, 5, 1)),
    "int32 saturation, then int17": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=32767),
        x2=dict(bypass=0, mul_bypass=0, mul_operand=32767, mul_shift=1), cvt=(0, 32767, 20)),
    "huge convertor shift": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=-29000), cvt=(0, -32768, 40)),
    "offset at the int32 edge": dict(x1=dict(bypass=0), cvt=(-(1 << 31), 2, 16)),
    "no stage": dict(cvt=(0, 1, 0)),
    "scale zero": dict(x1=dict(bypass=0, relu_bypass=0), cvt=(5, 0, 3)),
    # a shift that rounds every memory value to zero: the stage's result is one value
    "one value, then it saturates int17": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=1, mul_shift=24),
        x2=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=1000), cvt=(0, 32767, 0)),
    "one value, then a bias and scale per channel": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=-3, mul_shift=20),
        x2=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, mul_bypass=0, mul_src=1,
                mul_shift=3, relu_bypass=0),
        mem={"bn": ("both", False, 2)}, cvt=(0, 5, 1)),
}
PRECISIONS = [("int8", "int8"), ("int16", "int16"), ("int8", "int16"), ("int16", "fp16")]


def _run_both(monkeypatch, cube, in_prec, out_prec, spec, operands):
    kw = dict(in_prec=in_prec, out_prec=out_prec, x1=spec.get("x1"), x2=spec.get("x2"),
              cvt=spec["cvt"], operands=operands)
    fast, m_fast = run_sdp("nv_full", cube, **kw)
    with monkeypatch.context() as patch:
        patch.setattr(stages, "int_path_applies", lambda *args: False)
        rules, m_rules = run_sdp("nv_full", cube, **kw)
    return (fast, counter(m_fast, "D_PERF_OUT_SATURATION_0")), \
        (rules, counter(m_rules, "D_PERF_OUT_SATURATION_0"))


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("in_prec,out_prec", PRECISIONS)
def test_layer_path_matches_the_rules(name, in_prec, out_prec, monkeypatch):
    rng = np.random.default_rng(RNG_SEED + len(name))
    spec = LAYERS[name]
    operands = {}
    for unit, (use, per_element, size) in spec.get("mem", {}).items():
        size = 2 if in_prec == "int16" else size  # int16 operands take whole atoms
        operands[unit] = dict(array=_operand(rng, per_element, size, use), use=use, size=size,
                              per_element=per_element)
    taken = []
    real = stages.int_path_applies
    monkeypatch.setattr(stages, "int_path_applies",
                        lambda *args: taken.append(real(*args)) or taken[-1])
    fast, rules = _run_both(monkeypatch, _int_cube(rng, in_prec), in_prec, out_prec, spec,
                            operands)
    assert taken == [True]  # the layer path ran
    np.testing.assert_array_equal(fast[0], rules[0])
    assert fast[1] == rules[1]


def _captured_layer(monkeypatch, spec, rng):
    """An int8 layer's decoded registers and operands, as run_pipeline receives them."""
    seen = {}
    real = pipeline.run_pipeline

    def capture(layer, data, operands, lut, from_memory=True, **options):
        seen.update(layer=layer, operands=operands, lut=lut)
        return real(layer, data, operands, lut, from_memory, **options)

    operands = {unit: dict(array=_operand(rng, per_element, size, use), use=use, size=size,
                           per_element=per_element)
                for unit, (use, per_element, size) in spec.get("mem", {}).items()}
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "run_pipeline", capture)
        run_sdp("nv_full", _int_cube(rng, "int8"), in_prec="int8", out_prec="int8",
                x1=spec.get("x1"), x2=spec.get("x2"), cvt=spec["cvt"], operands=operands)
    return seen


def _cacc_cube(rng, channels: int) -> np.ndarray:
    """CACC's int32 cube: its whole range, and small sums."""
    n = channels * SHAPE[1] * SHAPE[2]
    cube = np.where(rng.random(n) < 0.5, rng.integers(-(1 << 31), 1 << 31, n),
                    rng.integers(-3000, 3000, n))
    cube[:4] = [-(1 << 31), (1 << 31) - 1, 0, -1]
    return cube.astype(np.int32).reshape(1, channels, SHAPE[1], SHAPE[2])


@pytest.mark.parametrize("name", LAYERS)
def test_layer_path_on_cacc_cubes(name, monkeypatch):
    """int32 input (on the fly from CACC), in one block and in many."""
    rng = np.random.default_rng(RNG_SEED + 7 * len(name))
    seen = _captured_layer(monkeypatch, LAYERS[name], rng)
    layer, operands, lut = seen["layer"], seen["operands"], seen["lut"]
    cube = _cacc_cube(rng, padded_channels(layer, NV_FULL_ATOM))
    assert_shortcut_matches(monkeypatch, layer, cube, operands, lut, "int_path_applies", False)


def assert_shortcut_matches(monkeypatch, layer, cube, operands, lut, chooser: str, refusal):
    """The pipeline's output and counters on CACC's ``cube`` are the same with its shortcut
    and with the general path (the shortcut refused: ``sim.sdp.stages.<chooser>`` made to
    return ``refusal``), in one block and in many."""
    for block in (pipeline.BLOCK, 37):
        monkeypatch.setattr(pipeline, "BLOCK", block)
        fast = pipeline.run_pipeline(layer, cube, operands, lut, from_memory=False)
        with monkeypatch.context() as patch:
            patch.setattr(stages, chooser, lambda *args: refusal)
            rules = pipeline.run_pipeline(layer, cube, operands, lut, from_memory=False)
        np.testing.assert_array_equal(fast[0], rules[0])
        assert fast[1] == rules[1]


def _datapath_values(rng, n: int) -> np.ndarray:
    values = np.concatenate([rng.integers(-(1 << 31), 1 << 31, n), rng.integers(-300, 300, n),
                             [-(1 << 31), (1 << 31) - 1, 0, -1, 1]])
    return values.astype(np.int64)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_x_block_matches_x_stage(dtype):
    """x_int_block on signed values of any width, with their dtype's or their own bounds,
    against x_stage on the 32-bit words; its bounds hold its results; its input stays."""
    rng = np.random.default_rng(RNG_SEED + np.dtype(dtype).itemsize)
    info = np.iinfo(dtype) if dtype != np.int64 else np.iinfo(np.int32)
    x = np.clip(_datapath_values(rng, 200), info.min, info.max).astype(dtype).reshape(1, 3, -1)
    operands = {"register": (np.int64(-0x8000), np.int64(0x7FFF)),
                "channel": (rng.integers(-(1 << 15), 1 << 15, (1, 3, 1)),
                            rng.integers(-(1 << 15), 1 << 15, (1, 3, 1))),
                "element": (rng.integers(-(1 << 15), 1 << 15, x.shape),
                            rng.integers(-(1 << 15), 1 << 15, x.shape))}
    words = x.astype(np.int64) & 0xFFFFFFFF
    keep = x.copy()
    cases = itertools.product(operands.values(), (0, 1), range(4), (0, 1, 15, 16, 31),
                              (0, 1), (0, 1, 14, 31, 32, 62, 63), (0, 1),
                              ((int(info.min), int(info.max)), "own"))
    for (alu_op, mul_op), alu_bypass, algo, alu_shift, mul_bypass, mul_shift, relu_bypass, \
            bounds in cases:
        bounds = (int(x.min()), int(x.max())) if bounds == "own" else bounds
        alu, mul = num_sdp.x_int_operands(alu_op, mul_op, alu_shift)
        got, got_bounds = num_sdp.x_int_block(x, bounds, alu, mul, alu_bypass, algo,
                                              mul_bypass, mul_shift, relu_bypass, owned=False)
        want = num_sdp.x_stage(words, alu_op, mul_op, alu_bypass, algo, alu_shift, mul_bypass,
                               0, mul_shift, relu_bypass, 0, 0)
        label = (alu_bypass, algo, alu_shift, mul_bypass, mul_shift, relu_bypass, bounds)
        np.testing.assert_array_equal(got.astype(np.int64) & 0xFFFFFFFF, want,
                                      err_msg=str(label))
        assert got_bounds[0] <= got.min() and got.max() <= got_bounds[1], label
        np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
def test_c_block_matches_c_stage(dtype):
    """c_int_block (the window clip, int32 steps, its saturation count) against c_stage."""
    rng = np.random.default_rng(RNG_SEED + 10 * np.dtype(dtype).itemsize)
    info = np.iinfo(dtype)
    x = np.clip(_datapath_values(rng, 300), info.min, info.max).astype(dtype).reshape(1, 5, -1)
    words = x.astype(np.int64) & 0xFFFFFFFF
    keep = x.copy()
    offsets = (0, 5, -1000, 0x7FFFFFFF, -(1 << 31))
    scales = (1, 0, 3, 25144, -300, 0x7FFF, -0x8000)
    truncates = (0, 1, 9, 15, 22, 24, 31, 40, 63)
    for offset, scale, truncate, code, bounds in itertools.product(
            offsets, scales, truncates, range(4), ((int(info.min), int(info.max)), "own")):
        bounds = (int(x.min()), int(x.max())) if bounds == "own" else bounds
        got, saturated = num_sdp.c_int_block(x, bounds, offset, scale, truncate, code,
                                             owned=False)
        want, flags = num_sdp.c_stage(words, offset & 0xFFFFFFFF, scale & 0xFFFF, truncate, 0,
                                      code, 0)
        label = (offset, scale, truncate, code, bounds)
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64) & 0xFFFF, want,
                                      err_msg=str(label))
        assert saturated == np.count_nonzero(flags), label
        np.testing.assert_array_equal(x, keep)


def test_window_is_where_the_output_stops_changing():
    """_c_window's guessed search gives the plain search's edges, and they are the edges."""
    for offset, scale, shift, (lo, hi) in itertools.product(
            (0, 5, -1000, 1 << 30), (1, 3, 25144, -7, -32768, 32767), (0, 1, 14, 22, 31, 40),
            ((-128, 127), (-32768, 32767))):
        def value(x, offset=offset, scale=scale, shift=shift, lo=lo, hi=hi):
            return num_sdp._c_value(x, offset, scale, shift, lo, hi)

        a, b = num_sdp._c_window(offset, scale, shift, lo, hi)
        first, last = value(num_sdp.INT32_MIN), value(num_sdp.INT32_MAX)
        if first == last:
            assert (a, b) == (num_sdp.INT32_MIN, num_sdp.INT32_MIN)
            continue
        assert value(a) == first and (a == num_sdp.INT32_MAX or value(a + 1) != first)
        assert value(b) == last and (b == num_sdp.INT32_MIN or value(b - 1) != last)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("alu_shift", [0, 1, 15, 16, 31])
def test_x_operands_as_read_match_their_int64_values(dtype, alu_shift):
    """Memory operands reach the layer path as read (int8/int16): the values and bounds it
    applies are those of the int64 operands, the extremes and the shifts included.  An
    operand per element (as large as the cube) gets no wider copy unshifted; one per
    channel (small) is int32, the dtype of CACC's cube it meets."""
    info = np.iinfo(dtype)
    for size in (6, num_sdp.SMALL_OPERAND + 1):
        values = np.resize(np.array([info.min, -1, 0, 1, info.max, 7], dtype), size)
        narrow = num_sdp.x_int_operands(values, values[::-1].copy(), alu_shift)
        wide = num_sdp.x_int_operands(values.astype(np.int64), values[::-1].astype(np.int64),
                                      alu_shift)
        for (got, got_bounds), (want, want_bounds) in zip(narrow, wide, strict=True):
            np.testing.assert_array_equal(got.astype(np.int64), want)
            assert got_bounds == want_bounds
        small = size <= num_sdp.SMALL_OPERAND
        assert narrow[1][0].dtype == (np.int32 if small else dtype)
        if not alu_shift:
            assert narrow[0][0].dtype == (np.int32 if small else dtype)


X_PIXELS = num_sdp.SMALL_OPERAND // 2 + 1  # per element: past the size widened to int32
X_NARROW_OPERANDS = {  # name -> (alu, mul) as x_int_operands receives them
    "int8 per element": (np.resize(np.array([-128, 127, 0, -1, 5, 100], np.int8),
                                   (1, 2, X_PIXELS)),
                         np.resize(np.array([-128, 127, 1, -1, 3, 2], np.int8),
                                   (1, 2, X_PIXELS))),
    "int16 per channel": (np.array([-32768, 32767], np.int16).reshape(1, 2, 1),
                          np.array([-2, 3], np.int16).reshape(1, 2, 1)),
    "negative per channel (under MAX, shifted: past int16, the result in it)": (
        np.array([-32768, -2], np.int16).reshape(1, 2, 1),
        np.array([-2, 3], np.int16).reshape(1, 2, 1)),
    "registers in int16": (np.int64(-300), np.int64(77)),
    "registers past int16": (np.int64(0x8000), np.int64(0x7FFF)),
}


@pytest.mark.parametrize("name", X_NARROW_OPERANDS)
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_x_block_in_int16_matches_x_stage(name, dtype):
    """int8/int16 values whose results fit int16 are computed in int16 (half the time of
    int32 through numpy's casting loops): only when the operand fits it too.  A shifted
    per-channel operand (int32 values past int16) under MAX or MIN, whose result still
    fits int16, must not be cut to int16."""
    info = np.iinfo(dtype)
    x = np.resize(np.array([info.min, info.max, 0, -1, 3, -77], dtype), (1, 2, X_PIXELS))
    words = x.astype(np.int64) & 0xFFFFFFFF
    alu_op, mul_op = X_NARROW_OPERANDS[name]
    sum_dtype = None
    for alu_bypass, algo, alu_shift, mul_bypass, mul_shift, relu_bypass in itertools.product(
            (0, 1), range(4), (0, 1, 15, 20), (0, 1), (0, 3), (0, 1)):
        alu, mul = num_sdp.x_int_operands(alu_op, mul_op, alu_shift)
        bounds = (int(info.min), int(info.max))
        got, got_bounds = num_sdp.x_int_block(x, bounds, alu, mul, alu_bypass, algo,
                                              mul_bypass, mul_shift, relu_bypass, owned=False)
        want = num_sdp.x_stage(words, alu_op, mul_op, alu_bypass, algo, alu_shift, mul_bypass,
                               0, mul_shift, relu_bypass, 0, 0)
        label = (alu_bypass, algo, alu_shift, mul_bypass, mul_shift, relu_bypass)
        np.testing.assert_array_equal(got.astype(np.int64) & 0xFFFFFFFF, want,
                                      err_msg=str(label))
        assert got_bounds[0] <= got.min() and got.max() <= got_bounds[1], label
        if label == (0, 2, 0, 1, 0, 1):  # a plain sum
            sum_dtype = got.dtype
    if name == "int8 per element" and dtype == np.int8:  # a residual sum: int16
        assert sum_dtype == np.int16


def test_a_stage_left_one_value_makes_no_pass():
    """x_int_block gives a stage whose bounds allow one result as that value (0-d)."""
    x = np.arange(-3000, 3000, dtype=np.int32).reshape(1, 2, -1)
    alu, mul = num_sdp.x_int_operands(np.int64(0), np.int64(-3), 0)
    got, bounds = num_sdp.x_int_block(x, (-3000, 2999), alu, mul, 1, 2, 0, 20, 1, owned=False)
    assert got.shape == () and int(got) == 0 and bounds == (0, 0)
    want = num_sdp.x_stage(x.astype(np.int64) & 0xFFFFFFFF, 0, -3, 1, 2, 0, 0, 0, 20, 1, 0, 0)
    assert (want == 0).all()
