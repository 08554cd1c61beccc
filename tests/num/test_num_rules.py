"""Hand-checked cases of sim.num: the README's examples of each NVDLA rule,
the integer rounding helpers, array/scalar handling and the fp CLI."""

import numpy as np
import pytest

import sim.num
from sim.cli.fp import main as fp_main
from sim.num import rounding

# (operation, a, b or None, expected): one row per documented behaviour
RULE_CASES = [
    ("fp16_add", 0x0400, 0x0001, 0x0600),  # exponent-0 input read as a normal
    ("fp16_mul", 0x0400, 0x1400, 0x0000),  # no denormal outputs
    ("fp16_mul", 0x0400, 0x3BFF, 0x0000),  # just below the smallest normal: zero
    ("fp16_add", 0x5800, 0x7BFE, 0x7BFF),  # overflow saturates
    ("fp16_mul", 0x7C00, 0x0400, 0x4400),  # Inf is 2**16
    ("fp16_mul", 0x7C00, 0x0000, 0x0000),  # 0 * Inf = 0
    ("fp16_add", 0x7C00, 0x5800, 0x7C02),  # Inf operand: window without sticky bit
    ("fp16_add", 0x7E01, 0xFE02, 0x7E01),  # NaN a passes bit for bit
    ("fp16_add", 0x3C00, 0xFE02, 0xFE02),  # else NaN b
    ("fp16_sub", 0x3C00, 0x7E02, 0xFE02),  # sub flips b first, NaN included
    ("fp16_add", 0x8400, 0x0400, 0x8000),  # zero sum: sign of the larger field
    ("fp16_sub", 0x8400, 0x8400, 0x8000),  # tie: a's sign
    ("fp16_max", 0x8000, 0x0000, 0x0000),  # -0 < +0
    ("fp16_min", 0x0000, 0x8000, 0x8000),
    ("fp16_to_fp32", 0x7E00, None, 0x7F800200),  # NaN payload right-aligned
    ("fp16_to_fp17", 0x7C00, None, 0x0FBFF),  # Inf -> max finite
    ("fp17_to_fp16", 0x0BC00, None, 0x7BFF),  # would round to Inf: saturates
    ("fp17_to_fp32", 0x00001, None, 0x30002000),  # fp17 exponent 0 read as normal
    ("fp32_to_fp16", 0x7F800400, None, 0x7C00),  # NaN keeps low mantissa bits
    ("fp32_to_fp16", 0x7FC00000, None, 0x7C00),
    ("fp32_to_fp17", 0x2B000001, None, 0x00000),  # fp17 subnormal range flushes
    ("uint16_to_fp17", 0x8000, None, 0x07800),  # u / 65536 = 0.5
]


@pytest.mark.parametrize("op,a,b,expected", RULE_CASES)
def test_rule_examples(op, a, b, expected):
    fn = getattr(sim.num, op)
    got = fn(a) if b is None else fn(a, b)
    assert int(got) == expected, f"{op}({a:#x}, {b}) = {int(got):#x}, expected {expected:#x}"


@pytest.mark.parametrize(
    "x,s,bits,expected",
    [
        (5, 1, 8, 3),  # 2.5 -> 3: half away from zero
        (-5, 1, 8, -3),
        (7, 2, 8, 2),  # 1.75 -> 2
        (-6, 2, 8, -2),  # -1.5 -> -2
        (1000, 0, 8, 127),  # saturates
        (-1000, 2, 8, -128),
        (1 << 62, 63, 8, 1),  # 0.5 -> 1 at the widest shift
        (12345, 200, 16, 0),
    ],
)
def test_convert_rounds_half_away_and_saturates(x, s, bits, expected):
    assert rounding.convert(x, s, bits) == expected


@pytest.mark.parametrize(
    "x,s,bits,expected",
    [(3, 2, 32, 12), (-3, 30, 32, -(1 << 31)), (1, 31, 32, (1 << 31) - 1), (0, 60, 32, 0)],
)
def test_shifter_saturates(x, s, bits, expected):
    assert rounding.shift_left_saturate(x, s, bits) == expected


def test_round_nearest_even_ties():
    assert [rounding.round_nearest_even(m, 2) for m in (0b1010, 0b1110, 0b1011)] == [2, 4, 3]


def test_scalars_and_broadcasting():
    assert isinstance(sim.num.fp16_add(0x3C00, 0x3C00), np.uint16)
    out = sim.num.fp32_mul(np.array([[0x3F800000], [0x40000000]], np.uint32), 0x40400000)
    assert out.shape == (2, 1) and out.dtype == np.uint32
    assert out.ravel().tolist() == [0x40400000, 0x40C00000]
    with pytest.raises(TypeError):
        sim.num.fp16_add(1.5, 2.0)


def test_block_settings_broadcast_over_lanes():
    data = np.full((2, 4), 0x3C00, np.uint16)  # fp16 1.0 in every lane
    out = sim.num.sdp_y_cvt(
        data_in=data, bypass=0, offset=0, scale=1, truncate=0, nan_to_zero=0,
        precision=np.array([2, 1]),
    )["out"]  # fmt: skip
    assert out[0].tolist() == [0x3F800000] * 4  # fp16 -> fp32
    assert out[1].tolist() == [0x3C00] * 4  # int16 path: (x - 0) * 1 >> 0


def test_specials_data():
    assert sim.num.INF_CONVERSION["sdp"].pattern == int(sim.num.fp16_to_fp32(0x7C00))
    assert sim.num.INF_CONVERSION["cdp"].pattern == int(sim.num.fp16_to_fp17(0x7C00))
    assert sim.num.flush_nans(np.array([0x7E00, 0x7C00, 0xFC01], np.uint16)).tolist() == [
        0,
        0x7C00,
        0,
    ]


def test_cli_prints_operands_and_result(capsys):
    assert fp_main(["fp16_add", "0x7c00", "0x5800"]) == 0
    out = capsys.readouterr().out
    assert "0x7c00" in out and "0x5800" in out and "out = 0x7c02" in out


CLI_ERRORS = [["fp99_add", "1", "2"], ["fp16_add", "zz", "1"], ["fp16_add", "1"]]


@pytest.mark.parametrize("argv", CLI_ERRORS)
def test_cli_errors_are_one_line(argv, capsys):
    assert fp_main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
