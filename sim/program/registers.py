"""Write a register from named fields (others zero), as firmware composes a register word."""

from __future__ import annotations


def write_fields(m, name: str, **fields) -> None:
    """Write register ``name`` (``NVDLA_SDP.D_CVT_SCALE_0``) with the given fields.

    Field names are the register map's, in any case; values are masked to the
    field width; fields not named are written as zero.
    """
    reg = m.regfile.register(name)
    word = 0
    for key, value in fields.items():
        f = reg.field(key.upper())
        word |= (int(value) & ((1 << f.width) - 1)) << f.lsb
    m.write_reg(name, word)


def set_reg(m, unit: str, reg: str, **fields) -> None:
    """:func:`write_fields` of ``unit.reg`` (``set_reg(m, "NVDLA_CDMA", "D_BANK_0", ...)``)."""
    write_fields(m, f"{unit}.{reg}", **fields)


def feature_source(m, unit: str, shape, addr: int, layout) -> None:
    """The input cube of an SDP_RDMA or CDP_RDMA (same register names): size, address, strides."""
    c, h, w = shape
    set_reg(m, unit, "D_DATA_CUBE_WIDTH_0", width=w - 1)
    set_reg(m, unit, "D_DATA_CUBE_HEIGHT_0", height=h - 1)
    set_reg(m, unit, "D_DATA_CUBE_CHANNEL_0", channel=c - 1)
    set_reg(m, unit, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=addr)
    set_reg(m, unit, "D_SRC_LINE_STRIDE_0", src_line_stride=layout.line_stride)
    set_reg(m, unit, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=layout.surface_stride)
    set_reg(m, unit, "D_SRC_DMA_CFG_0", src_ram_type=1)
