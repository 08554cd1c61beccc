"""Every invalid programming stops with an error naming the register, the field and the rule.

The precision and alignment cases are NVIDIA's tables written out here as literals
(nvdla/doc ``doc/hw/format.rst``: the precision conversion Tables 29-32 and the
alignment Table 35), not read from the simulator's own tables
(:data:`sim.dma.precision.PRECISION_TABLES`, :data:`sim.dma.align.ALIGNMENT_RULES`),
so a wrong entry there fails a case.  The configuration cases cover, for every
configuration of :data:`sim.configs.CONFIGS`, every feature it lacks.
``test_counts`` prints how many cases each table yields.
"""

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim.chains import CONV_UNITS
from sim.configs import CONFIGS, FP16, INT8, INT16
from sim.conv.modes import compute_conv_layer
from sim.dma.align import check_alignment
from sim.dma.pixel import pixel_format
from sim.dma.precision import IMAGE_FP16, IMAGE_INT, pipeline_precision
from sim.errors import ConfigurationError, SimError
from sim.machine import LayerContext, Machine
from sim.program.conv import program as program_conv
from sim.program.conv_modes import program_image
from sim.program.registers import write_fields
from sim.program.sdp import run_sdp

DTYPE = {INT8: np.int8, INT16: np.int16, FP16: np.float16}


def update_fields(m, name: str, **fields) -> None:
    """Change some fields of a register, keeping the others."""
    reg = m.regfile.register(name)
    word = m.regfile.peek(reg, 0)
    for key, value in fields.items():
        f = reg.field(key.upper())
        word = word & ~(((1 << f.width) - 1) << f.lsb) | (value << f.lsb)
    m.write_reg(name, word)


def run_and_expect(m, parts) -> str:
    """Run the machine (or call ``m``: a layer's decoder) and check the one-line error."""
    with pytest.raises(SimError) as info:
        m() if callable(m) else m.run()
    message = str(info.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, message
    return message


# -- Tables 29-32: precision conversions ------------------------------------------------
# (configured input, configured output, real precision in the pipeline or None for
# NVIDIA's "Invalid case"), row by row as format.rst prints them.
CONV_TABLE = [  # Table 29, convolution; image input (uint8/int16/uint16 or fp16 pixels)
    (IMAGE_INT, INT8, INT8), (IMAGE_INT, INT16, INT16), (IMAGE_INT, FP16, FP16),
    (IMAGE_FP16, INT8, None), (IMAGE_FP16, INT16, None), (IMAGE_FP16, FP16, FP16),
    (INT8, INT8, INT8), (INT8, INT16, None), (INT8, FP16, None),
    (INT16, INT8, None), (INT16, INT16, INT16), (INT16, FP16, None),
    (FP16, INT8, None), (FP16, INT16, None), (FP16, FP16, FP16),
]
SDP_TABLE = [  # Table 30, SDP (offline mode)
    (INT8, INT8, "int32"), (INT8, INT16, "int32"), (INT8, FP16, None),
    (INT16, INT8, "int32"), (INT16, INT16, "int32"), (INT16, FP16, "int32"),
    (FP16, INT8, None), (FP16, INT16, "fp32"), (FP16, FP16, "fp32"),
]
CDP_TABLE = [  # Table 31, LRN
    (INT8, INT8, INT8), (INT8, INT16, None), (INT8, FP16, None),
    (INT16, INT8, None), (INT16, INT16, INT16), (INT16, FP16, None),
    (FP16, INT8, None), (FP16, INT16, None), (FP16, FP16, FP16),
]
PDP_TABLE = [  # Table 32, pooling (its second int8 row reads "int16" again: the text
    # above the tables says pooling converts nothing, so it is int8 -> fp16)
    (INT8, INT8, INT8), (INT8, INT16, None), (INT8, FP16, None),
    (INT16, INT8, None), (INT16, INT16, INT16), (INT16, FP16, None),
    (FP16, INT8, None), (FP16, INT16, None), (FP16, FP16, FP16),
]
PRECISION_ROWS = [(unit, *row) for unit, table in
                  (("conv", CONV_TABLE), ("sdp", SDP_TABLE), ("cdp", CDP_TABLE),
                   ("pdp", PDP_TABLE)) for row in table]
# the table each unit's refusal names
TABLE_CITED = {"conv": "format.rst Table 29, convolution", "sdp": "format.rst Table 30",
               "cdp": "format.rst Table 31, LRN", "pdp": "format.rst Table 32, pooling"}


def sdp_case(in_prec, out_prec):
    proc = FP16 if in_prec == FP16 else in_prec
    _, m = run_sdp("nv_full", np.zeros((2, 2, 2), DTYPE[in_prec]), in_prec=in_prec,
                   out_prec=out_prec, proc_prec=proc, go=False)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    return m, [f"NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0.IN_PRECISION={in_prec} with "
               f"NVDLA_SDP.D_DATA_FORMAT_0.OUT_PRECISION={out_prec} is an invalid SDP "
               "combination"]


def cdp_case(in_prec, out_prec):
    m = Machine("nv_full")
    write_fields(m, "NVDLA_CDP_RDMA.D_DATA_FORMAT_0", input_data=Precision(in_prec).code)
    write_fields(m, "NVDLA_CDP.D_DATA_FORMAT_0", input_data_type=Precision(out_prec).code)
    m.write_reg("NVDLA_CDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_CDP_RDMA.D_OP_ENABLE_0", 1)
    return m, ["NVDLA_CDP_RDMA.D_DATA_FORMAT_0.INPUT_DATA (input)",
               "NVDLA_CDP.D_DATA_FORMAT_0.INPUT_DATA_TYPE (output)"]


def pdp_case(in_prec, out_prec):
    m = Machine("nv_full")
    for unit in ("NVDLA_PDP_RDMA", "NVDLA_PDP"):
        write_fields(m, f"{unit}.D_DATA_CUBE_IN_WIDTH_0", cube_in_width=1)
        write_fields(m, f"{unit}.D_DATA_CUBE_IN_HEIGHT_0", cube_in_height=1)
        write_fields(m, f"{unit}.D_DATA_CUBE_IN_CHANNEL_0", cube_in_channel=1)
    write_fields(m, "NVDLA_PDP.D_DATA_CUBE_OUT_WIDTH_0", cube_out_width=1)
    write_fields(m, "NVDLA_PDP.D_DATA_CUBE_OUT_HEIGHT_0", cube_out_height=1)
    write_fields(m, "NVDLA_PDP.D_DATA_CUBE_OUT_CHANNEL_0", cube_out_channel=1)
    write_fields(m, "NVDLA_PDP.D_POOLING_KERNEL_CFG_0", kernel_stride_width=0,
                 kernel_stride_height=0)
    write_fields(m, "NVDLA_PDP.D_OPERATION_MODE_CFG_0", flying_mode=1, pooling_method=1)
    for unit, ram in (("NVDLA_PDP_RDMA", "D_SRC_RAM_CFG_0"), ("NVDLA_PDP", "D_DST_RAM_CFG_0")):
        m.write_reg(f"{unit}.{ram}", 1)
    m.write_reg("NVDLA_PDP_RDMA.D_SRC_BASE_ADDR_LOW_0", 0x80000000)
    m.write_reg("NVDLA_PDP.D_DST_BASE_ADDR_LOW_0", 0x80100000)
    for unit, stride in (("NVDLA_PDP_RDMA", "D_SRC"), ("NVDLA_PDP", "D_DST")):
        m.write_reg(f"{unit}.{stride}_LINE_STRIDE_0", 0x100)
        m.write_reg(f"{unit}.{stride}_SURFACE_STRIDE_0", 0x1000)
    write_fields(m, "NVDLA_PDP_RDMA.D_DATA_FORMAT_0", input_data=Precision(in_prec).code)
    write_fields(m, "NVDLA_PDP.D_DATA_FORMAT_0", input_data=Precision(out_prec).code)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    return m, ["NVDLA_PDP_RDMA.D_DATA_FORMAT_0.INPUT_DATA (input)",
               "NVDLA_PDP.D_DATA_FORMAT_0.INPUT_DATA (output)"]


def conv_case(in_prec, out_prec):
    m = Machine("nv_full")
    ctx = LayerContext(m, {u: 0 for u in CONV_UNITS})
    if in_prec in (IMAGE_INT, IMAGE_FP16):
        fmt = "T_A16B16G16R16_F" if in_prec == IMAGE_FP16 else "T_A8B8G8R8"
        comp = pixel_format(fmt)
        image = np.zeros((4, 2, 2), np.float16 if in_prec == IMAGE_FP16 else comp.dtype)
        program_image(m, image, np.zeros((1, 4, 1, 1), DTYPE[out_prec]), fmt=fmt,
                      precision=out_prec)
    else:
        program_conv(m, np.zeros((2, 2, 2), DTYPE[in_prec]),
                     np.zeros((1, 2, 1, 1), DTYPE[in_prec]), precision=in_prec)
        update_fields(m, "NVDLA_CDMA.D_MISC_CFG_0", proc_precision=Precision(out_prec).code)
    parts = ["NVDLA_CDMA.D_MISC_CFG_0 IN_PRECISION/PROC_PRECISION"]
    return (lambda: compute_conv_layer(ctx)), parts


CASE_BUILDERS = {"sdp": sdp_case, "cdp": cdp_case, "pdp": pdp_case, "conv": conv_case}
PRECISION_CASES = [(unit, i, o) for unit, i, o, pipe in PRECISION_ROWS if pipe is None]
VALID_PRECISIONS = [(unit, i, o, pipe) for unit, i, o, pipe in PRECISION_ROWS if pipe]


@pytest.mark.parametrize("unit, in_prec, out_prec", PRECISION_CASES,
                         ids=[f"{u}-{i}-{o}" for u, i, o in PRECISION_CASES])
def test_invalid_precision_pair(unit, in_prec, out_prec):
    m, parts = CASE_BUILDERS[unit](in_prec, out_prec)
    message = run_and_expect(m, parts + [TABLE_CITED[unit]])
    if unit != "sdp":
        assert f"{unit} cannot convert {in_prec} input to {out_prec} output" in message, message


@pytest.mark.parametrize("unit, in_prec, out_prec, pipe", VALID_PRECISIONS,
                         ids=[f"{u}-{i}-{o}" for u, i, o, _ in VALID_PRECISIONS])
def test_valid_precision_pair(unit, in_prec, out_prec, pipe):
    """A pair the table allows computes in the table's precision and is not refused by
    the table (some of these layers stop on another rule, e.g. a convertor left off)."""
    assert pipeline_precision(unit, in_prec, out_prec) == pipe
    m, _ = CASE_BUILDERS[unit](in_prec, out_prec)
    try:
        m() if callable(m) else m.run()
    except SimError as exc:
        assert TABLE_CITED[unit] not in str(exc), str(exc)


# -- Table 35: alignment --------------------------------------------------------------
# (data format, the phrase naming it, alignment in bytes of the start address, line
# stride, surface stride, planar/cube stride and data size; None where the table says
# NA or leaves the cell empty).  The table was written for nv_full: its 32 bytes are the
# memory atom, which is 16 or 8 bytes on smaller configurations.
ATOM = "atom"
ALIGNMENT_TABLE = [
    ("feature", "feature data cube", ATOM, ATOM, ATOM, ATOM, None),
    ("weight", "weight", 256, None, None, None, 128),
    ("wmb", "WMB", 256, None, None, None, 128),
    ("wgs", "WGS", 256, None, None, None, 128),
    ("pixel", "pitch linear pixel", ATOM, ATOM, None, None, None),
    ("bias", "bias", ATOM, ATOM, ATOM, None, None),
    ("prelu", "PReLU", ATOM, None, None, None, None),
    ("bn", "batch normalization", ATOM, None, None, None, None),
    ("ew", "element-wise", ATOM, ATOM, None, None, ATOM),
]
QUANTITIES = {"start": "start address", "line_stride": "line stride",
              "surface_stride": "surface stride", "planar_stride": "planar/cube stride",
              "size": "data size"}
ATOMS = (32, 16, 8)
ALIGNMENT_CASES = [(kind, title, quantity, need, atom)
                   for kind, title, *needs in ALIGNMENT_TABLE
                   for quantity, need in zip(QUANTITIES, needs, strict=True)
                   for atom in ATOMS]


def test_the_atom_sizes_are_the_configurations():
    assert {c.atom_bytes for c in CONFIGS.values()} == set(ATOMS)


@pytest.mark.parametrize("kind, title, quantity, need, atom", ALIGNMENT_CASES)
def test_alignment_rule(kind, title, quantity, need, atom):
    if need is None:  # no requirement: any value is accepted
        check_alignment(kind, atom, "NVDLA_X.D_REG", **{quantity: 0x61})
        return
    align = atom if need == ATOM else need
    check_alignment(kind, atom, "NVDLA_X.D_REG", **{quantity: 3 * align})  # aligned: accepted
    value = 3 * align + align // 2  # aligned to half the requirement only: refused
    with pytest.raises(SimError) as info:
        check_alignment(kind, atom, "NVDLA_X.D_REG", **{quantity: value})
    assert str(info.value) == (f"NVDLA_X.D_REG: {title}: {QUANTITIES[quantity]} {value:#x} is "
                               f"not {align}-byte aligned (format.rst Table 35)")


# -- configurations: every feature one lacks -------------------------------------------

def sdp_with(config, *, prec=INT8, **fields):
    """An offline SDP layer on ``config``, then ``fields`` ({register: {field: value}})."""
    _, m = run_sdp(config, np.zeros((2, 2, 2), DTYPE[prec]), in_prec=prec, out_prec=prec,
                   go=False)
    for reg, values in fields.items():
        update_fields(m, reg, **values)
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    return m


def feature_bdma(config):
    m = Machine(config)
    with pytest.raises(ConfigurationError) as info:
        m.write_reg("NVDLA_BDMA.CFG_OP_0", 1)
    return str(info.value), ["NVDLA_BDMA.CFG_OP_0", "has no bdma"]


def feature_rubik(config):
    m = Machine(config)
    with pytest.raises(ConfigurationError) as info:
        m.write_reg("NVDLA_RBK.D_OP_ENABLE_0", 1)
    return str(info.value), ["NVDLA_RBK.D_OP_ENABLE_0", "has no rubik"]


def _sdp_feature(fields, parts):
    def case(config):
        return run_and_expect(sdp_with(config, **fields), parts), parts
    return case


def feature_weight_compression(config):
    m = Machine(config)
    program_conv(m, np.zeros((2, 2, 2), np.int8), np.zeros((1, 2, 1, 1), np.int8),
                 precision=INT8, compressed=True)
    parts = ["NVDLA_CDMA.D_WEIGHT_FORMAT_0", "has no weight compression"]
    ctx = LayerContext(m, {u: 0 for u in CONV_UNITS})
    return run_and_expect(lambda: compute_conv_layer(ctx), parts), parts


def precision_feature(prec):
    def case(config):
        parts = ["NVDLA_SDP", "PRECISION", f"does not support {prec}"]
        return run_and_expect(sdp_with(config, prec=prec), parts), parts
    return case


FEATURES = {
    "bdma": feature_bdma,
    "rubik": feature_rubik,
    "winograd": _sdp_feature({"NVDLA_SDP.D_FEATURE_MODE_CFG_0": {"winograd": 1}},
                             ["NVDLA_SDP.D_FEATURE_MODE_CFG_0.WINOGRAD", "has no winograd"]),
    "batch": _sdp_feature({"NVDLA_SDP.D_FEATURE_MODE_CFG_0": {"batch_number": 1}},
                          ["NVDLA_SDP.D_FEATURE_MODE_CFG_0.BATCH_NUMBER", "has no batch"]),
    "sdp_ew": _sdp_feature({"NVDLA_SDP.D_DP_EW_CFG_0": {"ew_bypass": 0}},
                           ["NVDLA_SDP.D_DP_EW_CFG_0.EW_BYPASS", "has no sdp ew"]),
    "sdp_lut": _sdp_feature({"NVDLA_SDP.D_DP_EW_CFG_0": {"ew_bypass": 0, "ew_lut_bypass": 0}},
                            ["NVDLA_SDP.D_DP_EW_CFG_0", "has no sdp"]),
    "secondary_memory": _sdp_feature(
        {"NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0": {"src_ram_type": 0}},
        ["NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0.SRC_RAM_TYPE", "has no secondary memory"]),
    "weight_compression": feature_weight_compression,
    INT16: precision_feature(INT16),
    FP16: precision_feature(FP16),
}
# features every configuration has, or that no register can ask beyond (BATCH_NUMBER
# holds at most 32 batches, nv_full's maximum)
ALWAYS_PRESENT = {"pdp", "cdp", "sdp_bs", "sdp_bn", "max_batch"}
# flags of how a unit behaves, not features a register asks for: nothing to reject
BEHAVIOURS = {"cdp_saturation_counter", "sdp_rtl_saturation_flag"}


def lacking(config) -> list[str]:
    cfg = CONFIGS[config]
    flags = [f for f in FEATURES if f not in (INT16, FP16) and not getattr(cfg, f)]
    return flags + [p for p in (INT16, FP16) if p not in cfg.precisions]


FEATURE_CASES = [(c, f) for c in CONFIGS for f in lacking(c)]


def test_every_configuration_feature_has_a_case():
    from dataclasses import fields

    cfg_fields = {f.name for f in fields(CONFIGS["nv_full"]) if f.type in ("bool", bool)}
    missing = cfg_fields - set(FEATURES) - ALWAYS_PRESENT - BEHAVIOURS
    assert not missing, f"configuration features without a rejection case: {missing}"
    for feature in ALWAYS_PRESENT - {"max_batch"}:
        assert all(getattr(c, feature) for c in CONFIGS.values()), feature


@pytest.mark.parametrize("config, feature", FEATURE_CASES,
                         ids=[f"{c}-{f}" for c, f in FEATURE_CASES])
def test_feature_the_configuration_lacks(config, feature):
    message, parts = FEATURES[feature](config)
    for part in parts:
        assert part in message, message
    assert config in message


def test_counts(capsys):
    with capsys.disabled():
        print(f"\ninvalid programming cases: {len(PRECISION_CASES)} precision pairs "
              f"(Tables 29-32), {len(ALIGNMENT_CASES)} alignment rules x atom sizes "
              f"(Table 35), {len(FEATURE_CASES)} missing features over {len(CONFIGS)} "
              "configurations")
    assert PRECISION_CASES and ALIGNMENT_CASES and FEATURE_CASES
