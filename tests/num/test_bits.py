"""sim.num.bits: bit fields and values of raw patterns, for people."""

import pytest

from sim.cli.fp import main as fp_main
from sim.num.bits import FORMATS, describe_fields, describe_value


def reference_fields(value: int, fmt: str) -> str:
    """Fields cut from Python's own binary formatting (independent of bitstring)."""
    E, M = FORMATS[fmt]
    width = M if E == 0 else 1 + E + M
    text = format(value & ((1 << width) - 1), f"0{width}b")
    if E == 0:
        return " ".join(text[i: i + 4] for i in range(0, width, 4))
    return f"{text[0]} | {text[1: 1 + E]} | {text[1 + E:]}"


@pytest.mark.parametrize("fmt, value", [
    ("fp16", 0x7C00), ("fp16", 0xFE01), ("fp16", 0x0001), ("fp16", 0x3C00),
    ("fp17", 0x1FFFF), ("fp17", 0x0FBFF), ("fp32", 0x7F800200), ("fp32", 0x80000000),
    ("uint16", 0xA5), ("int8", -1), ("int16", 0x8000), ("int32", 0x12345678),
])
def test_fields_match_python_binary(fmt, value):
    assert describe_fields(value, fmt) == reference_fields(value, fmt)


@pytest.mark.parametrize("fmt, value, want", [
    ("fp16", 0x7C00, "0x7c00 (inf)"), ("fp16", 0xFC00, "0xfc00 (-inf)"),
    ("fp16", 0x7E00, "0x7e00 (nan)"), ("fp16", 0x3C00, "0x3c00 (1)"),
    ("fp16", 0x0001, "0x0001 (5.96046448e-08)"), ("fp17", 0x07C00, "0x07c00 (1)"),
    ("fp32", 0xC0490FDB, "0xc0490fdb (-3.14159274)"), ("uint16", 7, "0x0007 (7)"),
])
def test_values(fmt, value, want):
    assert describe_value(value, fmt) == want


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown format"):
        describe_fields(1, "fp8")


def test_fp_command_shows_the_fields(capsys):
    assert fp_main(["fp16_mul", "0x3c00", "0xc000"]) == 0
    out = capsys.readouterr().out
    assert "out = 0xc000 (-2)  1 | 10000 | 0000000000" in out


def test_mismatch_report_shows_fp16_fields():
    from sim.diff.localise import Cube, ElementDiff

    cube = Cube(key=(), layer=0, engine="SDP", unit="NVDLA_SDP", memory="pri_mem", addr=0,
                precision="fp16", channels=1, height=1, width=1, batch=1, group=16)
    text = ElementDiff(cube, 0x40, 0, 0, 0, 0, expected=0x3C00, actual=0xBC01).describe()
    assert text.endswith("[0 | 01111 | 0000000000 vs 1 | 01111 | 0000000001]")
