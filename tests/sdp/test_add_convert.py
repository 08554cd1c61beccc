"""The adding-stage integer layer (sim.num.sdp_add) against the per-element stages.

``add_convert_block`` composes an X stage that only adds (bias per channel or register,
residual per element) with the output convertor: it must give x_stage then c_stage's
bits wherever it accepts a block, and accept the usual ones.  Inputs span their dtype
(int32 as CACC delivers it, int8/int16 from memory) and small sums, so ReLU, the int32
saturation, the window's edges, both signs and exact ties of the rounding are met.
"""

import itertools

import numpy as np
import pytest

from sim.num import sdp as num_sdp
from sim.num import sdp_add
from sim.num.widths import INT32_MIN
from sim.sdp import pipeline

RNG_SEED = 20261127
CHANNELS, PIXELS = 4, 150


def _values(rng, dtype, span: str) -> np.ndarray:
    """Values of ``dtype``: over its whole range, or (``span`` "sums") CACC's usual sums."""
    info = np.iinfo(dtype)
    n = CHANNELS * PIXELS
    if span == "sums":
        x = rng.integers(-250000, 250000, n)
        x[:4] = [-250000, 249999, 0, -1]
        return x.astype(dtype).reshape(1, CHANNELS, PIXELS)
    wide = rng.integers(info.min, int(info.max) + 1, n)
    small = rng.integers(-3000, 3000, n)
    x = np.where(rng.random(n) < 0.3, wide, np.clip(small, info.min, info.max))
    x[:6] = [info.min, info.max, 0, -1, 1, info.min + 1]
    return x.astype(dtype).reshape(1, CHANNELS, PIXELS)


def _addends(rng, dtype) -> dict:
    """name -> the ALU operand as the datapath holds it (register, per channel, per element)."""
    per_element = rng.integers(-128, 128, (1, CHANNELS, PIXELS)) if dtype != np.int32 \
        else rng.integers(-32768, 32768, (1, CHANNELS, PIXELS))
    return {"register": np.int64(-1234),
            "register zero": np.int64(0),
            "per channel": np.array([-32768, 32767, 0, 77]).reshape(1, CHANNELS, 1)
            .astype(np.int16),
            "per element": per_element.astype(np.int8 if dtype != np.int32 else np.int16)}


def _reference(x, alu_op, alu_bypass, algo, alu_shift, relu_bypass, offset, scale, shift,
               code) -> tuple:
    words = x.astype(np.int64) & 0xFFFFFFFF
    u = num_sdp.x_stage(words, alu_op, 0, alu_bypass, algo, alu_shift, 1, 0, 0, relu_bypass,
                        0, 0)
    return num_sdp.c_stage(u, offset & 0xFFFFFFFF, scale & 0xFFFF, shift, 0, code, 0)


OFFSETS = (0, 5, -1000, 0x7FFFFFFF)
SCALES = (1, 3, 25144, 16384, -300, -0x8000, 0)
SHIFTS = (0, 1, 2, 9, 15, 22, 31)


@pytest.mark.parametrize("dtype,span", [(np.int8, "all"), (np.int16, "all"),
                                        (np.int32, "all"), (np.int32, "sums")])
def test_block_matches_the_stages(dtype, span):
    rng = np.random.default_rng(RNG_SEED + np.dtype(dtype).itemsize)
    x = _values(rng, dtype, span)
    keep = x.copy()
    accepted = set()
    for (name, alu_op), alu_bypass, algo, alu_shift, relu_bypass, offset, scale, shift, code \
            in itertools.product(_addends(rng, dtype).items(), (0, 1), (2, 3), (0, 1, 16),
                                 (0, 1), OFFSETS, SCALES, SHIFTS, (0, 1)):
        alu, _ = num_sdp.x_int_operands(alu_op, np.int64(0), alu_shift)
        values, bounds = alu if not alu_bypass else (0, (0, 0))
        folded = sdp_add.folded_addend(values if np.ndim(values) else int(values), bounds,
                                       offset)
        if folded is None:
            continue
        out = np.full(x.shape, 99, np.int8 if code == 0 else np.int16)
        x_bounds = (int(x.min()), int(x.max())) if dtype == np.int32 \
            else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        low = INT32_MIN if relu_bypass else 0
        label = (name, alu_bypass, algo, alu_shift, relu_bypass, offset, scale, shift, code)
        if not sdp_add.add_convert_block(x, x_bounds, *folded, low, offset, scale, shift,
                                         code, out):
            assert (out == 99).all(), label  # nothing written
            continue
        accepted.add((name, scale, shift))
        want, flags = _reference(x, alu_op, alu_bypass, algo, alu_shift, relu_bypass, offset,
                                 scale, shift, code)
        np.testing.assert_array_equal(out.astype(np.int64) & 0xFFFF, want, err_msg=str(label))
        assert not flags.any(), label
        np.testing.assert_array_equal(x, keep)
    # the usual layers take it: a bias on CACC's sums, a residual of int8 values
    if span == "sums":
        assert {("per channel", 25144, 22), ("register", 25144, 22)} <= accepted
    elif dtype == np.int8:
        assert {("per element", 25144, 15), ("per channel", 25144, 15)} <= accepted


@pytest.mark.parametrize("scale", [1, 2, 3, 12, 25144, 16384, -1, -6, -32768, 0])
@pytest.mark.parametrize("shift", [0, 1, 2, 3, 5, 8])
def test_negative_ties_are_found_exactly(scale, shift):
    """negative_ties against a search of every v of small ranges."""
    half = 1 << shift >> 1
    for low, high in ((-300, 300), (-300, -1), (1, 300), (-7, 7), (-1, 0), (0, 0), (-64, -33),
                      (40, 41)):
        v = np.arange(low, high + 1)
        p = v * scale
        want = bool(shift and ((p < 0) & ((p + half) % (1 << shift) == 0)).any())
        assert sdp_add.negative_ties((low, high), scale, shift) == want, (low, high)


def test_clip_limits_compose_the_two_clips():
    """clip(u, L, H) = the saturation/ReLU clip then the window clip, on every kind of u."""
    u = np.concatenate([np.arange(-70000, 70000, 7), [INT32_MIN, -1, 0, 1, (1 << 31) - 1]])
    for low, offset, scale, shift, code in itertools.product(
            (INT32_MIN, 0), (0, 5, -1000, 1 << 30), (1, 3, 25144, -7, -32768), (0, 1, 14, 22),
            (0, 1)):
        a, b = num_sdp._c_window(offset, scale, shift, *num_sdp._C_OUT_RANGE[code])
        lo, hi = sdp_add.clip_limits(low, offset, scale, shift, code)
        want = np.clip(np.clip(u, low, (1 << 31) - 1), a, b)
        np.testing.assert_array_equal(np.clip(u, lo, hi), want)


def test_pipeline_takes_the_adding_form(monkeypatch):
    """A bias layer on CACC's cube: add_convert_plan's path gives the general layer path's
    output and counters, in one block and in many."""
    from sim.sdp.engine import padded_channels

    from .test_int_layer_path import (
        LAYERS,
        _cacc_cube,
        _captured_layer,
        assert_shortcut_matches,
    )

    rng = np.random.default_rng(RNG_SEED)
    for name in ("bias per channel, relu, int8 out", "sum without relu: both signs round",
                 "no stage", "EQL in X adds"):
        seen = _captured_layer(monkeypatch, LAYERS[name], rng)
        layer, operands, lut = seen["layer"], seen["operands"], seen["lut"]
        cube = _cacc_cube(rng, padded_channels(layer, 32))
        cube[0, :, 1:] = rng.integers(-60000, 60000, cube[0, :, 1:].shape)  # mostly windowed
        path = pipeline.datapath(layer, operands, lut, False, *cube.shape[1:])
        assert path.add_convert is not None, name
        assert_shortcut_matches(monkeypatch, layer, cube, operands, lut, "add_convert_plan", None)


def test_long_rows_add_unbuffered_and_match():
    """Rows past SHORT_BUFFER (a per-channel bias on a 56x56 map) take the unbuffered add:
    the same sums, and numpy's buffer size is restored."""
    rng = np.random.default_rng(RNG_SEED + 3)
    pixels = sdp_add.SHORT_BUFFER * 3 + 5
    x = rng.integers(-250000, 250000, (1, 3, pixels)).astype(np.int32)
    bias = np.array([-32768, 32767, 5], np.int16).reshape(1, 3, 1)
    size = np.getbufsize()
    for alu_shift, relu_bypass, offset in itertools.product((0, 1), (0, 1), (0, -1000)):
        alu, _ = num_sdp.x_int_operands(bias, np.int64(0), alu_shift)
        folded = sdp_add.folded_addend(*alu, offset)
        assert folded[0].dtype == np.int32
        out = np.zeros(x.shape, np.int8)
        assert sdp_add.add_convert_block(x, (int(x.min()), int(x.max())), *folded,
                                         INT32_MIN if relu_bypass else 0, offset, 25144, 22,
                                         0, out)
        want, _ = _reference(x, bias, 0, 2, alu_shift, relu_bypass, offset, 25144, 22, 0)
        np.testing.assert_array_equal(out.astype(np.int64) & 0xFFFF, want)
        assert np.getbufsize() == size
