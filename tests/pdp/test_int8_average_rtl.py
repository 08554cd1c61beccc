"""int8 average pooling as NVIDIA's nv_small RTL computes it (cal1d/cal2d), where it
leaves the C-model: values past int8 range and pad registers wider than their field.

Every expected value below was worked out by hand from the RTL's bit widths
(row sums 11 bits, column sums 14 bits, padded-row term added into 15 bits;
reciprocal stages keep 31/28-bit products and cut to 11/8 bits, a
non-negative product losing the top result bit) and checked on the RTL under
Verilator (the pooling cases as nv_small traces of the same shapes and values;
the reciprocal-stage cases against a transcription of its bit selects).
"""

import numpy as np
import pytest

from sim.num.vector_int import pdp_reciprocal_stage
from sim.pdp.pooling import AVERAGE, INT8, PoolConfig, pool_split

W_STAGE, H_STAGE = (31, 11), (28, 8)

RECIP_STAGE_CASES = [
    # value, reciprocal, (product bits, result bits), result
    (127, 0x10000, H_STAGE, 127),
    (128, 0x10000, H_STAGE, 0),  # non-negative: bit 7 is dropped
    (200, 0x10000, H_STAGE, 72),  # C-model: -56
    (508, 0x10000, H_STAGE, 124),  # C-model: -4
    (700, 0x10000, H_STAGE, 60),  # C-model: -68
    (-128, 0x10000, H_STAGE, -128),
    (-129, 0x10000, H_STAGE, 127),  # negative: low 8 bits, as the C-model
    (-200, 0x10000, H_STAGE, 56),
    (255, 0x8000, H_STAGE, -128),  # 127.5 rounds to 127 + 1 = 0x80
    (-5, 0x8000, H_STAGE, -3),  # -2.5: half away from zero
    (-7, 0x8000, H_STAGE, -4),
    (-3, 0x5556, H_STAGE, -1),
    (5, 0x5556, H_STAGE, 2),
    (1023, 0x10000, W_STAGE, 1023),
    (1024, 0x10000, W_STAGE, 0),  # non-negative: bit 10 is dropped
    (-1025, 0x10000, W_STAGE, 1023),
    (-1400, 0x10000, W_STAGE, 648),
    (2047, 0x8000, W_STAGE, -1024),  # 1023.5 rounds to 1023 + 1 = 0x400
    (-11500, 0x1FFFF, W_STAGE, 552),  # the product wraps positive in 31 bits
]


@pytest.mark.parametrize("value, recip, widths, want", RECIP_STAGE_CASES)
def test_recip_stage_table(value, recip, widths, want):
    assert int(pdp_reciprocal_stage(value, recip, *widths)) == want


def pads(**regs):
    """PADDING_VALUE_1..7 registers: pads(p2=0x1A0) sets PADDING_VALUE_2."""
    return tuple(regs.get(f"p{n}", 0) for n in range(1, 8))


POOL_CASES = [
    # name, input value, (C, H, W), kernel (w, h), pads (l, r, t, b), pad registers,
    # reciprocals (w, h), output
    ("2x2 of 127, sum 508", 127, (1, 2, 2), (2, 2), (0, 0, 0, 0), pads(), (0x10000, 0x10000), 124),
    ("1x7 of 100, sum 700", 100, (1, 7, 1), (1, 7), (0, 0, 0, 0), pads(), (0x10000, 0x10000), 60),
    ("8x8 of 127, sum 8128", 127, (1, 8, 8), (8, 8), (0, 0, 0, 0), pads(), (0x10000, 0x10000), 64),
    ("2x7 of -100, sum -1400", -100, (1, 7, 2), (2, 7), (0, 0, 0, 0), pads(), (0x10000, 0x10000),
     8),
    # width pad: 11-bit field 0x1A0 = +416 (the C-model reads bit 8 as the sign: -96)
    ("width pad 0x1A0", 7, (1, 1, 1), (3, 1), (1, 1, 0, 0), pads(p2=0x1A0), (0x10000, 0x10000), 39),
    # row pad: 19-bit field 0x7F000 = -4096, times kernel width 2 = -8192 (14 bits)
    ("row pad 0x7F000", 100, (1, 1, 2), (2, 3), (0, 0, 1, 1), pads(p2=0x7F000), (0x10000, 0x10000),
     72),
    ("in range: as the C-model", -37, (1, 3, 3), (3, 3), (0, 0, 0, 0), pads(), (0x5555, 0x5555),
     -37),
]


@pytest.mark.parametrize("name, value, shape, k, pad, regs, recip, want", POOL_CASES,
                         ids=[c[0] for c in POOL_CASES])
def test_int8_average_table(name, value, shape, k, pad, regs, recip, want):
    kw, kh = k
    pl, pr, pt, pb = pad
    C, H, W = shape
    cfg = PoolConfig(precision=INT8, method=AVERAGE, kernel_width=kw, kernel_height=kh,
                     stride_width=1, stride_height=1, pad_top=pt, pad_bottom=pb, pad_values=regs,
                     recip_width=recip[0], recip_height=recip[1])
    w_out, h_out = pl + W + pr - kw + 1, pt + H + pb - kh + 1
    out = np.zeros((C, h_out, w_out), dtype=np.int64)
    pool_split(np.full(shape, value, dtype=np.int64), out, 0, w_out, cfg, pl)
    assert out.shape == (1, 1, 1) and int(out[0, 0, 0]) == want
