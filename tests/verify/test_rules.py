"""Hardware legality rules (sim/rules.py): each rule on both sides of its boundary.

The literals are the documents' and the C-model's facts: nv_full's CBUF has 16
banks of 256 entries of 128 bytes (32 KiB), a kernel group is 32 int8 or 16
int16/fp16 kernels, Winograd outputs are multiples of 4 (at least 8) and
DATAIN_SIZE_EXT - 4, its padded input a multiple of 4*stride, and so on.
Each boundary was also run on NVIDIA's C-model (the HANGS/DIFFERS rules:
the illegal side never completes or writes other bytes).
"""

from dataclasses import replace

import numpy as np
import pytest

from sim.configs import get_config
from sim.conv.modes import compute_conv_layer
from sim.dma.weights import winograd_weights
from sim.errors import ConfigurationError
from sim.machine import LayerContext, Machine
from sim.program.conv import program
from sim.program.conv_modes import UNITS, program_image, program_winograd
from sim.program.registers import set_reg
from sim.rules import (
    BY_NAME,
    DOCUMENTED,
    ENFORCED,
    RULES,
    ConvFacts,
    PdpFacts,
    SdpFacts,
    check,
    direct_entries,
    line_entries,
    pdp_max_out_width,
    violations,
)

FULL = get_config("nv_full")


def conv(**kw) -> ConvFacts:
    """A legal nv_full direct convolution: 32x8x8 int8, 3x3 kernels, 8 banks each."""
    base = dict(cfg=FULL, mode="direct", precision="int8", width=8, height=8, channels=32,
                out_width=6, out_height=6, entries=2, data_banks=8, weight_banks=8,
                kernel_width=3, kernel_height=3, kernels=16, kernel_bytes=288)
    return ConvFacts(**{**base, **kw})


def wino(**kw) -> ConvFacts:
    """A legal nv_full Winograd layer: 16x10x10 int16, padding 1 -> 12x12, output 8x8."""
    base = dict(mode="winograd", precision="int16", width=10, height=10, channels=16,
                pad_left=1, pad_right=1, pad_top=1, pad_bottom=1, out_width=8, out_height=8,
                entries=3, kernel_bytes=16 * 16 * 2)
    return conv(**{**base, **kw})


def image(**kw) -> ConvFacts:
    """A legal image layer: 12 pixels of 4 int16 elements a line (96 bytes, one entry)."""
    base = dict(mode="image", precision="int16", width=12, height=9, channels=4,
                pixel_elements=4, entries=1, kernel_width=3, kernel_height=3,
                out_width=10, out_height=7, kernel_bytes=3 * 3 * 4 * 2)
    return conv(**{**base, **kw})


def sdp(**kw) -> SdpFacts:
    return SdpFacts(**{**dict(proc="int16", out="int16"), **kw})


def pdp(**kw) -> PdpFacts:
    return PdpFacts(**{**dict(kernel_width=3, kernel_height=3), **kw})


# rule, a legal layer, the same layer across the boundary, the message the breach gives
CASES = [
    # 64 lines of 32 int8 channels x 16 pixels: 4 entries a line (one atom: 4 pixels an
    # entry); 256 entries = one bank.  65 lines do not fit (the C-model hangs).
    ("conv.cbuf_full_input",
     conv(width=16, height=64, entries=4, data_banks=1, out_width=14, out_height=62),
     conv(width=16, height=65, entries=4, data_banks=1, out_width=14, out_height=63),
     r"needs 260 CBUF entries \(65 lines of 4\) but 1 data bank\(s\) hold 256"),
    # D_ENTRY_PER_SLICE above what a line takes: the CDMA reserves the register's count
    ("conv.cbuf_full_input",
     conv(width=16, height=64, entries=4, data_banks=1, out_width=14, out_height=62),
     conv(width=16, height=64, entries=8, data_banks=1, out_width=14, out_height=62),
     r"needs 512 CBUF entries \(64 lines of 8\)"),
    # Winograd: the 12 extended lines of 3 entries (12 x 16 int16 channels x 2 bytes / 128)
    ("conv.cbuf_full_input", wino(), wino(data_banks=1, entries=22),
     r"needs 264 CBUF entries \(12 lines of 22\)"),
    # batches count: 4 batches of 64 lines of 1 entry
    ("conv.cbuf_full_input",
     conv(width=4, height=64, entries=1, data_banks=1, batches=4, out_width=2, out_height=62),
     conv(width=4, height=65, entries=1, data_banks=1, batches=4, out_width=2, out_height=63),
     r"needs 260 CBUF entries \(260 lines of 1\)"),
    # a group of 32 int8 kernels of 1024 bytes is exactly one 32 KiB bank; 1028 is not
    ("conv.cbuf_weight_group", conv(kernels=64, kernel_bytes=1024, weight_banks=1),
     conv(kernels=64, kernel_bytes=1028, weight_banks=1),
     r"a group of 32 kernels of 1028 bytes \(32896 bytes\) does not fit 1 weight bank"),
    # int16: 16 kernels a group
    ("conv.cbuf_weight_group",
     conv(precision="int16", kernels=40, kernel_bytes=2048, weight_banks=1),
     conv(precision="int16", kernels=40, kernel_bytes=2056, weight_banks=1),
     r"a group of 16 kernels of 2056 bytes"),
    ("conv.weight_group_margin", conv(kernels=32, kernel_bytes=1020, weight_banks=1),
     conv(kernels=32, kernel_bytes=1024, weight_banks=1),
     r"a kernel group of 32768 bytes plus 128 does not fit 1 weight bank"),
    ("conv.compressed_banks", conv(compressed=True, data_banks=8, weight_banks=7),
     conv(compressed=True, data_banks=8, weight_banks=8),
     r"8 data \+ 8 weight banks leave no bank for the weight mask"),
    ("conv.pad_below_kernel", conv(pad_left=2, pad_right=2), conv(pad_left=3),
     r"padding 3/0/0/0 \(left/right/top/bottom\) is not below the 3x3 kernel"),
    ("conv.dilation_direct_only", image(), image(dilation_x=2),
     r"dilation 1x2 \(y x x\) in image mode"),
    # 12 pixels x 4 int16 = 96 bytes: one 128-byte entry; two is what 64-byte bank words
    # would give, and the C-model then reads every line after the first elsewhere
    ("image.entries_per_line", image(), image(entries=2),
     r"2 entries a line, but a padded line of 12 pixels x 4 int16 elements \(96 bytes\) takes "
     r"1 entries of 128 bytes"),
    ("image.entries_per_line", image(pad_left=2, pad_right=2, width=13, entries=2),
     image(pad_left=2, pad_right=2, width=13, entries=1), r"takes 2 entries"),
    ("winograd.padded_input", wino(), wino(pad_right=2, out_width=8),
     r"the padded input 13x12 is not a multiple of 4\*stride \(4x4\)"),
    ("winograd.output_multiple_of_4", wino(), wino(out_width=10, out_height=10),
     r"Winograd output 10x10 is not a multiple of 4"),
    ("winograd.output_size", wino(), wino(width=14, height=14, out_width=8, out_height=8),
     r"Winograd output 8x8 is not the extended input 16x16 less 4"),
    ("winograd.min_output", wino(), wino(width=6, height=6, out_width=4, out_height=4),
     r"Winograd output 4x4 is below 8x8"),
    ("winograd.no_batch", wino(), wino(batches=2), r"2 batches in Winograd mode"),
    ("sdp.int16_to_int8", sdp(out="fp16"), sdp(out="int8"), r"int16 processing with int8 output"),
    ("sdp.pdp_same_precision", sdp(to_pdp=True), sdp(to_pdp=True, out="fp16"),
     r"int16 processing with fp16 output to the PDP"),
    ("sdp.batch_dst_64", sdp(batches=2, dst=(0x80000000, 0x100, 0x400)),
     sdp(batches=2, dst=(0x80000000, 0xe0, 0x380)),
     r"2 batches need the output base, line and surface stride 64-byte aligned "
     r"\(0x80000000, 0xe0, 0x380\)"),
    ("sdp.int8_widen_single", sdp(proc="int8", out="int16", flying=True),
     sdp(proc="int8", out="int16", flying=True, batches=2),
     r"int8 processing with int16 output in 2-batch mode"),
    ("sdp.int8_widen_single", sdp(proc="int8", out="fp16", flying=True),
     sdp(proc="int8", out="fp16", flying=True, winograd=True),
     r"int8 processing with fp16 output in Winograd mode"),
    ("sdp.batch_to_memory", sdp(batches=2, flying=True, dst=(0x80000000, 0x40, 0x80)),
     sdp(batches=2, flying=True, to_pdp=True), r"2 batches sent to the PDP"),
    ("sdp.winograd_to_memory", sdp(winograd=True, flying=True),
     sdp(winograd=True, flying=True, to_pdp=True), r"Winograd output sent to the PDP"),
    ("sdp.eql_output_cvt", sdp(eql=True), sdp(eql=True, cvt=(0, 2, 0)),
     r"EQL with output convertor offset 0, scale 2, shift 0"),
    ("sdp.eql_single_plain", sdp(eql=True), sdp(eql=True, winograd=True, flying=True),
     r"EQL in Winograd mode"),
    ("sdp.operand_two_bytes", sdp(operand_bytes={"x1": 1, "x2": 2, "y": 2}),
     sdp(operand_bytes={"x2": 2, "y": 1}), r"1-byte y operands with int16 input and processing"),
    ("sdp.one_by_one_packed", sdp(width=1, height=1, dst=(0x80000000, 0x20, 0x20)),
     sdp(width=1, height=1, dst=(0x80000000, 0x20, 0x40)),
     r"a 1x1 output cube with surface stride 0x40 \(one atom is 0x20\)"),
    ("sdp.prelu_alu_bypass", sdp(), sdp(prelu_alu=("x1",)), r"PReLU with the ALU on in x1"),
    ("sdp.winograd_on_the_fly", sdp(winograd=True, flying=True), sdp(winograd=True),
     r"Winograd output mode without flying mode"),
    ("pdp.pad_below_kernel", pdp(pad_left=2), pdp(pad_left=3),
     r"padding 3/0/0/0 is not below the 3x3 kernel"),
    ("pdp.kernel_max_8", pdp(kernel_width=8), pdp(kernel_width=9), r"a 3x9 pooling kernel"),
    # 8 columns: windows of 2 at stride 2 end on column 8; 9 columns leave the last out
    ("pdp.flying_windows_tile",
     pdp(flying=True, width=8, height=7, kernel_width=2, kernel_height=3, stride_x=2,
         stride_y=2, pad_left=0),
     pdp(flying=True, width=9, height=7, kernel_width=2, kernel_height=3, stride_x=2,
         stride_y=2, pad_left=0),
     r"a 3x2 kernel at stride 2x2 does not end on the last line and column of the padded 7x9 "
     r"input sent on the fly"),
    ("pdp.flying_no_split", pdp(flying=True), pdp(flying=True, split_num=2),
     r"2 width splits with input on the fly"),
    # nvdlav1's 128 columns shared by the 8 lines a kernel of 8 at stride 1 keeps in flight
    ("pdp.line_buffer_width",
     pdp(kernel_height=8, stride_y=1, out_widths=(16, 16, 9), buffer_columns=128),
     pdp(kernel_height=8, stride_y=1, out_widths=(16, 17, 9), buffer_columns=128),
     r"17 output columns \(a split's, or the cube's\) exceed the line buffer's 16 at a "
     r"8-line kernel and stride 1"),
]


@pytest.mark.parametrize("name, legal, illegal, message", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_boundary(name, legal, illegal, message):
    rule = BY_NAME[name]
    assert rule not in violations(legal)
    assert rule in violations(illegal)
    broken = [r for r in violations(illegal) if r.name == name]
    assert len(broken) == 1
    import re
    assert re.search(message, rule.message(illegal)), rule.message(illegal)


def test_every_rule_has_a_case_and_a_source():
    assert {c[0] for c in CASES} == set(BY_NAME)
    assert len(BY_NAME) == len(RULES)
    for rule in RULES:
        assert rule.effect in ENFORCED + (DOCUMENTED,)
        assert rule.source and rule.register.startswith("NVDLA_")


def test_check_names_the_register_and_the_rule():
    facts = wino(out_width=10, out_height=10)
    with pytest.raises(ConfigurationError, match=r"^NVDLA_CSC\.D_DATAOUT_SIZE_0_0: Winograd "
                       r"output 10x10 is not a multiple of 4 \(winograd\.output_multiple_of_4: "
                       r"unit description"):
        check(facts)


def test_check_leaves_documented_limits_to_gen():
    facts = wino(width=6, height=6, out_width=4, out_height=4)  # the C-model computes 4x4
    check(facts)
    assert [r.name for r in violations(facts)] == ["winograd.min_output"]


@pytest.mark.parametrize("width, channels, precision, entries", [
    (16, 32, "int8", 4),     # one atom a pixel: four pixels an entry
    (15, 64, "int8", 8),     # two atoms: two pixels an entry
    (5, 96, "int8", 5),      # three atoms: an entry a pixel
    (5, 128, "int8", 5),     # four atoms: one entry
    (5, 160, "int8", 7),     # five atoms: one entry and a quarter
    (9, 16, "int16", 3),     # int16: 16 channels an atom
    (6, 25, "fp16", 3),
])
def test_direct_entries_are_the_c_models(width, channels, precision, entries):
    assert direct_entries(FULL, width, channels, precision) == entries


def test_direct_entries_elsewhere_pack_atoms_into_bank_words():
    assert direct_entries(get_config("nv_small"), 51, 4, "int8") == 51
    assert direct_entries(get_config("nv_large"), 5, 96, "int8") == 8


def test_winograd_entries_from_the_extended_cube():
    assert line_entries(wino()) == 3  # 12 x 16 x 2 / 128
    assert line_entries(replace(wino(), precision="int8")) == 3  # 12 x 32 x 1 / 128


# -- the rules through the registers: the convolution decoders stop with the rule ------------

def _run(m) -> None:
    compute_conv_layer(LayerContext(m, {u: 0 for u in UNITS}))


def _direct(h: int, entries: int, data_banks: int):
    """32 int8 channels x 16 pixels x h lines, 1x1 kernels, CBUF programmed by hand."""
    m = Machine("nv_full")
    x = np.ones((32, h, 16), np.int8)
    program(m, x, np.ones((8, 32, 1, 1), np.int8), precision="int8", entries=entries)
    for unit in ("NVDLA_CDMA", "NVDLA_CSC"):
        set_reg(m, unit, "D_BANK_0", data_bank=data_banks - 1, weight_bank=7)
    return m


def test_decoder_runs_a_layer_that_fits_one_bank():
    _run(_direct(64, 4, 1))


@pytest.mark.parametrize("h, entries, message", [
    (65, 4, r"needs 260 CBUF entries"),
    (64, 8, r"needs 512 CBUF entries"),
])
def test_decoder_refuses_an_input_the_data_banks_cannot_hold(h, entries, message):
    with pytest.raises(ConfigurationError, match=r"NVDLA_CDMA\.D_BANK_0 DATA_BANK: .*" + message
                       + r".*conv\.cbuf_full_input"):
        _run(_direct(h, entries, 1))


def _kernel_group(channels: int):
    m = Machine("nv_full")
    program(m, np.ones((channels, 2, 2), np.int8), np.ones((32, channels, 1, 1), np.int8),
            precision="int8", entries=direct_entries(FULL, 2, channels, "int8"))
    for unit in ("NVDLA_CDMA", "NVDLA_CSC"):
        set_reg(m, unit, "D_BANK_0", data_bank=0, weight_bank=0)
    return m


def test_decoder_checks_the_kernel_group_against_the_weight_banks():
    _run(_kernel_group(1024))
    with pytest.raises(ConfigurationError, match=r"WEIGHT_BANK: a group of 32 kernels of 1028"):
        _run(_kernel_group(1028))


def _winograd(out_size, pad=(1, 1, 1, 1), entries=None):
    m = Machine("nv_full")
    x = np.ones((16, 10, 10), np.int16)
    w4 = winograd_weights(np.ones((8, 16, 3, 3), np.int16), "int16", scale=4.0)
    program_winograd(m, x, w4, precision="int16", pad=pad, out_size=out_size)
    ext = pad[0] + 10 + pad[1]
    for unit in ("NVDLA_CDMA", "NVDLA_CSC"):
        set_reg(m, unit, "D_ENTRY_PER_SLICE_0", entries=(entries or ext * 16 * 2 // 128) - 1)
    return m


def test_decoder_runs_a_winograd_output_of_the_extended_input_less_4():
    _run(_winograd((8, 8)))


@pytest.mark.parametrize("out_size, pad, register, message", [
    ((10, 10), (1, 1, 1, 1), r"NVDLA_CSC\.D_DATAOUT_SIZE_0_0",
     r"Winograd output 10x10 is not a multiple of 4"),
    ((8, 6), (1, 1, 1, 1), r"NVDLA_CSC\.D_DATAOUT_SIZE_0_0",
     r"Winograd output 8x6 is not a multiple of 4"),
    ((8, 8), (1, 2, 1, 1), r"NVDLA_CDMA\.D_ZERO_PADDING_0",
     r"the padded input 13x12 is not a multiple of 4\*stride"),
])
def test_decoder_refuses_winograd_layers_the_c_model_never_completes(out_size, pad, register,
                                                                    message):
    with pytest.raises(ConfigurationError, match=register + ": " + message):
        _run(_winograd(out_size, pad))


def _image(entries: int):
    m = Machine("nv_full")
    img = np.full((4, 9, 12), 7, np.uint8)
    program_image(m, img, np.ones((5, 4, 3, 3), np.int16), fmt="T_A8B8G8R8",
                  precision="int16", cvt=(128, 1, 0))
    for unit in ("NVDLA_CDMA", "NVDLA_CSC"):
        set_reg(m, unit, "D_ENTRY_PER_SLICE_0", entries=entries - 1)
    return m


def test_decoder_checks_image_entries_per_line():
    _run(_image(1))
    with pytest.raises(ConfigurationError, match=r"NVDLA_CDMA\.D_ENTRY_PER_SLICE_0: 2 entries a "
                       r"line, but a padded line of 12 pixels"):
        _run(_image(2))


# -- facts read back from registers (what the SDP and PDP decoders will pass to check) -------

def test_sdp_facts_from_registers():
    from sim.dma.feature import feature_layout
    from sim.program.sdp import program_sdp_core, program_sdp_input, program_x
    from sim.rules import sdp_facts

    m = Machine("nv_full")
    lay = feature_layout((16, 1, 1), "int16", 32)
    program_sdp_input(m, (16, 1, 1), (0x80000000, lay), "int16", "int8")
    program_sdp_core(m, (16, 1, 1), "int16", "int8", dst=(0x80001000, lay))
    program_x(m, "bs", {"bypass": 0, "alu_bypass": 0, "mul_bypass": 0, "prelu": 1})
    ctx = LayerContext(m, {"NVDLA_SDP": 0, "NVDLA_SDP_RDMA": 0})
    facts = sdp_facts(ctx.regs("NVDLA_SDP"), ctx.regs("NVDLA_SDP_RDMA"), m.config)
    assert (facts.proc, facts.out, facts.in_precision, facts.flying) == ("int16", "int8",
                                                                        "int16", False)
    assert facts.dst == (0x80001000, 32, 32) and (facts.width, facts.height) == (1, 1)
    assert facts.prelu_alu == ("x1",)
    assert {r.name for r in violations(facts)} == {"sdp.int16_to_int8", "sdp.prelu_alu_bypass"}
    with pytest.raises(ConfigurationError, match=r"^NVDLA_SDP\.D_DATA_FORMAT_0: int16 "
                       r"processing with int8 output \(sdp\.int16_to_int8"):
        check(facts)


@pytest.mark.parametrize("kernel, stride, columns", [
    (1, 1, 128), (2, 2, 128), (3, 5, 128),  # one line in flight: all 8 banks
    (2, 1, 64), (3, 2, 64), (8, 4, 64), (5, 3, 64),  # two lines: 4 banks each
    (3, 1, 32), (4, 1, 32), (7, 3, 32), (8, 3, 32), (7, 2, 32), (8, 2, 32),  # 3-4: 2 banks
    (5, 1, 16), (8, 1, 16),  # 5-8 lines: a bank each
])
def test_pdp_line_buffer_columns_per_kernel(kernel, stride, columns):
    """Output columns a pooling line may take on nv_full (the unit description's f() of
    ceil(kernel / stride)); a layer within them breaks no rule, one past them does."""
    facts = pdp(kernel_height=kernel, stride_y=stride, buffer_columns=128,
                out_widths=(columns,))
    assert pdp_max_out_width(facts) == columns
    assert violations(facts) == []
    assert [r.name for r in violations(replace(facts, out_widths=(columns + 1,)))] == [
        "pdp.line_buffer_width"]


def test_pdp_line_buffer_unchecked_without_a_known_buffer():
    assert violations(pdp(kernel_height=8, stride_y=1, out_widths=(500,))) == []


def test_pdp_facts_from_registers():
    from sim.dma.feature import feature_layout
    from sim.program.pdp import Pooling, program_pdp
    from sim.rules import pdp_facts

    m = Machine("nv_full")
    program_pdp(m, (16, 6, 6), "int8", Pooling("max", (3, 3), (1, 1), (2, 0, 1, 0), 0),
                (0x80001000, feature_layout((16, 6, 4), "int8", 32)))
    ctx = LayerContext(m, {"NVDLA_PDP": 0})
    facts = pdp_facts(ctx.regs("NVDLA_PDP"))
    assert (facts.kernel_width, facts.kernel_height, facts.pad_left, facts.pad_top) == (3, 3, 2, 1)
    assert facts.flying and facts.split_num == 1
    assert violations(facts) == []
    assert facts.out_widths == (6,) and facts.buffer_columns == 0
    assert pdp_facts(ctx.regs("NVDLA_PDP"), m.config).buffer_columns == 128
    # three splits: first, last and mid output widths, each held to the line buffer
    set_reg(m, "NVDLA_PDP", "D_OPERATION_MODE_CFG_0", flying_mode=1, split_num=2)
    set_reg(m, "NVDLA_PDP", "D_PARTIAL_WIDTH_OUT_0", partial_width_out_first=1,
            partial_width_out_last=2, partial_width_out_mid=0)
    split = pdp_facts(LayerContext(m, {"NVDLA_PDP": 0}).regs("NVDLA_PDP"), m.config)
    assert (split.split_num, split.out_widths, split.stride_y) == (3, (2, 3, 1), 1)
