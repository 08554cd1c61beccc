"""The SDP integer stages' one-setting path against their per-element path.

``x_stage`` and ``c_stage`` take a layer's settings as single values and then
run fused, in-place array passes (``sim.num.sdp._x_int_layer``/``_c_int_layer``);
the same settings given one per element take the straightforward path the
golden vectors hold.  Both must agree on every value and saturation flag, over
data covering the full 32-bit range and every setting the registers allow.
"""

import itertools

import numpy as np
import pytest

from sim.num import vector_int
from sim.num.sdp import c_stage, x_stage

RNG_SEED = 20240607


def datapath_words(rng, n):
    """32-bit datapath words: random, small, and the edges of int32."""
    words = [rng.integers(0, 1 << 32, n), rng.integers(-300, 300, n) & 0xFFFFFFFF,
             np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFE, 0x80000001,
                       0xFFFF, 0x10000, 0x1FFFF, 0xFFFE0000, 0xFFFEFFFF])]
    return np.concatenate(words).astype(np.int64)


def per_element(value, shape):
    return np.full(shape, value, dtype=np.int64)


def test_x_stage_layer_path_matches_per_element():
    rng = np.random.default_rng(RNG_SEED)
    data = datapath_words(rng, 400).reshape(1, 4, -1)
    shape = data.shape
    operands = {
        "register": (np.int64(0x8000), np.int64(0x7FFF)),
        "channel": (rng.integers(0, 1 << 16, (1, 4, 1)), rng.integers(0, 1 << 16, (1, 4, 1))),
        "element": (rng.integers(0, 1 << 16, shape), rng.integers(0, 1 << 16, shape)),
    }
    cases = itertools.product(operands.values(), (0, 1), range(4), (0, 3, 15, 16, 31, 63),
                              (0, 1), (0, 1), (0, 1, 25, 40, 62, 63), (0, 1))
    checked = 0
    for ((alu, mul), alu_bypass, algo, alu_shift, mul_bypass, prelu, mul_shift,
         relu_bypass) in cases:
        settings = (alu_bypass, algo, alu_shift, mul_bypass, prelu, mul_shift, relu_bypass)
        fast = x_stage(data.copy(), alu, mul, *settings[:3], *settings[3:], 0, 0)
        slow = x_stage(data.copy(), alu, mul, *(per_element(v, shape) for v in settings[:3]),
                       *(per_element(v, shape) for v in settings[3:]), 0, per_element(0, shape))
        np.testing.assert_array_equal(fast, slow, err_msg=str(settings))
        assert fast.dtype == np.int64
        checked += 1
    assert checked == 3 * 2 * 4 * 6 * 2 * 2 * 6 * 2


def test_x_stage_layer_path_leaves_its_inputs_alone():
    rng = np.random.default_rng(RNG_SEED + 1)
    data = datapath_words(rng, 64).reshape(1, 2, -1)
    alu = rng.integers(0, 1 << 16, data.shape)
    keep_data, keep_alu = data.copy(), alu.copy()
    x_stage(data, alu, np.int64(3), 0, 2, 4, 0, 0, 2, 0, 0, 0)
    np.testing.assert_array_equal(data, keep_data)
    np.testing.assert_array_equal(alu, keep_alu)


def test_c_stage_layer_path_matches_per_element():
    rng = np.random.default_rng(RNG_SEED + 2)
    data = datapath_words(rng, 600).reshape(1, 6, -1)
    shape = data.shape
    offsets = (0, 5, 0x7FFFFFFF, 0x80000000, 0xFFFFFF00)
    scales = (1, 0, 3, 0x7FFF, 0x8000, 0xFFFF)
    truncates = (0, 1, 5, 16, 17, 31, 40, 62, 63)
    checked = 0
    for offset, scale, truncate, out_precision, eql in itertools.product(
            offsets, scales, truncates, range(4), (0, 1)):
        keep = data.copy()
        fast = c_stage(data, offset, scale, truncate, 0, out_precision, eql)
        slow = c_stage(data, per_element(offset, shape), per_element(scale, shape),
                       per_element(truncate, shape), per_element(0, shape),
                       per_element(out_precision, shape), per_element(eql, shape))
        label = (offset, scale, truncate, out_precision, eql)
        np.testing.assert_array_equal(fast[0], slow[0], err_msg=str(label))
        np.testing.assert_array_equal(np.asarray(fast[1]) != 0, np.asarray(slow[1]) != 0,
                                      err_msg=str(label))
        np.testing.assert_array_equal(data, keep)
        checked += 1
    assert checked == 5 * 6 * 9 * 4 * 2


def test_step_overflow_matches_the_definition():
    rng = np.random.default_rng(RNG_SEED + 3)
    for bits in (8, 16, 17, 32):
        for s in (0, 1, 7, 20, 45, 62, 63):
            edge = ((1 << (bits - 1)) + 1) << s
            x = np.concatenate([rng.integers(-(1 << 62), 1 << 62, 300),
                                rng.integers(-(1 << (bits + s)), 1 << (bits + s), 300)
                                if bits + s < 63 else np.zeros(0, np.int64),
                                [edge - 1, edge, -edge, -edge - 1] if edge < 1 << 62 else []])
            x = x.astype(np.int64)
            y = vector_int.convert(x, np.full(x.shape, s), bits)
            want = np.abs((x >> s) - y) > 1
            np.testing.assert_array_equal(vector_int.step_overflow(x, s, bits), want)
            got_y, got_flag = vector_int.convert_flag(x, s, bits)
            np.testing.assert_array_equal(got_y, y)
            np.testing.assert_array_equal(got_flag, want)


def test_convert_owned_matches_convert():
    rng = np.random.default_rng(RNG_SEED + 4)
    x = np.concatenate([rng.integers(-(1 << 62), 1 << 62, 500), rng.integers(-5000, 5000, 500),
                        [0, -1, 1, -(1 << 62), 1 << 62]]).astype(np.int64)
    for s in (0, 1, 2, 13, 31, 62, 63):
        for bits in (8, 17, 32):
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            want = vector_int.convert(x, np.full(x.shape, s), bits)
            np.testing.assert_array_equal(vector_int.convert_owned(x.copy(), s, lo, hi), want)
            np.testing.assert_array_equal(vector_int.convert_owned(x.copy(), s, 0, hi),
                                          np.maximum(want, 0))


def test_convert_owned_with_the_callers_bounds():
    rng = np.random.default_rng(RNG_SEED + 5)
    for low, high in ((-5000, 5000), (0, 1 << 40), (-(1 << 40), -1), (-100, 100)):
        x = rng.integers(low, high, 999).astype(np.int64)
        for s in (0, 1, 9, 30, 62):
            for lo, hi in ((-128, 127), (0, (1 << 31) - 1), (-(1 << 16), (1 << 16) - 1)):
                want = np.clip(vector_int.convert(x, np.full(x.shape, s), 64), lo, hi)
                bounds = (int(x.min()), int(x.max()))
                got = vector_int.convert_owned(x.copy(), s, lo, hi, bounds)
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(vector_int.convert_owned(x.copy(), s, lo, hi),
                                              want)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_clip_into_is_np_clip(dtype):
    """clip_into moves the limits inside the values' bounds (as dtype scalars, numpy's fast
    clip): values wholly below, above, across or inside [lo, hi], the dtype's extremes."""
    info = np.iinfo(dtype)
    ranges = ((-50, -10), (10, 50), (-50, 50), (-5, 5), (int(info.min), int(info.max)))
    for (low, high), (lo, hi) in itertools.product(
            ranges, ((-20, 20), (0, (1 << 31) - 1), (-(1 << 31), 0), (-3, -3))):
        x = np.array([low, high, (low + high) // 2, low + 1, high - 1], dtype)
        want = np.clip(x.astype(object), lo, hi).astype(np.int64)
        got = vector_int.clip_into(x.copy(), lo, hi, (low, high))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.astype(np.int64), want, err_msg=str((low, high, lo, hi)))


def test_owned_sign_extend_is_a_fresh_sign_extend():
    rng = np.random.default_rng(RNG_SEED + 6)
    x = rng.integers(-(1 << 62), 1 << 62, (3, 4, 10)).astype(np.int64)
    for view in (x, x[:, :, ::2], x[:, 1:3], x.transpose(2, 0, 1), x[0, 0]):
        for bits in (8, 16, 17, 32):
            got = vector_int.owned_sign_extend(view, bits)
            np.testing.assert_array_equal(got, vector_int.sign_extend(view, bits))
            assert not np.shares_memory(got, x)
    words = x.astype(np.int32)  # CACC's cube
    np.testing.assert_array_equal(vector_int.owned_sign_extend(words, 32), words)
    assert vector_int.owned_sign_extend(words, 32).dtype == np.int64
    np.testing.assert_array_equal(vector_int.owned_sign_extend(words, 8),
                                  vector_int.sign_extend(words, 8))
    low = x & 0xFFFFFFFF  # the datapath's 32-bit words
    np.testing.assert_array_equal(vector_int.owned_sign_extend(low, 32),
                                  vector_int.sign_extend(low, 32))
