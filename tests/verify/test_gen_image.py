"""nvdla-sim gen: image-input convolutions in every pixel format, with the CDMA's pixel
settings (convertor, X offset, mean, sign override) as spec keys."""

from __future__ import annotations

import numpy as np
import pytest

from sim import regs
from sim.cli import main
from sim.dma.pixel import PIXEL_FORMATS, pixel_format
from sim.errors import SimError
from sim.gen import generate
from sim.memfiles import read_hex_dat
from sim.trace.cfg import parse_cfg

from .gen_helpers import assert_refused, write_spec, written

REGS = regs.load()


def _spec(tmp_path, body: str, name: str = "spec"):
    return write_spec(tmp_path, body, seed=13, name=name,
                      head='unit = "conv"\nmode = "image"\nkernels = 6\nkernel = [2, 3]\n')


def _image(name: str, precision: str | None = None, extra: str = "", h=5, w=7) -> str:
    f = pixel_format(name)
    precision = precision or {"int8": "int8", "int16": "int16", "fp16": "fp16"}[f.precision]
    return (f'pixel_format = "{name}"\nprecision = "{precision}"\n'
            f'input = [{f.channels}, {h}, {w}]\n{extra}')


@pytest.mark.parametrize("name", list(PIXEL_FORMATS))
def test_every_pixel_format_passes_run(tmp_path, name):
    f = pixel_format(name)
    extra = f"pixel_offset = {f.max_x_offset}\n"  # the last pixels of a line's first atom
    folder = tmp_path / "nv_full" / name
    assert main(["gen", str(_spec(tmp_path, _image(name, extra=extra))), "-o",
                 str(folder)]) == 0
    for trace in (folder / f"{name}.cfg", folder / "input.txn"):
        assert main(["run", str(trace)]) == 0


def _fields(folder, unit: str = "NVDLA_CDMA") -> dict[str, int]:
    return written(folder, unit)[0]


def test_pixel_registers_are_the_spec(tmp_path):
    body = _image("T_A2R10G10B10", "int8", 'pixel_cvt = [-40, 3, 9]\npixel_offset = 5\n'
                  'mean = [1000, 65535, -2, 7]\npixel_sign_override = true\n')
    generate(_spec(tmp_path, body), tmp_path / "o", fmt="cfg")
    f = _fields(tmp_path / "o")
    assert f["pixel_format"] == list(PIXEL_FORMATS).index("T_A2R10G10B10")
    assert (f["cvt_en"], f["cvt_offset"], f["cvt_scale"], f["cvt_truncate"]) == \
        (1, -40 & 0xFFFF, 3, 9)
    assert f["pixel_x_offset"] == 5 and f["pixel_sign_override"] == 1
    assert (f["mean_format"], f["mean_ry"], f["mean_gu"], f["mean_bv"], f["mean_ax"]) == \
        (1, 1000, 65535, 0xFFFE, 7)
    assert f["in_precision"] == 1 and f["proc_precision"] == 0  # int16 pixels into int8


def test_two_plane_formats_get_their_own_chroma_plane(tmp_path):
    generate(_spec(tmp_path, _image("T_Y10___V10U10_N444", extra="pixel_offset = 3\n")),
             tmp_path / "o", fmt="cfg")
    f = _fields(tmp_path / "o")
    luma, chroma = f["datain_addr_low_0"], f["datain_addr_low_1"]
    assert chroma > luma and f["uv_line_stride"] > 0
    loads = {op.addr for op in parse_cfg(next((tmp_path / "o").glob("*.cfg")))
             if op.cmd == "mem_load"}
    assert {luma, chroma} <= loads


BASE = _image("T_R16", "int16", "pixel_cvt = [32768, 1, 0]\n")
CHANGES = [  # (key, the value changed): the outputs differ
    ("pixel_cvt = [32768, 1, 0]", "pixel_cvt = [30000, 2, 1]"),
    ("pixel_cvt = [32768, 1, 0]", "pixel_cvt = [32768, 1, 0]\nmean = [500, 0, 0, 0]"),
    ("pixel_cvt = [32768, 1, 0]", "pixel_cvt = [32768, 1, 0]\npixel_sign_override = true"),
]


@pytest.mark.parametrize("before, after", CHANGES)
def test_each_pixel_key_changes_the_output(tmp_path, before, after):
    outs = []
    for i, body in enumerate((BASE, BASE.replace(before, after))):
        generate(_spec(tmp_path, body, f"s{i}"), tmp_path / f"o{i}", fmt="txn")
        outs.append(read_hex_dat(tmp_path / f"o{i}" / "layer0_out.dat"))
    assert outs[0] != outs[1]


def test_the_x_offset_moves_the_pixels_not_the_result(tmp_path):
    ins, outs = [], []
    for i, extra in enumerate(("", "pixel_offset = 9\n")):
        generate(_spec(tmp_path, _image("T_R8", extra=extra), f"s{i}"), tmp_path / f"o{i}",
                 fmt="txn")
        ins.append(read_hex_dat(tmp_path / f"o{i}" / "layer0_in1.dat"))
        outs.append(read_hex_dat(tmp_path / f"o{i}" / "layer0_out.dat"))
    assert ins[0] != ins[1] and outs[0] == outs[1]


ILLEGAL = [
    (_image("T_A8B8G8R8", "int16", "pixel_cvt = false\n"),
     r"\.pixel_cvt: converting int8 pixels to int16 needs the convertor"),
    (_image("T_A16B16G16R16_F", "int16"), r"\.precision: T_A16B16G16R16_F holds fp16 pixels"),
    (_image("T_R16_F", "fp16", "pixel_cvt = [0, 1, 0]\n"),
     r"\.pixel_cvt: T_R16_F's fp16 pixels go into fp16 unconverted"),
    (_image("T_R16_F", "int8"), r"\.precision: T_R16_F's fp16 pixels converted to int8"),
    (_image("T_A8B8G8R8", extra="pixel_offset = 8\n"), r"\.pixel_offset: 8 is outside 0\.\.7"),
    (_image("T_R8", extra="mean = [1, 2, 3]\n"), r"\.mean: expected \[ry, gu, bv, ax\]"),
    (_image("T_A16Y16U16V16_F", extra="mean = [1.0, 2.0, 3.0, 1e6]\n"),
     r"\.mean\[3\]: expected a finite fp16 number"),
    (_image("T_A16Y16U16V16_F", extra=f"mean = [1.0, 2.0, 3.0, {10 ** 400}]\n"),
     r"\.mean\[3\]: expected a finite fp16 number, got an integer of 1329 bits"),
    # pixel bounds outside the format's fields: refused, not wrapped or clipped
    (_image("T_R8", extra="data = { high = -5 }\n"),
     r"\.data\.high: -5 is outside T_R8's pixel range 0\.\.255"),
    (_image("T_A2B10G10R10", extra="data = { high = -5 }\n"),
     r"\.data\.high: -5 is outside T_A2B10G10R10's pixel range 0\.\.1023"),
    (_image("T_A2B10G10R10", extra="data = { low = 2000, high = 3000 }\n"),
     r"\.data\.low: 2000 is outside T_A2B10G10R10's pixel range 0\.\.1023"),
    (_image("T_R16_I", extra="data = { low = -40000 }\n"),
     r"\.data\.low: -40000 is outside T_R16_I's pixel range -32768\.\.32767"),
    (_image("T_A16B16G16R16_F", extra="data = { high = 1e5 }\n"),
     r"\.data\.high: 100000\.0 is outside T_A16B16G16R16_F's pixel range -65504\.\.65504"),
    # the mean is the convertor's: without it, it would do nothing
    (_image("T_A8B8G8R8", "int8", "pixel_cvt = false\nmean = [1, 2, 3, 4]\n"),
     r"\.mean: the mean is subtracted by the CDMA convertor, off here"),
    (_image("T_R16_F", "fp16", "mean = [1.0, 0, 0, 0]\n"),
     r"\.mean: the mean is subtracted by the CDMA convertor"),
    ('pixel_format = 3\ninput = [1, 4, 4]', r"\.pixel_format: expected a format name"),
    (_image("T_R8", "fp16", 'data = { specials = ["nan"] }\n'),
     r"\.data\.specials: T_R8's pixels are integers"),
    (_image("T_R8", extra="pixel_cvt = [0, 1, 64]\n"), r"\.pixel_cvt\[2\]: 64 is outside 0\.\.63"),
    ('pixel_format = "T_R9"\ninput = [1, 4, 4]', r"\.pixel_format: unknown pixel format 'T_R9'"),
    (_image("T_R8").replace("[1,", "[3,"), r"\.input: T_R8 has 1 channels, not 3"),
]


@pytest.mark.parametrize("body, message", ILLEGAL)
def test_illegal_pixel_settings_name_key_and_rule(tmp_path, capsys, body, message):
    assert_refused(tmp_path, capsys, _spec(tmp_path, body), message)


@pytest.mark.parametrize("name, low, high", [("T_R8", 255, 255), ("T_R10G10B10A2", 1023, 1023),
                                             ("T_R16_I", -32768, -32768)])
def test_pixel_bounds_reach_the_field_edges(tmp_path, name, low, high):
    """The edges of the pixel range are legal and the pixels hold them (no wrap)."""
    body = _image(name, extra=f"data = {{ low = {low}, high = {high} }}\n")
    generate(_spec(tmp_path, body), tmp_path / "o", fmt="txn")
    f = pixel_format(name)
    pixels = np.frombuffer(read_hex_dat(tmp_path / "o" / "layer0_in1.dat"), np.uint8)
    assert pixels.size and main(["run", str(tmp_path / "o" / "input.txn")]) == 0
    if f.dtype == np.uint8:
        assert (pixels == high).sum() == 5 * 7  # every pixel, none wrapped


def test_pixel_keys_need_image_mode(tmp_path, capsys):
    path = tmp_path / "d.toml"
    path.write_text('config = "nv_full"\n[[layer]]\nunit = "conv"\ninput = [4, 5, 5]\n'
                    'pixel_offset = 2\n')
    with pytest.raises(SimError, match=r"\.pixel_offset: an image-input setting: needs mode"):
        generate(path, tmp_path / "out")
