"""Precision-conversion tables 29-32 as data."""

import pytest

from sim.dma.precision import PRECISION_TABLES, check_precision
from sim.errors import ConfigurationError

VALID = [
    ("conv", "image-int", "int8", "int8"),
    ("conv", "image-int", "fp16", "fp16"),
    ("conv", "image-fp16", "fp16", "fp16"),
    ("conv", "int16", "int16", "int16"),
    ("sdp", "int8", "int16", "int32"),
    ("sdp", "int16", "fp16", "int32"),
    ("sdp", "fp16", "int16", "fp32"),
    ("cdp", "fp16", "fp16", "fp16"),
    ("pdp", "int8", "int8", "int8"),
]
INVALID = [
    ("conv", "image-fp16", "int8"),
    ("conv", "int8", "int16"),
    ("conv", "fp16", "int16"),
    ("sdp", "int8", "fp16"),
    ("sdp", "fp16", "int8"),
    ("cdp", "int8", "int16"),
    ("pdp", "int16", "fp16"),
]


@pytest.mark.parametrize("unit,src,dst,pipe", VALID)
def test_valid(unit, src, dst, pipe):
    assert check_precision(unit, src, dst) == pipe


@pytest.mark.parametrize("unit,src,dst", INVALID)
def test_invalid_names_registers_and_table(unit, src, dst):
    message = rf"^REG_X: {unit} cannot convert {src} input to {dst} output \(format.rst Table"
    with pytest.raises(ConfigurationError, match=message):
        check_precision(unit, src, dst, "REG_X")


def test_tables_cover_every_pair():
    for unit in ("sdp", "cdp", "pdp"):
        assert len(PRECISION_TABLES[unit]) == 9
    assert len(PRECISION_TABLES["conv"]) == 15
