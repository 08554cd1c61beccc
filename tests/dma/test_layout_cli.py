"""nvdla-sim layout pack/unpack: every format round-trips through files."""

import numpy as np
import pytest

from sim.cli.layout import main as layout_main

RNG = np.random.default_rng(7)


def _ints(shape, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


# (format, array, --shape for unpack, extra options)
CASES = [
    ("feature", _ints((40, 3, 5), np.int8), "40,3,5", []),
    ("feature", _ints((40, 3, 5), np.int16), "40,3,5", ["--precision", "int16",
                                                       "--line-stride", "0xc0"]),
    ("feature", RNG.standard_normal((2, 20, 2, 2)).astype(np.float16), "2,20,2,2",
     ["--precision", "fp16", "--line-stride", "64", "--surface-stride", "256",
      "--batch-stride", "512"]),
    ("feature", _ints((10, 2, 3), np.int8), "10,2,3", ["--config", "nv_small"]),
    ("weight-dc", _ints((33, 70, 3, 3), np.int8), "33,70,3,3", []),
    ("weight-dc", RNG.standard_normal((17, 5, 1, 2)).astype(np.float16), "17,5,1,2",
     ["--precision", "fp16"]),
    ("weight-img", _ints((4, 3, 5, 3), np.int16), "4,3,5,3",
     ["--precision", "int16", "--post-extension", "2"]),
    ("weight-winograd", _ints((20, 8, 4, 4), np.int8), "20,8,4,4", []),
    ("bias", _ints((20,), np.int16), "20", ["--precision", "int16"]),
    ("bias", _ints((20, 2, 3), np.int8), "20,2,3", ["--per-element"]),
    ("prelu", _ints((7,), np.int8), "7", ["--data-size", "2"]),
    ("bn", RNG.standard_normal((2, 20)).astype(np.float16), "20", ["--precision", "fp16"]),
    ("ew", _ints((2, 9, 2, 2), np.int16), "9,2,2",
     ["--precision", "int16", "--components", "2"]),
    ("T_A8B8G8R8", _ints((4, 3, 9), np.uint8), "4,3,9", ["--x-offset", "7"]),
    ("T_R16_F", RNG.standard_normal((1, 2, 3)).astype(np.float16), "1,2,3", []),
    ("T_Y10___V10U10_N444", _ints((3, 2, 5), np.uint16), "3,2,5",
     ["--line-stride", "64", "--uv-line-stride", "96"]),
]


@pytest.mark.parametrize("suffix", [".bin", ".dat"])
@pytest.mark.parametrize("name,array,shape,options", CASES)
def test_round_trip(tmp_path, name, array, shape, options, suffix):
    if name == "prelu":
        array = array.astype(np.int16)  # --data-size 2
    src, image, back = tmp_path / "in.npy", tmp_path / f"image{suffix}", tmp_path / "out.npy"
    np.save(src, array)
    assert layout_main(["pack", name, str(src), str(image), *options]) == 0
    unpack_options = list(options)
    if "--precision" not in options and array.dtype == np.int16 and not name.startswith("T_"):
        unpack_options += ["--precision", "int16"]
    assert layout_main(["unpack", name, str(image), str(back), "--shape", shape,
                        *unpack_options]) == 0
    got = np.load(back)
    assert got.dtype == array.dtype
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8), array.view(np.uint8))


def test_winograd_transforms_3x3(tmp_path):
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float16)
    np.save(tmp_path / "w.npy", w)
    assert layout_main(["pack", "weight-winograd", str(tmp_path / "w.npy"),
                        str(tmp_path / "w.bin")]) == 0
    assert layout_main(["unpack", "weight-winograd", str(tmp_path / "w.bin"),
                        str(tmp_path / "w4.npy"), "--shape", "2,16,4,4",
                        "--precision", "fp16"]) == 0
    w4 = np.load(tmp_path / "w4.npy")
    assert w4[0, 0, 0, 0] == w[0, 0, 0, 0] and w4[1, 2, 3, 3] == w[1, 2, 2, 2]


ERRORS = [
    (["pack", "feature", "IN", "OUT", "--line-stride", "33"], "not 32-byte aligned"),
    (["pack", "feature", "IN", "OUT", "--line-stride", "32"], "smaller than a line"),
    (["pack", "T_A8B8G8R8", "IN", "OUT"], "takes 4 channel"),
    (["pack", "T_NOPE", "IN", "OUT"], "unknown pixel format"),
    (["unpack", "feature", "MISSING", "OUT", "--shape", "1,1,1"], "missing.bin"),
]


@pytest.mark.parametrize("argv,message", ERRORS)
def test_errors_are_one_line(tmp_path, capsys, argv, message):
    np.save(tmp_path / "in.npy", np.zeros((3, 2, 2), np.int8))
    paths = {"IN": tmp_path / "in.npy", "OUT": tmp_path / "out",
             "MISSING": tmp_path / "missing.bin"}
    argv = [str(paths.get(a, a)) for a in argv]
    assert layout_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
