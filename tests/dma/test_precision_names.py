"""sim.dma.elements.check_precision_name: the dict's answers are the enum's, and what the enum
refuses is refused (a LayoutError naming it), table-driven."""

import pytest

from sim.configs import Precision
from sim.dma.align import LayoutError
from sim.dma.elements import check_precision_name


@pytest.mark.parametrize("name", ["int8", "int16", "fp16", *Precision])
def test_a_name_or_member_is_the_enum_member(name):
    got = check_precision_name(name)
    assert got is Precision(name) and type(got) is Precision


@pytest.mark.parametrize("bad", ["INT8", "int4", "", None, 8, 2.0, ["int8"], b"int8"])
def test_anything_else_is_a_layout_error(bad):
    with pytest.raises(LayoutError, match="unknown precision"):
        check_precision_name(bad)
