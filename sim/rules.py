"""Hardware legality rules: one table of what NVDLA cannot be programmed to do.

Each :class:`Rule` has a name, the unit and register (field) its message
names, the fact it comes from (NVIDIA's documents: format.rst, the v1
programming guide and unit description; or NVIDIA's C-model, ``cmod/`` of
nvdla/hw branch nvdlav1), what the C-model does with a layer that breaks it
(:data:`HANGS`: never raises the layer's interrupt, waiting forever or
stopping on one of its assertions; :data:`DIFFERS`: writes
something else than the documented result; :data:`DOCUMENTED`: a limit the
documents state that the C-model does not enforce, computing the
simulator's answer), a predicate over a layer's facts (True: legal) and a
one-line message.

Facts are a unit's decoded layer reduced to the quantities the predicates
read (:class:`ConvFacts`, :class:`SdpFacts`, :class:`PdpFacts`).  Unit
decoders build them from registers (:func:`sim.conv.layer.conv_facts`,
:func:`sdp_facts`, :func:`pdp_facts`) and call :func:`check`, which stops a
layer with the first HANGS/DIFFERS rule it breaks: the simulator does not
compute an answer the hardware would not give.  ``nvdla-sim gen`` builds the
facts from a spec before programming and obeys every rule
(:func:`violations`), documented limits included, so that a generated trace
is legal for RTL as well.

The rules were checked on NVIDIA's C-model (nvdlav1, nv_full): each
HANGS/DIFFERS rule with a layer on each side of its boundary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

from .configs import INT8, HardwareConfig, Precision
from .dma.align import align_up, ceil_div, window_count
from .errors import ConfigurationError
from .records import record

HANGS = "hangs"  # the C-model never completes the layer (waits forever, or an assertion stops it)
DIFFERS = "differs"  # the C-model completes but writes something else
DOCUMENTED = "documented"  # documented limit; the C-model computes the simulator's answer
ENFORCED = (HANGS, DIFFERS)  # what unit decoders reject

DIRECT, IMAGE, WINOGRAD = "direct", "image", "winograd"
CDMA, CSC, CACC = "NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CACC"
SDP, PDP = "NVDLA_SDP", "NVDLA_PDP"

PG = "programming guide (nvdla/doc hw/v1/ias/programming_guide.rst)"
UD = "unit description (nvdla/doc hw/v1/ias/unit_description.rst)"
CMOD = "C-model (nvdla/hw nvdlav1 cmod)"

# CBUF entry size per C-model generation (register address map): the nvdlav1 C-model
# keeps 128-byte entries (CBUF_ENTRY_SIZE; 256 of them per 32 KiB bank); elsewhere an
# entry is one bank word.
ENTRY_BYTES = {"nvdlav1": 128}


# -- facts ------------------------------------------------------------------------------

@record
class ConvFacts:
    """A convolution layer (CDMA/CSC/CACC) as the rules see it.

    Sizes are element counts (no "+1" encodings): ``width``/``height``/``channels``
    the input cube the CDMA fetches, ``kernel_*`` the layer's kernel (Winograd: the
    3x3 equivalent, image: before pre-extension), ``out_*`` CSC's output size,
    ``entries`` D_ENTRY_PER_SLICE + 1, ``data_banks``/``weight_banks`` D_BANK + 1,
    ``pixel_elements`` the elements an image pixel holds in the CBUF.
    """

    cfg: HardwareConfig
    mode: str
    precision: str
    width: int
    height: int
    channels: int
    out_width: int
    out_height: int
    entries: int
    data_banks: int
    batches: int = 1
    kernel_width: int = 1
    kernel_height: int = 1
    stride_x: int = 1
    stride_y: int = 1
    dilation_x: int = 1
    dilation_y: int = 1
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    pixel_elements: int = 4
    data_reuse: bool = False
    kernels: int = 1
    kernel_bytes: int = 0  # bytes of one kernel as the CDMA fetches it (BYTE_PER_KERNEL)
    weight_banks: int = 1
    compressed: bool = False


@record
class SdpFacts:
    """An SDP layer: precisions, where its input comes from and its output goes.

    ``dst``: (base address, line stride, surface stride) of a memory output (None
    for output to the PDP); ``prelu_alu``: the stages (x1 = BS, x2 = BN, y = EW)
    whose multiplier is in PReLU mode while their ALU is on; ``eql``: the Y ALU
    compares (EQL); ``cvt``: the output convertor (offset, scale, shift);
    ``operand_bytes``: {stage: element bytes} of the operands read from memory;
    ``in_precision``: the memory input's precision (None on the fly).
    """

    proc: str
    out: str
    flying: bool = False
    to_pdp: bool = False
    winograd: bool = False
    batches: int = 1
    dst: tuple | None = None
    prelu_alu: tuple = ()
    width: int = 2
    height: int = 2
    atom_bytes: int = 32
    eql: bool = False
    cvt: tuple = (0, 1, 0)
    operand_bytes: dict = field(default_factory=dict)
    in_precision: str | None = None


@record
class PdpFacts:
    """A PDP layer: kernel, padding, split and whether its input is on the fly."""

    kernel_width: int
    kernel_height: int
    pad_left: int = 0
    pad_right: int = 0
    pad_top: int = 0
    pad_bottom: int = 0
    flying: bool = False
    split_num: int = 1
    batches: int = 1
    width: int | None = None  # the input cube, when the rule needs it (on the fly)
    height: int | None = None
    stride_x: int = 1
    stride_y: int = 1
    out_widths: tuple = ()  # output columns of the cube, or of each split (first, mid, last)
    buffer_columns: int = 0  # HardwareConfig.pdp_line_buffer_columns (0: not checked)


def pool_out(size: int, pad_lo: int, pad_hi: int, kernel: int, stride: int) -> int:
    """Pooling windows along one axis (the last one ending inside the padded input)."""
    return window_count(size, pad_lo, pad_hi, kernel, stride)


def pdp_lines_in_flight(kernel_height: int, stride_y: int) -> int:
    """Pooling output lines the PDP's line buffer holds at once: ceil(kernel / stride),
    rounded up to 1, 2, 4 or 8 (the buffer's 8 banks shared by those lines)."""
    lines = ceil_div(kernel_height, stride_y)
    return next(n for n in (1, 2, 4, 8) if lines <= n)


def pdp_max_out_width(f: PdpFacts) -> int:
    return f.buffer_columns // pdp_lines_in_flight(f.kernel_height, f.stride_y)


def pool_tiles(f: PdpFacts) -> bool:
    """The last window of each axis ends on the last padded element."""
    return all((pool_out(n, lo, hi, k, st) - 1) * st + k == lo + n + hi for n, lo, hi, k, st in (
        (f.width, f.pad_left, f.pad_right, f.kernel_width, f.stride_x),
        (f.height, f.pad_top, f.pad_bottom, f.kernel_height, f.stride_y)))


# -- facts from registers: what a unit's decoder passes to check() ------------------------

PRECISION_NAMES = {0: "int8", 1: "int16", 2: "fp16"}


def sdp_facts(sdp, rdma, cfg: HardwareConfig) -> SdpFacts:
    """The SDP rules' facts from the SDP register group ``sdp`` and the SDP_RDMA group
    ``rdma`` (attribute per field, as ``ctx.regs`` gives them; None without SDP_RDMA)."""
    ew_on = not sdp.ew_bypass and not sdp.ew_alu_bypass
    prelu_alu = tuple(name for name, p in (("x1", "bs"), ("x2", "bn"), ("y", "ew"))
                      if not getattr(sdp, f"{p}_bypass") and getattr(sdp, f"{p}_mul_prelu")
                      and not getattr(sdp, f"{p}_mul_bypass")
                      and not getattr(sdp, f"{p}_alu_bypass"))
    operand_bytes = {}
    flying = bool(sdp.flying_mode)
    if rdma is not None:
        for name, dma in (("x1", "brdma"), ("x2", "nrdma"), ("y", "erdma")):
            if not getattr(rdma, f"{dma}_disable"):
                operand_bytes[name] = 2 if getattr(rdma, f"{dma}_data_size") else 1
    return SdpFacts(
        PRECISION_NAMES.get(sdp.proc_precision, "int8"),
        PRECISION_NAMES.get(sdp.out_precision, "int8"), flying=flying,
        to_pdp=bool(sdp.output_dst), winograd=bool(sdp.winograd),
        batches=sdp.batch_number + 1,
        dst=None if sdp.output_dst else (sdp.address("dst_base_addr"), sdp.dst_line_stride,
                                         sdp.dst_surface_stride),
        prelu_alu=prelu_alu, width=sdp.width + 1, height=sdp.height + 1,
        atom_bytes=cfg.atom_bytes, eql=ew_on and sdp.ew_alu_algo == 3,
        cvt=(sdp.cvt_offset, sdp.cvt_scale, sdp.cvt_shift), operand_bytes=operand_bytes,
        in_precision=None if flying or rdma is None
        else PRECISION_NAMES.get(rdma.in_precision, "int8"))


def pdp_facts(pdp, cfg: HardwareConfig | None = None) -> PdpFacts:
    """The PDP rules' facts from the PDP register group (as ``ctx.regs`` gives it); with
    ``cfg`` the line buffer check too."""
    splits = pdp.split_num + 1
    if splits == 1:
        widths = (pdp.cube_out_width + 1,)
    else:
        widths = (pdp.partial_width_out_first + 1, pdp.partial_width_out_last + 1) + (
            (pdp.partial_width_out_mid + 1,) if splits > 2 else ())
    return PdpFacts(pdp.kernel_width + 1, pdp.kernel_height + 1, pdp.pad_left, pdp.pad_right,
                    pdp.pad_top, pdp.pad_bottom, flying=pdp.flying_mode == 0,
                    split_num=splits, stride_x=pdp.kernel_stride_width + 1,
                    stride_y=pdp.kernel_stride_height + 1, out_widths=widths,
                    buffer_columns=cfg.pdp_line_buffer_columns if cfg is not None else 0)


# -- quantities the rules share (also what gen programs) ---------------------------------

def entry_bytes(cfg: HardwareConfig) -> int:
    """Bytes per CBUF entry, the unit of D_ENTRY_PER_SLICE."""
    return ENTRY_BYTES.get(cfg.address_map, cfg.cbuf_bank_width)


def entries_per_bank(cfg: HardwareConfig) -> int:
    return cfg.cbuf_bank_depth * cfg.cbuf_bank_width // entry_bytes(cfg)


def element_bytes(precision: str) -> int:
    return Precision(precision).bytes


def direct_entries(cfg: HardwareConfig, width: int, channels: int, precision: str) -> int:
    """CBUF entries one input line of a direct convolution takes.

    nvdlav1 (four atoms an entry): whole entries for every four atoms of a pixel,
    and the rest of its atoms share entries in halves (one or two atoms a pixel: two
    or four pixels an entry; three atoms: an entry a pixel), as the C-model's CDMA
    stores them.  Elsewhere the atoms of a line packed.
    """
    atoms = ceil_div(channels * element_bytes(precision), cfg.atom_bytes)
    per_entry = entry_bytes(cfg) // cfg.atom_bytes
    if per_entry != 4:
        return ceil_div(width * atoms, per_entry)
    rest = {0: 0, 1: ceil_div(width, 4), 2: ceil_div(width, 2), 3: width}[atoms % 4]
    return atoms // 4 * width + rest


def winograd_extended(f: ConvFacts) -> tuple[int, int, int]:
    """(width, height, channels) of the stride-folded cube CSC sees in Winograd mode."""
    atom_channels = f.cfg.atom_bytes // element_bytes(f.precision)
    padded = align_up(f.channels, atom_channels)
    return ((f.pad_left + f.width + f.pad_right) // f.stride_x,
            (f.pad_top + f.height + f.pad_bottom) // f.stride_y,
            padded * f.stride_x * f.stride_y)


def image_line_bytes(f: ConvFacts) -> int:
    """Bytes of one padded image line in the CBUF: every pixel's elements converted to
    the processing precision (CDMA ImageConvDataResponseSequencer)."""
    return (f.pad_left + f.width + f.pad_right) * f.pixel_elements * element_bytes(f.precision)


def line_entries(f: ConvFacts) -> int:
    """The CBUF entries the C-model stores an input line in (the value
    D_ENTRY_PER_SLICE must have)."""
    if f.mode == WINOGRAD:
        ext_w, _, ext_c = winograd_extended(f)
        return max(1, ext_w * ext_c * element_bytes(f.precision) // entry_bytes(f.cfg))
    if f.mode == IMAGE:
        return ceil_div(image_line_bytes(f), entry_bytes(f.cfg))
    return direct_entries(f.cfg, f.width, f.channels, f.precision)


def kernel_group(f: ConvFacts) -> int:
    """Kernels CSC loads as one group (one MAC atomic K of the precision)."""
    return min(f.kernels, f.cfg.mac_atomic_k // element_bytes(f.precision))


def group_bytes(f: ConvFacts) -> int:
    return kernel_group(f) * f.kernel_bytes


def weight_bank_bytes(f: ConvFacts) -> int:
    return f.weight_banks * f.cfg.cbuf_bank_depth * f.cfg.cbuf_bank_width


def fetched_lines(f: ConvFacts) -> int:
    """Lines the CDMA writes into the CBUF for the layer (all batches)."""
    if f.mode == WINOGRAD:
        return winograd_extended(f)[1]
    return f.height * f.batches


def data_entries_needed(f: ConvFacts) -> int:
    """Entries the whole input occupies: the CDMA reserves D_ENTRY_PER_SLICE a line and
    stores the line in :func:`line_entries`; the larger counts."""
    return fetched_lines(f) * max(f.entries, line_entries(f))


# -- the rules --------------------------------------------------------------------------

def _always(facts) -> bool:
    return True


class Rule:
    """One rule of :data:`RULES` (a plain class: a dataclass costs a quarter of this
    module's import, and rules are never compared or changed)."""

    __slots__ = ("name", "unit", "register", "source", "effect", "legal", "message", "applies")

    def __init__(self, name: str, unit: str, register: str, source: str, effect: str,
                 legal: Callable, message: Callable, applies: Callable = _always):
        self.name = name
        self.unit = unit  # conv, sdp, pdp: the facts class the predicate reads
        self.register = register  # the register (and field) a breach is reported on
        self.source = source
        self.effect = effect  # HANGS, DIFFERS or DOCUMENTED
        self.legal = legal  # facts -> bool
        self.message = message  # facts -> str (the reason, without register and source)
        self.applies = applies  # facts -> bool

    def __repr__(self):
        return f"Rule({self.name!r})"


def _conv(mode=None):
    return (lambda f: True) if mode is None else (lambda f: f.mode == mode)


def _wino_out_ok(f: ConvFacts) -> bool:
    return f.out_width % 4 == 0 and f.out_height % 4 == 0


RULES: tuple[Rule, ...] = (
    # -- convolution (every mode) -------------------------------------------------------
    Rule("conv.cbuf_full_input", "conv", f"{CDMA}.D_BANK_0 DATA_BANK",
         f"{PG} 'Full input' working modes (banks_for_data = ceil(entry_per_slice*H/256), "
         f"bigger inputs are split into layers by software); {CMOD}: CSC waits for the "
         "whole cube in the data banks, the CDMA reserves D_ENTRY_PER_SLICE entries a line",
         HANGS,
         lambda f: data_entries_needed(f) <= f.data_banks * entries_per_bank(f.cfg),
         lambda f: (f"the input needs {data_entries_needed(f)} CBUF entries ({fetched_lines(f)} "
                    f"lines of {max(f.entries, line_entries(f))}) but {f.data_banks} data "
                    f"bank(s) hold {f.data_banks * entries_per_bank(f.cfg)}"),
         applies=lambda f: not f.data_reuse),
    Rule("conv.cbuf_weight_group", "conv", f"{CDMA}.D_BANK_0 WEIGHT_BANK",
         f"{PG} 'Full input, partial weight' mode (weights fetched a kernel group at a "
         f"time); {CMOD}: CSC waits for a whole kernel group in the weight banks", HANGS,
         lambda f: group_bytes(f) <= weight_bank_bytes(f),
         lambda f: (f"a group of {kernel_group(f)} kernels of {f.kernel_bytes} bytes "
                    f"({group_bytes(f)} bytes) does not fit {f.weight_banks} weight bank(s) of "
                    f"{f.cfg.cbuf_bank_depth * f.cfg.cbuf_bank_width} bytes"),
         applies=lambda f: not f.compressed),
    Rule("conv.weight_group_margin", "conv", f"{CDMA}.D_BANK_0 WEIGHT_BANK",
         f"{PG} Limitation/Convolution: 'WEIGHT_BANK should be allocated large enough to "
         "store one kernel group weight plus 128Bytes'", DOCUMENTED,
         lambda f: group_bytes(f) + 128 <= weight_bank_bytes(f),
         lambda f: (f"a kernel group of {group_bytes(f)} bytes plus 128 does not fit "
                    f"{f.weight_banks} weight bank(s)")),
    Rule("conv.compressed_banks", "conv", f"{CDMA}.D_BANK_0",
         f"{PG} Limitation/Convolution: with compressed weights banks_for_data + "
         "banks_for_weight below 16 (the last bank holds the WMB)", DOCUMENTED,
         lambda f: f.data_banks + f.weight_banks < f.cfg.cbuf_bank_count,
         lambda f: (f"{f.data_banks} data + {f.weight_banks} weight banks leave no bank for "
                    "the weight mask"),
         applies=lambda f: f.compressed),
    Rule("conv.pad_below_kernel", "conv", f"{CDMA}.D_ZERO_PADDING_0",
         f"{PG} Limitation/Convolution: left/right padding less than S, top/bottom less "
         "than R", DOCUMENTED,
         lambda f: (max(f.pad_left, f.pad_right) < f.kernel_width
                    and max(f.pad_top, f.pad_bottom) < f.kernel_height),
         lambda f: (f"padding {f.pad_left}/{f.pad_right}/{f.pad_top}/{f.pad_bottom} (left/"
                    f"right/top/bottom) is not below the {f.kernel_height}x{f.kernel_width} "
                    "kernel"),
         applies=lambda f: f.mode != WINOGRAD),
    Rule("conv.dilation_direct_only", "conv", f"{CSC}.D_DILATION_EXT_0",
         f"{UD} 'Dilation is available for DC mode only'", DOCUMENTED,
         lambda f: f.dilation_x == 1 and f.dilation_y == 1,
         lambda f: f"dilation {f.dilation_y}x{f.dilation_x} (y x x) in {f.mode} mode",
         applies=lambda f: f.mode != DIRECT),
    # -- image input ----------------------------------------------------------------------
    Rule("image.entries_per_line", "conv", f"{CDMA}.D_ENTRY_PER_SLICE_0",
         f"{CMOD}: the CDMA stores each padded image line in ceil(line bytes / entry) "
         "CBUF entries, CSC reads line y at y*ENTRY_PER_SLICE", DIFFERS,
         lambda f: f.entries == line_entries(f),
         lambda f: (f"{f.entries} entries a line, but a padded line of "
                    f"{f.pad_left + f.width + f.pad_right} pixels x {f.pixel_elements} "
                    f"{f.precision} elements ({image_line_bytes(f)} bytes) takes "
                    f"{line_entries(f)} entries of {entry_bytes(f.cfg)} bytes"),
         applies=_conv(IMAGE)),
    # -- Winograd -------------------------------------------------------------------------
    Rule("winograd.padded_input", "conv", f"{CDMA}.D_ZERO_PADDING_0",
         f"{CMOD}: the CDMA frames the input in groups of 4*stride lines and columns "
         "('invalid config on padding and conv_stride')", HANGS,
         lambda f: ((f.pad_left + f.width + f.pad_right) % (4 * f.stride_x) == 0
                    and (f.pad_top + f.height + f.pad_bottom) % (4 * f.stride_y) == 0),
         lambda f: (f"the padded input {f.pad_left + f.width + f.pad_right}x"
                    f"{f.pad_top + f.height + f.pad_bottom} is not a multiple of 4*stride "
                    f"({4 * f.stride_x}x{4 * f.stride_y})"),
         applies=_conv(WINOGRAD)),
    Rule("winograd.output_multiple_of_4", "conv", f"{CSC}.D_DATAOUT_SIZE_0_0",
         f"{UD} 'For Winograd operation, the output width and height shall be divisible "
         f"by 4'; {CMOD}: CSC scans the output in 4x4 blocks", HANGS,
         _wino_out_ok,
         lambda f: f"Winograd output {f.out_width}x{f.out_height} is not a multiple of 4",
         applies=_conv(WINOGRAD)),
    Rule("winograd.output_size", "conv", f"{CSC}.D_DATAOUT_SIZE_0_0",
         f"{PG} CACC.D_DATAOUT_SIZE_0: Winograd DATAOUT = DATAIN_SIZE_EXT - 4", DOCUMENTED,
         lambda f: (f.out_width, f.out_height) == tuple(n - 4 for n in winograd_extended(f)[:2]),
         lambda f: (f"Winograd output {f.out_width}x{f.out_height} is not the extended "
                    "input {}x{} less 4".format(*winograd_extended(f)[:2])),
         applies=_conv(WINOGRAD)),
    Rule("winograd.min_output", "conv", f"{CSC}.D_DATAOUT_SIZE_0_0",
         f"{PG} Limitation/Winograd: 'Output width and height must be 4 divisible and >= 8'",
         DOCUMENTED,
         lambda f: f.out_width >= 8 and f.out_height >= 8,
         lambda f: f"Winograd output {f.out_width}x{f.out_height} is below 8x8",
         applies=_conv(WINOGRAD)),
    Rule("winograd.no_batch", "conv", f"{CDMA}.D_BATCH_NUMBER_0",
         f"{PG} Limitation/Convolution feature crossing: no Winograd with multi-batch",
         DOCUMENTED, lambda f: f.batches == 1, lambda f: f"{f.batches} batches in Winograd mode",
         applies=_conv(WINOGRAD)),
    # -- SDP ------------------------------------------------------------------------------
    Rule("sdp.int16_to_int8", "sdp", f"{SDP}.D_DATA_FORMAT_0",
         f"{CMOD}: an SDP layer processing int16 with int8 output never completes (16 "
         "channels or fewer) or writes its channels in another arrangement", DIFFERS,
         lambda f: not (f.proc == "int16" and f.out == INT8),
         lambda f: "int16 processing with int8 output"),
    Rule("sdp.pdp_same_precision", "sdp", f"{SDP}.D_DATA_FORMAT_0",
         f"{PG} Limitation/SDP/DC: 'Precision conversion is not allowed if SDP output to "
         "PDP'", DIFFERS,
         lambda f: f.proc == f.out,
         lambda f: f"{f.proc} processing with {f.out} output to the PDP",
         applies=lambda f: f.to_pdp),
    Rule("sdp.batch_dst_64", "sdp", f"{SDP}.D_DST_LINE_STRIDE_0",
         f"{PG} Limitation/SDP/Winograd-Batch: with multi-batch DST_BASE_ADDR, "
         "DST_LINE_STRIDE and DST_SURFACE_STRIDE 64-byte aligned", DIFFERS,
         lambda f: all(v % 64 == 0 for v in f.dst),
         lambda f: ("{} batches need the output base, line and surface stride 64-byte "
                    "aligned (0x{:x}, 0x{:x}, 0x{:x})".format(f.batches, *f.dst)),
         applies=lambda f: f.batches > 1 and f.dst is not None),
    Rule("sdp.int8_widen_single", "sdp", f"{SDP}.D_DATA_FORMAT_0",
         f"{CMOD}: SdpDataOperationThread asserts one batch and no Winograd for int8 "
         "processing with int16/fp16 output (the simulation stops)", HANGS,
         lambda f: f.batches == 1 and not f.winograd,
         lambda f: (f"int8 processing with {f.out} output in "
                    f"{'Winograd' if f.winograd else f'{f.batches}-batch'} mode"),
         applies=lambda f: f.proc == INT8 and f.out != INT8),
    Rule("sdp.batch_to_memory", "sdp", f"{SDP}.D_FEATURE_MODE_CFG_0 OUTPUT_DST",
         f"{CMOD}: SdpWdmaThread asserts OUTPUT_DST=MEM with several batches (the "
         "simulation stops)", HANGS,
         lambda f: not f.to_pdp, lambda f: f"{f.batches} batches sent to the PDP",
         applies=lambda f: f.batches > 1),
    Rule("sdp.winograd_to_memory", "sdp", f"{SDP}.D_FEATURE_MODE_CFG_0 OUTPUT_DST",
         f"{CMOD}: SdpWdmaThread asserts OUTPUT_DST=MEM in Winograd mode (the simulation "
         "stops)", HANGS,
         lambda f: not f.to_pdp, lambda f: "Winograd output sent to the PDP",
         applies=lambda f: f.winograd),
    Rule("sdp.eql_output_cvt", "sdp", f"{SDP}.D_CVT_SCALE_0",
         f"{CMOD}: SdpDataOperationThread asserts the output convertor is the identity "
         "(offset 0, scale 1, shift 0) when the Y ALU compares (EQL)", HANGS,
         lambda f: tuple(f.cvt) == (0, 1, 0),
         lambda f: "EQL with output convertor offset {}, scale {}, shift {}".format(*f.cvt),
         applies=lambda f: f.eql),
    Rule("sdp.eql_single_plain", "sdp", f"{SDP}.D_DP_EW_CFG_0 EW_ALU_ALGO",
         f"{PG} Limitation/SDP/Winograd-Batch: 'SDP_Y can't work at EQL mode'; {CMOD} "
         "asserts one batch and no Winograd with EQL", HANGS,
         lambda f: f.batches == 1 and not f.winograd,
         lambda f: f"EQL in {'Winograd' if f.winograd else f'{f.batches}-batch'} mode",
         applies=lambda f: f.eql),
    Rule("sdp.operand_two_bytes", "sdp", f"{SDP}_RDMA.D_NRDMA_CFG_0 / D_ERDMA_CFG_0 DATA_SIZE",
         f"{CMOD}: SDP_RDMA asserts 2-byte X2/Y operands when neither the input nor the "
         "processing is int8", HANGS,
         lambda f: all(f.operand_bytes.get(k, 2) == 2 for k in ("x2", "y")),
         lambda f: "1-byte {} operands with {} input and processing".format(
             "/".join(k for k in ("x2", "y") if f.operand_bytes.get(k, 2) != 2), f.proc),
         applies=lambda f: f.proc != INT8 and f.in_precision not in (INT8,)),
    Rule("sdp.one_by_one_packed", "sdp", f"{SDP}.D_DST_SURFACE_STRIDE_0",
         f"{PG} Limitation/Data Format: 'For 1x1xC cube, it should always be line_packed "
         f"and surf_packed'; {CMOD} asserts a 1x1 output's surface stride is one atom",
         HANGS,
         lambda f: f.dst[2] == f.atom_bytes,
         lambda f: (f"a 1x1 output cube with surface stride 0x{f.dst[2]:x} (one atom is "
                    f"0x{f.atom_bytes:x})"),
         applies=lambda f: f.dst is not None and f.width == 1 and f.height == 1),
    Rule("sdp.prelu_alu_bypass", "sdp", f"{SDP}.D_DP_BS_CFG_0",
         f"{PG} Limitation/SDP: 'If PReLU is enabled for one sub-unit, the ALU in that unit "
         "MUST be bypassed'", DOCUMENTED,
         lambda f: not f.prelu_alu,
         lambda f: f"PReLU with the ALU on in {', '.join(f.prelu_alu)}"),
    Rule("sdp.winograd_on_the_fly", "sdp", f"{SDP}.D_FEATURE_MODE_CFG_0",
         f"{PG} Limitation/SDP/Winograd-Batch: 'SDP has to work on the fly with CC'",
         DOCUMENTED, lambda f: f.flying, lambda f: "Winograd output mode without flying mode",
         applies=lambda f: f.winograd),
    # -- PDP ------------------------------------------------------------------------------
    Rule("pdp.pad_below_kernel", "pdp", f"{PDP}.D_POOLING_PADDING_CFG_0",
         f"{PG} Limitation/PDP: 'PL/PR should be less than kernel_width'", DOCUMENTED,
         lambda f: (max(f.pad_left, f.pad_right) < f.kernel_width
                    and max(f.pad_top, f.pad_bottom) < f.kernel_height),
         lambda f: (f"padding {f.pad_left}/{f.pad_right}/{f.pad_top}/{f.pad_bottom} is not "
                    f"below the {f.kernel_height}x{f.kernel_width} kernel")),
    Rule("pdp.kernel_max_8", "pdp", f"{PDP}.D_POOLING_KERNEL_CFG_0",
         f"{PG} Limitation/PDP: 'Maximum supported pooling kernel size is 8'", DOCUMENTED,
         lambda f: f.kernel_width <= 8 and f.kernel_height <= 8,
         lambda f: f"a {f.kernel_height}x{f.kernel_width} pooling kernel"),
    Rule("pdp.flying_windows_tile", "pdp", f"{PDP}.D_POOLING_KERNEL_CFG_0",
         f"{PG} Limitation/PDP: '(PL+W+PR-Kernel_W)%stride_x == 0', 'CUBE_IN_WIDTH + PL "
         "should be equals to (CUBE_OUT_WIDTH-1)*stride_x + kernel_width'; on the fly the "
         "PDP pools the whole cube the SDP sends (offline, the input after the last window "
         "is simply not programmed)", DOCUMENTED,
         pool_tiles,
         lambda f: (f"a {f.kernel_height}x{f.kernel_width} kernel at stride {f.stride_y}x"
                    f"{f.stride_x} does not end on the last line and column of the padded "
                    f"{f.height}x{f.width} input sent on the fly"),
         applies=lambda f: f.flying and f.width is not None),
    Rule("pdp.line_buffer_width", "pdp", f"{PDP}.D_PARTIAL_WIDTH_OUT_0",
         f"{UD} Planar Data Processor: output width <= 7 KB / (data width x ongoing channels "
         f"x f(ceil(kernel_h/stride_h))), f 1/2/4/8; {PG} Limitation/PDP: 'For any mode, "
         "first/mid/last_out_width should be less than maximum flying width'; nvdlav1 RTL "
         "NV_NVDLA_PDP_CORE_cal2d.v: 8 banks of 64 entries merged 8/4/2/1 per line in flight. "
         "The C-model computes the simulator's answer past it until its own buffer model "
         "stalls (never raising the interrupt: 80 columns at kernel 5 or 8, stride 1)",
         DOCUMENTED, lambda f: max(f.out_widths) <= pdp_max_out_width(f),
         lambda f: (f"{max(f.out_widths)} output columns (a split's, or the cube's) exceed the "
                    f"line buffer's {pdp_max_out_width(f)} at a {f.kernel_height}-line kernel "
                    f"and stride {f.stride_y}"),
         applies=lambda f: f.buffer_columns > 0 and bool(f.out_widths)),
    Rule("pdp.flying_no_split", "pdp", f"{PDP}.D_OPERATION_MODE_CFG_0 SPLIT_NUM",
         f"{PG} PDP programming: on the fly SPLIT_NUM=0 (split width is an offline mode)",
         DOCUMENTED, lambda f: f.split_num == 1,
         lambda f: f"{f.split_num} width splits with input on the fly",
         applies=lambda f: f.flying),
)

BY_NAME = {r.name: r for r in RULES}


def violations(facts, effects=(HANGS, DIFFERS, DOCUMENTED)) -> list[Rule]:
    """The rules of ``facts``' unit (with one of ``effects``) that ``facts`` breaks."""
    unit = _UNIT_OF[type(facts)]
    return [r for r in RULES if r.unit == unit and r.effect in effects and r.applies(facts)
            and not r.legal(facts)]


def describe(rule: Rule, facts) -> str:
    """The one-line reason a breach is reported with: message and source."""
    return f"{rule.message(facts)} ({rule.name}: {rule.source})"


def check(facts, effects=ENFORCED) -> None:
    """Raise ConfigurationError naming the register of the first rule ``facts`` breaks.

    Unit decoders call it with the default: the rules whose breach NVIDIA's C-model
    shows (it hangs or writes something else).
    """
    for rule in violations(facts, effects):
        raise ConfigurationError(f"{rule.register}: {describe(rule, facts)}")


_UNIT_OF = {ConvFacts: "conv", SdpFacts: "sdp", PdpFacts: "pdp"}

__all__ = ["BY_NAME", "DIFFERS", "DOCUMENTED", "ENFORCED", "HANGS", "RULES", "ConvFacts",
           "PdpFacts", "Rule", "SdpFacts", "check", "data_entries_needed", "describe",
           "direct_entries", "entries_per_bank", "entry_bytes", "line_entries", "pdp_facts",
           "pdp_lines_in_flight", "pdp_max_out_width", "sdp_facts", "violations",
           "winograd_extended"]
