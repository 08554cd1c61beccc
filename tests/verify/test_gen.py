"""nvdla-sim gen: example specs, random valid specs per unit, illegal requests."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cli import main
from sim.dma.align import ceil_div
from sim.errors import SimError
from sim.gen import generate
from sim.memfiles import read_hex_dat, read_memory_file
from sim.trace.cfg import parse_cfg
from sim.trace.player import run_trace
from sim.trace.vocabulary import bench_problems

SPECS = sorted((Path(__file__).resolve().parents[2] / "examples" / "specs").glob("*.toml"))
UNITS = ("conv", "sdp", "pdp", "cdp", "bdma", "rubik")


def _config_of(spec: Path) -> str:
    for line in spec.read_text().splitlines():
        if line.startswith("config"):
            return line.split('"')[1]
    raise AssertionError(f"{spec} names no config")


def test_examples_cover_every_unit():
    text = "\n".join(s.read_text() for s in SPECS)
    for unit in UNITS:
        assert f'unit = "{unit}"' in text
    assert any(s.read_text().count("[[layer]]") >= 3 for s in SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_example_spec_passes_run(tmp_path, spec):
    folder = tmp_path / _config_of(spec) / spec.stem
    assert main(["gen", str(spec), "-o", str(folder)]) == 0
    for trace in (folder / f"{spec.stem}.cfg", folder / "input.txn"):
        assert main(["run", str(trace)]) == 0


def _regions(dump: Path) -> dict:
    out = {}
    for path in dump.iterdir():
        addr, data = read_memory_file(path)
        out[addr] = data
    return out


@pytest.mark.parametrize("spec", [s for s in SPECS if "network" in s.stem or "bdma" in s.stem],
                         ids=lambda s: s.stem)
def test_cfg_and_txn_give_the_same_bytes(tmp_path, spec):
    folder = tmp_path / _config_of(spec) / spec.stem
    generate(spec, folder)
    dumps = {}
    for kind, trace in (("cfg", folder / f"{spec.stem}.cfg"), ("txn", folder / "input.txn")):
        assert main(["run", str(trace), "--dump-dir", str(tmp_path / kind)]) == 0
        dumps[kind] = _regions(tmp_path / kind)
    assert dumps["cfg"] == dumps["txn"]
    assert len(dumps["cfg"]) == spec.read_text().count("[[layer]]")


def test_fp16_specials_in_the_input(tmp_path):
    spec = next(s for s in SPECS if s.stem == "sdp_fp16")
    folder = tmp_path / "nv_full" / "sdp"
    generate(spec, folder, fmt="txn")
    raw = np.frombuffer(read_hex_dat(folder / "layer0_in1.dat"), dtype=np.uint16)
    for bits in (0x7C00, 0xFC00, 0x7BFF, 0xFBFF):
        assert (raw == bits).any(), hex(bits)
    assert ((raw & 0x7C00) == 0x7C00).sum() > ((raw == 0x7C00) | (raw == 0xFC00)).sum()  # NaN
    assert (((raw & 0x7C00) == 0) & ((raw & 0x3FF) != 0)).any()  # denormals


def test_dump_formats_for_rtl(tmp_path):
    spec = next(s for s in SPECS if s.stem == "pdp_int8")
    folder = tmp_path / "nv_small" / "pdp"
    assert main(["gen", str(spec), "-o", str(folder), "--format", "txn", "--dump-format",
                 "readmemh", "--word-bytes", "8"]) == 0
    addr, data = read_memory_file(folder / "layer0_out.mem")
    assert data == read_hex_dat(folder / "layer0_out.dat")
    assert (folder / "layer0_in1.mem").is_file()


def _loaded_words(folder: Path, dtype) -> np.ndarray:
    """Every element gen loaded into memory for layer 0 (inputs, weights, operands)."""
    return np.concatenate([np.frombuffer(read_hex_dat(p), dtype=dtype)
                           for p in sorted(folder.glob("layer0_in*.dat"))])


@pytest.mark.parametrize("precision, weights, wanted", [
    ("int8", "{ low = -128, high = 127 }", lambda w: (w == -128).any() and (w == 127).any()),
    ("int16", "{ low = -32768, high = 32767 }",
     lambda w: (w < -30000).any() and (w > 30000).any()),
    ("fp16", '{ specials = ["nan", "-inf"], fraction = 0.2 }',
     lambda w: ((w.view(np.uint16) & 0x7C00) == 0x7C00).any()),
])
def test_conv_weights_take_a_data_table(tmp_path, precision, weights, wanted):
    """``weights`` draws a convolution's weights from its range and specials; without it they
    keep the default range (whose extremes the input never reaches either)."""
    dtype = {"int8": np.int8, "int16": np.int16, "fp16": np.float16}[precision]
    body = (f'unit = "conv"\nprecision = "{precision}"\ninput = [8, 6, 6]\nkernels = 8\n'
            f'kernel = [3, 3]\nsdp = {{ relu = true }}')
    for key, table in (("plain", None), ("extreme", weights)):
        spec = _write(tmp_path, body + (f"\nweights = {table}" if table else ""), "nv_full")
        folder = tmp_path / key
        generate(spec, folder, fmt="txn")
        assert wanted(_loaded_words(folder, dtype)) == (table is not None)


def test_default_truncate_stays_within_the_accumulator(tmp_path):
    """Full-range int16 data and weights would want more than CACC's 16 truncated bits: the
    default truncation stops there (the layer is generated, saturating) instead of failing."""
    spec = _write(tmp_path, 'unit = "conv"\nprecision = "int16"\ninput = [64, 5, 5]\n'
                  'kernels = 4\nkernel = [5, 5]\ndata = { low = -32768, high = 32767 }\n'
                  'weights = { low = -32768, high = 32767 }', "nv_full")
    generate(spec, tmp_path / "out", fmt="cfg")
    text = next((tmp_path / "out").glob("*.cfg")).read_text()
    assert "reg_write(NVDLA_CACC.D_CLIP_CFG_0, 0x10);" in text


@pytest.mark.parametrize("truncate", [17, 20, 31])
def test_explicit_truncate_beyond_16_on_the_master_rtl_configurations(tmp_path, truncate):
    """nv_small's CACC (NVIDIA's master RTL) takes a truncation up to 31, which gen programs
    as asked (nv_full's stops at 16: ILLEGAL below)."""
    spec = _write(tmp_path, f'unit = "conv"\nprecision = "int8"\ninput = [8, 4, 4]\n'
                  f'truncate = {truncate}', "nv_small")
    generate(spec, tmp_path / "out", fmt="cfg")
    text = next((tmp_path / "out").glob("*.cfg")).read_text()
    assert f"reg_write(NVDLA_CACC.D_CLIP_CFG_0, {truncate:#x});" in text


def _write(tmp_path, body: str, config="nv_small") -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(f'config = "{config}"\n[[layer]]\n{body}\n')
    return path


ILLEGAL = [
    ("nv_full", 'unit = "conv"\ninput = [8, 8, 200]\npdp = { kernel = [3, 3], stride = [1, 1] }',
     r"layer0\)\.input: 196 output columns \(a split's, or the cube's\) exceed"),
    ("nv_full", 'unit = "pdp"\nprecision = "int16"\ninput = [16, 12, 80]\nkernel = [8, 1]\n'
     'stride = [1, 1]', r"layer0\)\.input: 80 output columns \(a split's, or the cube's\) "
     r"exceed the line buffer's 16 at a 8-line kernel and stride 1 \(pdp\.line_buffer_width: "
     r"unit description"),
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [8, 10, 10]\npad = 1\n'
     'weights = { low = -128, high = 127 }', r"layer0\)\.weights: the Winograd transform "
     r"\(4 G W G\^T\) of these weights leaves int8"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\ntruncate = 17',
     r"layer0\)\.truncate: 17 is outside 0\.\.16"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\nweights = { specials = ["nan"] }',
     r"\.weights\.specials: .*need precision fp16"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\nweights = { high = -5, low = 3 }',
     r"\.weights\.low: 3 is above weights\.high -5"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\nweights = { scale = 2 }',
     r"\.weights\.scale: no such key"),
    ("nv_full", 'unit = "pdp"\nprecision = "fp16"\ninput = [8, 4, 4]\nkernel = [2, 2]\n'
     'data = { specials = true }', r"\.data\.specials: expected a list of kinds"),
    ("nv_small", 'unit = "sdp"\ninput = [4, 4, 4]\nprecision = "int16"',
     r"layer 0 \(layer0\)\.precision: nv_small does not support int16"),
    ("nv_small", 'unit = "pdp"\ninput = [8, 4, 4]\nkernel = [2, 2]\npad = [2, 0, 0, 0]',
     r"layer 0 \(layer0\)\.pad: padding 2/0/0/0 is not below the 2x2 kernel "
     r"\(pdp\.pad_below_kernel: programming guide"),
    ("nv_small", 'unit = "sdp"\ninput = [4, 4, 4]\nfoo = 1', r"layer0\)\.foo: a sdp layer has"),
    ("nv_small", 'unit = "sdp"\ninput = "conv9"', r"\.input: 'conv9' is not an earlier layer"),
    ("nv_full", 'unit = "bdma"\nline_bytes = 48', r"\.line_bytes: 48 is not a multiple of 32"),
    ("nv_small", 'unit = "conv"\nmode = "winograd"\ninput = [8, 8, 8]',
     r"\.mode: nv_small has no winograd"),
    ("nv_small", 'unit = "sdp"\ninput = [4, 4, 4]\ndata = { specials = ["nan"] }',
     r"\.data\.specials: .*need precision fp16"),
    ("nv_small", 'unit = "sdp"\ninput = [4, 4, 4]\ny = { alu = "sum" }',
     r"\.y: nv_small has no SDP Y"),
    ("nv_small", 'unit = "bdma"', r"\.unit: nv_small has no BDMA"),
    # a draw's bounds are finite numbers (an fp16 low of -inf crashed the draw)
    ("nv_full", 'unit = "sdp"\nprecision = "fp16"\ninput = [8, 4, 4]\ndata = { low = -inf }',
     r"\.data\.low: expected a finite number, got -inf"),
    ("nv_full", 'unit = "conv"\nmode = "image"\npixel_format = "T_R8"\ninput = [1, 4, 5]\n'
     'data = { high = inf }', r"\.data\.high: expected a finite number, got inf"),
    ("nv_full", 'unit = "conv"\nmode = "image"\npixel_format = "T_R8"\ninput = [1, 4, 5]\n'
     'data = { low = nan }', r"\.data\.low: expected a finite number, got nan"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\nweights = { high = true }',
     r"\.weights\.high: expected a finite number, got True"),
    # bounds no value of the precision meets
    ("nv_full", 'unit = "sdp"\ninput = [8, 4, 4]\ndata = { low = 200 }',
     r"\.data\.low: 200 is above int8's largest value 127"),
    ("nv_full", 'unit = "conv"\nprecision = "int16"\ninput = [8, 4, 4]\n'
     'weights = { high = -40000 }', r"\.weights\.high: -40000 is below int16's smallest"),
    ("nv_full", 'unit = "sdp"\nprecision = "fp16"\ninput = [8, 4, 4]\n'
     'data = { low = -1e308, high = 1e308 }', r"\.data\.low: -1e\+308 is outside fp16's "
     r"-65504\.\.65504"),
    ("nv_small", 'unit = "conv"\ninput = [8, 4, 4]\nbatch = 2', r"\.batch: nv_small has no batch"),
    ("nv_full", 'unit = "conv"\ninput = [8, 4, 4]\nbatch = 2\nsdp = { out_precision = "int16" }',
     r"\.sdp\.out_precision: int8 processing with int16 output in 2-batch mode "
     r"\(sdp\.int8_widen_single: C-model"),
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [8, 10, 10]\npad = 1\n'
     'pdp = { kernel = [2, 2] }', r"\.pdp: Winograd output sent to the PDP "
     r"\(sdp\.winograd_to_memory"),
    ("nv_full", 'unit = "conv"\ninput = [8, 6, 6]\nbatch = 2\npdp = { kernel = [2, 2] }',
     r"\.pdp: 2 batches sent to the PDP \(sdp\.batch_to_memory"),
    ("nv_full", 'unit = "sdp"\ninput = [8, 4, 4]\nprecision = "fp16"\nout_precision = "int8"',
     r"\.out_precision: the SDP cannot convert fp16 to int8 \(format\.rst Table 30"),
    ("nv_small", 'unit = "sdp"\ninput = [8, 4, 4]\nx1 = { lut = true }',
     r"\.x1\.lut: only the Y stage has the LUT"),
    ("nv_small", 'unit = "conv"\ninput = [8, 2, 2]\nkernel = [5, 5]',
     r"\.kernel: a 5x5 kernel .* does not fit"),
    ("nv_small", 'unit = "pdp"\ninput = [8, 4, 4]\nmethod = "median"',
     r"\.method: 'median' is not one of"),
    ("nv_small", 'unit = "conv"\ninput = [64, 64, 64]',
     r"\.input: the input needs 32768 CBUF entries \(64 lines of 512\) but 31 data bank\(s\) "
     r"hold 15872 \(conv\.cbuf_full_input"),
    # hardware legality rules (sim/rules.py): the spec key that decides each, and the rule
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [4, 10, 10]\npad = 0',
     r"\.pad: the padded input 10x10 is not a multiple of 4\*stride \(4x4\) "
     r"\(winograd\.padded_input: C-model"),
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [4, 10, 10]\npad = [1, 2, 1, 1]',
     r"\.pad: the padded input 13x12 is not a multiple of 4\*stride"),
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [4, 6, 6]\npad = 1',
     r"\.input: Winograd output 4x4 is below 8x8 \(winograd\.min_output: programming guide"),
    ("nv_full", 'unit = "conv"\nmode = "winograd"\ninput = [4, 10, 10]\npad = 1\n'
     'dilation = [2, 1]', r"\.dilation: dilation 2x1 \(y x x\) in winograd mode "
     r"\(conv\.dilation_direct_only"),
    ("nv_full", 'unit = "conv"\nmode = "image"\ninput = [4, 8, 8]\ndilation = 2',
     r"\.dilation: dilation 2x2 \(y x x\) in image mode"),
    ("nv_full", 'unit = "conv"\ninput = [8, 6, 6]\nkernel = [1, 1]\npad = 1',
     r"\.pad: padding 1/1/1/1 \(left/right/top/bottom\) is not below the 1x1 kernel "
     r"\(conv\.pad_below_kernel"),
    ("nv_full", 'unit = "conv"\ninput = [1710, 3, 3]\nkernels = 32',
     r"\.kernels: a group of 32 kernels of 15390 bytes \(492480 bytes\) does not fit 15 "
     r"weight bank\(s\) of 32768 bytes \(conv\.cbuf_weight_group"),
    ("nv_full", 'unit = "conv"\nprecision = "int16"\ninput = [8, 6, 6]\n'
     'sdp = { out_precision = "int8" }', r"\.sdp\.out_precision: int16 processing with int8 "
     r"output \(sdp\.int16_to_int8: C-model"),
    ("nv_full", 'unit = "sdp"\nprecision = "int16"\ninput = [8, 6, 6]\nout_precision = "int8"',
     r"layer0\)\.out_precision: int16 processing with int8 output"),
    ("nv_full", 'unit = "conv"\ninput = [8, 6, 6]\nsdp = { out_precision = "int16" }\n'
     'pdp = { kernel = [2, 2] }', r"\.sdp\.out_precision: int8 processing with int16 output "
     r"to the PDP \(sdp\.pdp_same_precision: programming guide"),
    ("nv_full", 'unit = "sdp"\ninput = [8, 6, 6]\nx2 = { alu = "sum", mul = 3, prelu = true }',
     r"\.x2\.prelu: PReLU with the ALU on in x2 \(sdp\.prelu_alu_bypass"),
    # two rules no programming satisfies at once
    ("nv_full", 'unit = "conv"\ninput = [1, 2, 1]\nkernel = [2, 1]\nbatch = 2',
     r"\.batch: a batch of 1x1 output cubes cannot be written: .*\(sdp\.batch_dst_64\).*"
     r"\(sdp\.one_by_one_packed\)"),
]


@pytest.mark.parametrize("unit, precision, data, low, high", [
    ("sdp", "fp16", "high = -20.0", -20.0, -20.0), ("sdp", "fp16", "low = 9.5", 9.5, 9.5),
    ("conv", "int8", "high = -100", -100, -100), ("conv", "int16", "low = 1000", 1000, 1000)])
def test_one_bound_past_the_default_range_moves_the_other(tmp_path, unit, precision, data, low,
                                                          high):
    """data = { high = -20 } below the default low draws at -20 (it crashed the draw)."""
    spec = _write(tmp_path, f'unit = "{unit}"\nprecision = "{precision}"\ninput = [8, 3, 4]\n'
                  f"data = {{ {data} }}", "nv_full")
    result = generate(spec, tmp_path / "o", fmt="txn")
    assert run_trace(result.traces[0]).status == "pass"
    dtype = {"fp16": np.float16, "int8": np.int8, "int16": np.int16}[precision]
    values = np.frombuffer(read_hex_dat(tmp_path / "o" / "layer0_in1.dat"), dtype)
    values = values[values != 0]  # the atoms' padding
    assert values.size >= 8 * 3 * 4 // 2 and (values >= low).all() and (values <= high).all()


@pytest.mark.parametrize("config, body, message", ILLEGAL)
def test_illegal_requests_name_field_and_rule(tmp_path, capsys, config, body, message):
    spec = _write(tmp_path, body, config)
    with pytest.raises(SimError, match=message):
        generate(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert main(["gen", str(spec), "-o", str(tmp_path / "out")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_yaml_spec(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "spec.yaml"
    path.write_text("config: nv_small\nlayer:\n  - unit: pdp\n    input: [8, 4, 6]\n"
                    "    method: min\n")
    result = generate(path, tmp_path / "nv_small" / "y", fmt="cfg")
    assert run_trace(result.traces[0]).status == "pass"


def test_existing_folder_needs_force(tmp_path):
    spec = next(s for s in SPECS if s.stem == "pdp_int8")
    folder = tmp_path / "nv_small" / "p"
    generate(spec, folder, fmt="cfg")
    with pytest.raises(SimError, match="--force"):
        generate(spec, folder, fmt="cfg")
    generate(spec, folder, fmt="txn", force=True)
    assert sorted(p.name for p in folder.iterdir())[-1] == "layer0_out.dat"


# -- random valid specs, one strategy per unit ---------------------------------------------

def _cube(c=(1, 20), h=(1, 9), w=(1, 9)):
    return st.tuples(st.integers(*c), st.integers(*h), st.integers(*w))


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value)


@st.composite
def sdp_layers(draw):
    prec = draw(st.sampled_from(["int8", "int16", "fp16"]))
    stage = st.fixed_dictionaries({}, optional={
        "alu": st.sampled_from(["sum", "max", "min"]),
        "alu_operand": st.integers(-50, 50) if prec != "fp16" else st.sampled_from([0.5, -1.0]),
        "mul": st.integers(-8, 8) if prec != "fp16" else st.sampled_from([1.5, "memory"]),
        "relu": st.booleans()})
    layer = {"unit": "sdp", "precision": prec, "input": draw(_cube()), "x1": draw(stage),
             "x2": draw(stage)}
    if prec != "fp16":  # int16 -> int8 is refused (sim.rules sdp.int16_to_int8)
        layer["out_precision"] = draw(st.sampled_from({"int8": ["int8", "int16"],
                                                       "int16": ["int16", "fp16"]}[prec]))
        layer["cvt"] = [draw(st.integers(-4, 4)), draw(st.integers(1, 4)), draw(st.integers(0, 3))]
    if draw(st.booleans()):
        layer["y"] = {"lut": True}
    return "nv_full", layer


@st.composite
def pdp_layers(draw):
    config = draw(st.sampled_from(["nv_small", "nv_full"]))
    prec = "int8" if config == "nv_small" else draw(st.sampled_from(["int8", "int16", "fp16"]))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    c, h, w = draw(_cube(h=(kh, 10), w=(kw, 10)))
    layer = {"unit": "pdp", "precision": prec, "input": [c, h, w],
             "method": draw(st.sampled_from(["max", "min", "average"])), "kernel": [kh, kw],
             "stride": [draw(st.integers(1, 3)), draw(st.integers(1, 3))]}
    if draw(st.booleans()):  # one split unless the line buffer needs more
        layer["split"] = "auto"
    return config, layer


@st.composite
def cdp_layers(draw):
    config = draw(st.sampled_from(["nv_small", "nv_full"]))
    prec = "int8" if config == "nv_small" else draw(st.sampled_from(["int8", "int16", "fp16"]))
    return config, {"unit": "cdp", "precision": prec, "input": list(draw(_cube())),
                    "window": draw(st.sampled_from([3, 5, 7, 9]))}


@st.composite
def conv_layers(draw):
    config = draw(st.sampled_from(["nv_small", "nv_full"]))
    prec = "int8" if config == "nv_small" else draw(st.sampled_from(["int8", "int16", "fp16"]))
    mode = "direct" if config == "nv_small" else draw(st.sampled_from(["direct", "winograd",
                                                                         "image"]))
    if mode == "winograd":  # 3x3, the padded input a multiple of 4 and at least 12
        c, h, w = draw(_cube(c=(1, 12), h=(1, 12), w=(1, 12)))
        left, top = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        pad = [left, max(12, ceil_div((left + w), 4) * 4) - left - w,
               top, max(12, ceil_div((top + h), 4) * 4) - top - h]
        layer = {"unit": "conv", "mode": mode, "precision": prec, "input": [c, h, w],
                 "kernels": draw(st.integers(1, 12)), "pad": pad,
                 "sdp": {"relu": draw(st.booleans())}}
        return config, layer
    r, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if mode == "image":
        fmt = draw(st.sampled_from(["T_R8", "T_A8B8G8R8", "T_Y8___U8V8_N444"]))
        c = {"T_R8": 1, "T_A8B8G8R8": 4, "T_Y8___U8V8_N444": 3}[fmt]
        _, h, w = draw(_cube(h=(r, 8), w=(s, 8)))
    else:
        c, h, w = draw(_cube(c=(1, 12), h=(r, 8), w=(s, 8)))
    layer = {"unit": "conv", "mode": mode, "precision": prec, "input": [c, h, w],
             "kernels": draw(st.integers(1, 12)), "kernel": [r, s],
             "stride": [draw(st.integers(1, 2)), draw(st.integers(1, 2))],
             "pad": draw(st.integers(0, min(r, s) - 1)),  # below the kernel (programming guide)
             "sdp": {"relu": draw(st.booleans())}}
    if mode == "image":
        layer["pixel_format"] = fmt
    pad = layer["pad"]
    one_by_one = all((size + 2 * pad - k) // step == 0 for size, k, step in
                     ((h, r, layer["stride"][0]), (w, s, layer["stride"][1])))
    if config == "nv_full" and mode == "direct" and not one_by_one:  # a 1x1 batch is illegal
        layer["batch"] = draw(st.integers(1, 3))
    if prec != "fp16" and config == "nv_full" and layer.get("batch", 1) == 1:
        layer["sdp"]["out_precision"] = draw(st.sampled_from(
            {"int8": ["int8", "int16"], "int16": ["int16", "fp16"]}[prec]))
    return config, layer


@st.composite
def bdma_layers(draw):
    return "nv_full", {"unit": "bdma", "line_bytes": 32 * draw(st.integers(1, 4)),
                       "lines": draw(st.integers(1, 4)), "surfaces": draw(st.integers(1, 3)),
                       "src": draw(st.sampled_from(["mc", "cv"])),
                       "dst": draw(st.sampled_from(["mc", "cv"]))}


@st.composite
def rubik_layers(draw):
    return "nv_full", {"unit": "rubik",
                       "mode": draw(st.sampled_from(["contract", "split", "merge"])),
                       "precision": draw(st.sampled_from(["int8", "int16", "fp16"])),
                       "input": [draw(st.integers(1, 40)), draw(st.integers(1, 4)),
                                 draw(st.integers(1, 9))],
                       "stride": [draw(st.integers(1, 4)), draw(st.integers(1, 4))],
                       "src": draw(st.sampled_from(["mc", "cv"])),
                       "dst": draw(st.sampled_from(["mc", "cv"]))}


STRATEGIES = {"sdp": sdp_layers(), "pdp": pdp_layers(), "cdp": cdp_layers(),
              "conv": conv_layers(), "bdma": bdma_layers(), "rubik": rubik_layers()}


@pytest.mark.parametrize("unit", UNITS)
def test_random_valid_specs_pass(tmp_path_factory, unit):
    @settings(max_examples=6, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(case=STRATEGIES[unit], seed=st.integers(0, 1000))
    def check(case, seed):
        config, layer = case
        root = tmp_path_factory.mktemp(unit)
        spec = root / "spec.toml"
        spec.write_text(f'config = "{config}"\nseed = {seed}\n[[layer]]\n'
                        + "\n".join(f"{k} = {_toml(v)}" for k, v in layer.items()) + "\n")
        result = generate(spec, root / config / "t")  # gen replays what it wrote
        for trace in result.traces:
            assert run_trace(trace).status == "pass"

    check()


@pytest.mark.parametrize("shape, pad, out", [
    ([4, 9, 13], (1, 2, 1, 2), (12, 8)),    # padded 16x12: multiples of 4
    ([4, 10, 10], (1, 1, 1, 1), (8, 8)),    # padded 12x12
    ([4, 3, 6], (1, 5, 1, 8), (8, 8)),      # at least 12x12: an output of 8x8 (programming guide)
])
def test_winograd_default_padding_is_legal(tmp_path, shape, pad, out):
    spec = _write(tmp_path, f'unit = "conv"\nmode = "winograd"\ninput = {shape}', "nv_full")
    result = generate(spec, tmp_path / "nv_full" / "w", fmt="cfg")
    text = result.traces[0].read_text()
    left, right, top, bottom = pad
    assert (f"reg_write(NVDLA_CDMA.D_ZERO_PADDING_0, "
            f"{left | right << 8 | top << 16 | bottom << 24:#x});") in text
    assert (f"reg_write(NVDLA_CSC.D_DATAOUT_SIZE_0_0, {out[0] - 1 | (out[1] - 1) << 16:#x});"
            in text)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_cfg_speaks_the_rtl_bench_vocabulary(tmp_path, spec):
    """NVIDIA's trace bench: exactly one check per interrupt's sync id, no other sync id,
    no register reads; a fused layer enables its consumers (PDP, SDP) before the
    convolution that feeds them."""
    import re

    folder = tmp_path / "t"
    assert main(["gen", str(spec), "-o", str(folder), "--format", "cfg"]) == 0
    (cfg,) = folder.glob("*.cfg")
    text = cfg.read_text()
    notified = re.findall(r"^intr_notify\(\w+, (sync_id_\d+)\);", text, re.M)
    checked = re.findall(r"^check_(?:crc|nothing)\((sync_id_\d+)\b", text, re.M)
    assert notified and sorted(checked) == sorted(notified) == sorted(set(notified))
    assert "reg_read" not in text
    assert bench_problems(parse_cfg(cfg)) == []
    # a layer's enables stand together: within each run, consumers come before CACC
    for run in re.findall(r"(?:^reg_write\(NVDLA_\w+\.D_OP_ENABLE_0, 0x1\);\n)+", text, re.M):
        enables = re.findall(r"NVDLA_(\w+)\.D_OP_ENABLE_0", run)
        if "CACC" in enables:
            assert all(enables.index(u) < enables.index("CACC")
                       for u in ("SDP", "PDP") if u in enables), enables
