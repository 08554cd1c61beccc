"""``vector_fp``'s whole-format tables (fp16, fp17) against the field-by-field functions
they are made from: every pattern, stray high bits and negative words, and every shape
(0-d included), bit for bit and dtype for dtype."""

import numpy as np
import pytest

from sim.num import vector_fp as fp
from sim.num.vector_fp import FP16, FP17, FP32

GENERAL = {
    "fp16_to_fp17": lambda x: fp.fp_widen(x, *FP16, *FP17, True),
    "fp17_to_fp32": lambda x: fp.fp_widen(x, *FP17, *FP32, False),
    "fp17_to_fp16": lambda x: fp.fp_narrow(x, *FP17, *FP16, True),
    "fp16_to_fp32": fp.fp16_to_fp32_by_ieee,
}
WIDTH = {"fp16_to_fp17": 16, "fp17_to_fp32": 17, "fp17_to_fp16": 17, "fp16_to_fp32": 16}


def _inputs(width: int) -> list:
    rng = np.random.default_rng(width)
    every = np.arange(1 << width, dtype=np.int64)
    words = rng.integers(-(1 << 40), 1 << 40, 4096, dtype=np.int64)  # bits above the width
    return [every, words, words.reshape(64, 64)[::2, ::3], np.int64(0x7C01),
            np.asarray(-1, np.int64), np.arange(8, dtype=np.int32), 5]


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.int64) if got.dtype == np.float64 else got,
                          want.view(np.int64) if want.dtype == np.float64 else want)


@pytest.mark.parametrize("name", sorted(GENERAL))
def test_conversion_table_matches_general(name):
    for x in _inputs(WIDTH[name]):
        _same(getattr(fp, name)(x), GENERAL[name](x))


@pytest.mark.parametrize("fmt", [FP16, FP17])
def test_arithmetic_value_table_matches_fields(fmt):
    for x in _inputs(1 + sum(fmt)):
        _same(fp.arithmetic_value(x, *fmt), fp.arithmetic_value_fields(x, *fmt))


def _fp32_patterns() -> np.ndarray:
    """Every sign and exponent with the mantissas that decide a narrowing: each of the
    top 11 bits alone and every low pattern around the rounding points of every shift
    (halves, ties, one either side), plus random mantissas."""
    rng = np.random.default_rng(32)
    low = np.arange(1 << 11, dtype=np.int64)
    ties = np.array([(1 << k) + d for k in range(24) for d in (-1, 0, 1)], np.int64)
    mants = np.unique(np.concatenate([
        low, low << 12, ties, ties | (1 << 12), (1 << 23) - 1 - low,
        rng.integers(0, 1 << 23, 4000)]) & ((1 << 23) - 1))
    expos = np.arange(256, dtype=np.int64)
    words = (expos[:, None] << 23 | mants[None, :]).ravel()
    return np.concatenate([words, words | (1 << 31)])


def test_fp32_to_fp16_matches_fp_narrow():
    x = _fp32_patterns()
    _same(fp.fp32_to_fp16(x), fp.fp_narrow(x, *FP32, *FP16, True))
    stray = x | (np.int64(0x5A) << 32)  # bits above the pattern are ignored
    _same(fp.fp32_to_fp16(stray.reshape(2, -1)), fp.fp_narrow(x, *FP32, *FP16, True)
          .reshape(2, -1))
    _same(fp.fp32_to_fp16(np.int64(0x7F800001)), fp.fp_narrow(0x7F800001, *FP32, *FP16, True))


def test_a_table_is_made_once_the_elements_converted_add_up_to_its_size():
    """Rent or buy: the general function converts until the elements given add up to the
    table's size; then the table (made once, with the general function) answers the same."""
    calls = []

    def general(x):
        calls.append(np.size(x))
        return fp.fp_widen(x, *FP16, *FP17, True)

    tabled = fp._TableWhenItPays(16, general)
    rng = np.random.default_rng(16)
    sizes = [1, 5000, 30000, 30535, 4000, 7]  # the fourth reaches 65536 in all
    for i, n in enumerate(sizes):
        x = rng.integers(0, 1 << 16, n)
        _same(tabled(x), fp.fp_widen(x, *FP16, *FP17, True))
        assert (tabled.table is None) == (i < 3)
    assert calls == [1, 5000, 30000, 1 << 16]  # then only the table answers
