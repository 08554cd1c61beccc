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


def program_cdp(m, shape, precision: str, src: tuple, dst: tuple, *, window: int, datin,
                datout, lut: dict, sqsum_bypass: bool = False, mul_bypass: bool = False) -> None:
    """CDP_RDMA and CDP registers; ``src``/``dst`` are (address, FeatureLayout).

    ``datin``/``datout`` are (offset, scale, shifter); ``lut`` as
    :func:`linear_lut` returns it (linear LE and LO tables from 0).
    """
    from .registers import feature_source

    code = Precision(precision).code
    feature_source(m, CDP_RDMA, shape, *src)
    set_reg(m, CDP_RDMA, "D_DATA_FORMAT_0", input_data=code)
    for table_id, table in ((0, lut["le"]), (1, lut["lo"])):
        set_reg(m, CDP, "S_LUT_ACCESS_CFG_0", lut_addr=0, lut_table_id=table_id,
                lut_access_type=1)
        for value in table:
            set_reg(m, CDP, "S_LUT_ACCESS_DATA_0", lut_data=int(value) & 0xFFFF)
    le_sel, lo_sel = lut["le_select"], lut["lo_select"]
    set_reg(m, CDP, "S_LUT_CFG_0", lut_le_function=1)
    set_reg(m, CDP, "S_LUT_INFO_0", lut_le_index_offset=0, lut_le_index_select=le_sel,
            lut_lo_index_select=lo_sel)
    set_reg(m, CDP, "S_LUT_LE_START_LOW_0", lut_le_start_low=0)
    set_reg(m, CDP, "S_LUT_LE_END_LOW_0", lut_le_end_low=(64 << le_sel) & 0xFFFFFFFF)
    set_reg(m, CDP, "S_LUT_LO_START_LOW_0", lut_lo_start_low=0)
    set_reg(m, CDP, "S_LUT_LO_END_LOW_0", lut_lo_end_low=(256 << lo_sel) & 0xFFFFFFFF)
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
