"""``vector_fp``'s compiled loops (the ``fpcore`` twins, taken once numba is loaded)
against its numpy steps: same bits, dtype and shape for every operation and format, on
edge patterns crossed with each other, random words with stray high bits and negative
ones, and odd shapes (0-d, broadcast, strided, read-only, empty, narrow dtypes)."""

import numpy as np
import pytest

from sim import jit
from sim.num import vector_fp as fp
from sim.num.vector_fp import FP16, FP17, FP32

FORMATS = {"fp16": FP16, "fp17": FP17, "fp32": FP32}
BINARY = {
    "add": fp.fp_add,
    "sub": fp.fp_sub,
    "mul": fp.fp_mul,
    "max": lambda a, b, E, M: fp.fp_max(a, b, True, E, M),
    "min": lambda a, b, E, M: fp.fp_max(a, b, False, E, M),
}
CONVERSIONS = {  # name: (input width, function)
    "fp16_to_fp17": (16, lambda x: fp.fp_widen(x, *FP16, *FP17, True)),
    "fp16_to_fp32": (16, lambda x: fp.fp_widen(x, *FP16, *FP32, True)),
    "fp17_to_fp32": (17, lambda x: fp.fp_widen(x, *FP17, *FP32, False)),
    "fp17_to_fp16": (17, lambda x: fp.fp_narrow(x, *FP17, *FP16, True)),
    "fp32_to_fp17": (32, fp.fp32_to_fp17),
    "fp32_to_fp16": (32, fp.fp32_to_fp16),
    "fp32_to_fp16_general": (32, lambda x: fp.fp_narrow(x, *FP32, *FP16, True)),
}


@pytest.fixture(autouse=True)
def loops_on(monkeypatch):
    """The compiled loops compute (numba loaded, the calls before them made)."""
    jit._import_numba()
    monkeypatch.setattr(fp, "_calls_before_loops", 0)


def _numpy(monkeypatch, function, *args):
    """``function(*args)`` by the numpy steps alone."""
    with monkeypatch.context() as patch:
        patch.setattr(fp, "_use_loops", lambda: False)
        return function(*args)


def _same(got, want):
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert not bad.size, f"{bad.size} differ, first at {bad[0]}"


def _edges(E: int, M: int) -> np.ndarray:
    mants = np.array([0, 1, 2, 3, 1 << (M - 1), (1 << (M - 1)) + 1, (1 << M) - 2, (1 << M) - 1])
    return (np.arange(2 << E)[:, None] << M | mants[None, :]).ravel().astype(np.int64)


def _operand_pairs(E: int, M: int):
    """Edge patterns crossed (in blocks of at most 4096, as small layers pass them),
    random words (stray high bits, negative), and shapes that broadcast."""
    rng = np.random.default_rng(E + M)
    edges = _edges(E, M)
    if E == 8:
        edges = rng.choice(edges, 600)
    a, b = np.repeat(edges, edges.size), np.tile(edges, edges.size)
    for start in range(0, a.size, 4096):
        yield a[start:start + 4096], b[start:start + 4096]
    words = rng.integers(-(1 << 40), 1 << 40, (2, 3000), dtype=np.int64)
    yield words[0], words[1]
    yield words[0, :12].reshape(3, 1, 4), words[1, :2].reshape(2, 1)  # broadcast to (3, 2, 4)
    yield words[0, :64].reshape(8, 8)[::2, ::3], np.int64(0x3C00)  # strided and 0-d
    yield np.int64(0x3555), 0x7C01  # 0-d and a Python int: a 0-d result
    yield words[0, :10].astype(np.uint16), words[1, :10].astype(np.uint32)
    readonly = words[0, :50].copy()
    readonly.flags.writeable = False
    yield readonly, readonly[::-1]
    yield np.empty((0, 3), np.int64), np.int64(1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", BINARY)
def test_compiled_binary_matches_numpy(monkeypatch, fmt, name):
    E, M = FORMATS[fmt]
    function = BINARY[name]
    for a, b in _operand_pairs(E, M):
        _same(function(a, b, E, M), _numpy(monkeypatch, function, a, b, E, M))


def test_max_chosen_per_element_matches_numpy(monkeypatch):
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 1 << 32, (2, 500))
    want_max = rng.integers(0, 2, 500).astype(bool)
    _same(fp.fp_max(a, b, want_max, *FP32), _numpy(monkeypatch, fp.fp_max, a, b, want_max, *FP32))
    _same(fp.fp_max(a, b, np.bool_(False), *FP16),
          _numpy(monkeypatch, fp.fp_max, a, b, np.bool_(False), *FP16))


def _conversion_inputs(width: int) -> list:
    rng = np.random.default_rng(width)
    if width == 32:  # every sign and exponent with edge mantissas, and random words
        every = np.concatenate([_edges(8, 23), rng.integers(0, 1 << 32, 20000)])
    else:
        every = np.arange(1 << width, dtype=np.int64)
    words = rng.integers(-(1 << 40), 1 << 40, 4096, dtype=np.int64)
    return [every, words, words.reshape(64, 64)[::2, ::3], np.int64(0x7C01),
            np.asarray(-1, np.int64), np.arange(8, dtype=np.int32), 5, np.empty(0, np.int64)]


@pytest.mark.parametrize("name", CONVERSIONS)
def test_compiled_conversion_matches_numpy(monkeypatch, name):
    width, function = CONVERSIONS[name]
    for x in _conversion_inputs(width):
        _same(function(x), _numpy(monkeypatch, function, x))


def test_compiled_loops_are_taken():
    """The routes above are the loops' (a test that could not fail otherwise)."""
    small, large = np.arange(8), np.arange(fp.KERNEL_ELEMENTS + 1)
    assert fp._compiled_binary(fp._ADD, small, small, *FP32, fp.KERNEL_ELEMENTS) is not None
    assert fp._compiled_binary(fp._ADD, large, large, *FP32, fp.KERNEL_ELEMENTS) is None
    assert fp._compiled_binary(fp._MUL, large, large, *FP32) is not None
    assert fp._compiled_conversion(fp._NARROW, small, (*FP32, *FP16, True)) is not None


def test_loops_come_after_calls_made_with_numba_loaded(monkeypatch):
    """Rent or buy: LOOPS_AFTER_CALLS calls in numpy with numba loaded, then the loops; a
    call while numba is not loaded is not counted."""
    monkeypatch.setattr(fp, "_calls_before_loops", 2)
    with monkeypatch.context() as patch:
        patch.setattr(fp, "numba_loaded", lambda: False)
        assert not fp._use_loops() and fp._calls_before_loops == 2
    assert not fp._use_loops() and not fp._use_loops()
    assert fp._use_loops() and fp._use_loops() and fp._calls_before_loops == 0
