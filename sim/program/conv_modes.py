"""Program image-input and Winograd layers (tests, example traces, benchmarks).

:func:`program_image` and :func:`program_winograd` write the input and the
weights to memory and set the CDMA/CSC/CMAC/CACC registers of group 0 the
way firmware would; :func:`run_mode` runs CDMA -> CACC alone and returns
CACC's output cube and counters (no SDP).  :func:`program_sdp_output`
programs the SDP to write CACC's cube unchanged (bypassed stages, identity
output convertor: int32 saturated to the output precision).
"""

from __future__ import annotations

import numpy as np

from ..chains import CONV_UNITS
from ..conv.image import chroma_x_offset
from ..conv.modes import compute_conv_layer
from ..dma.align import align_up, ceil_div, window_count
from ..dma.feature import pack_feature
from ..dma.pixel import PIXEL_FORMATS, pack_pixels, pixel_format
from ..dma.weights import pack_weight_image, pack_weight_winograd
from ..machine import LayerContext, Machine
from ..regs.enums import Precision
from ..rules import entry_bytes
from .conv import program_atomics, program_cdma_cvt, program_cdma_frame
from .registers import set_reg

UNITS = CONV_UNITS  # the blocks of a convolution layer
IN_ADDR, UV_ADDR, WT_ADDR = 0x100000, 0x180000, 0x200000
CD, CS, CA = "NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CACC"


def _common_tail(m: Machine, code: int, k: int, out_w: int, out_h: int, truncate: int,
                 conv_mode: int = 0) -> None:
    for unit in ("NVDLA_CMAC_A", "NVDLA_CMAC_B"):
        set_reg(m, unit, "D_MISC_CFG_0", proc_precision=code, conv_mode=conv_mode)
    set_reg(m, CA, "D_MISC_CFG_0", proc_precision=code, conv_mode=conv_mode)
    set_reg(m, CA, "D_DATAOUT_SIZE_0_0", dataout_width=out_w - 1, dataout_height=out_h - 1)
    set_reg(m, CA, "D_DATAOUT_SIZE_1_0", dataout_channel=k - 1)
    set_reg(m, CA, "D_CLIP_CFG_0", clip_truncate=truncate)


def _weights(m: Machine, stream: np.ndarray, kernels: int, kernel_bytes: int,
             addr: int = WT_ADDR) -> int:
    m.load(addr, stream)
    wbytes = align_up(kernels * kernel_bytes, 128)
    set_reg(m, CD, "D_WEIGHT_SIZE_0_0", byte_per_kernel=kernel_bytes - 1)
    set_reg(m, CD, "D_WEIGHT_SIZE_1_0", weight_kernel=kernels - 1)
    set_reg(m, CD, "D_WEIGHT_RAM_TYPE_0", weight_ram_type=1)
    set_reg(m, CD, "D_WEIGHT_ADDR_LOW_0", weight_addr_low=addr)
    set_reg(m, CD, "D_WEIGHT_BYTES_0", weight_bytes=wbytes)
    set_reg(m, CS, "D_WEIGHT_BYTES_0", weight_bytes=wbytes)
    return wbytes


def program_image(m: Machine, image: np.ndarray, w: np.ndarray, *, fmt: str, precision: str,
                  in_precision: str | None = None, x_offset: int = 0, sign_override=False,
                  cvt=None, mean=None, stride=(1, 1), pad=(0, 0, 0, 0), pad_value=0,
                  csc_pad_value=None, post_extension: int = 1, truncate: int = 0,
                  in_addr: int = IN_ADDR, uv_addr: int = UV_ADDR,
                  wt_addr: int = WT_ADDR) -> tuple:
    """Program an image-input layer; returns the output size (W', H').

    ``image`` is (C, H, W) in the component dtype of :mod:`sim.dma.pixel`,
    ``w`` (K, C, R, S) in the processing precision's element dtype; ``cvt`` is
    (offset, scale, truncate) or None; ``mean`` (ry, gu, bv, ax) or None;
    ``pad`` (left, right, top, bottom).
    """
    cfg = m.config
    f = pixel_format(fmt)
    c, h, wd = image.shape
    k, _, r, s = w.shape
    in_precision = in_precision or f.precision
    planes, layout = pack_pixels(image, f, x_offset=x_offset, atom_bytes=cfg.atom_bytes)
    if f.planes == 2:  # the chroma plane starts at the atom holding its first pixel
        uv_off = chroma_x_offset(x_offset, in_precision, cfg.atom_bytes)
        uv, uv_layout = pack_pixels(image, f, x_offset=uv_off, atom_bytes=cfg.atom_bytes)
        planes[1] = uv[1]
        strides = (layout.line_strides[0], uv_layout.line_strides[1])
    else:
        strides = (layout.line_strides[0], 0)
    m.load(in_addr, planes[0])
    if f.planes == 2:
        m.load(uv_addr, planes[1])
    left, right, top, bottom = pad
    sx, sy = stride
    out_w = window_count(wd, left, right, s, sx)
    out_h = window_count(h, top, bottom, r, sy)
    bpe = Precision(precision).bytes
    code, in_code = Precision(precision).code, Precision(in_precision).code
    fmt_code = list(PIXEL_FORMATS).index(f.name)
    line_bytes = (left + wd + right) * c * bpe
    entries = ceil_div(line_bytes, entry_bytes(cfg))  # CBUF entries a padded line takes
    set_reg(m, CD, "D_MISC_CFG_0", in_precision=in_code, proc_precision=code)
    set_reg(m, CD, "D_DATAIN_FORMAT_0", datain_format=1, pixel_format=fmt_code,
            pixel_sign_override=int(bool(sign_override)))
    set_reg(m, CD, "D_DATAIN_SIZE_0_0", datain_width=wd - 1, datain_height=h - 1)
    set_reg(m, CD, "D_DATAIN_SIZE_1_0", datain_channel=c - 1)
    set_reg(m, CD, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=wd - 1, datain_height_ext=h - 1)
    set_reg(m, CD, "D_PIXEL_OFFSET_0", pixel_x_offset=x_offset)
    set_reg(m, CD, "D_DAIN_RAM_TYPE_0", datain_ram_type=1)
    set_reg(m, CD, "D_DAIN_ADDR_LOW_0_0", datain_addr_low_0=in_addr)
    set_reg(m, CD, "D_DAIN_ADDR_LOW_1_0", datain_addr_low_1=uv_addr if f.planes == 2 else 0)
    set_reg(m, CD, "D_LINE_STRIDE_0", line_stride=strides[0])
    set_reg(m, CD, "D_LINE_UV_STRIDE_0", uv_line_stride=strides[1])
    set_reg(m, CD, "D_ENTRY_PER_SLICE_0", entries=entries - 1)
    program_cdma_cvt(m, cvt)
    if mean is not None:
        set_reg(m, CD, "D_MEAN_FORMAT_0", mean_format=1)
        set_reg(m, CD, "D_MEAN_GLOBAL_0_0", mean_ry=mean[0], mean_gu=mean[1])
        set_reg(m, CD, "D_MEAN_GLOBAL_1_0", mean_bv=mean[2], mean_ax=mean[3])
    program_cdma_frame(m, stride, pad, pad_value)
    ext = s * c
    _weights(m, pack_weight_image(w, precision, cfg, post_extension=post_extension), k,
             r * s * c * bpe, wt_addr)
    set_reg(m, CS, "D_MISC_CFG_0", in_precision=in_code, proc_precision=code)
    set_reg(m, CS, "D_DATAIN_FORMAT_0", datain_format=1)
    set_reg(m, CS, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=wd - 1, datain_height_ext=h - 1)
    set_reg(m, CS, "D_DATAIN_SIZE_EXT_1_0", datain_channel_ext=c - 1)
    set_reg(m, CS, "D_POST_Y_EXTENSION_0", y_extension={1: 0, 2: 1, 4: 2}[post_extension])
    set_reg(m, CS, "D_ENTRY_PER_SLICE_0", entries=entries - 1)
    set_reg(m, CS, "D_WEIGHT_SIZE_EXT_0_0", weight_width_ext=0, weight_height_ext=r - 1)
    set_reg(m, CS, "D_WEIGHT_SIZE_EXT_1_0", weight_channel_ext=ext - 1, weight_kernel=k - 1)
    set_reg(m, CS, "D_DATAOUT_SIZE_0_0", dataout_width=out_w - 1, dataout_height=out_h - 1)
    program_atomics(m, out_w, out_h)
    set_reg(m, CS, "D_DATAOUT_SIZE_1_0", dataout_channel=k - 1)
    set_reg(m, CS, "D_CONV_STRIDE_EXT_0", conv_x_stride_ext=sx - 1, conv_y_stride_ext=sy - 1)
    set_reg(m, CS, "D_ZERO_PADDING_0", pad_top=top)
    set_reg(m, CS, "D_ZERO_PADDING_VALUE_0",
            pad_value=pad_value if csc_pad_value is None else csc_pad_value)
    set_reg(m, CS, "D_BANK_0", data_bank=7, weight_bank=7)
    _common_tail(m, code, k, out_w, out_h, truncate)
    return out_w, out_h


def program_winograd(m: Machine, x: np.ndarray, w4: np.ndarray, *, precision: str,
                     stride=(1, 1), pad=(0, 0, 0, 0), pad_value: int = 0, out_size=None,
                     pra_truncate: int = 0, truncate: int = 0,
                     nan_to_zero: bool = False, in_addr: int = IN_ADDR,
                     wt_addr: int = WT_ADDR) -> tuple:
    """Program a Winograd layer; returns the output size (W', H').

    ``x`` is (C, H, W) in element dtype; ``w4`` the transformed weights
    (K, C_ext, 4, 4) (:func:`sim.dma.weights.winograd_weights`).  The default
    output is the largest even size whose 4x4 tiles fit the extended input.
    """
    cfg = m.config
    c, h, wd = x.shape
    k, c_ext = w4.shape[:2]
    data, layout = pack_feature(x, cfg, precision=precision)
    m.load(in_addr, data)
    left, right, top, bottom = pad
    sx, sy = stride
    ext_w, ext_h = (left + wd + right) // sx, (top + h + bottom) // sy
    if out_size is None:
        out_size = (ext_w - 4, ext_h - 4)
    out_w, out_h = out_size
    bpe = Precision(precision).bytes
    code = Precision(precision).code
    entries = ext_w * c_ext * bpe // entry_bytes(cfg)
    set_reg(m, CD, "D_MISC_CFG_0", conv_mode=1, in_precision=code, proc_precision=code)
    set_reg(m, CD, "D_DATAIN_FORMAT_0")
    set_reg(m, CD, "D_DATAIN_SIZE_0_0", datain_width=wd - 1, datain_height=h - 1)
    set_reg(m, CD, "D_DATAIN_SIZE_1_0", datain_channel=c - 1)
    set_reg(m, CD, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=ext_w - 1, datain_height_ext=ext_h - 1)
    set_reg(m, CD, "D_DAIN_RAM_TYPE_0", datain_ram_type=1)
    set_reg(m, CD, "D_DAIN_ADDR_LOW_0_0", datain_addr_low_0=in_addr)
    set_reg(m, CD, "D_LINE_STRIDE_0", line_stride=layout.line_stride)
    set_reg(m, CD, "D_SURF_STRIDE_0", surf_stride=layout.surface_stride)
    set_reg(m, CD, "D_DAIN_MAP_0", line_packed=1, surf_packed=1)
    set_reg(m, CD, "D_ENTRY_PER_SLICE_0", entries=max(entries, 1) - 1)
    program_cdma_frame(m, stride, pad, pad_value, nan_to_zero)
    _weights(m, pack_weight_winograd(w4, precision, cfg), k, 16 * c_ext * bpe, wt_addr)
    set_reg(m, CS, "D_MISC_CFG_0", conv_mode=1, in_precision=code, proc_precision=code)
    set_reg(m, CS, "D_DATAIN_FORMAT_0")
    set_reg(m, CS, "D_DATAIN_SIZE_EXT_0_0", datain_width_ext=ext_w - 1, datain_height_ext=ext_h - 1)
    set_reg(m, CS, "D_DATAIN_SIZE_EXT_1_0", datain_channel_ext=c_ext - 1)
    set_reg(m, CS, "D_ENTRY_PER_SLICE_0", entries=max(entries, 1) - 1)
    set_reg(m, CS, "D_WEIGHT_SIZE_EXT_0_0", weight_width_ext=3, weight_height_ext=3)
    set_reg(m, CS, "D_WEIGHT_SIZE_EXT_1_0", weight_channel_ext=c_ext - 1, weight_kernel=k - 1)
    set_reg(m, CS, "D_DATAOUT_SIZE_0_0", dataout_width=out_w - 1, dataout_height=out_h - 1)
    program_atomics(m, out_w, out_h)
    set_reg(m, CS, "D_DATAOUT_SIZE_1_0", dataout_channel=k - 1)
    set_reg(m, CS, "D_PRA_CFG_0", pra_truncate=pra_truncate)
    set_reg(m, CS, "D_BANK_0", data_bank=7, weight_bank=7)
    _common_tail(m, code, k, out_w, out_h, truncate, conv_mode=1)
    return out_w, out_h


def run_mode(config: str, program_fn, *args, **kw):
    """(CACC output (K, H', W'), counters) of one programmed image/Winograd layer."""
    m = Machine(config)
    program_fn(m, *args, **kw)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    out, counters, _ = compute_conv_layer(ctx)
    return out, counters
