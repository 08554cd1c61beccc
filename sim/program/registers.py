"""Write a register from named fields (others zero), as firmware composes a register word."""

from __future__ import annotations

PRECISION_CODES = {"int8": 0, "int16": 1, "fp16": 2}  # IN/PROC/OUT_PRECISION field values


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
