"""The SDP output convertor's saturation flag on the master-RTL configurations.

NVIDIA's shiftrightsatsu (49-bit input, 17-bit output) appends as many fraction bits as
the input has, shifts right arithmetically, and rounds half away from zero from the guide
and sticky bits.  It flags a positive input whose rounded result passes 2**16 - 1 and a
negative one whose shifted value (before rounding) passes -2**16.  NVIDIA's nv_small RTL
counted those in D_PERF_OUT_SATURATION where NVIDIA's C-model leaves out results a
rounding step from the plain shift.
"""

import numpy as np
import pytest

from sim.num.vector_int import saturated
from sim.program.sdp import counter, run_sdp

IN_BITS, OUT_BITS = 49, 17


def rtl_flag(x: int, shift: int) -> bool:
    """The flag, bit by bit on Python integers (two's complement words)."""
    mask = (1 << IN_BITS) - 1
    sign = (x >> (IN_BITS - 1)) & 1
    word = ((mask if sign else 0) << (2 * IN_BITS)) | ((x & mask) << IN_BITS)
    word >>= shift  # {sign copies, data, zeros} >> shift
    stick = word & ((1 << (IN_BITS - 1)) - 1)
    guide = (word >> (IN_BITS - 1)) & 1
    data_shift = (word >> IN_BITS) & mask
    point5 = guide and (not sign or stick != 0)
    upper = (data_shift >> (OUT_BITS - 1)) & ((1 << (IN_BITS - OUT_BITS)) - 1)
    all_ones = (1 << (IN_BITS - OUT_BITS)) - 1
    low = data_shift & ((1 << (OUT_BITS - 1)) - 1)
    need = (sign and upper != all_ones) or (not sign and upper != 0) or \
        (not sign and low == (1 << (OUT_BITS - 1)) - 1 and point5)
    return shift < IN_BITS and bool(need)


def _values(shift: int) -> list[int]:
    """Around each threshold, and random 48-bit values."""
    top = 1 << (OUT_BITS - 1)
    edges = [top << shift, (top << shift) - ((1 << shift) >> 1), -(top << shift),
             -(top << shift) - ((1 << shift) >> 1), (top + 1) << shift, -((top + 1) << shift)]
    rng = np.random.default_rng(shift)
    values = [e + d for e in edges for d in (-2, -1, 0, 1, 2)]
    values += rng.integers(-(1 << 47), 1 << 47, 50).tolist()
    values += rng.integers(-(1 << 20), 1 << 20, 50).tolist()
    return [v for v in values if -(1 << 48) <= v < 1 << 48]


@pytest.mark.parametrize("shift", range(64))
def test_saturated_is_the_rtl_rule(shift):
    values = _values(shift)
    want = [rtl_flag(v, shift) for v in values]
    x = np.array(values, dtype=np.int64)
    assert saturated(x, shift, OUT_BITS).tolist() == want
    assert saturated(x, np.full(x.shape, shift), OUT_BITS).tolist() == want  # per element


# (offset, scale, shift): int8 data in [-128, 127] put on and around each threshold
BOUNDARIES = [(-65536, 1, 0), (65600, 1, 0), (-131071, 1, 1), (131073, 1, 1),
              (-524200, 1, 3), (524300, 1, 3), (-16384, 4, 0), (16400, -4, 0), (-65535, 2, 1)]


def _counted(config: str, offset: int, scale: int, shift: int):
    cube = np.arange(-128, 128, dtype=np.int64).reshape(16, 4, 4).astype(np.int8)
    out, m = run_sdp(config, cube, in_prec="int8", out_prec="int8", cvt=(offset, scale, shift))
    return cube, out, counter(m, "D_PERF_OUT_SATURATION_0")


@pytest.mark.parametrize("offset,scale,shift", BOUNDARIES)
def test_nv_small_counts_what_the_rtl_flags(offset, scale, shift):
    cube, out, count = _counted("nv_small", offset, scale, shift)
    assert count == sum(rtl_flag((int(v) - offset) * scale, shift) for v in cube.ravel())
    assert count > 0


def test_nv_full_keeps_the_c_model_rule():
    """Results one rounding step from the plain shift are not counted there."""
    cube, _, count = _counted("nv_full", -65536, 1, 0)
    flagged = [(int(v) + 65536) for v in cube.ravel() if rtl_flag(int(v) + 65536, 0)]
    assert count == sum(v > 65536 for v in flagged) < len(flagged)
