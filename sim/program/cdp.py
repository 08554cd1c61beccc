"""Program a CDP (local response normalisation) layer reading through CDP_RDMA."""

from __future__ import annotations

import numpy as np

from ..regs.enums import Precision
from .registers import set_reg

CDP, CDP_RDMA = "NVDLA_CDP", "NVDLA_CDP_RDMA"


def linear_lut(precision: str, window: int) -> dict:
    """Linear LE (65 entries) and LO (257) tables over the square sums' whole range.

    Both describe the same decreasing line, so either table answers alike.
    Returns the ``lut`` argument of :func:`program_cdp`.
    """
    bits = 9 if precision == "int8" else 17  # the input convertor's output width
    top = window * (1 << (bits - 1)) ** 2
    return {"le": 16000 - 200 * np.arange(65), "lo": 16000 - 50 * np.arange(257),
            "le_select": (top >> 6).bit_length(), "lo_select": (top >> 8).bit_length()}


def _upload_tables(m, le, lo) -> None:
    """The LE and LO tables through the LUT access port (16-bit entries, from address 0)."""
    for table_id, table in ((0, le), (1, lo)):
        set_reg(m, CDP, "S_LUT_ACCESS_CFG_0", lut_addr=0, lut_table_id=table_id,
                lut_access_type=1)
        for value in table:
            set_reg(m, CDP, "S_LUT_ACCESS_DATA_0", lut_data=int(value) & 0xFFFF)


def program_cdp_lut(m, fields: dict, le, lo) -> None:
    """Every S_LUT_* register of the CDP: ``fields`` by field name less ``lut_`` (starts
    and ends whole 38-bit values, split in LOW and HIGH here), then the LE and LO tables."""
    _upload_tables(m, le, lo)
    f = fields
    set_reg(m, CDP, "S_LUT_CFG_0", lut_le_function=f["le_function"],
            lut_uflow_priority=f["uflow_priority"], lut_oflow_priority=f["oflow_priority"],
            lut_hybrid_priority=f["hybrid_priority"])
    set_reg(m, CDP, "S_LUT_INFO_0", lut_le_index_offset=f.get("le_index_offset", 0),
            lut_le_index_select=f["le_index_select"], lut_lo_index_select=f["lo_index_select"])
    for stem in ("le_start", "le_end", "lo_start", "lo_end"):
        name = stem.upper()
        set_reg(m, CDP, f"S_LUT_{name}_LOW_0", **{f"lut_{stem}_low": f[stem] & 0xFFFFFFFF})
        set_reg(m, CDP, f"S_LUT_{name}_HIGH_0", **{f"lut_{stem}_high": f[stem] >> 32})
    for t in ("le", "lo"):
        set_reg(m, CDP, f"S_LUT_{t.upper()}_SLOPE_SCALE_0",
                **{f"lut_{t}_slope_{side}_scale": f[f"{t}_slope_{side}_scale"]
                   for side in ("uflow", "oflow")})
        set_reg(m, CDP, f"S_LUT_{t.upper()}_SLOPE_SHIFT_0",
                **{f"lut_{t}_slope_{side}_shift": f[f"{t}_slope_{side}_shift"]
                   for side in ("uflow", "oflow")})


def program_cdp(m, shape, precision: str, src: tuple, dst: tuple, *, window: int, datin,
                datout, lut: dict, sqsum_bypass: bool = False, mul_bypass: bool = False,
                nan_to_zero: bool = False) -> None:
    """CDP_RDMA and CDP registers; ``src``/``dst`` are (address, FeatureLayout).

    ``datin``/``datout`` are (offset, scale, shifter); ``lut`` as
    :func:`linear_lut` returns it (linear LE and LO tables from 0), or with
    ``fields`` every LUT register (:func:`program_cdp_lut`).  NAN_TO_ZERO is
    written only when set (fp16 data).
    """
    from .registers import feature_source

    code = Precision(precision).code
    feature_source(m, CDP_RDMA, shape, *src)
    set_reg(m, CDP_RDMA, "D_DATA_FORMAT_0", input_data=code)
    if "fields" in lut:
        program_cdp_lut(m, lut["fields"], lut["le"], lut["lo"])
    else:
        _program_linear_lut(m, lut)
    _program_core(m, precision, dst, window, datin, datout, sqsum_bypass, mul_bypass)
    if nan_to_zero:
        set_reg(m, CDP, "D_NAN_FLUSH_TO_ZERO_0", nan_to_zero=1)


def _program_linear_lut(m, lut: dict) -> None:
    _upload_tables(m, lut["le"], lut["lo"])
    le_sel, lo_sel = lut["le_select"], lut["lo_select"]
    set_reg(m, CDP, "S_LUT_CFG_0", lut_le_function=1)
    set_reg(m, CDP, "S_LUT_INFO_0", lut_le_index_offset=0, lut_le_index_select=le_sel,
            lut_lo_index_select=lo_sel)
    set_reg(m, CDP, "S_LUT_LE_START_LOW_0", lut_le_start_low=0)
    set_reg(m, CDP, "S_LUT_LE_END_LOW_0", lut_le_end_low=(64 << le_sel) & 0xFFFFFFFF)
    set_reg(m, CDP, "S_LUT_LO_START_LOW_0", lut_lo_start_low=0)
    set_reg(m, CDP, "S_LUT_LO_END_LOW_0", lut_lo_end_low=(256 << lo_sel) & 0xFFFFFFFF)


def _program_core(m, precision, dst, window, datin, datout, sqsum_bypass, mul_bypass) -> None:
    code = Precision(precision).code
    set_reg(m, CDP, "D_FUNC_BYPASS_0", sqsum_bypass=int(sqsum_bypass),
            mul_bypass=int(mul_bypass))
    set_reg(m, CDP, "D_LRN_CFG_0", normalz_len=(window - 3) // 2)
    set_reg(m, CDP, "D_DATA_FORMAT_0", input_data_type=code)
    set_reg(m, CDP, "D_DATIN_OFFSET_0", datin_offset=datin[0] & 0xFFFF)
    set_reg(m, CDP, "D_DATIN_SCALE_0", datin_scale=datin[1] & 0xFFFF)
    set_reg(m, CDP, "D_DATIN_SHIFTER_0", datin_shifter=datin[2])
    set_reg(m, CDP, "D_DATOUT_OFFSET_0", datout_offset=datout[0] & 0xFFFFFFFF)
    set_reg(m, CDP, "D_DATOUT_SCALE_0", datout_scale=datout[1] & 0xFFFF)
    set_reg(m, CDP, "D_DATOUT_SHIFTER_0", datout_shifter=datout[2])
    addr, lay = dst
    set_reg(m, CDP, "D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=addr)
    set_reg(m, CDP, "D_DST_LINE_STRIDE_0", dst_line_stride=lay.line_stride)
    set_reg(m, CDP, "D_DST_SURFACE_STRIDE_0", dst_surface_stride=lay.surface_stride)
    set_reg(m, CDP, "D_DST_DMA_CFG_0", dst_ram_type=1)
    set_reg(m, CDP, "D_PERF_ENABLE_0", dma_en=1, lut_en=1)
