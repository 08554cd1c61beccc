"""Host-side conversions of programmed values (sim.num.host)."""

import struct
import warnings

import pytest

from sim.num.host import float32_bits

INF32, SIGN32 = 0x7F800000, 0x80000000


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, 1.0 / 3, 1.0 / 7, -2.5e-40, 3.4028235e38,
                                   1e39, -1e39, float("inf"), 2.0 ** -149, 2.0 ** -151, 65504.0])
def test_float32_bits_is_the_value_rounded_to_fp32(value):
    """As C stores a double into a float (nearest, ties to even; past the range, inf)."""
    if abs(value) < 3.5e38:
        expected = struct.unpack("<I", struct.pack("<f", value))[0]
    else:
        expected = INF32 | (SIGN32 if value < 0 else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's overflow warning
        assert float32_bits(value) == expected
