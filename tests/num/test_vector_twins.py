"""The numpy numerics (``vector_fp``, ``vector_int``) against their scalar numba twins
(``fpcore``, ``rounding``), which the fp16 kernels use: same bits on every input.

Inputs: every sign x exponent with edge mantissas crossed with each other,
every fp16 and fp17 pattern for the conversions, and random patterns.
"""

import numpy as np
import pytest

from sim.jit import njit
from sim.num import fpcore, rounding, vector_fp, vector_int

FORMATS = {"fp16": (5, 10), "fp17": (6, 10), "fp32": (8, 23)}


@pytest.fixture(autouse=True)
def numpy_steps(monkeypatch):
    """vector_fp's numpy steps, not its compiled loops of the very fpcore functions they
    are compared with (tests/num/test_vector_fp_compiled.py holds the loops to them)."""
    monkeypatch.setattr(vector_fp, "_use_loops", lambda: False)


@njit
def _binary_scalar(op, a, b, E, M, out):
    for i in range(out.size):
        x, y = np.int64(a[i]), np.int64(b[i])
        if op == 0:
            out[i] = fpcore.fp_add(x, y, E, M)
        elif op == 1:
            out[i] = fpcore.fp_sub(x, y, E, M)
        elif op == 2:
            out[i] = fpcore.fp_mul(x, y, E, M)
        else:
            out[i] = fpcore.fp_max(x, y, op == 3, E, M)


BINARY = {
    "add": (0, vector_fp.fp_add),
    "sub": (1, vector_fp.fp_sub),
    "mul": (2, vector_fp.fp_mul),
    "max": (3, lambda a, b, E, M: vector_fp.fp_max(a, b, True, E, M)),
    "min": (4, lambda a, b, E, M: vector_fp.fp_max(a, b, False, E, M)),
}


def _edges(E: int, M: int) -> np.ndarray:
    mants = np.array([0, 1, 2, 3, 1 << (M - 1), (1 << (M - 1)) + 1, (1 << M) - 2, (1 << M) - 1])
    return (np.arange(2 << E)[:, None] << M | mants[None, :]).ravel().astype(np.int64)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_operations(fmt, name):
    E, M = FORMATS[fmt]
    rng = np.random.default_rng(E + M)
    edges = _edges(E, M)
    if E == 8:
        edges = rng.choice(edges, 1500)
    a = np.concatenate([np.repeat(edges, edges.size), rng.integers(0, 1 << (1 + E + M), 50000)])
    b = np.concatenate([np.tile(edges, edges.size), rng.integers(0, 1 << (1 + E + M), 50000)])
    op, vector = BINARY[name]
    want = np.empty(a.size, np.int64)
    _binary_scalar(op, a, b, E, M, want)
    got = vector(a, b, E, M)
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{fmt} {name}: {bad.size} differ, first {hex(a[bad[0]])}, " \
                         f"{hex(b[bad[0]])}: {hex(got[bad[0]])} != {hex(want[bad[0]])}"


@njit
def _unary_scalar(op, x, p, q, out):
    for i in range(out.size):
        v = np.int64(x[i])
        if op == 0:
            out[i] = fpcore.int_to_float(v, p, q)
        elif op == 1:
            out[i] = fpcore.fraction_to_float(v, 35, p, q)
        elif op == 2:
            out[i] = fpcore.fraction_to_float(v, 16, p, q)
        elif op == 3:
            out[i] = fpcore.float_to_int(v, 16, p, q)
        elif op == 4:
            out[i] = fpcore.fp_widen(v, 5, 10, p, q, True)
        elif op == 5:
            out[i] = fpcore.fp_widen(v, 6, 10, 8, 23, False)
        elif op == 6:
            out[i] = fpcore.fp_narrow(v, p, q, 5, 10, True)
        else:
            out[i] = fpcore.fp_narrow(v, 8, 23, 6, 10, False)


def _random(bits: int, n: int = 100000) -> np.ndarray:
    return np.random.default_rng(bits).integers(0, 1 << bits, n, dtype=np.int64)


CONVERSIONS = {
    "int17_to_fp16": (0, (5, 10), np.arange(-(1 << 16), 1 << 16),
                      lambda x: vector_fp.int_to_float(x, 5, 10)),
    "int32_to_fp32": (0, (8, 23), _random(32) - (1 << 31),
                      lambda x: vector_fp.int_to_float(x, 8, 23)),
    "fraction35_to_fp17": (1, (6, 10), np.concatenate([_random(35), 1 << np.arange(35)]),
                           lambda x: vector_fp.fraction_to_float(x, 35, 6, 10)),
    "fraction16_to_fp17": (2, (6, 10), np.arange(1 << 16),
                           lambda x: vector_fp.fraction_to_float(x, 16, 6, 10)),
    "fp16_to_int16": (3, (5, 10), np.arange(1 << 16),
                      lambda x: vector_fp.float_to_int(x, 16, 5, 10)),
    "fp16_to_fp17": (4, (6, 10), np.arange(1 << 16), vector_fp.fp16_to_fp17),
    "fp16_to_fp32": (4, (8, 23), np.arange(1 << 16), vector_fp.fp16_to_fp32),
    "fp17_to_fp32": (5, (0, 0), np.arange(1 << 17), vector_fp.fp17_to_fp32),
    "fp17_to_fp16": (6, (6, 10), np.arange(1 << 17), vector_fp.fp17_to_fp16),
    "fp32_to_fp16": (6, (8, 23), np.concatenate([_random(32), _edges(8, 23)]),
                     vector_fp.fp32_to_fp16),
    "fp32_to_fp17": (7, (0, 0), np.concatenate([_random(32), _edges(8, 23)]),
                     vector_fp.fp32_to_fp17),
}


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions(name):
    op, (p, q), x, vector = CONVERSIONS[name]
    x = np.asarray(x, np.int64)
    want = np.empty(x.size, np.int64)
    _unary_scalar(op, x, p, q, want)
    got = vector(x)
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{name}: {bad.size} differ, first {hex(x[bad[0]])}: " \
                         f"{hex(got[bad[0]])} != {hex(want[bad[0]])}"


@njit
def _int_scalar(op, x, s, bits, out, flag):
    for i in range(out.size):
        if op == 0:
            out[i] = rounding.shift_right_round(x[i], s[i])
        elif op == 1:
            out[i], flag[i] = rounding.convert_flag(x[i], s[i], bits)
        elif op == 2:
            out[i] = rounding.shift_signed(x[i], s[i], bits)
        elif op == 3:
            out[i] = rounding.round_nearest_even(x[i], s[i])
        elif op == 4:
            out[i] = rounding.bit_length(x[i])
        else:
            out[i] = rounding.round_via_double(x[i], s[i], bits)


INTEGER = {
    "shift_right_round": (0, lambda x, s, b: vector_int.shift_right_round(x, s)),
    "convert_flag": (1, lambda x, s, b: vector_int.convert_flag(x, s, b)),
    "shift_signed": (2, lambda x, s, b: vector_int.shift_signed(x, s - 40, b)),
    "round_nearest_even": (3, lambda x, s, b: vector_int.round_nearest_even(np.abs(x), s - 8)),
    "bit_length": (4, lambda x, s, b: vector_int.bit_length(np.abs(x))),
    "round_via_double": (5, lambda x, s, b: vector_int.round_via_double(x, s - 20, b)),
}


@pytest.mark.parametrize("name", INTEGER)
@pytest.mark.parametrize("bits", [8, 17, 32])
def test_integer_helpers(name, bits):
    rng = np.random.default_rng(bits)
    x = np.concatenate([rng.integers(-(1 << 62), 1 << 62, 20000),
                        rng.integers(-(1 << 20), 1 << 20, 20000),
                        np.arange(-300, 300), [0, 1, -1, (1 << 62), -(1 << 62)]]).astype(np.int64)
    s = rng.integers(0, 70, x.size).astype(np.int64)
    op, vector = INTEGER[name]
    sx = {2: s - 40, 3: s - 8, 5: s - 20}.get(op, s)
    xx = np.abs(x) if op in (3, 4) else x
    want, flag = np.empty(x.size, np.int64), np.zeros(x.size, np.bool_)
    _int_scalar(op, xx, sx, bits, want, flag)
    got = vector(x, s, bits)
    if op == 1:
        got, got_flag = got
        assert np.array_equal(got_flag, flag)
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{name}: {bad.size} differ, first x={x[bad[0]]} s={s[bad[0]]}: " \
                         f"{got[bad[0]]} != {want[bad[0]]}"


@pytest.mark.parametrize("shift", [0, 1, 7, 40, 62, 63, 64, 70])
def test_shift_right_round_takes_one_setting_spread_over_an_array_as_the_setting(shift):
    """An array of equal shifts (a layer's setting broadcast by a block) rounds as the
    scalar and as each element's own shift."""
    rng = np.random.default_rng(shift)
    x = np.concatenate([rng.integers(-(1 << 62), 1 << 62, 500), [3, -3, 5, -5, 0, -1]])
    want = np.array([rounding.shift_right_round(int(v), shift) for v in x])
    spread = np.full(x.shape, shift)
    np.testing.assert_array_equal(vector_int.shift_right_round(x, spread), want)
    np.testing.assert_array_equal(vector_int.shift_right_round(x, shift), want)
