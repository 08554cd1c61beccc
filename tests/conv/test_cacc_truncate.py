"""CACC's integer delivery past 16 bits of CLIP_TRUNCATE (the master RTL's int8 CACC).

The RTL appends 16 fraction bits to the sum and shifts arithmetically by
CLIP_TRUNCATE (0..31): the result, a guide bit and 15 sticky bits.  Rounding adds
one when the guide bit is set and the sum is positive or a sticky bit is set, then
saturates to int32.  Past 16 bits the sum's lowest bits fall out of the sticky bits.
"""

import numpy as np
import pytest

from sim.errors import ConfigurationError
from sim.num.mac import cacc_round_int32
from sim.program.conv import run_conv

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def rtl_round(acc: int, truncate: int) -> int:
    """The RTL's rule, bit by bit, on Python integers, before saturation."""
    shifted = (acc << 16) >> truncate  # {sum, 16'b0} >>> truncate
    result, guide, sticky = shifted >> 16, (shifted >> 15) & 1, shifted & 0x7FFF
    return result + (1 if guide and (acc >= 0 or sticky) else 0)


def _sums(truncate: int) -> list[int]:
    """Random 34-bit sums, and sums around each tie, with and without bits under the
    sticky bits."""
    rng = np.random.default_rng(truncate)
    sums = rng.integers(-(1 << 33), 1 << 33, 300).tolist()
    sums += rng.integers(-(1 << 20), 1 << 20, 100).tolist()
    if truncate:
        half = 1 << (truncate - 1)
        for k in (-3, -1, 0, 2):
            tie = k * (1 << truncate) + half
            sums += [tie + d for d in (-1, 0, 1, 1 << max(truncate - 16, 0), 15)]
    return [s for s in sums if -(1 << 33) <= s < 1 << 33]


@pytest.mark.parametrize("truncate", range(32))
def test_cacc_rounding_is_the_rtl_rule(truncate):
    sums = _sums(truncate)
    rounded = [rtl_round(s, truncate) for s in sums]
    got, saturated = cacc_round_int32(np.array(sums, dtype=np.int64), truncate)
    assert got.dtype == np.int32
    assert got.tolist() == [min(max(r, INT32_MIN), INT32_MAX) for r in rounded]
    assert saturated == sum(not INT32_MIN <= r <= INT32_MAX for r in rounded)


def test_sums_below_the_sticky_bits_round_as_the_tie():
    """Sums of NVIDIA's nv_small RTL run (CLIP_TRUNCATE 20, a 1x1 convolution of crafted
    int8 data): -2**19 + 1 and -2**19 + 15 gave -1 like the tie -2**19, where rounding the
    exact value gives 0; -2**19 + 16 reaches a sticky bit and gives 0."""
    sums = np.array([-(1 << 19), -(1 << 19) + 1, -(1 << 19) + 15, -(1 << 19) + 16,
                     (1 << 19) - 1, 1 << 19], dtype=np.int64)
    got, _ = cacc_round_int32(sums, 20)
    assert got.tolist() == [-1, -1, -1, 0, 0, 1]


def test_nv_small_convolution_rounds_as_the_rtl():
    """The RTL run above as a layer: a 1x1 convolution of 33 channels whose sums sit on and
    just above -2**19 (32 products -128 * 127, and one more per pixel), CLIP_TRUNCATE 20."""
    x = np.full((33, 1, 4), -128, np.int8)
    x[32, 0] = [-63, -48, -64, -77]  # times 65: sums -2**19 + 1, +976, -64, -909
    w = np.full((8, 33, 1, 1), 127, np.int8)
    w[:, 32] = 65
    out, _ = run_conv("nv_small", x, w, precision="int8", truncate=20)
    sums = [-(1 << 19) + 1, -(1 << 19) + 976, -(1 << 19) - 64, -(1 << 19) - 909]
    assert np.einsum("chw,kc->khw", x.astype(np.int64), w[:, :, 0, 0].astype(np.int64))[
        0, 0].tolist() == sums
    assert out[:, 0].tolist() == [[rtl_round(s, 20) for s in sums]] * 8 == [[-1, 0, -1, -1]] * 8


@pytest.mark.parametrize("config,truncate,refused", [
    ("nv_small", 31, False), ("nv_large", 17, False), ("nv_full", 16, False),
    ("nv_full", 17, True)])
def test_truncate_limit_per_configuration(config, truncate, refused):
    x = np.ones((8, 2, 2), np.int8)
    w = np.ones((8, 8, 1, 1), np.int8)
    if refused:
        with pytest.raises(ConfigurationError, match=f"CLIP_TRUNCATE {truncate} exceeds 16"):
            run_conv(config, x, w, precision="int8", truncate=truncate)
    else:
        out, _ = run_conv(config, x, w, precision="int8", truncate=truncate)
        assert out.shape == (8, 2, 2)
