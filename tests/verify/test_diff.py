"""nvdla-sim diff: corrupted dumps are localised to exactly the corrupted elements."""

import json

import numpy as np
import pytest

from sim.cli import main
from sim.diff import diff_trace
from sim.diff.simulate import simulate
from sim.memfiles import read_hex_dat, write_memory_file

from .conftest import EXAMPLES

INT8_TRACE = EXAMPLES / "nv_small" / "sdp_4x5x12_bias_relu_cvt_int8"
FP16_TRACE = EXAMPLES / "nv_full" / "sdp_3x5x12_mul_relu_fp16"


def output_of(trace):
    """(region, output write) of a one-layer trace, from the simulator's own record."""
    sim = simulate(trace)
    (region,) = sim.regions
    (write,) = [w for w in sim.writes if w.layout is not None and w.layer == 0]
    return region, write


def corrupt(trace, tmp_path, pick, flip=0x10, fmt="bin"):
    """Write the trace's expected region with the elements ``pick`` chooses xor-ed.

    Returns (ACTUAL path, set of corrupted (n, c, h, w)).
    """
    region, write = output_of(trace)
    lay = write.layout
    data = bytearray(region.simulated)
    chosen = set()
    for c in range(write.channels):
        for h in range(lay.height):
            for w in range(lay.width):
                if pick(c, h, w):
                    off = write.addr + lay.offset(c, h, w) - region.addr
                    data[off] ^= flip
                    chosen.add((0, c, h, w))
    path = tmp_path / ("actual." + fmt)
    write_memory_file(path, region.addr, bytes(data), fmt)
    return path, chosen


CORRUPTIONS = {
    "one element": (lambda c, h, w: (c, h, w) == (9, 2, 3), "one element"),
    "whole channel": (lambda c, h, w: c == 5, "whole channel: n0 c5"),
    "one row": (lambda c, h, w: h == 1, "whole row: n0 h1"),
    "bit across a surface": (lambda c, h, w: c < 8, "whole surface: n0 s0"),
}


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_diff_names_corrupted_elements(tmp_path, name):
    pick, pattern = CORRUPTIONS[name]
    actual, chosen = corrupt(INT8_TRACE, tmp_path, pick, flip=0x40 if "bit" in name else 0x11)
    report = diff_trace(INT8_TRACE, actual)
    got = {(e.n, e.c, e.h, e.w) for e in report.elements}
    assert got == chosen
    assert not report.byte_diffs
    lines = "\n".join(report.summary_lines())
    assert pattern in lines
    if "bit" in name:
        assert "bit 6 flipped in every differing element" in lines
    assert report.per_layer() == [{"layer": 0, "engine": "SDP", "unit": "SDP",
                                   "elements": len(chosen), "bytes": 0}]
    for e in report.elements:
        assert e.cube.layer == 0 and e.cube.unit == "SDP"
        assert e.expected ^ e.actual == (0x40 if "bit" in name else 0x11)


def _png_cells(png, panel):
    import matplotlib.image

    image = matplotlib.image.imread(png)[..., :3]
    s = panel["scale"]
    cells = set()
    for h in range(panel["height"]):
        for w in range(panel["width"]):
            y, x = panel["y"] + h * s + s // 2, panel["x"] + w * s + s // 2
            if not np.allclose(image[y, x], 0.88, atol=0.01):
                cells.add((h, w))
    return cells


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_png_shows_corrupted_cells(tmp_path, name):
    pytest.importorskip("matplotlib")
    pick, _ = CORRUPTIONS[name]
    actual, chosen = corrupt(INT8_TRACE, tmp_path, pick)
    png, js = tmp_path / "diff.png", tmp_path / "diff.json"
    assert main(["diff", str(INT8_TRACE), str(actual), "--png", str(png),
                 "--json", str(js)]) == 1
    doc = json.loads(js.read_text())
    panels = doc["png_panels"]
    assert {(p["batch"], p["surface"]) for p in panels} == {(0, 0), (0, 1)}
    for panel in panels:
        group = 8  # nv_small int8: 8 channels per surface
        want = {(h, w) for n, c, h, w in chosen if c // group == panel["surface"]}
        assert _png_cells(png, panel) == want
        assert panel["channels"] == sorted({c for n, c, h, w in chosen
                                            if c // group == panel["surface"]})
    assert len(doc["elements"]) == len(chosen)


def test_identical_and_formats(tmp_path):
    region, _ = output_of(INT8_TRACE)
    folder = tmp_path / "dut"
    folder.mkdir()
    # named like run --dump-dir names a CRC region, $readmemh 4-byte words
    write_memory_file(folder / "crc_0x80100000.mem", region.addr, region.simulated,
                      "readmemh", 4)
    assert main(["diff", str(INT8_TRACE), str(folder)]) == 0


def test_fp16_values_named(tmp_path):
    region, write = output_of(FP16_TRACE)
    lay = write.layout
    data = bytearray(region.simulated)
    specials = {(0, 0, 0): 0x7E00, (1, 2, 4): 0xFC00, (11, 2, 0): 0x0001}
    for (c, h, w), bits in specials.items():
        off = write.addr + lay.offset(c, h, w) - region.addr
        data[off : off + 2] = bits.to_bytes(2, "little")
    path = tmp_path / "expected.bin"  # named like the dump_mem file: no address needed
    path.write_bytes(bytes(data))
    report = diff_trace(FP16_TRACE, path)
    got = {(e.c, e.h, e.w): e.as_json()["actual"] for e in report.elements}
    assert got == {(0, 0, 0): "NaN", (1, 2, 4): "-Inf", (11, 2, 0): "5.96046e-08 (denormal)"}
    assert all(e.cube.precision == "fp16" for e in report.elements)


def test_layer_filter_and_errors(tmp_path, capsys):
    actual, _ = corrupt(INT8_TRACE, tmp_path, lambda c, h, w: c == 0)
    assert main(["diff", str(INT8_TRACE), str(actual), "--layer", "0"]) == 1
    assert main(["diff", str(INT8_TRACE), str(actual), "--layer", "3"]) == 2
    assert "--layer 3" in capsys.readouterr().err
    assert main(["diff", str(INT8_TRACE), str(tmp_path / "missing")]) == 2
    far = tmp_path / "far.bin"
    far.write_bytes(bytes(16))
    assert main(["diff", str(INT8_TRACE), str(far), "--base", "0x10"]) == 2
    assert "none of the checked regions" in capsys.readouterr().err


def test_failing_run_localises(tmp_path, capsys):
    """A dump_mem trace whose golden file is wrong: run names the element."""
    trace = tmp_path / "nv_full" / "pdp"
    trace.mkdir(parents=True)
    src = EXAMPLES / "nv_full" / "pdp_7x9x12_3x3s2_pad_ave_int16"
    for f in src.iterdir():
        (trace / f.name).write_bytes(f.read_bytes())
    region, write = output_of(trace)
    golden = bytearray(read_hex_dat(trace / "expected.dat"))
    off = write.addr + write.layout.offset(7, 2, 3) - region.addr
    golden[off + 1] ^= 0x80
    write_memory_file(trace / "expected.dat", region.addr, bytes(golden))
    assert main(["run", str(trace)]) == 1
    out = capsys.readouterr().out
    assert "layer 0 PDP" in out
    assert "n0 s0 h2 w3 c7" in out
    assert "bit 15 flipped" in out


def test_bdma_bytes_name_the_line(tmp_path):
    """A BDMA copy writes line by line: a differing byte names its line and offset."""
    from sim.gen import generate

    spec = EXAMPLES.parent / "examples" / "specs" / "bdma_copy.toml"
    folder = tmp_path / "nv_full" / "bdma"
    generate(spec, folder, fmt="txn", dump_format="bin")
    region = simulate(folder).regions[0]
    data = bytearray((folder / "layer0_out.bin").read_bytes())
    line = 64  # the spec's line_bytes
    data[3 * line + 5] ^= 0x80
    (tmp_path / "layer0_out.bin").write_bytes(bytes(data))
    report = diff_trace(folder, tmp_path / "layer0_out.bin")
    assert not report.elements
    (byte,) = report.byte_diffs
    assert byte.address == region.addr + 3 * line + 5
    assert (byte.write.layer, byte.write.engine, byte.write.part) == (0, "BDMA", 3)
    assert byte.as_json()["offset"] == 5


def test_pdp_split_columns_are_global(shared_dir, tmp_path):
    """PDP split mode writes the output in pieces: columns are named in the whole cube."""
    trace = shared_dir / "nvdla-traces" / "nv_small" / "pdp_16x6x16_4x2_split_max_int8_0"
    if not trace.is_dir():
        pytest.skip(f"{trace} is absent")
    sim = simulate(trace)
    (region,) = sim.regions
    pieces = sorted((w for w in sim.writes if w.layout is not None), key=lambda w: w.addr)
    assert len(pieces) > 1  # the trace does split
    base, lay = pieces[0].addr, pieces[0].layout
    width = sum(p.layout.width for p in pieces)
    data = bytearray(region.simulated)
    corrupted = {(3, 2, width - 2), (0, 0, 0)}
    for c, h, w in corrupted:  # offsets in the whole (unsplit) cube
        data[base + lay.offset(c, h, w) - region.addr] ^= 0x20
    actual = tmp_path / "crc.bin"
    write_memory_file(actual, region.addr, bytes(data), "bin")
    report = diff_trace(trace, actual)
    assert {(e.c, e.h, e.w) for e in report.elements} == corrupted
    assert {e.cube.width for e in report.elements} == {width}


def test_bytes_missing_from_actual_are_no_match(tmp_path, capsys):
    """A region ACTUAL holds only half of: exit 1, never 'no differences'."""
    region, _ = output_of(INT8_TRACE)
    half = tmp_path / "half.bin"
    write_memory_file(half, region.addr, region.simulated[: region.size // 2], "bin")
    assert main(["diff", str(INT8_TRACE), str(half), "--base", hex(region.addr)]) == 1
    out = capsys.readouterr().out
    assert "not in ACTUAL" in out and "no differences" not in out


def test_layer_verdict_covers_only_that_layer(tmp_path, capsys):
    """Three layers each checked; a corrupted layer-1 output fails --layer 1 only."""
    trace = tmp_path / "net"
    assert main(["gen", str(EXAMPLES.parent / "examples/specs/network_3_layers.toml"), "-o",
                 str(trace), "--format", "cfg"]) == 0
    sim = simulate(trace)
    (write,) = [w for w in sim.writes if w.layer == 1 and w.layout is not None]
    dut = tmp_path / "dut"
    dut.mkdir()
    for region in sim.regions:
        data = bytearray(region.simulated)
        if region.addr <= write.addr < region.end:
            data[write.addr - region.addr] ^= 0x01
        write_memory_file(dut / f"crc_{region.addr:#x}.bin", region.addr, bytes(data), "bin")
    capsys.readouterr()
    assert main(["diff", str(trace), str(dut), "--layer", "0"]) == 0
    out = capsys.readouterr().out
    assert "byte(s) differ" not in out and "no differences" in out
    assert main(["diff", str(trace), str(dut), "--layer", "1"]) == 1
