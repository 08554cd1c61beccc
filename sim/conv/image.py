"""Image input (CDMA D_DATAIN_FORMAT = PIXEL): pixels -> converted cube -> convolution.

CDMA (per line of the image, pitch linear)
    Reads ``x_offset + width`` pixels of plane 0 (and of the interleaved
    chroma plane of the semi-planar N444 formats, whose X offset is taken
    modulo the pixels of one memory atom: ``x_offset mod (atom / (2*e))``
    with ``e`` the element bytes -- the chroma base address already points at
    the atom holding the first pixel).  Components are reordered to R, G, B, A
    (Y, U, V, A) by :mod:`sim.dma.pixel`; 10-bit packed fields are moved to
    the top of 16 bits (alpha too).  8-bit components are unsigned, or signed
    with D_PIXEL_SIGN_OVERRIDE; 16-bit integer components likewise (the
    override, not the format name, decides); fp16 components stay fp16.
    With D_CVT_EN each component goes through the CDMA convertor
    ``sat(round((x - m) * scale >> truncate))`` (:func:`sim.num.cdma_cvt`,
    IN_PRECISION -> PROC_PRECISION), where ``m`` is the per-channel mean
    (D_MEAN_GLOBAL RY/GU/BV/AX) when D_MEAN_FORMAT is enabled and
    D_CVT_OFFSET otherwise.  Without the convertor the raw component goes
    through unchanged (so the input and processing precisions must match).
    fp16 input counts the NaN/Inf of each fetched line (from the X offset to
    the end of the line's last atom) and D_NAN_FLUSH_TO_ZERO clears data NaNs.
    The line is framed by PAD_LEFT/PAD_RIGHT pixels of the CDMA pad value.
CSC
    Channel pre-extension: output pixel x of kernel row r reads the S*C
    elements of input pixels ``x*stride_x .. x*stride_x + S - 1`` of the
    padded line ``y*stride_y + r - pad_top`` (element ``s*C + c``); lines
    outside the image read the CSC pad value.  The weights are the kernel
    pre-extended to (K, S*C, R, 1), in the DC layout, or with
    D_POST_Y_EXTENSION 2/4 lines merged into one atomic operation
    (:func:`sim.dma.weights.unpack_weight_image`).  Atomic operations are
    blocks of ``mac_atomic_c`` lanes: super-channels of the S*C vector (outer)
    times kernel rows (inner), or with post-extension one block per group of
    2/4 rows whose lanes are split in 2/4 equal parts (missing rows of the
    last group read 0).  This block structure is what the fp16 MAC sees; the
    integer result is the exact convolution either way.
CMAC/CACC
    As in direct convolution (:mod:`sim.conv.mac_int`, :mod:`sim.conv.mac_fp16`).
    Image input has no batch mode and no dilation (the CSC ignores D_DILATION).
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8, INT16, Precision
from ..dma.align import LayoutError, align_up, ceil_div, window_count
from ..dma.pixel import PIXEL_FORMATS, PixelFormat, max_x_offset, read_pixels
from ..dma.precision import IMAGE_FP16, IMAGE_INT, check_precision
from ..dma.weights import pack_weight_dc, unpack_weight_image
from ..dram import HELD
from ..errors import ConfigurationError
from ..num import cdma_cvt, flush_nans, inf_mask, nan_mask
from ..num.arrays import sign_extend_array
from ..records import record, replace
from .cdma import fetch_weights
from .layer import (
    CACC,
    CDMA,
    CSC,
    ConvLayer,
    check_equal,
    check_proc_precision,
    check_weight_bytes,
    layer_counters,
    pad_element,
    weight_layer,
)
from .mac_int import conv_cacc

FORMAT_NAMES = tuple(PIXEL_FORMATS)  # register code -> format name (regmap enum order)


@record
class ImageLayer:
    fmt: PixelFormat
    in_precision: Precision
    precision: Precision  # processing precision
    width: int
    height: int
    channels: int
    x_offset: int
    sign_override: bool
    addrs: tuple[int, int]
    line_strides: tuple[int, int]
    ram: int
    cvt_enable: bool
    cvt_offset: int
    cvt_scale: int
    cvt_truncate: int
    means: tuple[int, int, int, int] | None  # RY, GU, BV, AX (raw 16-bit) when enabled
    nan_to_zero: bool
    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    cdma_pad_value: int
    csc_pad_value: int
    kernel_width: int  # S, before pre-extension
    kernel_height: int  # R
    stride_x: int
    stride_y: int
    post_extension: int
    out_width: int
    out_height: int
    weights: ConvLayer  # the CSC's pre-extended (K, S*C, R, 1) weight geometry

    @property
    def kernels(self) -> int:
        return self.weights.kernels


def _pixel_format(code: int) -> PixelFormat:
    if code >= len(FORMAT_NAMES):
        raise ConfigurationError(f"{CDMA}.D_DATAIN_FORMAT_0: pixel format {code} is reserved")
    return PIXEL_FORMATS[FORMAT_NAMES[code]]


def decode_image_layer(ctx) -> ImageLayer:
    """Decode and cross-check an image-input layer's registers."""
    cfg = ctx.config
    cdma, csc, cacc = ctx.regs(CDMA), ctx.regs(CSC), ctx.regs(CACC)
    if not csc.datain_format:
        raise ConfigurationError(f"{CSC}.D_DATAIN_FORMAT_0: FEATURE while {CDMA} reads pixels")
    for blk, unit in ((cdma, CDMA), (csc, CSC)):
        if blk.conv_mode != 0:
            raise ConfigurationError(f"{unit}.D_MISC_CFG_0: image input is direct convolution "
                                     "only (no Winograd)")
    if cdma.pixel_mapping != 0:
        raise ConfigurationError(f"{CDMA}.D_DATAIN_FORMAT_0: PIXEL_MAPPING {cdma.pixel_mapping} is "
                                 "reserved (pitch linear only)")
    fmt = _pixel_format(cdma.pixel_format)
    # NVIDIA's master RTL builds the 10/12/16-bit pixel formats only where the project
    # supports more than int8: on an int8-only configuration they read other pixels
    cfg.require_precision(fmt.precision, f"{CDMA}.D_DATAIN_FORMAT_0 PIXEL_FORMAT {fmt.name} "
                          f"({fmt.precision} components: an int8-only CDMA reads the 8-bit "
                          f"pixel formats only)")
    in_prec = cdma.precision("in_precision")
    proc = cdma.precision("proc_precision")
    check_precision("conv", IMAGE_FP16 if in_prec == FP16 else IMAGE_INT, proc,
                    f"{CDMA}.D_MISC_CFG_0 IN_PRECISION/PROC_PRECISION")
    cfg.require_precision(proc, f"{CDMA}.D_MISC_CFG_0")
    check_proc_precision(ctx, proc)
    cvt = bool(cdma.cvt_en)
    # T_R16_F: fp16 pixels whose Table 33 input precision is int16.  Into fp16 processing
    # the CDMA stores them unconverted with the convertor off (NVIDIA's C-model, checked on
    # convolutions); through the convertor into another precision (fp16 or int8) the
    # C-model writes zeros, so that is refused rather than computed (int16 to int16 through
    # the convertor agrees with it).  Only with the int16 input precision the C-model was
    # seen to take (int8 with an fp16 format stays refused).
    fp16_pixels = fmt.dtype == np.float16
    raw_fp16 = fp16_pixels and proc == FP16 and in_prec == INT16
    if not cvt and in_prec != proc and not raw_fp16:
        raise ConfigurationError(f"{CDMA}.D_CVT_CFG_0: converting {in_prec} pixels to {proc} "
                                 "needs the convertor (CVT_EN)")
    if cvt and in_prec != proc and fp16_pixels:
        raise ConfigurationError(f"{CDMA}.D_CVT_CFG_0: {fmt.name} (fp16 pixels, {in_prec} "
                                 f"input precision) through the convertor into {proc}: "
                                 "NVIDIA's C-model converts no fp16 pixel format (it writes "
                                 "zeros); leave CVT_EN off to take the pixels as they are")
    for blk, unit in ((cdma, CDMA), (csc, CSC), (cacc, CACC)):
        if blk.reg("D_BATCH_NUMBER_0").batches:
            raise ConfigurationError(f"{unit}.D_BATCH_NUMBER_0: image input has no batch mode")

    channels = cdma.datain_channel + 1
    if channels != fmt.channels:
        raise ConfigurationError(f"{CDMA}.D_DATAIN_SIZE_1_0: {fmt.name} has {fmt.channels} "
                                 f"channel(s), not {channels}")
    width, height = cdma.datain_width + 1, cdma.datain_height + 1
    pad = cdma.reg("D_ZERO_PADDING_0")
    ext_channels = csc.weight_channel_ext + 1
    kernel_height = csc.weight_height_ext + 1
    if csc.weight_width_ext != 0:
        raise ConfigurationError(f"{CSC}.D_WEIGHT_SIZE_EXT_0_0: image input needs pre-extended "
                                 f"kernels of width 1, not {csc.weight_width_ext + 1}")
    if ext_channels % channels:
        raise ConfigurationError(f"{CSC}.D_WEIGHT_SIZE_EXT_1_0: {ext_channels} pre-extended "
                                 f"channels are not a multiple of the {channels} image channels")
    kernel_width = ext_channels // channels
    post = 1 << csc.y_extension
    if csc.y_extension > 2:
        raise ConfigurationError(f"{CSC}.D_POST_Y_EXTENSION_0: Y_EXTENSION {csc.y_extension} is "
                                 "reserved (1, 2 or 4 lines)")
    bpe = proc.bytes
    if post > 1 and ext_channels * post > cfg.mac_atomic_c:
        raise ConfigurationError(
            f"{CSC}.D_POST_Y_EXTENSION_0: {post} lines of {ext_channels} channels exceed one "
            f"atomic operation ({cfg.mac_atomic_c} lanes)")
    mean = None
    if cdma.mean_format:
        mean = (cdma.mean_ry, cdma.mean_gu, cdma.mean_bv, cdma.mean_ax)
    stride_x, stride_y = csc.conv_x_stride_ext + 1, csc.conv_y_stride_ext + 1
    out_w = csc.reg("D_DATAOUT_SIZE_0_0").dataout_width + 1
    out_h = csc.reg("D_DATAOUT_SIZE_0_0").dataout_height + 1

    top = max_x_offset(fmt, cfg.atom_bytes)
    if cdma.pixel_x_offset > top:
        raise ConfigurationError(f"{CDMA}.D_PIXEL_OFFSET_0 PIXEL_X_OFFSET {cdma.pixel_x_offset} "
                                 f"is past {fmt.name}'s {top + 1} pixels of one "
                                 f"{cfg.atom_bytes}-byte memory atom (NVIDIA's RTL asserts)")
    weights = weight_layer(
        ctx, proc, in_width=width, in_height=height, channels=ext_channels,
        in_ram=cdma.datain_ram_type, kernel_height=kernel_height, stride_x=stride_x,
        stride_y=stride_y, pad_top=pad.pad_top,
        pad_value=csc.reg("D_ZERO_PADDING_VALUE_0").pad_value, out_width=out_w,
        out_height=out_h)
    layer = ImageLayer(
        fmt=fmt, in_precision=in_prec, precision=proc, width=width, height=height,
        channels=channels, x_offset=cdma.pixel_x_offset,
        sign_override=bool(cdma.pixel_sign_override),
        addrs=((cdma.datain_addr_high_0 << 32) | cdma.datain_addr_low_0,
               (cdma.datain_addr_high_1 << 32) | cdma.datain_addr_low_1),
        line_strides=(cdma.reg("D_LINE_STRIDE_0").line_stride, cdma.uv_line_stride),
        ram=cdma.datain_ram_type, cvt_enable=cvt, cvt_offset=cdma.cvt_offset,
        cvt_scale=cdma.cvt_scale, cvt_truncate=cdma.cvt_truncate, means=mean,
        nan_to_zero=bool(cdma.nan_to_zero), pad_left=pad.pad_left, pad_right=pad.pad_right,
        pad_top=pad.pad_top, pad_bottom=pad.pad_bottom,
        cdma_pad_value=cdma.reg("D_ZERO_PADDING_VALUE_0").pad_value,
        csc_pad_value=csc.reg("D_ZERO_PADDING_VALUE_0").pad_value,
        kernel_width=kernel_width, kernel_height=kernel_height, stride_x=stride_x,
        stride_y=stride_y, post_extension=post, out_width=out_w, out_height=out_h,
        weights=weights)
    _cross_check(layer, cdma, csc, cacc, bpe)
    return layer


def _cross_check(layer: ImageLayer, cdma, csc, cacc, bpe: int) -> None:
    pairs = (
        (f"{CSC}.D_DATAIN_SIZE_EXT_0_0 DATAIN_WIDTH_EXT", csc.datain_width_ext + 1, layer.width),
        (f"{CSC}.D_DATAIN_SIZE_EXT_0_0 DATAIN_HEIGHT_EXT", csc.datain_height_ext + 1,
         layer.height),
        (f"{CSC}.D_DATAIN_SIZE_EXT_1_0 DATAIN_CHANNEL_EXT", csc.datain_channel_ext + 1,
         layer.channels),
        (f"{CSC}.D_WEIGHT_SIZE_EXT_1_0 WEIGHT_KERNEL",
         csc.reg("D_WEIGHT_SIZE_EXT_1_0").weight_kernel + 1, layer.kernels),
        (f"{CSC}.D_DATAOUT_SIZE_1_0 DATAOUT_CHANNEL",
         csc.reg("D_DATAOUT_SIZE_1_0").dataout_channel + 1, layer.kernels),
        (f"{CACC}.D_DATAOUT_SIZE_0_0 DATAOUT_WIDTH", cacc.dataout_width + 1, layer.out_width),
        (f"{CACC}.D_DATAOUT_SIZE_0_0 DATAOUT_HEIGHT", cacc.dataout_height + 1, layer.out_height),
        (f"{CACC}.D_DATAOUT_SIZE_1_0 DATAOUT_CHANNEL", cacc.dataout_channel + 1, layer.kernels),
        (f"{CSC}.D_WEIGHT_BYTES_0", csc.reg("D_WEIGHT_BYTES_0").weight_bytes,
         layer.weights.weight_bytes),
        (f"{CDMA}.D_CONV_STRIDE_0 CONV_X_STRIDE", cdma.conv_x_stride + 1, layer.stride_x),
        (f"{CDMA}.D_CONV_STRIDE_0 CONV_Y_STRIDE", cdma.conv_y_stride + 1, layer.stride_y),
        (f"{CSC}.D_ZERO_PADDING_0 PAD_TOP", csc.reg("D_ZERO_PADDING_0").pad_top, layer.pad_top),
    )
    check_equal(pairs)
    kernel_bytes = layer.weights.channels * layer.kernel_height * bpe
    if layer.weights.byte_per_kernel != kernel_bytes:
        raise ConfigurationError(
            f"{CDMA}.D_WEIGHT_SIZE_0_0: BYTE_PER_KERNEL {layer.weights.byte_per_kernel} is not "
            f"{layer.kernel_width}x{layer.kernel_height}x{layer.channels} elements "
            f"({kernel_bytes} bytes)")
    check_weight_bytes(layer.weights, kernel_bytes)
    for axis, size, before, after, k, stride, out in (
        ("width", layer.width, layer.pad_left, layer.pad_right, layer.kernel_width,
         layer.stride_x, layer.out_width),
        ("height", layer.height, layer.pad_top, layer.pad_bottom, layer.kernel_height,
         layer.stride_y, layer.out_height),
    ):
        if window_count(size, before, after, k, stride) != out:
            raise ConfigurationError(
                f"{CSC}.D_DATAOUT_SIZE_0_0: output {axis} {out} does not follow from image "
                f"{size}, padding {before}+{after}, kernel {k}, stride {stride}")


# -- CDMA ---------------------------------------------------------------------

def pixel_components(raw: np.ndarray, fmt: PixelFormat) -> tuple[np.ndarray, int]:
    """The 8- or 16-bit container values (int64, unsigned) the CDMA converts, and their width.

    10-bit packed fields (and their 2-bit alpha) are moved to the top of 16 bits.
    """
    out = np.empty(raw.shape, dtype=np.int64)
    for ch, field in enumerate(fmt.fields):
        comp = raw[ch]
        if comp.dtype == np.float16:
            comp = comp.view(np.uint16)
        if field.bits:
            out[ch] = comp.astype(np.int64) << (16 - field.bits)
        else:
            out[ch] = comp.astype(np.int64) & ((1 << (8 * field.size)) - 1)
    return out, fmt.container_bits


def convert_pixels(values: np.ndarray, bits: int, fmt: PixelFormat, layer: ImageLayer
                   ) -> np.ndarray:
    """CDMA conversion of (C, H, W) container values to processing elements.

    Returns int8 / int16 arrays, or fp16 bit patterns as uint16.
    """
    proc = layer.precision
    fp16_pixels = fmt.dtype == np.float16
    if layer.cvt_enable:
        if fp16_pixels:
            # the C-model hands fp16 bits over as a signed 16-bit value
            data = sign_extend_array(values, 16)
        elif layer.sign_override:
            data = sign_extend_array(values, bits)
        else:
            data = values
        if layer.means is None:
            alu = np.full(values.shape[0], layer.cvt_offset, dtype=np.int64)
        else:
            alu = np.array([layer.means[min(c, 3)] for c in range(values.shape[0])], np.int64)
        out = cdma_cvt(data_in=data, alu_in=alu[:, None, None], mul_in=layer.cvt_scale,
                       in_precision=layer.in_precision.code,
                       out_precision=proc.code,
                       truncate=layer.cvt_truncate)["out"].astype(np.int64)
    else:
        out = values
    if proc == INT8:
        return (out & 0xFF).astype(np.uint8).view(np.int8)
    if proc == INT16:
        return (out & 0xFFFF).astype(np.uint16).view(np.int16)
    return (out & 0xFFFF).astype(np.uint16)


def byte_components(fmt: PixelFormat) -> bool:
    """Whether every component of ``fmt`` is a whole byte (8-bit container values)."""
    return fmt.container_bits == 8


def convert_byte_pixels(raw: np.ndarray, fmt: PixelFormat, layer: ImageLayer) -> np.ndarray:
    """:func:`convert_pixels` of the components of a format of whole bytes (raw (C, H, W)
    from :func:`image_pixels`), through a table.

    The conversion is elementwise with settings per channel, and a byte has 256 values: so
    the table of each channel's 256 conversions, made by :func:`convert_pixels` itself,
    gives every pixel's element (a 224x224 image converts 256 values per channel instead
    of 50176, and no int64 image is made).
    """
    channels = raw.shape[0]
    every_byte = np.repeat(np.arange(256, dtype=np.int64)[None, None, :], channels, axis=0)
    table = convert_pixels(every_byte, 8, fmt, layer)[:, 0]
    out = np.empty(raw.shape, dtype=table.dtype)
    for ch in range(channels):  # taken into place: 2.7x faster than indexing and a copy
        # (a byte is always a row of the table: "clip" changes none, and is unbuffered)
        np.take(table[ch], raw[ch].view(np.uint8), out=out[ch], mode="clip")
    return out


def _fp16_line_counters(mem, layer: ImageLayer, atom: int) -> tuple[int, int, list]:
    """NaN/Inf counts of fp16 pixel lines (X offset to the end of the line's last atom)."""
    bpp = layer.fmt.plane_bytes[0]
    rounded = align_up((layer.x_offset + layer.width) * bpp, atom)
    nan = inf = 0
    for y in range(layer.height):
        line = mem.read_array(layer.addrs[0] + y * layer.line_strides[0], rounded,
                              f"{CDMA}.D_DAIN_ADDR", mode=HELD)
        bits = line.view("<u2")[layer.x_offset * bpp // 2:]
        nan += int(nan_mask(bits).sum())
        inf += int(inf_mask(bits).sum())
    return nan, inf


def chroma_x_offset(x_offset: int, in_precision: Precision, atom: int) -> int:
    """X offset of the N444 chroma plane: ``x_offset`` modulo the 2-element pixels of an atom."""
    element = Precision(in_precision).bytes
    return x_offset % max(atom // (2 * element), 1)


def image_values(mem, fmt: PixelFormat, addrs, line_strides, width: int, height: int,
                 x_offset: int, in_precision: Precision, atom: int) -> tuple[np.ndarray, int]:
    """(C, H, W) container values the CDMA reads for an image, and their bit width."""
    return pixel_components(image_pixels(mem, fmt, addrs, line_strides, width, height,
                                         x_offset, in_precision, atom), fmt)


def image_pixels(mem, fmt: PixelFormat, addrs, line_strides, width: int, height: int,
                 x_offset: int, in_precision: Precision, atom: int) -> np.ndarray:
    """(C, H, W) components the CDMA reads for an image, in the format's dtype
    (:func:`sim.dma.pixel.read_pixels`)."""
    offsets = None
    if fmt.planes == 2:
        offsets = (x_offset, chroma_x_offset(x_offset, in_precision, atom))
    try:
        raw = read_pixels(mem, fmt, list(addrs[: fmt.planes]), width, height,
                          list(line_strides[: fmt.planes]), x_offset, atom, f"{CDMA} image",
                          offsets, mode=HELD)
    except LayoutError as exc:  # the image registers describe no valid layout
        error = ConfigurationError(exc.reason, where=exc.where)
        error.context = list(exc.context)
        raise error from None
    return raw


def fetch_image(ctx, layer: ImageLayer) -> tuple[np.ndarray, dict]:
    """The converted image framed by the CDMA's left/right padding: (C, H, L + W + R)."""
    atom = ctx.config.atom_bytes
    fmt = layer.fmt
    mem = ctx.memory(layer.ram, "NVDLA_CDMA.D_DAIN_RAM_TYPE_0.DATAIN_RAM_TYPE")
    raw = image_pixels(mem, fmt, layer.addrs, layer.line_strides, layer.width, layer.height,
                       layer.x_offset, layer.in_precision, atom)
    if layer.in_precision != FP16 and byte_components(fmt):
        return _framed(convert_byte_pixels(raw, fmt, layer), layer), {}
    values, bits = pixel_components(raw, fmt)
    counters = {}
    if layer.in_precision == FP16:
        if fmt.dtype != np.float16:
            raise ConfigurationError(f"{CDMA}.D_MISC_CFG_0: fp16 input with integer pixel "
                                     f"format {fmt.name}")
        nan, inf = _fp16_line_counters(mem, layer, atom)
        counters["D_NAN_INPUT_DATA_NUM_0"] = nan
        counters["D_INF_INPUT_DATA_NUM_0"] = inf
        if layer.nan_to_zero:
            values = flush_nans(values)
    return _framed(convert_pixels(values, bits, fmt, layer), layer), counters


def _framed(cube: np.ndarray, layer: ImageLayer) -> np.ndarray:
    """The converted image framed by the CDMA's left/right padding: (C, H, L + W + R)."""
    c, h, w = cube.shape
    framed = np.empty((c, h, layer.pad_left + w + layer.pad_right), dtype=cube.dtype)
    framed[...] = pad_element(layer.cdma_pad_value, layer.precision)
    framed[:, :, layer.pad_left: layer.pad_left + w] = cube
    return framed


def fetch_image_weights(ctx, layer: ImageLayer) -> tuple[np.ndarray, dict]:
    """Original (K, C, R, S) weights from the pre-(and post-)extended weight stream."""
    w_ext, counters = fetch_weights(ctx, layer.weights)  # (K, S*C, R, 1) in the DC order
    if layer.post_extension == 1:
        k, sc, r, _ = w_ext.shape
        w = w_ext[..., 0].reshape(k, layer.kernel_width, layer.channels, r).transpose(0, 2, 3, 1)
        return np.ascontiguousarray(w), counters
    cfg = ctx.config
    stream = pack_weight_dc(w_ext, layer.precision, cfg)
    shape = (layer.kernels, layer.channels, layer.kernel_height, layer.kernel_width)
    try:
        w = unpack_weight_image(stream, shape, layer.precision, cfg,
                                post_extension=layer.post_extension)
    except LayoutError as exc:
        raise ConfigurationError(f"{CSC}.D_POST_Y_EXTENSION_0: {exc}") from None
    return w, counters


# -- CSC ----------------------------------------------------------------------

def atomic_blocks(framed: np.ndarray, weights: np.ndarray, layer: ImageLayer, lanes: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The CSC's atomic operations as a 1x1 convolution.

    Returns data (1, B*lanes, H', W') and weights (K, B*lanes, 1, 1): block b
    is the b-th atomic operation of every output pixel, in the CSC's order.
    """
    c, h, _ = framed.shape
    k = weights.shape[0]
    s_, r_ = layer.kernel_width, layer.kernel_height
    ext = s_ * c
    oh, ow = layer.out_height, layer.out_width
    pad_row = pad_element(layer.csc_pad_value, layer.precision)
    # pre-extended lines: pre[e, line, x] = framed[c, line, x*sx + s], e = s*C + c
    cols = (np.arange(ow) * layer.stride_x)[None, :] + np.arange(s_)[:, None]  # (S, W')
    pre = framed[:, :, cols]  # (C, H, S, W')
    pre = pre.transpose(2, 0, 1, 3).reshape(ext, h, ow)
    wpre = weights.transpose(0, 3, 1, 2).reshape(k, ext, r_)  # (K, S*C, R)
    p = layer.post_extension
    groups = ceil_div(r_, p)
    rows = (np.arange(oh) * layer.stride_y - layer.pad_top)  # first line of each output row

    def lines(r):  # (ext, H', W') data of kernel row r for every output row
        idx = rows + r
        inside = (idx >= 0) & (idx < h)
        out = np.empty((ext, oh, ow), dtype=framed.dtype)
        out[...] = pad_row
        out[:, inside] = pre[:, idx[inside]]
        return out

    if p == 1:
        supers = ceil_div(ext, lanes)
        data = np.zeros((supers, r_, lanes, oh, ow), dtype=framed.dtype)
        wts = np.zeros((k, supers, r_, lanes), dtype=weights.dtype)
        for r in range(r_):
            line = lines(r)
            for sc in range(supers):
                lo, hi = sc * lanes, min(ext, (sc + 1) * lanes)
                data[sc, r, : hi - lo] = line[lo:hi]
                wts[:, sc, r, : hi - lo] = wpre[:, lo:hi, r]
    else:
        part = lanes // p
        data = np.zeros((groups, p, part, oh, ow), dtype=framed.dtype)
        wts = np.zeros((k, groups, p, part), dtype=weights.dtype)
        for r in range(r_):
            g, j = divmod(r, p)
            data[g, j, :ext] = lines(r)
            wts[:, g, j, :ext] = wpre[:, :, r]
    return data.reshape(1, -1, oh, ow), wts.reshape(k, -1, 1, 1)


def direct_layer(layer: ImageLayer, framed: np.ndarray) -> ConvLayer:
    """The direct layer whose products an image layer's are: the original (K, C, R, S)
    kernels over ``framed`` (:func:`fetch_image`'s, the CDMA's left and right padding in it),
    the lines above and below it the CSC's pad value."""
    return replace(layer.weights, channels=layer.channels, in_width=framed.shape[2],
                   in_height=layer.height, kernel_width=layer.kernel_width, dilation_x=1,
                   dilation_y=1, pad_left=0)


def compute_image_layer(ctx) -> tuple[np.ndarray, dict]:
    """CACC's output cube (K, H', W') of an image-input layer and its counters."""
    layer = decode_image_layer(ctx)
    framed, data_counters = fetch_image(ctx, layer)
    weights, weight_counters = fetch_image_weights(ctx, layer)
    counters = layer_counters(data_counters, weight_counters)
    if layer.precision != FP16:  # exact sums: the block structure cannot change them
        out, saturated = conv_cacc(framed[None], weights, direct_layer(layer, framed))
        counters[(CACC, "D_OUT_SATURATION_0")] = saturated
        return out[0], counters
    lanes = ctx.config.mac_atomic_c
    data, wts = atomic_blocks(framed, weights, layer, lanes)
    flat = replace(layer.weights, channels=data.shape[1], in_width=layer.out_width,
                   in_height=layer.out_height, kernel_width=1, kernel_height=1, stride_x=1,
                   stride_y=1, pad_top=0, pad_left=0)
    from .mac_fp16 import conv_fp16  # loaded by the first fp16 layer only
    return conv_fp16(data, wts, flat, lanes)[0], counters
