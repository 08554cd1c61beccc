"""CDP integer convertors against the golden vectors of NVDLA's HLS models."""

import numpy as np
import pytest

from sim.cdp.convert import icvt_int, ocvt_int
from sim.jit import njit
from sim.num.rounding import sign_extend

ROWS = 20000  # a slice keeps the test fast; the rows are random


@njit
def _icvt_rows(data, alu, mul, trunc, prec, out):
    for i in range(data.size):
        d = np.int64(data[i])
        if prec[i] == 0:
            lo = icvt_int(sign_extend(d & 0xFF, 8), alu[i], mul[i], trunc[i], True)
            hi = icvt_int(sign_extend(d >> 8, 8), alu[i], mul[i], trunc[i], True)
            out[i] = ((hi & 0x1FF) << 9) | (lo & 0x1FF)
        else:
            out[i] = icvt_int(sign_extend(d, 16), alu[i], mul[i], trunc[i], False) & 0x3FFFF


@njit
def _ocvt_rows(data, alu, mul, trunc, prec, out, sat):
    for i in range(data.size):
        d = np.int64(data[i])
        if prec[i] == 0:
            lo, s0 = ocvt_int(sign_extend(d & 0x1FFFFFF, 25), alu[i], mul[i], trunc[i], True)
            hi, s1 = ocvt_int(sign_extend(d >> 25, 25), alu[i], mul[i], trunc[i], True)
            out[i] = ((hi & 0xFF) << 8) | (lo & 0xFF)
            sat[i] = np.int64(s0) | (np.int64(s1) << 1)
        else:
            v, s0 = ocvt_int(sign_extend(d, 33), alu[i], mul[i], trunc[i], False)
            out[i] = v & 0xFFFF
            sat[i] = np.int64(s0)


def _load(shared_dir, name):
    data = np.load(shared_dir / "golden" / "fp" / f"{name}.npz")
    keep = data["precision"] != 2  # fp16 rows exercise sim.num's fp16_to_fp17 instead
    return {k: data[k][keep][:ROWS].astype(np.int64) for k in data.files}


@pytest.mark.parametrize("precision", [0, 1])
def test_icvt_matches_golden(shared_dir, precision):
    g = _load(shared_dir, "cdp_icvt")
    sel = g["precision"] == precision
    g = {k: v[sel] for k, v in g.items()}
    out = np.zeros(g["out"].size, np.int64)
    _icvt_rows(g["data_in"], g["alu_in"], g["mul_in"], g["truncate"], g["precision"], out)
    bad = np.flatnonzero(out != g["out"])
    assert bad.size == 0, f"{bad.size} mismatches, first row {bad[:1]}"


@pytest.mark.parametrize("precision", [0, 1])
def test_ocvt_matches_golden(shared_dir, precision):
    g = _load(shared_dir, "cdp_ocvt")
    sel = g["precision"] == precision
    g = {k: v[sel] for k, v in g.items()}
    out = np.zeros(g["out"].size, np.int64)
    sat = np.zeros(g["out"].size, np.int64)
    _ocvt_rows(g["data_in"], g["alu_in"], g["mul_in"], g["truncate"], g["precision"], out, sat)
    bad = np.flatnonzero((out != g["out"]) | (sat != g["sat"]))
    assert bad.size == 0, f"{bad.size} mismatches, first row {bad[:1]}"
