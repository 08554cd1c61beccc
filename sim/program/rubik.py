"""Program a Rubik layer (contract, split or merge) through its registers.

Address and stride fields hold bits 31:5, so whole byte-address words are
written (every address and stride must be 32-byte aligned).
"""

from __future__ import annotations

from ..records import record
from ..regs.enums import Precision

RBK = "NVDLA_RBK"
MODES = {"contract": 0, "split": 1, "merge": 2}
RAM = {"sec_mem": 0, "pri_mem": 1}


@record
class RubikSide:
    """One side of a Rubik layer: where it is and its strides (bytes)."""

    addr: int
    line: int = 0
    surface: int = 0
    planar: int = 0
    memory: str = "pri_mem"


def program_rubik(m, mode: str, precision: str, shape, src: RubikSide, dst: RubikSide, *,
                  out_channels: int | None = None, stride=(1, 1), super_line: int = 0) -> None:
    """``shape`` is the input (C, H, W); ``stride`` (x, y) and ``super_line`` for contract."""
    c, h, w = shape
    sx, sy = stride
    regs = {
        "D_MISC_CFG_0": MODES[mode] | Precision(precision).code << 8,
        "D_DAIN_RAM_TYPE_0": RAM[src.memory], "D_DAOUT_RAM_TYPE_0": RAM[dst.memory],
        "D_DATAIN_SIZE_0_0": (w - 1) | (h - 1) << 16, "D_DATAIN_SIZE_1_0": c - 1,
        "D_DATAOUT_SIZE_1_0": (out_channels or c) - 1,
        "D_DAIN_ADDR_HIGH_0": src.addr >> 32, "D_DAIN_ADDR_LOW_0": src.addr & 0xFFFFFFFF,
        "D_DAIN_LINE_STRIDE_0": src.line, "D_DAIN_SURF_STRIDE_0": src.surface,
        "D_DAIN_PLANAR_STRIDE_0": src.planar,
        "D_DAOUT_ADDR_HIGH_0": dst.addr >> 32, "D_DAOUT_ADDR_LOW_0": dst.addr & 0xFFFFFFFF,
        "D_DAOUT_LINE_STRIDE_0": dst.line, "D_DAOUT_SURF_STRIDE_0": dst.surface,
        "D_DAOUT_PLANAR_STRIDE_0": dst.planar, "D_CONTRACT_STRIDE_1_0": super_line,
        "D_DECONV_STRIDE_0": (sx - 1) | (sy - 1) << 16,
    }
    for name, value in regs.items():
        m.write_reg(f"{RBK}.{name}", value)
