"""The CDP layer's registers decoded into one typed object.

The cube's size and source come from NVDLA_CDP_RDMA, everything else from
NVDLA_CDP.  Values keep the hardware's encodings where a kernel needs them
raw (convertor fields), and are turned into sizes/bytes otherwise.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8, INT16, Precision
from ..dma.precision import check_precision
from ..num.lut import (
    N_PARAMS,
    P_EXPONENT,
    P_HYBRID_PRI,
    P_LE_END,
    P_LE_OFFSET,
    P_LE_OSCALE,
    P_LE_OSHIFT,
    P_LE_SELECT,
    P_LE_START,
    P_LE_USCALE,
    P_LE_USHIFT,
    P_LO_END,
    P_LO_OSCALE,
    P_LO_OSHIFT,
    P_LO_SELECT,
    P_LO_START,
    P_LO_USCALE,
    P_LO_USHIFT,
    P_OFLOW_PRI,
    P_UFLOW_PRI,
)
from ..num.vector_int import sign_extend
from ..records import record

WINDOWS = {0: 3, 1: 5, 2: 7, 3: 9}


@record
class CdpConfig:
    width: int
    height: int
    channels: int
    precision: Precision
    src_addr: int
    src_line_stride: int
    src_surface_stride: int
    src_ram: int
    dst_addr: int
    dst_line_stride: int
    dst_surface_stride: int
    dst_ram: int
    window: int  # 3, 5, 7 or 9 channels
    sqsum_bypass: bool
    mul_bypass: bool
    nan_to_zero: bool
    datin: tuple  # (offset, scale, shifter) raw register values
    datout: tuple
    lut: np.ndarray  # parameter vector of the lookup kernels (lut_params)

    @classmethod
    def from_blocks(cls, cdp, rdma, hw) -> CdpConfig:
        """Decode the executing groups of NVDLA_CDP (``cdp``) and NVDLA_CDP_RDMA (``rdma``)."""
        cdp.fields()  # every field at once: most are read
        rdma.fields()
        precision = cdp.precision("input_data_type")
        check_precision("cdp", rdma.precision("input_data"), precision,
                        "NVDLA_CDP_RDMA.D_DATA_FORMAT_0.INPUT_DATA (input) vs "
                        "NVDLA_CDP.D_DATA_FORMAT_0.INPUT_DATA_TYPE (output)")
        hw.require_precision(precision, "NVDLA_CDP.D_DATA_FORMAT_0")
        return cls(
            width=rdma.width + 1,
            height=rdma.height + 1,
            channels=rdma.channel + 1,
            precision=precision,
            src_addr=rdma.address("src_base_addr"),
            src_line_stride=rdma.src_line_stride,
            src_surface_stride=rdma.src_surface_stride,
            src_ram=rdma.src_ram_type,
            dst_addr=cdp.address("dst_base_addr"),
            dst_line_stride=cdp.dst_line_stride,
            dst_surface_stride=cdp.dst_surface_stride,
            dst_ram=cdp.dst_ram_type,
            window=WINDOWS[cdp.normalz_len],
            sqsum_bypass=bool(cdp.sqsum_bypass),
            mul_bypass=bool(cdp.mul_bypass),
            nan_to_zero=bool(cdp.nan_to_zero),
            datin=(cdp.datin_offset, cdp.datin_scale, cdp.datin_shifter),
            datout=(cdp.datout_offset, cdp.datout_scale, cdp.datout_shifter),
            lut=lut_params(cdp, precision),
        )


def lut_params(blk, precision: str) -> np.ndarray:
    """The kernels' parameter vector from a decoded NVDLA_CDP block.

    Field widths follow NVDLA's C-model: 38-bit start/end values (6 high
    bits), 16-bit signed slope scales, 5-bit slope shifts read as signed
    (-16..15), an 8-bit signed LE index offset.  The index selects are read as
    6-bit signed numbers for int8 data, 7-bit for int16 and 8-bit for fp16.
    For fp16 the low 32 bits of start/end are fp32 bit patterns.
    """
    p = np.zeros(N_PARAMS, np.int64)
    p[P_EXPONENT] = int(blk.lut_le_function == 0)
    p[P_UFLOW_PRI] = blk.lut_uflow_priority
    p[P_OFLOW_PRI] = blk.lut_oflow_priority
    p[P_HYBRID_PRI] = blk.lut_hybrid_priority
    for slot, stem in ((P_LE_START, "le_start"), (P_LE_END, "le_end"),
                       (P_LO_START, "lo_start"), (P_LO_END, "lo_end")):
        high = getattr(blk, f"lut_{stem}_high")
        low = getattr(blk, f"lut_{stem}_low")
        value = sign_extend((high << 32) | low, 38)
        p[slot] = low if precision == FP16 else value
    p[P_LE_OFFSET] = sign_extend(blk.lut_le_index_offset, 8)
    select_bits = {INT8: 6, INT16: 7, FP16: 8}[precision]
    p[P_LE_SELECT] = sign_extend(blk.lut_le_index_select, select_bits)
    p[P_LO_SELECT] = sign_extend(blk.lut_lo_index_select, select_bits)
    p[P_LE_USCALE] = sign_extend(blk.lut_le_slope_uflow_scale, 16)
    p[P_LE_OSCALE] = sign_extend(blk.lut_le_slope_oflow_scale, 16)
    p[P_LO_USCALE] = sign_extend(blk.lut_lo_slope_uflow_scale, 16)
    p[P_LO_OSCALE] = sign_extend(blk.lut_lo_slope_oflow_scale, 16)
    p[P_LE_USHIFT] = sign_extend(blk.lut_le_slope_uflow_shift, 5)
    p[P_LE_OSHIFT] = sign_extend(blk.lut_le_slope_oflow_shift, 5)
    p[P_LO_USHIFT] = sign_extend(blk.lut_lo_slope_uflow_shift, 5)
    p[P_LO_OSHIFT] = sign_extend(blk.lut_lo_slope_oflow_shift, 5)
    return p
