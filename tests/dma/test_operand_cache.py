"""sim.dma.operands' format and layout are made once per arguments: what an uncached call
makes, errors raised every time, a Precision and its name kept apart (fixed tables)."""

import pytest

from sim.configs import Precision
from sim.dma.align import LayoutError
from sim.dma.operands import operand_format, operand_layout

FORMATS = [("bias", "int8", 1, 1, False), ("bn", "int16", 2, 2, True),
           ("ew", Precision.FP16, 2, 1, True), ("bn", Precision.INT8, 2, 2, False)]


@pytest.mark.parametrize("args", FORMATS)
def test_a_remembered_format_and_layout_are_what_a_fresh_call_makes(args):
    fmt = operand_format(*args, strict=False)
    assert operand_format(*args, strict=False) is fmt
    fresh = operand_format.__wrapped__(*args, strict=False)
    assert fmt == fresh and repr(fmt) == repr(fresh)
    shape = (40, 3, 5) if fmt.per_element else (40, 1, 1)
    layout = operand_layout(fmt, *shape, 8)
    assert operand_layout(fmt, *shape, 8) is layout
    assert layout == operand_layout.__wrapped__(fmt, *shape, 8)


def test_a_name_and_its_precision_stay_apart():
    named = operand_format("bias", "int8", 1, 1, False, strict=False)
    member = operand_format("bias", Precision.INT8, 1, 1, False, strict=False)
    assert type(named.precision) is str and member.precision is Precision.INT8


def test_errors_are_raised_every_time():
    for _ in range(2):
        with pytest.raises(LayoutError, match="fp16 operands take 2 bytes"):
            operand_format("bn", "fp16", data_size=1)
        with pytest.raises(LayoutError, match="per-channel data is 1x1xC"):
            operand_layout(operand_format("bias", "int8"), 8, 2, 2, 32)
