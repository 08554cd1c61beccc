"""Program a direct-convolution layer's CDMA/CSC/CMAC/CACC registers (tests, benchmarks).

:func:`program` writes a feature cube and DC weights to memory and sets the
registers of group 0 the way firmware would (packed strides, CBUF entries
for a fully packed line); :func:`run_conv` then runs CDMA -> CACC alone and
returns CACC's output cube, without the SDP.
"""

from __future__ import annotations

import numpy as np

from ..chains import CONV_UNITS
from ..conv.direct import compute_direct_layer
from ..conv.layer import decode_layer
from ..dma.align import align_up, ceil_div, window_count
from ..dma.feature import pack_feature
from ..dma.weights import compress_weights, group_bytes, pack_weight_dc, weight_group_size
from ..machine import LayerContext, Machine
from ..regs.enums import Precision
from .registers import set_reg

CDMA = "NVDLA_CDMA"
UNITS = CONV_UNITS  # the blocks of a convolution layer
IN_ADDR, WT_ADDR, WMB_ADDR, WGS_ADDR = 0x100000, 0x200000, 0x300000, 0x380000


def program_atomics(m: Machine, out_w: int, out_h: int) -> None:
    """CSC.D_ATOMICS: the output pixels a kernel group walks, less one, as NVIDIA's
    firmware programs it.  The C-model and the simulator do not read it, but NVIDIA's
    RTL does: left at its reset value, the SDP writes the output and never raises its
    done interrupt (nv_small under Verilator)."""
    set_reg(m, "NVDLA_CSC", "D_ATOMICS_0", atomics=out_w * out_h - 1)


def program_cdma_cvt(m: Machine, cvt) -> None:
    """The CDMA data convertor: ``cvt`` = (offset, scale, truncate), or None (off)."""
    if cvt is not None:
        set_reg(m, CDMA, "D_CVT_CFG_0", cvt_en=1, cvt_truncate=cvt[2])
        set_reg(m, CDMA, "D_CVT_OFFSET_0", cvt_offset=cvt[0])
        set_reg(m, CDMA, "D_CVT_SCALE_0", cvt_scale=cvt[1])


def program_cdma_frame(m: Machine, stride, pad, pad_value: int, nan_to_zero=None) -> None:
    """CDMA stride, zero padding (left, right, top, bottom) and pad value, all CBUF banks,
    and the NaN flush unless ``nan_to_zero`` is None."""
    sx, sy = stride
    left, right, top, bottom = pad
    set_reg(m, CDMA, "D_CONV_STRIDE_0", conv_x_stride=sx - 1, conv_y_stride=sy - 1)
    set_reg(m, CDMA, "D_ZERO_PADDING_0", pad_left=left, pad_right=right, pad_top=top,
            pad_bottom=bottom)
    set_reg(m, CDMA, "D_ZERO_PADDING_VALUE_0", pad_value=pad_value)
    set_reg(m, CDMA, "D_BANK_0", data_bank=7, weight_bank=7)
    if nan_to_zero is not None:
        set_reg(m, CDMA, "D_NAN_FLUSH_TO_ZERO_0", nan_to_zero=int(nan_to_zero))


def program(m: Machine, x: np.ndarray, w: np.ndarray, *, precision: str, stride=(1, 1),
            dilation=(1, 1), pad=(0, 0, 0, 0), pad_value: int = 0, truncate: int = 0,
            cvt=None, nan_to_zero: bool = False, entries: int | None = None,
            out_size=None, compressed: bool = False, strides=None, in_ram: int = 1,
            in_addr: int = IN_ADDR, wt_addr: int = WT_ADDR) -> None:
    """Write the cube and weights to memory and program the registers (group 0).

    ``x`` is (C, H, W) in element dtype, ``w`` (K, C, R, S); ``pad`` is
    (left, right, top, bottom); ``cvt`` is (offset, scale, truncate) or None;
    ``compressed`` stores sparse-compressed weights (data, WMB, WGS);
    ``strides`` is (line, surface) for an unpacked cube (None: packed) and
    ``in_ram`` the cube's RAM_TYPE (1 MC, 0 CV-SRAM); ``in_addr``/``wt_addr``
    where the cube and the weights go.
    """
    cfg = m.config
    c, h, wd = x.shape
    k, _, r, s = w.shape
    line, surf = strides if strides is not None else (None, None)
    data, layout = pack_feature(x, cfg, precision=precision, line_stride=line,
                                surface_stride=surf, fill=0x5A)
    m.load(in_addr, data, in_ram)
    cd, cs, ca = "NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CACC"
    stream = pack_weight_dc(w, precision, cfg)
    bpe = Precision(precision).bytes
    kernel_bytes = w.shape[1] * w.shape[2] * w.shape[3] * bpe
    if compressed:
        groups = group_bytes(w.shape[0], kernel_bytes, weight_group_size(precision, cfg))
        comp = compress_weights(stream, precision, groups)
        m.load(wt_addr, comp.data)
        m.load(WMB_ADDR, comp.wmb)
        m.load(WGS_ADDR, comp.wgs)
    else:
        m.load(wt_addr, stream)
    left, right, top, bottom = pad
    sx, sy = stride
    dx, dy = dilation
    if out_size is None:
        out_w = window_count(wd, left, right, s, sx, dx)
        out_h = window_count(h, top, bottom, r, sy, dy)
    else:
        out_w, out_h = out_size
    atoms = ceil_div(c * bpe, cfg.atom_bytes)
    if entries is None:
        entries = ceil_div(wd * atoms * cfg.atom_bytes, cfg.cbuf_bank_width)
    code = Precision(precision).code
    wbytes = comp.data.size if compressed else align_up(k * kernel_bytes, 128)
    set_reg(m, cd, "D_MISC_CFG_0", in_precision=code, proc_precision=code)
    set_reg(m, cd, "D_DATAIN_FORMAT_0")
    set_reg(m, cd, "D_DATAIN_SIZE_0_0", datain_width=wd - 1, datain_height=h - 1)
    set_reg(m, cd, "D_DATAIN_SIZE_1_0", datain_channel=c - 1)
    set_reg(m, cd, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=wd - 1, datain_height_ext=h - 1)
    set_reg(m, cd, "D_DAIN_RAM_TYPE_0", datain_ram_type=in_ram)
    set_reg(m, cd, "D_DAIN_ADDR_LOW_0_0", datain_addr_low_0=in_addr)
    set_reg(m, cd, "D_LINE_STRIDE_0", line_stride=layout.line_stride)
    set_reg(m, cd, "D_SURF_STRIDE_0", surf_stride=layout.surface_stride)
    set_reg(m, cd, "D_DAIN_MAP_0", line_packed=int(layout.line_stride == layout.line_bytes),
            surf_packed=int(layout.surface_stride == layout.line_stride * h))
    set_reg(m, cd, "D_ENTRY_PER_SLICE_0", entries=entries - 1)
    set_reg(m, cd, "D_WEIGHT_SIZE_0_0", byte_per_kernel=kernel_bytes - 1)
    set_reg(m, cd, "D_WEIGHT_SIZE_1_0", weight_kernel=k - 1)
    set_reg(m, cd, "D_WEIGHT_RAM_TYPE_0", weight_ram_type=1)
    set_reg(m, cd, "D_WEIGHT_ADDR_LOW_0", weight_addr_low=wt_addr)
    set_reg(m, cd, "D_WEIGHT_BYTES_0", weight_bytes=wbytes)
    if compressed:
        set_reg(m, cd, "D_WEIGHT_FORMAT_0", weight_format=1)
        set_reg(m, cs, "D_WEIGHT_FORMAT_0", weight_format=1)
        set_reg(m, cd, "D_WMB_ADDR_LOW_0", wmb_addr_low=WMB_ADDR)
        set_reg(m, cd, "D_WGS_ADDR_LOW_0", wgs_addr_low=WGS_ADDR)
        set_reg(m, cd, "D_WMB_BYTES_0", wmb_bytes=comp.wmb.size)
        set_reg(m, cs, "D_WMB_BYTES_0", wmb_bytes=comp.wmb.size)
    program_cdma_cvt(m, cvt)
    program_cdma_frame(m, stride, pad, pad_value, nan_to_zero)

    set_reg(m, cs, "D_MISC_CFG_0", in_precision=code, proc_precision=code)
    set_reg(m, cs, "D_DATAIN_FORMAT_0")
    set_reg(m, cs, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=wd - 1, datain_height_ext=h - 1)
    set_reg(m, cs, "D_DATAIN_SIZE_EXT_1_0", datain_channel_ext=c - 1)
    set_reg(m, cs, "D_ENTRY_PER_SLICE_0", entries=entries - 1)
    set_reg(m, cs, "D_WEIGHT_SIZE_EXT_0_0", weight_width_ext=s - 1, weight_height_ext=r - 1)
    set_reg(m, cs, "D_WEIGHT_SIZE_EXT_1_0", weight_channel_ext=c - 1, weight_kernel=k - 1)
    set_reg(m, cs, "D_WEIGHT_BYTES_0", weight_bytes=wbytes)
    set_reg(m, cs, "D_DATAOUT_SIZE_0_0", dataout_width=out_w - 1, dataout_height=out_h - 1)
    program_atomics(m, out_w, out_h)
    set_reg(m, cs, "D_DATAOUT_SIZE_1_0", dataout_channel=k - 1)
    set_reg(m, cs, "D_CONV_STRIDE_EXT_0", conv_x_stride_ext=sx - 1, conv_y_stride_ext=sy - 1)
    set_reg(m, cs, "D_DILATION_EXT_0", x_dilation_ext=dx - 1, y_dilation_ext=dy - 1)
    set_reg(m, cs, "D_ZERO_PADDING_0", pad_left=left, pad_top=top)
    set_reg(m, cs, "D_ZERO_PADDING_VALUE_0", pad_value=pad_value)
    set_reg(m, cs, "D_BANK_0", data_bank=7, weight_bank=7)
    for unit in ("NVDLA_CMAC_A", "NVDLA_CMAC_B"):
        set_reg(m, unit, "D_MISC_CFG_0", proc_precision=code)
    set_reg(m, ca, "D_MISC_CFG_0", proc_precision=code)
    set_reg(m, ca, "D_DATAOUT_SIZE_0_0", dataout_width=out_w - 1, dataout_height=out_h - 1)
    set_reg(m, ca, "D_DATAOUT_SIZE_1_0", dataout_channel=k - 1)
    set_reg(m, ca, "D_CLIP_CFG_0", clip_truncate=truncate)


def run_conv(config: str, x, w, **kw):
    """(CACC output (K, H', W'), counters) of one programmed layer."""
    m = Machine(config)
    program(m, x, w, **kw)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    layer = decode_layer(ctx)
    out, counters = compute_direct_layer(ctx, layer)
    return out[0], counters
