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
