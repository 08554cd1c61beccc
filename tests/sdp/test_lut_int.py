"""The SDP's integer LUT kernel (sim.sdp.lut_int, large layers) against the numpy path.

Each layer runs twice, through the kernel and through ``sim.num.sdp``'s
array stages, with random LUT settings (both LE modes, index selects of
either sign and beyond the word, negative starts, every priority) over data
that lands below, inside and beyond both tables.
"""

import numpy as np
import pytest

from sim.program.sdp import counter, run_sdp
from sim.sdp import lut_int

COUNTERS = ("D_PERF_LUT_UFLOW_0", "D_PERF_LUT_OFLOW_0", "D_PERF_LUT_HYBRID_0",
            "D_PERF_LUT_LE_HIT_0", "D_PERF_LUT_LO_HIT_0", "D_PERF_OUT_SATURATION_0")


def random_lut(rng, scale: int) -> dict:
    """LUT settings scaled to data of magnitude up to 2**scale, now and then extreme."""
    def start():
        return int(rng.choice([-(1 << (scale - 1)), 0, -(1 << 31), rng.integers(-1000, 1000)]))

    def select():  # indices across the tables, the fraction's top bits, any 8-bit value
        return int(rng.choice([scale - 7 + rng.integers(-3, 4), rng.integers(31, 37),
                               rng.integers(0, 256)])) & 0xFF

    cfg = dict(le_function=int(rng.integers(0, 2)), uflow_priority=int(rng.integers(0, 2)),
               oflow_priority=int(rng.integers(0, 2)), hybrid_priority=int(rng.integers(0, 2)),
               le_index_offset=int(rng.integers(-4, scale)) & 0xFF,
               le_index_select=select(), lo_index_select=select())
    for name in ("le_start", "lo_start"):
        cfg[name] = start() & 0xFFFFFFFF
    for name in ("le_end", "lo_end"):
        cfg[name] = int(rng.integers(0, 1 << scale))
    for t in ("le", "lo"):
        for side in ("uflow", "oflow"):
            cfg[f"{t}_slope_{side}_scale"] = int(rng.integers(0, 1 << 16))
            cfg[f"{t}_slope_{side}_shift"] = int(rng.integers(0, 32))
    return cfg


@pytest.mark.parametrize("seed", range(24))
def test_kernel_matches_the_array_stages(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    precision = ("int8", "int16")[seed % 2]
    bound = 128 if precision == "int8" else 32768
    cube = rng.integers(-bound, bound, (16, 5, 9)).astype(np.int8 if bound == 128 else np.int16)
    mul = int(rng.integers(1, 300))
    kw = dict(in_prec=precision, out_prec=precision, cvt=(0, 1, int(rng.integers(0, 8))),
              x1=dict(bypass=0, mul_bypass=0, mul_operand=mul, mul_shift=0),
              y=dict(bypass=0, lut_bypass=0), lut=random_lut(rng, (bound * mul).bit_length()),
              le=[int(v) for v in rng.integers(0, 1 << 16, 65)],
              lo=[int(v) for v in rng.integers(0, 1 << 16, 257)])
    monkeypatch.setattr(lut_int, "KERNEL_MIN", 1 << 62)
    arrays, m_arrays = run_sdp("nv_full", cube, **kw)
    monkeypatch.setattr(lut_int, "KERNEL_MIN", 0)
    for memo_share in (1 << 62, 0):  # each value looked up; the block's range looked up once
        monkeypatch.setattr(lut_int, "MEMO_SHARE", memo_share)
        kernel, m_kernel = run_sdp("nv_full", cube, **kw)
        assert np.array_equal(kernel, arrays), memo_share
        for reg in COUNTERS:
            assert counter(m_kernel, reg) == counter(m_arrays, reg), (reg, memo_share)
