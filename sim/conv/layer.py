"""One direct-convolution layer as the CDMA, CSC, CMAC and CACC registers program it.

:func:`decode_layer` reads the executing register groups, applies every "+1"
encoding once, and checks that the blocks agree with each other and with the
hardware configuration (precision table, sizes, CBUF capacity).  A bad
combination raises :class:`~sim.errors.ConfigurationError` naming the register.

Geometry follows the CSC, which drives the MACs: output pixel (y, x) of
kernel position (r, s) reads input (y*stride_y + r*dil_y - pad_top,
x*stride_x + s*dil_x - pad_left); a coordinate outside the input cube reads
the pad value (CSC D_ZERO_PADDING_VALUE).  The right/bottom padding of the
CDMA only has to agree with the output size.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8, INT16, Precision
from ..dma.align import ceil_div, window_count
from ..dma.precision import check_precision
from ..errors import ConfigurationError
from ..records import record, replace
from ..rules import ConvFacts, check

CDMA, CSC, CMAC_A, CMAC_B, CACC = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B",
                                    "NVDLA_CACC")
MAX_CLIP_TRUNCATE = 16  # nv_full's largest (HardwareConfig.cacc_truncate_max)

# The layer's mode, decoded from the registers (:func:`conv_mode`)
DIRECT, IMAGE, WINOGRAD = "direct", "image", "winograd"

CDMA_COUNTERS = ("D_NAN_INPUT_DATA_NUM_0", "D_INF_INPUT_DATA_NUM_0", "D_NAN_INPUT_WEIGHT_NUM_0",
                 "D_INF_INPUT_WEIGHT_NUM_0")


def conv_mode(ctx) -> str:
    """IMAGE when the CDMA reads pixels, WINOGRAD when any block is in Winograd mode, else DIRECT.

    The mode-specific decoders check that the blocks agree.
    """
    if ctx.regs(CDMA).datain_format:
        return IMAGE
    if any(ctx.regs(unit).conv_mode for unit in (CDMA, CSC, CMAC_A, CMAC_B, CACC)):
        return WINOGRAD
    return DIRECT


def layer_counters(data_counters: dict, weight_counters: dict) -> dict:
    """Every CDMA NaN/Inf counter and CACC's saturation count of a layer (0 unless found)."""
    found = {**data_counters, **weight_counters}
    counters = {(CDMA, name): found.get(name, 0) for name in CDMA_COUNTERS}
    counters[(CACC, "D_OUT_SATURATION_0")] = 0
    return counters


def check_proc_precision(ctx, proc: Precision) -> None:
    """CSC, CMAC_A, CMAC_B and CACC must process in the CDMA's precision ``proc``."""
    for unit in (CSC, CMAC_A, CMAC_B, CACC):
        p = ctx.regs(unit).precision("proc_precision")
        if p != proc:
            raise ConfigurationError(f"{unit}.D_MISC_CFG_0: PROC_PRECISION {p} does not match "
                                     f"the CDMA's {proc}")


def pad_element(value: int, precision: str):
    """A pad register value as an element: low byte for int8, 16 bits otherwise.

    int8/int16 give signed numpy scalars, fp16 its bit pattern (uint16).
    """
    if precision == INT8:
        return np.uint8(value & 0xFF).view(np.int8)
    if precision == INT16:
        return np.uint16(value & 0xFFFF).view(np.int16)
    return np.uint16(value & 0xFFFF)


@record
class ConvLayer:
    precision: Precision  # the pipeline (processing) precision
    batches: int
    # input cube (CDMA)
    in_width: int
    in_height: int
    channels: int
    in_ram: int
    in_addr: int
    line_stride: int
    surf_stride: int
    batch_stride: int
    # data convertor (CDMA D_CVT_*)
    cvt_enable: bool
    cvt_offset: int
    cvt_scale: int
    cvt_truncate: int
    nan_to_zero: bool
    # weights (CDMA)
    kernels: int
    kernel_width: int
    kernel_height: int
    byte_per_kernel: int
    weight_ram: int
    weight_addr: int
    weight_bytes: int
    compressed: bool
    wgs_addr: int
    wmb_addr: int
    wmb_bytes: int
    # CSC geometry
    stride_x: int
    stride_y: int
    dilation_x: int
    dilation_y: int
    pad_left: int
    pad_top: int
    pad_value: int  # raw 16-bit register value
    out_width: int
    out_height: int
    # CACC
    clip_truncate: int
    # CBUF reuse between layers (CDMA D_MISC_CFG / D_BANK)
    data_reuse: bool = False
    weight_reuse: bool = False
    skip_data_release: bool = False
    skip_weight_release: bool = False
    banks: tuple = (0, 0)  # (DATA_BANK, WEIGHT_BANK) fields

    @property
    def element_bytes(self) -> int:
        return self.precision.bytes

    @property
    def out_shape(self) -> tuple[int, ...]:
        """(K, H', W'), or (N, K, H', W') for several batches."""
        cube = (self.kernels, self.out_height, self.out_width)
        return cube if self.batches == 1 else (self.batches, *cube)


def check_equal(pairs) -> None:
    """Each (register field name, programmed value, value the layer needs) must agree."""
    for name, got, want in pairs:
        if got != want:
            raise ConfigurationError(f"{name}: {got} does not match {want}")


def _check_equal(pairs, what: str) -> None:
    for name, a, b in pairs:
        if a != b:
            raise ConfigurationError(f"{what}: {name} {a} does not match {b}")


def weight_fetch(ctx) -> dict:
    """The CDMA's weight-fetch fields of a :class:`ConvLayer` (every convolution mode)."""
    cdma = ctx.regs(CDMA)
    compressed = bool(cdma.reg("D_WEIGHT_FORMAT_0").weight_format)
    if compressed:
        ctx.config.require("weight_compression", f"{CDMA}.D_WEIGHT_FORMAT_0")
    return dict(
        byte_per_kernel=cdma.byte_per_kernel + 1,
        weight_ram=cdma.weight_ram_type,
        **_weight_addresses(cdma),
        weight_bytes=cdma.reg("D_WEIGHT_BYTES_0").weight_bytes,
        compressed=compressed,
        wmb_bytes=cdma.reg("D_WMB_BYTES_0").wmb_bytes,
    )


def conv_facts(ctx, mode: str) -> ConvFacts:
    """The hardware legality rules' view (:mod:`sim.rules`) of the layer the CDMA/CSC
    registers program in ``mode`` (DIRECT, IMAGE or WINOGRAD)."""
    cdma, csc = ctx.regs(CDMA), ctx.regs(CSC)
    pad = cdma.reg("D_ZERO_PADDING_0")
    out = csc.reg("D_DATAOUT_SIZE_0_0")
    channels = cdma.datain_channel + 1
    kernel = (csc.weight_width_ext + 1, csc.weight_height_ext + 1)
    if mode == IMAGE:  # pre-extended: S kernel columns folded into the channels
        kernel = ((csc.weight_channel_ext + 1) // channels, kernel[1])
    elif mode == WINOGRAD:  # 4x4 in the Winograd domain: a 3x3 kernel
        kernel = (3, 3)
    return ConvFacts(
        ctx.config, mode, cdma.precision("proc_precision"),
        width=cdma.datain_width + 1, height=cdma.datain_height + 1, channels=channels,
        out_width=out.dataout_width + 1, out_height=out.dataout_height + 1,
        entries=cdma.entries + 1, data_banks=cdma.data_bank + 1,
        batches=cdma.reg("D_BATCH_NUMBER_0").batches + 1, kernel_width=kernel[0],
        kernel_height=kernel[1], stride_x=cdma.conv_x_stride + 1,
        stride_y=cdma.conv_y_stride + 1, dilation_x=csc.x_dilation_ext + 1,
        dilation_y=csc.y_dilation_ext + 1, pad_left=pad.pad_left, pad_right=pad.pad_right,
        pad_top=pad.pad_top, pad_bottom=pad.pad_bottom, pixel_elements=channels,
        data_reuse=bool(cdma.data_reuse), kernels=cdma.weight_kernel + 1,
        kernel_bytes=cdma.byte_per_kernel + 1, weight_banks=cdma.weight_bank + 1,
        compressed=bool(cdma.reg("D_WEIGHT_FORMAT_0").weight_format))


def check_rules(ctx, mode: str) -> None:
    """Stop a layer NVIDIA's C-model would not complete, or would compute otherwise,
    with the rule it breaks (:func:`sim.rules.check`)."""
    check(conv_facts(ctx, mode))


def weight_layer(ctx, precision: str, **geometry) -> ConvLayer:
    """The weight fetch of an image-input or Winograd layer as a single-batch ConvLayer.

    ``geometry`` gives the fields that describe the (pre-extended or
    transformed) weight and output geometry; the input fields are neutral.
    An image-input layer's legality rules are checked here, once its decoder
    has checked the registers agree (Winograd's decoder checks its own).
    """
    if conv_mode(ctx) == IMAGE:
        check_rules(ctx, IMAGE)
    fields = dict(
        precision=precision, batches=1, in_width=1, in_height=1, channels=1, in_ram=0,
        in_addr=0, line_stride=0, surf_stride=0, batch_stride=0, cvt_enable=False,
        cvt_offset=0, cvt_scale=0, cvt_truncate=0, nan_to_zero=False,
        kernels=ctx.regs(CDMA).weight_kernel + 1, kernel_width=1, kernel_height=1,
        stride_x=1, stride_y=1, dilation_x=1, dilation_y=1, pad_left=0, pad_top=0,
        pad_value=0, out_width=1, out_height=1, clip_truncate=ctx.regs(CACC).clip_truncate,
        **weight_fetch(ctx))
    fields.update(geometry)
    return ConvLayer(**fields)


def check_weight_bytes(layer: ConvLayer, kernel_bytes: int) -> None:
    """Uncompressed weights: D_WEIGHT_BYTES must hold every kernel."""
    if not layer.compressed and layer.weight_bytes < layer.kernels * kernel_bytes:
        raise ConfigurationError(f"{CDMA}.D_WEIGHT_BYTES_0: {layer.weight_bytes} bytes cannot "
                                 f"hold {layer.kernels} kernels of {kernel_bytes} bytes")


MEMO_SIZE = 256  # decoded layers remembered per register map (then forgotten at once)

#: CDMA registers that hold an address and nothing else.  A direct layer's decoding puts
#: them in ConvLayer's address fields (:func:`_addresses`) and no check reads them, so a
#: layer programmed as one decoded before but for these is that layer at new addresses:
#: the memo keys leave them out (ResNet-50's layers of one geometry differ in these only,
#: two in three of its convolutions are then not decoded again).
ADDRESS_REGISTERS = frozenset((
    "D_DAIN_ADDR_HIGH_0_0", "D_DAIN_ADDR_LOW_0_0", "D_DAIN_ADDR_HIGH_1_0", "D_DAIN_ADDR_LOW_1_0",
    "D_WEIGHT_ADDR_HIGH_0", "D_WEIGHT_ADDR_LOW_0", "D_WGS_ADDR_HIGH_0", "D_WGS_ADDR_LOW_0",
    "D_WMB_ADDR_HIGH_0", "D_WMB_ADDR_LOW_0"))


def _weight_addresses(cdma) -> dict:
    """The ConvLayer fields of the weights' addresses (every convolution mode)."""
    return dict(weight_addr=cdma.address("weight_addr"), wgs_addr=cdma.address("wgs_addr"),
                wmb_addr=cdma.address("wmb_addr"))


def _in_address(cdma) -> int:
    """A direct layer's input address (its surface 0's)."""
    return (cdma.datain_addr_high_0 << 32) | cdma.datain_addr_low_0


def _addresses(cdma) -> dict:
    """The ConvLayer fields of a direct layer that come from ADDRESS_REGISTERS, made as a
    fresh decode makes them (:func:`_in_address`, :func:`_weight_addresses`)."""
    return dict(in_addr=_in_address(cdma), **_weight_addresses(cdma))


def decode_layer(ctx) -> ConvLayer:
    """Decode and cross-check a direct-convolution layer's CDMA/CSC/CMAC/CACC register groups.

    The engine dispatches on :func:`conv_mode`; this decoder sees DIRECT layers.
    A layer is a function of those five blocks' register words and the hardware
    configuration: one programmed as a layer decoded before (a network run
    again, a repeated trace, a layer of the same geometry elsewhere in the network)
    is that layer, at the addresses its ADDRESS_REGISTERS hold, not decoded twice.
    Errors are not remembered.
    """
    blocks = [ctx.regs(unit) for unit in (CDMA, CSC, CMAC_A, CMAC_B, CACC)]
    cdma = blocks[0]
    memo = cdma.memo("conv layers")
    key = (tuple([item for item in cdma.words_key() if item[0] not in ADDRESS_REGISTERS]),
           *(block.words_key() for block in blocks[1:]), id(ctx.config))
    hit = memo.get(key)
    if hit is not None and hit[0] is ctx.config:
        return _at_addresses(hit[1], _addresses(cdma))
    layer = _decode_layer(ctx)
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = (ctx.config, layer)
    return layer


def _at_addresses(layer: ConvLayer, addresses: dict) -> ConvLayer:
    """``layer`` with the address fields ``addresses`` (itself when they are its own)."""
    if all(getattr(layer, name) == value for name, value in addresses.items()):
        return layer
    return replace(layer, **addresses)


def _decode_layer(ctx) -> ConvLayer:
    cfg = ctx.config
    cdma, csc, cacc = ctx.regs(CDMA), ctx.regs(CSC), ctx.regs(CACC)
    cdma.fields()  # every field at once: most are read
    csc.fields()
    cacc.fields()
    if csc.datain_format:
        raise ConfigurationError(f"{CSC}.D_DATAIN_FORMAT_0: PIXEL while {CDMA} reads a "
                                 "feature cube")

    in_prec = cdma.precision("in_precision")
    proc = cdma.precision("proc_precision")
    check_precision("conv", in_prec, proc, f"{CDMA}.D_MISC_CFG_0 IN_PRECISION/PROC_PRECISION")
    cfg.require_precision(proc, f"{CDMA}.D_MISC_CFG_0")
    check_proc_precision(ctx, proc)
    if csc.precision("in_precision") != in_prec:
        raise ConfigurationError(f"{CSC}.D_MISC_CFG_0: IN_PRECISION does not match the CDMA's")

    batches = cdma.batches + 1
    cfg.require_batches(batches, f"{CDMA}.D_BATCH_NUMBER_0")

    kernels = cdma.weight_kernel + 1
    layer = ConvLayer(
        precision=proc,
        batches=batches,
        in_width=cdma.datain_width + 1,
        in_height=cdma.datain_height + 1,
        channels=cdma.datain_channel + 1,
        in_ram=cdma.datain_ram_type,
        in_addr=_in_address(cdma),
        line_stride=cdma.reg("D_LINE_STRIDE_0").line_stride,
        surf_stride=cdma.surf_stride,
        batch_stride=cdma.batch_stride,
        cvt_enable=bool(cdma.cvt_en),
        cvt_offset=cdma.cvt_offset,
        cvt_scale=cdma.cvt_scale,
        cvt_truncate=cdma.cvt_truncate,
        nan_to_zero=bool(cdma.nan_to_zero),
        kernels=kernels,
        kernel_width=csc.weight_width_ext + 1,
        kernel_height=csc.weight_height_ext + 1,
        **weight_fetch(ctx),
        stride_x=csc.conv_x_stride_ext + 1,
        stride_y=csc.conv_y_stride_ext + 1,
        dilation_x=csc.x_dilation_ext + 1,
        dilation_y=csc.y_dilation_ext + 1,
        pad_left=csc.reg("D_ZERO_PADDING_0").pad_left,
        pad_top=csc.reg("D_ZERO_PADDING_0").pad_top,
        pad_value=csc.reg("D_ZERO_PADDING_VALUE_0").pad_value,
        out_width=csc.reg("D_DATAOUT_SIZE_0_0").dataout_width + 1,
        out_height=csc.reg("D_DATAOUT_SIZE_0_0").dataout_height + 1,
        clip_truncate=cacc.clip_truncate,
        data_reuse=bool(cdma.data_reuse),
        weight_reuse=bool(cdma.weight_reuse),
        skip_data_release=bool(cdma.skip_data_rls),
        skip_weight_release=bool(cdma.skip_weight_rls),
        banks=(cdma.data_bank, cdma.weight_bank),
    )
    _cross_check(ctx, layer, cdma, csc, cacc)
    check_rules(ctx, DIRECT)
    return layer


def _cross_check(ctx, layer: ConvLayer, cdma, csc, cacc) -> None:
    cfg = ctx.config
    bpe = layer.element_bytes
    _check_equal((
        ("DATAIN_WIDTH_EXT", csc.datain_width_ext + 1, layer.in_width),
        ("DATAIN_HEIGHT_EXT", csc.datain_height_ext + 1, layer.in_height),
        ("DATAIN_CHANNEL_EXT", csc.datain_channel_ext + 1, layer.channels),
        ("WEIGHT_CHANNEL_EXT", csc.weight_channel_ext + 1, layer.channels),
        ("WEIGHT_KERNEL", csc.reg("D_WEIGHT_SIZE_EXT_1_0").weight_kernel + 1, layer.kernels),
        ("BATCHES", csc.reg("D_BATCH_NUMBER_0").batches + 1, layer.batches),
    ), f"{CSC} vs {CDMA}")
    _check_equal((
        ("CONV_X_STRIDE", cdma.conv_x_stride + 1, layer.stride_x),
        ("CONV_Y_STRIDE", cdma.conv_y_stride + 1, layer.stride_y),
        ("PAD_LEFT", cdma.reg("D_ZERO_PADDING_0").pad_left, layer.pad_left),
        ("PAD_TOP", cdma.reg("D_ZERO_PADDING_0").pad_top, layer.pad_top),
    ), f"{CDMA} vs {CSC}")
    _check_equal((
        ("DATAOUT_WIDTH", cacc.dataout_width + 1, layer.out_width),
        ("DATAOUT_HEIGHT", cacc.dataout_height + 1, layer.out_height),
        ("DATAOUT_CHANNEL", cacc.dataout_channel + 1, layer.kernels),
        ("BATCHES", cacc.reg("D_BATCH_NUMBER_0").batches + 1, layer.batches),
    ), f"{CACC}.D_DATAOUT_SIZE vs {CSC}")
    _check_equal((
        ("DATAOUT_CHANNEL", csc.reg("D_DATAOUT_SIZE_1_0").dataout_channel + 1, layer.kernels),
    ), f"{CSC}.D_DATAOUT_SIZE_1_0 vs weight kernels")

    kernel_bytes = layer.kernel_width * layer.kernel_height * layer.channels * bpe
    if layer.byte_per_kernel != kernel_bytes:
        raise ConfigurationError(
            f"{CDMA}.D_WEIGHT_SIZE_0_0: BYTE_PER_KERNEL {layer.byte_per_kernel} is not "
            f"{layer.kernel_width}x{layer.kernel_height}x{layer.channels} elements "
            f"({kernel_bytes} bytes)")
    check_weight_bytes(layer, kernel_bytes)
    if csc.reg("D_WEIGHT_BYTES_0").weight_bytes != layer.weight_bytes:
        raise ConfigurationError(f"{CSC}.D_WEIGHT_BYTES_0 does not match {CDMA}.D_WEIGHT_BYTES_0")

    if layer.cvt_enable and layer.precision == FP16:
        raise ConfigurationError(f"{CDMA}.D_CVT_CFG_0: the data convertor does not take fp16 "
                                 "feature data")
    if layer.clip_truncate > cfg.cacc_truncate_max and layer.precision != FP16:
        raise ConfigurationError(f"{CACC}.D_CLIP_CFG_0: CLIP_TRUNCATE {layer.clip_truncate} "
                                 f"exceeds {cfg.cacc_truncate_max} on {cfg.name}")

    # Output size against the CDMA padding (the right/bottom pads are only used here).
    pad = cdma.reg("D_ZERO_PADDING_0")
    for axis, size, before, after, k, dil, stride, out in (
        ("width", layer.in_width, pad.pad_left, pad.pad_right, layer.kernel_width,
         layer.dilation_x, layer.stride_x, layer.out_width),
        ("height", layer.in_height, pad.pad_top, pad.pad_bottom, layer.kernel_height,
         layer.dilation_y, layer.stride_y, layer.out_height),
    ):
        if window_count(size, before, after, k, stride, dil) != out:
            raise ConfigurationError(
                f"{CSC}.D_DATAOUT_SIZE_0_0: output {axis} {out} does not follow from input "
                f"{size}, padding {before}+{after}, kernel {k}, dilation {dil}, stride {stride}")

    # CBUF: modelled logically; the banks must hold what the layer needs.
    for blk, unit in ((cdma, CDMA), (csc, CSC)):
        data_banks, weight_banks = blk.data_bank + 1, blk.weight_bank + 1
        if data_banks + weight_banks > cfg.cbuf_bank_count:
            raise ConfigurationError(f"{unit}.D_BANK_0: {data_banks} data + {weight_banks} weight "
                                     f"banks exceed the {cfg.cbuf_bank_count} CBUF banks")
    _check_cbuf(cfg, layer, cdma, csc)


def least_entries_per_slice(width: int, channels: int, bpe: int, atom: int, entry: int) -> int:
    """The fewest CBUF entries of ``entry`` bytes one input line can take: its atoms packed."""
    atoms = ceil_div(channels * bpe, atom)
    return ceil_div(width * atoms * atom, entry)


def _check_cbuf(cfg, layer: ConvLayer, cdma, csc) -> None:
    """Logical CBUF: ENTRY_PER_SLICE and D_BANK must be able to hold the cube.

    The entry size and packing rules differ between C-model generations
    (nv_full's packs two bank words per entry), so the check only rejects
    settings that cannot hold a line even fully packed into two-word entries,
    or a kernel's span of lines.
    """
    if cdma.entries != csc.entries:
        raise ConfigurationError(f"{CSC}.D_ENTRY_PER_SLICE_0 does not match {CDMA}'s")
    if (cdma.data_bank, cdma.weight_bank) != (csc.data_bank, csc.weight_bank):
        raise ConfigurationError(f"{CSC}.D_BANK_0 does not match {CDMA}.D_BANK_0")
    bpe = layer.element_bytes
    entries = cdma.entries + 1
    least = least_entries_per_slice(layer.in_width, layer.channels, bpe, cfg.atom_bytes,
                              2 * cfg.cbuf_bank_width)
    if entries < least:
        raise ConfigurationError(
            f"{CDMA}.D_ENTRY_PER_SLICE_0: {entries} entries cannot hold a line of "
            f"{layer.in_width}x{layer.channels} {layer.precision} (at least {least})")
    data_entries = (cdma.data_bank + 1) * cfg.cbuf_bank_depth
    line_bytes = layer.in_width * cfg.atom_bytes
    packed = layer.line_stride == line_bytes
    if bool(cdma.line_packed) != packed:
        raise ConfigurationError(
            f"{CDMA}.D_DAIN_MAP_0: LINE_PACKED={cdma.line_packed} but the line stride "
            f"{layer.line_stride:#x} {'is' if packed else 'is not'} one line of atoms")
    grain = cdma.grains + 1
    if grain > 1 and not cdma.line_packed:
        raise ConfigurationError(f"{CDMA}.D_FETCH_GRAIN_0: {grain} lines per fetch need "
                                 "packed lines (LINE_PACKED)")
    if entries * min(grain, layer.in_height) > data_entries:
        raise ConfigurationError(f"{CDMA}.D_FETCH_GRAIN_0: {grain} lines of {entries} entries "
                                 f"exceed the {data_entries} data entries of D_BANK")
    rows = min((layer.kernel_height - 1) * layer.dilation_y + 1, layer.in_height)
    if entries * rows > data_entries:
        raise ConfigurationError(
            f"{CDMA}.D_BANK_0: {cdma.data_bank + 1} data banks ({data_entries} entries) cannot "
            f"hold the {rows} input lines a kernel spans ({entries} entries each)")
