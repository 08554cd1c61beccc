"""fp16 direct convolution: exact sums, Inf as 65536, NaN priority, NaN flush, counters.

Values are chosen so the documented arithmetic is exact (same block exponent
for every lane, integer sums well inside fp32): the result must then be the
fp32 of the exact sum, whatever the internal order.
"""

import numpy as np
import pytest

from sim.program.conv import run_conv

from .test_conv import reference_conv

CDMA = "NVDLA_CDMA"


def fp16(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def fp32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def small_ints(rng, shape):
    """fp16 integers 2..15 (exponents 16..18: one block exponent) with signs, some zeros."""
    mag = rng.integers(2, 16, shape).astype(np.float64)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    zero = rng.random(shape) < 0.1
    return np.where(zero, 0.0, mag * sign)


@pytest.mark.parametrize("c,k,r,s,pad", [(70, 5, 3, 3, (1, 1, 1, 1)), (16, 3, 2, 1, (0, 0, 0, 1)),
                                         (33, 17, 1, 3, (2, 0, 0, 0))])
def test_fp16_exact_sums(c, k, r, s, pad):
    rng = np.random.default_rng(c * 100 + k)
    x = small_ints(rng, (c, 5, 6))
    w = small_ints(rng, (k, c, r, s))
    out, counters = run_conv("nv_full", fp16(x), fp16(w), precision="fp16", pad=pad,
                             pad_value=int(fp16(2.0)))
    want = reference_conv(x, w, (1, 1), (1, 1), pad, 2.0, out.shape[1:]).astype(np.float64)
    np.testing.assert_array_equal(out, fp32_bits(want))
    assert counters[(CDMA, "D_NAN_INPUT_DATA_NUM_0")] == 0
    assert counters[(CDMA, "D_INF_INPUT_WEIGHT_NUM_0")] == 0


def test_fp16_inf_is_65536():
    x = np.zeros((4, 1, 2))
    x[0, 0, 0] = np.inf
    x[1, 0, 1] = -np.inf
    x[2] = 2.0
    w = np.zeros((2, 4, 1, 1))
    w[0, :, 0, 0] = [2.0, 2.0, 4.0, 0.0]
    w[1, :, 0, 0] = [0.0, 4.0, 2.0, 2.0]
    out, counters = run_conv("nv_full", fp16(x), fp16(w), precision="fp16")
    inf = 65536.0
    want = [[2 * inf + 8, -2 * inf + 8], [4, -4 * inf + 4]]
    np.testing.assert_array_equal(out[:, 0, :], fp32_bits(want))
    assert counters[(CDMA, "D_INF_INPUT_DATA_NUM_0")] == 2


@pytest.mark.parametrize("flush", [False, True])
def test_fp16_nan_priority_flush_and_counters(flush):
    x = np.full((20, 2, 2), 2.0)
    bits = fp16(x)
    bits[5, 0, 0] = 0x7E01  # a later channel
    bits[3, 0, 0] = 0xFD55  # the first NaN in channel order
    bits[7, 1, 1] = 0x7C00  # +Inf
    w = np.full((2, 20, 1, 1), 2.0)
    wbits = fp16(w)
    wbits[1, 10, 0, 0] = 0x7C01  # a weight NaN beats any data NaN
    out, counters = run_conv("nv_full", bits, wbits, precision="fp16", nan_to_zero=flush)
    k0 = out[0]
    if flush:
        assert k0[0, 0] == fp32_bits(2.0 * 2.0 * 18)  # both NaN lanes read as +0
    else:
        assert k0[0, 0] == 0xFF800155
    assert k0[0, 1] == fp32_bits(80.0)
    assert k0[1, 1] == fp32_bits(2.0 * 65536 + 2.0 * 2.0 * 19)
    assert np.all(out[1] == 0x7F800001)
    # raw counts, flush or not: the padding lanes of the 16-channel atoms hold zeros
    assert counters[(CDMA, "D_NAN_INPUT_DATA_NUM_0")] == 2
    assert counters[(CDMA, "D_INF_INPUT_DATA_NUM_0")] == 1
    assert counters[(CDMA, "D_NAN_INPUT_WEIGHT_NUM_0")] == 1
    assert counters[(CDMA, "D_INF_INPUT_WEIGHT_NUM_0")] == 0


@pytest.mark.parametrize("dead_weight", [0x0000, 0x8000])
def test_nan_in_a_lane_every_kernel_ignores_still_decides_its_blocks(dead_weight):
    """Lanes whose weights are all zero are skipped for the products, not for NaNs."""
    from types import SimpleNamespace

    from sim.conv.mac_fp16 import conv_fp16

    layer = SimpleNamespace(stride_y=1, stride_x=1, dilation_y=1, dilation_x=1, pad_top=1,
                            pad_left=1, pad_value=0, out_height=4, out_width=4)
    x = np.full((1, 8, 4, 4), 0x3C00, np.uint16)  # 1.0
    x[0, 3, 1, 2] = 0x7E05  # a NaN in channel 3
    w = np.full((2, 8, 3, 3), 0x3C00, np.uint16)
    w[:, 3] = dead_weight  # channel 3 is dead in every kernel
    out = conv_fp16(x, w, layer, 8)
    touched = np.zeros((4, 4), bool)
    touched[0:3, 1:4] = True  # outputs whose 3x3 window covers pixel (1, 2)
    for k in range(2):
        assert (out[0, k][touched] == 0x7F800205).all()
        assert (out[0, k][~touched] & 0x7F800000 != 0x7F800000).all()
