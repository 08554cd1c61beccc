"""The CDP layer's registers decoded into one typed object.

The cube's size and source come from NVDLA_CDP_RDMA, everything else from
NVDLA_CDP.  Values keep the hardware's encodings where a kernel needs them
raw (convertor fields), and are turned into sizes/bytes otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..configs import FP16, INT8, INT16
from ..dma.precision import check_precision
from ..errors import ConfigurationError
from .lut import lut_params

PRECISIONS = {0: INT8, 1: INT16, 2: FP16}
WINDOWS = {0: 3, 1: 5, 2: 7, 3: 9}


@dataclass(frozen=True)
class CdpConfig:
    width: int
    height: int
    channels: int
    precision: str
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
    lut: np.ndarray  # parameter vector of sim.cdp.lut

    @classmethod
    def from_blocks(cls, cdp, rdma, hw) -> CdpConfig:
        """Decode the executing groups of NVDLA_CDP (``cdp``) and NVDLA_CDP_RDMA (``rdma``)."""
        fmt = cdp.input_data_type
        if fmt not in PRECISIONS:
            raise ConfigurationError(f"NVDLA_CDP.D_DATA_FORMAT_0: reserved INPUT_DATA_TYPE {fmt}")
        if rdma.input_data not in PRECISIONS:
            raise ConfigurationError(
                f"NVDLA_CDP_RDMA.D_DATA_FORMAT_0: reserved INPUT_DATA {rdma.input_data}")
        check_precision("cdp", PRECISIONS[rdma.input_data], PRECISIONS[fmt],
                        "NVDLA_CDP_RDMA.D_DATA_FORMAT_0.INPUT_DATA (input) vs "
                        "NVDLA_CDP.D_DATA_FORMAT_0.INPUT_DATA_TYPE (output)")
        precision = PRECISIONS[fmt]
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
