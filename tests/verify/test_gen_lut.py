"""nvdla-sim gen: the LUT keys (SDP ``y.lut``, CDP ``lut``) and fp16 LRN layers.

Specs run; the registers and tables gen writes, decoded back through the register
map, are what the spec asked; each key changes the layer's result; illegal
requests are refused naming the key and the rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import regs
from sim.cli import main
from sim.gen import generate
from sim.memfiles import read_hex_dat

from .gen_helpers import assert_refused, write_spec, written

REGS = regs.load()


def _spec(tmp_path, body: str, config: str = "nv_full", name: str = "spec"):
    return write_spec(tmp_path, body, config, name=name)


def _ramp(n: int, step: int, low: int = -30000) -> str:
    return "[" + ", ".join(str(low + step * i) for i in range(n)) + "]"


LE_INT = _ramp(65, 900)
LO_INT = _ramp(257, 230)
HUGE = "1" + "0" * 400  # 10**400: past every float
LO_FP16 = "[" + ", ".join(f"{-2 + i / 64:.6f}" for i in range(257)) + "]"

RUNS = {
    "sdp_int8_exponent_named": (
        'unit = "sdp"\ninput = [16, 4, 5]\ny = { lut = { le = { mode = "exponent", '
        'start = -128, index_offset = 1, table = "exp", x_scale = 0.02, y_scale = 300.0 }, '
        'lo = { start = -100, index_select = 0, table = "tanh", x_scale = 0.03, '
        'y_scale = 20000.0 } } }'),
    "sdp_int16_explicit_slopes": (
        f'unit = "sdp"\nprecision = "int16"\ninput = [9, 3, 7]\ny = {{ lut = {{ le = {{ '
        f'start = -20000, index_select = 9, table = {LE_INT}, slopes = {{ uflow = [7, 3], '
        f'oflow = [-9, -2] }} }}, lo = {{ start = -5000, index_select = 5, table = {LO_INT} }}, '
        'priority = { uflow = "lo", oflow = "le", hybrid = "lo" } } }'),
    "sdp_fp16_default": 'unit = "sdp"\nprecision = "fp16"\ninput = [8, 4, 4]\ny = { lut = true }',
    "sdp_fp16_exponent": (
        'unit = "sdp"\nprecision = "fp16"\ninput = [8, 4, 4]\ny = { mul = 0.5, lut = { le = { '
        'mode = "exponent", start = -8.0, index_offset = -5, table = "sigmoid" }, lo = { '
        f'start = -2.0, index_select = -6, table = {LO_FP16}, slopes = {{ uflow = 0.125, '
        'oflow = -0.5 } }, priority = "lo" } }'),
    "cdp_int8_named": (
        'unit = "cdp"\ninput = [12, 3, 4]\nwindow = 7\nlut = { le = { mode = "exponent", '
        'table = "lrn", y_scale = 30000.0, x_scale = 0.5 }, lo = { start = 3, '
        'table = "rsqrt", y_scale = 32000.0 } }'),
    "cdp_int16_wide_start": (
        'unit = "cdp"\nprecision = "int16"\ninput = [10, 3, 3]\nwindow = 3\nlut = { le = { '
        'start = -40000000000, index_select = 30 }, lo = { start = 1000, end = 60000000000 } }'),
    "cdp_fp16_default": 'unit = "cdp"\nprecision = "fp16"\ninput = [20, 4, 5]\nwindow = 9',
    "cdp_fp16_specials": (
        'unit = "cdp"\nprecision = "fp16"\ninput = [20, 4, 5]\nnan_to_zero = true\n'
        'data = { specials = ["nan", "inf", "denormal"] }\nlut = { le = { mode = "exponent", '
        'index_offset = -6, table = "lrn" }, lo = { index_select = -1, table = "rsqrt" } }'),
}


@pytest.mark.parametrize("name", RUNS)
def test_lut_specs_pass_run(tmp_path, name):
    folder = tmp_path / "nv_full" / name
    assert main(["gen", str(_spec(tmp_path, RUNS[name])), "-o", str(folder)]) == 0
    for trace in (folder / f"{name}.cfg", folder / "input.txn"):
        assert main(["run", str(trace)]) == 0


# -- the registers gen writes, decoded back ----------------------------------------------

def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def _fp32(bits: int) -> float:
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def test_sdp_int_lut_registers_are_the_spec(tmp_path):
    folder = tmp_path / "out"
    generate(_spec(tmp_path, RUNS["sdp_int16_explicit_slopes"]), folder, fmt="cfg")
    f, tables = written(folder, "NVDLA_SDP")
    assert f["lut_le_function"] == 1  # linear
    assert (f["lut_uflow_priority"], f["lut_oflow_priority"], f["lut_hybrid_priority"]) == \
        (1, 0, 1)
    assert _signed(f["lut_le_start"], 32) == -20000 and _signed(f["lut_lo_start"], 32) == -5000
    assert _signed(f["lut_le_end"], 32) == -20000 + (64 << 9)  # the last entry's input
    assert _signed(f["lut_lo_end"], 32) == -5000 + (256 << 5)
    assert (f["lut_le_index_select"], f["lut_lo_index_select"]) == (9, 5)
    assert _signed(f["lut_le_slope_uflow_scale"], 16) == 7
    assert _signed(f["lut_le_slope_oflow_scale"], 16) == -9
    assert f["lut_le_slope_uflow_shift"] == 3 and _signed(f["lut_le_slope_oflow_shift"], 5) == -2
    assert [_signed(v, 16) for v in tables[0]] == eval(LE_INT)
    assert [_signed(v, 16) for v in tables[1]] == eval(LO_INT)


def test_sdp_fp16_lut_registers_are_the_spec(tmp_path):
    folder = tmp_path / "out"
    generate(_spec(tmp_path, RUNS["sdp_fp16_exponent"]), folder, fmt="cfg")
    f, tables = written(folder, "NVDLA_SDP")
    assert f["lut_le_function"] == 0  # exponent
    assert _signed(f["lut_le_index_offset"], 8) == -5
    assert _signed(f["lut_lo_index_select"], 8) == -6
    assert _fp32(f["lut_le_start"]) == -8.0 and _fp32(f["lut_lo_start"]) == -2.0
    assert _fp32(f["lut_lo_end"]) == -2.0 + 256 * 2.0 ** -6
    assert _fp32(f["lut_le_end"]) == -8.0 + 2.0 ** (64 - 5)
    assert (f["lut_uflow_priority"], f["lut_oflow_priority"], f["lut_hybrid_priority"]) == \
        (1, 1, 1)
    assert np.array(f["lut_lo_slope_uflow_scale"], np.uint16).view(np.float16) == 0.125
    assert np.array(f["lut_lo_slope_oflow_scale"], np.uint16).view(np.float16) == -0.5
    lo = np.array(tables[1], np.uint16).view(np.float16)
    np.testing.assert_array_equal(lo, np.array(eval(LO_FP16), np.float16))
    # the LE's named table: sigmoid at each entry's input, start + 2^(i + offset)
    le = np.array(tables[0], np.uint16).view(np.float16).astype(np.float64)
    x = -8.0 + 2.0 ** (np.arange(65) - 5)
    np.testing.assert_allclose(le, 1 / (1 + np.exp(-x)), atol=1e-3)


def test_cdp_lut_registers_take_38_bit_starts(tmp_path):
    folder = tmp_path / "out"
    generate(_spec(tmp_path, RUNS["cdp_int16_wide_start"]), folder, fmt="cfg")
    f, _ = written(folder, "NVDLA_CDP")

    def value(stem):
        return _signed((f[f"lut_{stem}_high"] << 32) | f[f"lut_{stem}_low"], 38)

    assert value("le_start") == -40000000000
    assert value("le_end") == -40000000000 + (64 << 30)
    assert value("lo_start") == 1000 and value("lo_end") == 60000000000
    assert f["lut_le_index_select"] == 30


CDP_FP16_CHOSEN = (
    'unit = "cdp"\nprecision = "fp16"\ninput = [12, 3, 4]\nwindow = 5\nlut = { le = { '
    'mode = "exponent", start = 0.25, index_offset = -6, table = "lrn", slopes = { '
    'uflow = 0.25, oflow = -0.125 } }, lo = { start = 0.5, index_select = -1, table = "rsqrt", '
    'slopes = { oflow = 0.5 } }, priority = { uflow = "lo", oflow = "le", hybrid = "lo" } }')
CDP_INT8_CHOSEN = (
    'unit = "cdp"\ninput = [12, 3, 4]\nlut = { le = { start = 5, index_select = 4, '
    'slopes = { uflow = [7, 3], oflow = [-9, -2] } }, lo = { slopes = { uflow = [-300, 15] } }, '
    'priority = { uflow = "lo", oflow = "lo", hybrid = "le" } }')


def _fp16(bits: int) -> float:
    return float(np.array([bits], np.uint16).view(np.float16)[0])


def test_cdp_fp16_lut_registers_are_the_spec(tmp_path):
    folder = tmp_path / "out"
    generate(_spec(tmp_path, CDP_FP16_CHOSEN), folder, fmt="cfg")
    f, tables = written(folder, "NVDLA_CDP")
    assert f["lut_le_function"] == 0  # exponent
    assert _signed(f["lut_le_index_offset"], 8) == -6
    assert _signed(f["lut_lo_index_select"], 8) == -1
    # fp16 starts and ends: fp32 patterns in the LOW words
    assert _fp32(f["lut_le_start_low"]) == 0.25 and f["lut_le_start_high"] == 0
    assert _fp32(f["lut_lo_start_low"]) == 0.5
    assert _fp32(f["lut_le_end_low"]) == 0.25 + 2.0 ** (64 - 6)
    assert _fp32(f["lut_lo_end_low"]) == 0.5 + 256 * 0.5
    assert (f["lut_uflow_priority"], f["lut_oflow_priority"], f["lut_hybrid_priority"]) == \
        (1, 0, 1)
    assert (_fp16(f["lut_le_slope_uflow_scale"]), _fp16(f["lut_le_slope_oflow_scale"])) == \
        (0.25, -0.125)
    assert (_fp16(f["lut_lo_slope_uflow_scale"]), _fp16(f["lut_lo_slope_oflow_scale"])) == \
        (0.0, 0.5)
    assert all(f[f"lut_{t}_slope_{s}_shift"] == 0 for t in ("le", "lo") for s in ("uflow", "oflow"))
    # each entry: the named function at the entry's input, rounded to fp16
    lo = np.array(tables[1], np.uint16).view(np.float16)
    np.testing.assert_array_equal(lo, (1 / np.sqrt(0.5 + 0.5 * np.arange(257))).astype(np.float16))
    le = np.array(tables[0], np.uint16).view(np.float16)
    x = 0.25 + 2.0 ** (np.arange(65) - 6)
    np.testing.assert_array_equal(le, ((1 + 1e-4 * x) ** -0.75).astype(np.float16))


def test_cdp_int_lut_priorities_and_slopes_are_the_spec(tmp_path):
    folder = tmp_path / "out"
    generate(_spec(tmp_path, CDP_INT8_CHOSEN), folder, fmt="cfg")
    f, _ = written(folder, "NVDLA_CDP")
    assert (f["lut_uflow_priority"], f["lut_oflow_priority"], f["lut_hybrid_priority"]) == \
        (1, 1, 0)
    assert (_signed(f["lut_le_slope_uflow_scale"], 16), f["lut_le_slope_uflow_shift"]) == (7, 3)
    assert (_signed(f["lut_le_slope_oflow_scale"], 16),
            _signed(f["lut_le_slope_oflow_shift"], 5)) == (-9, -2)
    assert (_signed(f["lut_lo_slope_uflow_scale"], 16), f["lut_lo_slope_uflow_shift"]) == \
        (-300, 15)
    assert (f["lut_lo_slope_oflow_scale"], f["lut_lo_slope_oflow_shift"]) == (0, 0)
    assert f["lut_le_start_low"] == 5 and f["lut_le_index_select"] == 4


# -- every key changes the result ----------------------------------------------------------

BASE = ('unit = "sdp"\nprecision = "int16"\ninput = [9, 3, 7]\n'
        'data = {{ low = -30000, high = 30000 }}\ny = {{ lut = {{ {} }} }}')
CHANGES = [  # (a LUT, the same LUT with one key changed): the outputs differ
    ('le = { table = "tanh", y_scale = 20000.0, x_scale = 1e-4 }',
     'le = { table = "tanh", y_scale = 20000.0, x_scale = 1e-4, mode = "exponent", '
     'start = -30000 }'),
    ('le = { table = "identity" }', 'le = { table = "identity", start = -10000 }'),
    ('le = { table = "identity" }', 'le = { table = "identity", index_select = 8 }'),
    ('le = { table = "identity" }', 'le = { table = "sigmoid", y_scale = 30000.0 }'),
    ('le = { table = "identity", y_scale = 0.5 }', 'le = { table = "identity", y_scale = 0.25 }'),
    ('le = { start = 0, table = "identity" }, lo = { start = 0 }',  # both underflow: LE's slope
     'le = { start = 0, table = "identity", slopes = { uflow = [300, 4] } }, lo = { start = 0 }'),
    ('le = { start = 0, table = "identity" }', 'le = { start = 0, table = "identity" }, '
     'lo = { start = 0, table = "identity" }, priority = { uflow = "lo" }'),
    ('le = { start = -40000, table = "identity" }, lo = { table = "recip" }',
     'le = { start = -40000, table = "identity" }, lo = { table = "recip" }, priority = "lo"'),
]



CDP_PAIRS = [  # (a CDP layer, the same with one LUT key changed): the outputs differ
    ('precision = "fp16"\nlut = { le = { table = "lrn" } }',
     'precision = "fp16"\nlut = { le = { table = "lrn", y_scale = 0.5 } }'),
    ('precision = "fp16"', 'precision = "fp16"\nlut = { le = { table = "rsqrt" } }'),
    ('precision = "fp16"\nlut = { lo = { table = "rsqrt" } }',
     'precision = "fp16"\nlut = { lo = { table = "rsqrt" }, priority = "lo" }'),
    ('precision = "int16"', 'precision = "int16"\nlut = { le = { table = "rsqrt", '
     'y_scale = 30000.0 } }'),
]
CDP_PAIR_BASE = 'unit = "cdp"\ninput = [12, 3, 4]\n'
PAIRS = ([tuple(BASE.format(lut).replace("{{", "{").replace("}}", "}") for lut in pair)
          for pair in CHANGES]
         + [tuple(CDP_PAIR_BASE + extra for extra in pair) for pair in CDP_PAIRS])


@pytest.mark.parametrize("before, after", PAIRS)
def test_each_lut_key_changes_the_output(tmp_path, before, after):
    outs = []
    for i, body in enumerate((before, after)):
        folder = tmp_path / f"o{i}"
        generate(_spec(tmp_path, body, name=f"s{i}"), folder, fmt="txn")
        outs.append(read_hex_dat(folder / "layer0_out.dat"))
    assert outs[0] != outs[1]


def test_lut_true_and_an_empty_table_are_the_default(tmp_path):
    texts = []
    for i, lut in enumerate(("true", "{}")):
        folder = tmp_path / f"o{i}"
        generate(_spec(tmp_path, f'unit = "sdp"\nprecision = "int16"\ninput = [9, 3, 7]\n'
                       f'y = {{ lut = {lut} }}', name="s"), folder, fmt="cfg")
        texts.append(next(folder.glob("*.cfg")).read_text())
    assert texts[0] == texts[1]


def test_fp16_cdp_flushes_nan_only_when_asked(tmp_path):
    outs = []
    for flush in ("false", "true"):
        folder = tmp_path / flush
        generate(_spec(tmp_path, RUNS["cdp_fp16_specials"].replace(
            "nan_to_zero = true", f"nan_to_zero = {flush}"), name=flush), folder, fmt="txn")
        out = np.frombuffer(read_hex_dat(folder / "layer0_out.dat"), np.uint16)
        outs.append(((out & 0x7C00) == 0x7C00) & ((out & 0x3FF) != 0))
    assert outs[0].any() and not outs[1].any()


# -- refusals -------------------------------------------------------------------------------

SDP = 'unit = "sdp"\ninput = [8, 4, 4]\nprecision = "{}"\ny = {{ lut = {} }}'
CDP = 'unit = "cdp"\ninput = [8, 4, 4]\nprecision = "{}"\nlut = {}'
ILLEGAL = [
    (SDP, "int8", '{ le = { mode = "cubic" } }',
     r"y\.lut\.le\.mode: 'cubic' is not one of linear, exponent"),
    (SDP, "int8", '{ lo = { mode = "exponent" } }',
     r"y\.lut\.lo\.mode: 'exponent' is not one of linear"),
    (SDP, "int8", '{ le = { mode = "exponent", index_select = 3 } }',
     r"y\.lut\.le\.index_select: exponent mode indexes by log2"),
    (SDP, "int8", '{ lo = { index_offset = 3 } }',
     r"y\.lut\.lo\.index_offset: only the LE table in exponent mode"),
    (SDP, "int8", '{ le = { index_select = 200 } }', r"y\.lut\.le\.index_select: 200 is outside"),
    (SDP, "int8", '{ le = { start = 1.5 } }', r"y\.lut\.le\.start: expected an integer"),
    (SDP, "int16", '{ le = { start = 3000000000 } }', r"y\.lut\.le\.start: 3000000000 is outside"),
    (SDP, "fp16", '{ lo = { end = inf } }', r"y\.lut\.lo\.end: expected a finite fp32 number"),
    (SDP, "int8", '{ le = { table = [1, 2, 3] } }', r"y\.lut\.le\.table: expected a table name"),
    (SDP, "int8", '{ le = { table = "cosh" } }', r"y\.lut\.le\.table: 'cosh' is not one of"),
    (SDP, "int16", '{ lo = { table = [' + ", ".join(["40000"] * 257) + "] } }",
     r"y\.lut\.lo\.table\[0\]: 40000 is outside -32768\.\.32767"),
    (SDP, "fp16", '{ lo = { table = [' + ", ".join(["70000.0"] * 257) + "] } }",
     r"y\.lut\.lo\.table: 70000\.0 is not an fp16 value"),
    (SDP, "int8", '{ le = { y_scale = 2.0 } }', r"y\.lut\.le\.y_scale: scales apply to a named"),
    (SDP, "int8", '{ le = { slopes = { uflow = [1, 40] } } }',
     r"y\.lut\.le\.slopes\.uflow\[1\]: 40 is outside -16\.\.15"),
    (SDP, "fp16", '{ le = { slopes = { oflow = [1.0, 2] } } }',
     r"y\.lut\.le\.slopes\.oflow: an fp16 slope is one finite fp16 number"),
    (SDP, "int8", '{ priority = { hybrid = "mid" } }',
     r"y\.lut\.priority\.hybrid: 'mid' is not one of le, lo"),
    (SDP, "int8", '{ lo = { step = 1 } }', r"y\.lut\.lo\.step: no such key"),
    (SDP, "int8", '"yes"', r"y\.lut: expected true, false or a table"),
    (CDP, "int8", '{ le = { index_select = 40 } }', r"\)\.lut\.le\.index_select: 40 is outside "
     r"-32\.\.31"),
    (CDP, "int16", '{ lo = { start = 200000000000 } }', r"\)\.lut\.lo\.start: 200000000000 is "
     r"outside"),
    (CDP, "fp16", "true\ndatout = [0, 3, 16]", r"\)\.datout: the convertors are for int8/int16"),
    (CDP, "int8", "true\nnan_to_zero = true", r"\)\.nan_to_zero: NaN flushing needs precision "
     "fp16"),
    (CDP, "int8", "3", r"\)\.lut: expected true or a table"),
    # TOML integers have no bound: a huge one is refused, not overflowed into float()
    (SDP, "fp16", f"{{ lo = {{ end = {HUGE} }} }}", r"y\.lut\.lo\.end: expected a finite fp32 "
     r"number, got an integer of 1329 bits"),
    (SDP, "fp16", f"{{ le = {{ start = -{HUGE} }} }}", r"y\.lut\.le\.start: expected a finite"),
    (CDP, "fp16", f'{{ le = {{ table = "exp", x_scale = {HUGE} }} }}',
     r"\)\.lut\.le\.x_scale: expected a finite number"),
    (SDP, "fp16", f'{{ lo = {{ table = "exp", y_scale = -{HUGE} }} }}',
     r"y\.lut\.lo\.y_scale: expected a finite number"),
    (SDP, "fp16", "{ lo = { table = [" + ", ".join(["1.0"] * 256 + [HUGE]) + "] } }",
     r"y\.lut\.lo\.table: an integer of 1329 bits is not an fp16 value"),
    (CDP, "fp16", f"{{ lo = {{ slopes = {{ oflow = {HUGE} }} }} }}",
     r"\)\.lut\.lo\.slopes\.oflow: an fp16 slope is one finite fp16 number"),
]


@pytest.mark.parametrize("body, precision, lut, message", ILLEGAL)
def test_illegal_luts_name_key_and_rule(tmp_path, capsys, body, precision, lut, message):
    assert_refused(tmp_path, capsys, _spec(tmp_path, body.format(precision, lut)), message)
