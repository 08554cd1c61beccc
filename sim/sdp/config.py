"""SDP and SDP_RDMA registers decoded into typed, validated configuration.

The SDP datapath is a chain of stages, each with its own bypass bit::

    input -> X1 (BS) -> X2 (BN) -> Y (EW: convertors, MUL/ALU core, LUT) -> C (output convertor)

``decode(ctx_or_blocks)`` turns the executing register groups into a
:class:`SdpLayer`: plain Python values with every "+1" encoding applied and
every signed field sign-extended, so the stages never look at registers.
Invalid combinations raise ``ConfigurationError`` naming the register.
"""

from __future__ import annotations

from .. import rules
from ..configs import FP16, INT8, Precision
from ..dma.precision import pipeline_precision
from ..errors import ConfigurationError
from ..records import record
from ..regs.enums import AluAlgo

USE_MUL, USE_ALU, USE_BOTH = 0, 1, 2

SDP, RDMA = "NVDLA_SDP", "NVDLA_SDP_RDMA"


def _valid_in_out(in_prec: str, out_prec: str) -> bool:
    """format.rst Table 30 (sim.dma.precision): may SDP convert ``in_prec`` to ``out_prec``?"""
    return pipeline_precision("sdp", in_prec, out_prec) is not None


class _AluMulStage:
    """Which of a stage's units run, and which read their operand from memory."""

    @property
    def alu_used(self) -> bool:
        return not self.bypass and not self.alu_bypass

    @property
    def mul_used(self) -> bool:
        return not self.bypass and not self.mul_bypass

    @property
    def needs_alu_mem(self) -> bool:
        return self.alu_used and self.alu_src_mem

    @property
    def needs_mul_mem(self) -> bool:
        return self.mul_used and self.mul_src_mem


@record
class XStage(_AluMulStage):
    """X1 (BS) or X2 (BN): ALU -> MUL -> truncate -> ReLU."""

    bypass: bool
    alu_bypass: bool
    alu_algo: int
    alu_src_mem: bool
    alu_operand: int  # signed 16-bit register operand
    alu_shift: int  # left shift of the ALU operand (6 bits)
    mul_bypass: bool
    mul_src_mem: bool
    mul_operand: int  # signed 16-bit register operand
    mul_prelu: bool
    mul_shift: int  # truncation after the multiplier (6 bits)
    relu_bypass: bool



@record
class YStage(_AluMulStage):
    """Y (EW): operand convertors, MUL -> truncate -> ALU core, LUT."""

    bypass: bool
    alu_bypass: bool
    alu_algo: int
    alu_src_mem: bool
    alu_operand: int  # 32-bit register operand (int32 or fp32 bits)
    alu_cvt_bypass: bool
    alu_cvt_offset: int  # signed 32
    alu_cvt_scale: int  # signed 16
    alu_cvt_truncate: int  # 6 bits
    mul_bypass: bool
    mul_src_mem: bool
    mul_operand: int
    mul_prelu: bool
    mul_cvt_bypass: bool
    mul_cvt_offset: int
    mul_cvt_scale: int
    mul_cvt_truncate: int
    truncate: int  # 10-bit EW_TRUNCATE
    lut_bypass: bool

    @property
    def lut_used(self) -> bool:
        return not self.bypass and not self.lut_bypass

    @property
    def eql(self) -> bool:
        return self.alu_used and self.alu_algo == AluAlgo.EQL


@record
class LutConfig:
    """S_LUT_* registers (single-buffered)."""

    le_function_linear: bool
    uflow_priority_lo: bool
    oflow_priority_lo: bool
    hybrid_priority_lo: bool
    le_index_offset: int  # signed 8
    le_index_select: int  # signed 8
    lo_index_select: int  # signed 8
    le_start: int  # 32-bit pattern
    le_end: int
    lo_start: int
    lo_end: int
    le_uflow_scale: int  # 16-bit pattern
    le_oflow_scale: int
    le_uflow_shift: int  # 5-bit pattern
    le_oflow_shift: int
    lo_uflow_scale: int
    lo_oflow_scale: int
    lo_uflow_shift: int
    lo_oflow_shift: int


@record
class OperandDma:
    """One of BRDMA (X1), NRDMA (X2), ERDMA (Y)."""

    name: str  # "BRDMA", ...
    prefix: str  # "BS", "BN", "EW"
    enabled: bool
    use: int  # USE_MUL, USE_ALU, USE_BOTH
    data_size: int  # bytes per component
    per_element: bool
    ram_type: int
    address: int
    line_stride: int
    surface_stride: int
    batch_stride: int


@record
class SdpLayer:
    width: int
    height: int
    channels: int
    batch: int
    flying: bool  # input from CACC
    output_to_pdp: bool
    winograd: bool
    nan_to_zero: bool
    in_precision: Precision
    proc_precision: Precision
    out_precision: Precision
    # memory input (SDP_RDMA)
    src_address: int
    src_ram_type: int
    src_line_stride: int
    src_surface_stride: int
    # memory output
    dst_address: int
    dst_ram_type: int
    dst_line_stride: int
    dst_surface_stride: int
    dst_batch_stride: int
    # stages
    x1: XStage
    x2: XStage
    y: YStage
    lut: LutConfig
    cvt_offset: int  # signed 32
    cvt_scale: int  # signed 16
    cvt_shift: int  # 6 bits
    dmas: tuple  # OperandDma for X1, X2, Y (those of SDP_RDMA, or disabled)
    # perf / status enables
    perf_lut: bool
    perf_sat: bool
    perf_nan_out: bool  # SDP D_PERF_ENABLE.PERF_NAN_INF_COUNT_EN
    perf_nan_in: bool  # SDP_RDMA D_PERF_ENABLE.PERF_NAN_INF_COUNT_EN
    rtl_saturation_flag: bool = False  # which convertor flags count (hw.sdp_rtl_saturation_flag)

    @property
    def eql(self) -> bool:
        return self.y.eql

    @property
    def writes_memory(self) -> bool:
        return not self.eql and not self.output_to_pdp


def _sx(value: int, bits: int) -> int:
    """The low ``bits`` bits of ``value`` as two's complement (a register operand)."""
    value &= (1 << bits) - 1
    return value - ((value >> (bits - 1)) << bits)


_X_FIELDS = ("bypass", "alu_bypass", "alu_algo", "alu_src", "alu_operand", "alu_shift_value",
             "mul_bypass", "mul_src", "mul_operand", "mul_prelu", "mul_shift_value",
             "relu_bypass")
_X_KEYS = {p: tuple(f"{p}_{name}" for name in _X_FIELDS) for p in ("bs", "bn")}


# A stage's record is a function of its fields alone, and most of them stay as they were from
# one layer to the next (a bypassed stage, the LUT's settings): its fields' values -> record
_STAGES: dict = {}


def _remembered(kind, values: tuple, make):
    """The record ``make(*values)`` of the stage ``kind`` (made once for the same values)."""
    key = (kind, values)
    stage = _STAGES.get(key)
    if stage is None:
        if len(_STAGES) >= MEMO_SIZE:
            _STAGES.clear()
        stage = _STAGES[key] = make(*values)
    return stage


def _x_stage(f: dict, p: str) -> XStage:
    """X1 (``p="bs"``) or X2 (``"bn"``) from the SDP block's fields ``f``."""
    return _remembered(XStage, tuple([f[key] for key in _X_KEYS[p]]), _make_x_stage)


def _make_x_stage(bypass, alu_bypass, alu_algo, alu_src, alu_operand, alu_shift, mul_bypass,
                  mul_src, mul_operand, mul_prelu, mul_shift, relu_bypass) -> XStage:
    return XStage(
        bypass=bool(bypass), alu_bypass=bool(alu_bypass), alu_algo=alu_algo,
        alu_src_mem=bool(alu_src), alu_operand=_sx(alu_operand, 16), alu_shift=alu_shift & 63,
        mul_bypass=bool(mul_bypass), mul_src_mem=bool(mul_src),
        mul_operand=_sx(mul_operand, 16), mul_prelu=bool(mul_prelu), mul_shift=mul_shift & 63,
        relu_bypass=bool(relu_bypass),
    )


_Y_KEYS = ("ew_bypass", "ew_alu_bypass", "ew_alu_algo", "ew_alu_src", "ew_alu_operand",
           "ew_alu_cvt_bypass", "ew_alu_cvt_offset", "ew_alu_cvt_scale", "ew_alu_cvt_truncate",
           "ew_mul_bypass", "ew_mul_src", "ew_mul_operand", "ew_mul_prelu", "ew_mul_cvt_bypass",
           "ew_mul_cvt_offset", "ew_mul_cvt_scale", "ew_mul_cvt_truncate", "ew_truncate",
           "ew_lut_bypass")


def _y_stage(f: dict) -> YStage:
    return _remembered(YStage, tuple([f[key] for key in _Y_KEYS]), _make_y_stage)


def _make_y_stage(*values) -> YStage:
    f = dict(zip(_Y_KEYS, values, strict=True))
    return YStage(
        bypass=bool(f["ew_bypass"]),
        alu_bypass=bool(f["ew_alu_bypass"]),
        alu_algo=f["ew_alu_algo"],
        alu_src_mem=bool(f["ew_alu_src"]),
        alu_operand=f["ew_alu_operand"],
        alu_cvt_bypass=bool(f["ew_alu_cvt_bypass"]),
        alu_cvt_offset=_sx(f["ew_alu_cvt_offset"], 32),
        alu_cvt_scale=_sx(f["ew_alu_cvt_scale"], 16),
        alu_cvt_truncate=f["ew_alu_cvt_truncate"] & 63,
        mul_bypass=bool(f["ew_mul_bypass"]),
        mul_src_mem=bool(f["ew_mul_src"]),
        mul_operand=f["ew_mul_operand"],
        mul_prelu=bool(f["ew_mul_prelu"]),
        mul_cvt_bypass=bool(f["ew_mul_cvt_bypass"]),
        mul_cvt_offset=_sx(f["ew_mul_cvt_offset"], 32),
        mul_cvt_scale=_sx(f["ew_mul_cvt_scale"], 16),
        mul_cvt_truncate=f["ew_mul_cvt_truncate"] & 63,
        truncate=f["ew_truncate"] & 0x3FF,
        lut_bypass=bool(f["ew_lut_bypass"]),
    )


# LutConfig's slope settings and their fields: le_uflow_scale <- lut_le_slope_uflow_scale, ...
_LUT_SLOPES = tuple((f"{table}_{side}_{what}", f"lut_{table}_slope_{side}_{what}")
                    for table in ("le", "lo") for side in ("uflow", "oflow")
                    for what in ("scale", "shift"))


_LUT_KEYS = ("lut_le_function", "lut_uflow_priority", "lut_oflow_priority",
             "lut_hybrid_priority", "lut_le_index_offset", "lut_le_index_select",
             "lut_lo_index_select", "lut_le_start", "lut_le_end", "lut_lo_start", "lut_lo_end",
             *(key for _, key in _LUT_SLOPES))


def _lut(f: dict) -> LutConfig:
    return _remembered(LutConfig, tuple([f[key] for key in _LUT_KEYS]), _make_lut)


def _make_lut(*values) -> LutConfig:
    f = dict(zip(_LUT_KEYS, values, strict=True))
    return LutConfig(
        le_function_linear=bool(f["lut_le_function"]),
        uflow_priority_lo=bool(f["lut_uflow_priority"]),
        oflow_priority_lo=bool(f["lut_oflow_priority"]),
        hybrid_priority_lo=bool(f["lut_hybrid_priority"]),
        le_index_offset=_sx(f["lut_le_index_offset"], 8),
        le_index_select=_sx(f["lut_le_index_select"], 8),
        lo_index_select=_sx(f["lut_lo_index_select"], 8),
        le_start=f["lut_le_start"],
        le_end=f["lut_le_end"],
        lo_start=f["lut_lo_start"],
        lo_end=f["lut_lo_end"],
        **{name: f[key] for name, key in _LUT_SLOPES},
    )


_DMA_KEYS = {(name, prefix): tuple(f"{name.lower()}_{field}" for field in (
    "disable", "data_use", "data_size", "data_mode", "ram_type")) + tuple(
    f"{prefix.lower()}_{field}" for field in ("line_stride", "surface_stride", "batch_stride"))
    for name, prefix in (("BRDMA", "BS"), ("NRDMA", "BN"), ("ERDMA", "EW"))}
# with the base address's two halves, read in the same pass
_DMA_PLAN_KEYS = {key: fields + tuple(f"{key[1].lower()}_base_addr_{half}"
                                      for half in ("low", "high"))
                  for key, fields in _DMA_KEYS.items()}


def operand_dma(r, name: str, prefix: str) -> OperandDma:
    """One operand DMA of SDP_RDMA block ``r`` (None: no RDMA, the DMA disabled).

    Asked at each SDP_RDMA OP_EN (its prefetch) of a fresh snapshot, then again by the
    layer's decode: its fields are read by a plan (:meth:`Block.values`), not by
    decoding the whole block."""
    if r is None:
        return OperandDma(name, prefix, False, 0, 1, False, 1, 0, 0, 0, 0)
    values = r.values(_DMA_PLAN_KEYS[name, prefix])
    if values is None:  # a field the plan cannot read: the general path
        f = r.fields()
        values = (*[f[k] for k in _DMA_KEYS[name, prefix]],
                  r.address(f"{prefix.lower()}_base_addr"), 0)
    disable, use, size, mode, ram, line, surface, batch, low, high = values
    return OperandDma(
        name=name, prefix=prefix, enabled=not disable, use=use, data_size=2 if size else 1,
        per_element=bool(mode), ram_type=ram, address=(high << 32) | low,
        line_stride=line, surface_stride=surface, batch_stride=batch,
    )


MEMO_SIZE = 256  # decoded layers remembered per register map (then forgotten at once)


def decode(sdp, rdma, hw) -> SdpLayer:
    """An :class:`SdpLayer` from the SDP block and the SDP_RDMA block (or None).

    ``hw`` is the HardwareConfig.  The SDP_RDMA block is None when the layer
    runs on the fly with every operand from registers.

    A layer is a function of the two blocks' register words and ``hw``: a layer
    programmed as one decoded before (a network run again, a repeated
    trace) is that layer again, not decoded twice.  Errors are not remembered.
    """
    memo = sdp.memo("sdp layers")
    key = (sdp.words_key(), None if rdma is None else rdma.words_key(), id(hw))
    hit = memo.get(key)
    if hit is not None and hit[0] is hw:
        return hit[1]
    layer = _decode(sdp, rdma, hw)
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = (hw, layer)
    return layer


def _decode(sdp, rdma, hw) -> SdpLayer:
    s = sdp
    f = s.fields()  # every field at once (they become attributes too): most are read
    if rdma is not None:
        rdma.fields()
    flying = bool(s.flying_mode)
    proc = s.precision("proc_precision")
    out = s.precision("out_precision")
    hw.require_precision(proc, f"{SDP}.D_DATA_FORMAT_0.PROC_PRECISION")
    hw.require_precision(out, f"{SDP}.D_DATA_FORMAT_0.OUT_PRECISION")
    batch = s.batch_number + 1
    hw.require_batches(batch, f"{SDP}.D_FEATURE_MODE_CFG_0.BATCH_NUMBER")
    winograd = bool(s.winograd)
    if winograd:
        hw.require("winograd", f"{SDP}.D_FEATURE_MODE_CFG_0.WINOGRAD")

    in_precision = proc
    if rdma is not None:
        rproc = rdma.precision("proc_precision")
        if rproc != proc:
            raise ConfigurationError(
                f"{RDMA}.D_FEATURE_MODE_CFG_0.PROC_PRECISION ({rproc}) differs from "
                f"{SDP}.D_DATA_FORMAT_0.PROC_PRECISION ({proc})")
        if bool(rdma.flying_mode) != flying:
            raise ConfigurationError(
                f"{RDMA}.D_FEATURE_MODE_CFG_0.FLYING_MODE differs from "
                f"{SDP}.D_FEATURE_MODE_CFG_0.FLYING_MODE")
        if not flying:
            what = f"{RDMA}.D_FEATURE_MODE_CFG_0.IN_PRECISION"
            in_precision = rdma.precision("in_precision")
            hw.require_precision(in_precision, what)
            for what in ("width", "height", "channel"):
                if getattr(rdma, what) != getattr(s, what):
                    raise ConfigurationError(
                        f"{RDMA}.D_DATA_CUBE_{what.upper()}_0 ({getattr(rdma, what)}) differs "
                        f"from {SDP}.D_DATA_CUBE_{what.upper()}_0 ({getattr(s, what)})")
    if not flying:
        if not _valid_in_out(in_precision, out):
            raise ConfigurationError(
                f"{RDMA}.D_FEATURE_MODE_CFG_0.IN_PRECISION={in_precision} with "
                f"{SDP}.D_DATA_FORMAT_0.OUT_PRECISION={out} is an invalid SDP combination "
                "(format.rst Table 30)")
        if (in_precision == FP16) != (proc == FP16):
            raise ConfigurationError(
                f"{RDMA}.D_FEATURE_MODE_CFG_0.IN_PRECISION={in_precision} with "
                f"PROC_PRECISION={proc}: fp16 data needs fp16 processing (format.rst Table 30)")
        if batch > 1:
            raise ConfigurationError(
                f"{SDP}.D_FEATURE_MODE_CFG_0.BATCH_NUMBER: several batches need on-the-fly "
                "input (SDP_RDMA has no source batch stride)")
        if winograd:
            raise ConfigurationError(
                f"{SDP}.D_FEATURE_MODE_CFG_0.WINOGRAD: Winograd output needs on-the-fly input")
    else:
        if not _valid_in_out(proc, out):
            raise ConfigurationError(
                f"{SDP}.D_DATA_FORMAT_0: PROC_PRECISION={proc} with OUT_PRECISION={out} is an "
                "invalid SDP combination (format.rst Table 30)")

    y = _y_stage(f)
    layer_lut = _lut(f)
    dmas = (operand_dma(rdma, "BRDMA", "BS"), operand_dma(rdma, "NRDMA", "BN"),
            operand_dma(rdma, "ERDMA", "EW"))
    # Configurations without the Y stage (nv_small) keep its registers but not
    # its datapath: programming it is an error, not a silent bypass.
    if not y.bypass:
        hw.require("sdp_ew", f"{SDP}.D_DP_EW_CFG_0.EW_BYPASS=0 (Y stage)")
    if dmas[2].enabled:
        hw.require("sdp_ew", f"{RDMA}.D_ERDMA_CFG_0.ERDMA_DISABLE=0 (ERDMA)")
    if y.lut_used:
        hw.require("sdp_lut", f"{SDP}.D_DP_EW_CFG_0.EW_LUT_BYPASS=0 (LUT)")
    for stage, name in ((s.bs_bypass, "sdp_bs"), (s.bn_bypass, "sdp_bn")):
        if not stage:
            hw.require(name, f"{SDP}.D_DP_{name[-2:].upper()}_CFG_0")

    output_to_pdp = bool(s.output_dst)
    if output_to_pdp:
        hw.require("pdp", f"{SDP}.D_FEATURE_MODE_CFG_0.OUTPUT_DST")
        if batch > 1:
            raise ConfigurationError(f"{SDP}.D_FEATURE_MODE_CFG_0: OUTPUT_DST=PDP with several "
                                     "batches is not supported by the hardware")
    if y.eql:
        if (s.cvt_offset, s.cvt_scale, s.cvt_shift) != (0, 1, 0):
            raise ConfigurationError(f"{SDP}.D_DP_EW_CFG_0.EW_ALU_ALGO=EQL needs D_CVT_OFFSET=0, "
                                     "D_CVT_SCALE=1 and D_CVT_SHIFT=0")
        if winograd or batch > 1:
            raise ConfigurationError(f"{SDP}.D_DP_EW_CFG_0.EW_ALU_ALGO=EQL is not supported with "
                                     "Winograd or batch mode")
    if proc == INT8 and out != INT8 and (batch > 1 or winograd):
        raise ConfigurationError(f"{SDP}.D_DATA_FORMAT_0: int8 processing with {out} output "
                                 "does not support batch or Winograd mode")
    rules.check(rules.sdp_facts(sdp, rdma, hw))  # what the hardware cannot be programmed to do

    return SdpLayer(
        width=s.width + 1, height=s.height + 1, channels=s.channel + 1, batch=batch,
        flying=flying, output_to_pdp=output_to_pdp, winograd=winograd,
        nan_to_zero=bool(s.nan_to_zero),
        in_precision=in_precision, proc_precision=proc, out_precision=out,
        src_address=rdma.address("src_base_addr") if rdma is not None else 0,
        src_ram_type=rdma.src_ram_type if rdma is not None else 1,
        src_line_stride=rdma.src_line_stride if rdma is not None else 0,
        src_surface_stride=rdma.src_surface_stride if rdma is not None else 0,
        dst_address=s.address("dst_base_addr"), dst_ram_type=s.dst_ram_type,
        dst_line_stride=s.dst_line_stride, dst_surface_stride=s.dst_surface_stride,
        dst_batch_stride=s.dst_batch_stride,
        x1=_x_stage(f, "bs"), x2=_x_stage(f, "bn"), y=y, lut=layer_lut,
        cvt_offset=_sx(s.cvt_offset, 32), cvt_scale=_sx(s.cvt_scale, 16),
        cvt_shift=s.cvt_shift & 63,
        dmas=dmas,
        perf_lut=bool(s.perf_lut_en), perf_sat=bool(s.perf_sat_en),
        rtl_saturation_flag=hw.sdp_rtl_saturation_flag,
        perf_nan_out=bool(s.reg("D_PERF_ENABLE_0").perf_nan_inf_count_en),
        perf_nan_in=bool(rdma.reg("D_PERF_ENABLE_0").perf_nan_inf_count_en)
        if rdma is not None else False,
    )

