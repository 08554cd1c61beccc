"""The CDMA input convertor programmed as the identity is skipped: it maps every value to
itself, in both integer precisions."""

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim.num.blocks import cdma_cvt, cdma_cvt_is_identity


@pytest.mark.parametrize("precision, dtype", [(Precision.INT8, np.int8),
                                              (Precision.INT16, np.int16)])
def test_identity_convertor_maps_every_value_to_itself(precision, dtype):
    info = np.iinfo(dtype)
    data = np.arange(info.min, info.max + 1, dtype=np.int64)
    out = cdma_cvt(data_in=data, alu_in=0, mul_in=1, in_precision=precision.code,
                   out_precision=precision.code, truncate=0)["out"]
    np.testing.assert_array_equal(out.view(np.int16).astype(np.int64), data)


@pytest.mark.parametrize("offset, scale, truncate, identity", [
    (0, 1, 0, True), (1, 1, 0, False), (0, 2, 0, False), (0, 1, 1, False),
    (0xFFFF, 1, 0, False), (0, 0xFFFF, 0, False)])
def test_only_offset_0_scale_1_no_truncation_is_the_identity(offset, scale, truncate,
                                                              identity):
    assert cdma_cvt_is_identity(offset, scale, truncate) is identity
