"""Loadable parsing, .dimg packing and EMU arithmetic against independent references."""

import struct

import numpy as np
import pytest

from sim.cli import main
from sim.errors import SimError
from sim.num.host import half_from_float32, stable_half_bits
from sim.runtime.dimg import CONVENTIONS, element_offsets, feature_meta, pack_dimg
from sim.runtime.emu import EmuTask
from sim.runtime.loadable import LoadableError, TensorDesc, parse_loadable


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, b"\xff" * 64, b"\x08\x00\x00\x00" * 4])
def test_malformed_loadable_is_a_clear_error(data):
    with pytest.raises(LoadableError):
        parse_loadable(data, "x.fbuf")


def test_cli_rejects_a_non_loadable(tmp_path, capsys):
    bad = tmp_path / "bad_fbuf"
    bad.write_bytes(b"\x10\x00\x00\x00garbage garbage garbage")
    assert main(["loadable", str(bad), "--firmware", str(tmp_path), "-o",
                 str(tmp_path / "o")]) == 2
    assert "bad_fbuf" in capsys.readouterr().err


@pytest.mark.parametrize("value, bits", [
    (1 + 2**-11, 0x3C01),  # a tie rounds away from zero (the half library's default)
    (-(1 + 2**-11), 0xBC01),
    (1 + 3 * 2**-11, 0x3C02),
    (65519.0, 0x7BFF),
    (65520.0, 0x7C00),
    (2**-25, 0x0001),
    (0.0, 0x0000),
])
def test_half_from_float32_ties_away(value, bits):
    assert int(half_from_float32(np.float32(value))) == bits


def test_half_from_float32_matches_numpy_off_ties():
    x = np.random.default_rng(3).standard_normal(20000).astype(np.float32) * 300
    exact_tie = (x.astype(np.float64) / np.exp2(np.floor(np.log2(np.abs(x))) - 10)) % 1 == 0.5
    ours = half_from_float32(x)
    assert np.array_equal(ours[~exact_tie], x[~exact_tie].astype(np.float16).view(np.uint16))


def test_stable_hash_packing_quirks():
    bits = np.array([0x7800, 0x7E00, 0x8000, 0x3C00], np.uint16)
    assert stable_half_bits(bits).tolist() == [0x0000, 0x77C0, 0x8000, 0x3C00]


def _tensor(c, h, w, dtype, line, surface, size):
    return TensorDesc("t", 0, 0, size, 0, 1, dtype, 2, 36, 0, (1, c, h, w),
                      (2, line, surface, 0, 0, 0, 0, 0))


def test_dimg_packs_fp16_feature_in_chw_order():
    c, h, w = 20, 2, 3
    line, surface = w * 32, h * w * 32
    size = 2 * surface
    cube = np.arange(c * h * w, dtype=np.float16).reshape(c, h, w)
    buf = np.zeros(size, np.uint8)
    for ci in range(c):
        for y in range(h):
            for x in range(w):
                off = (ci // 16) * surface + y * line + x * 32 + (ci % 16) * 2
                buf[off : off + 2] = np.frombuffer(cube[ci, y, x].tobytes(), np.uint8)
    data = pack_dimg(buf.tobytes(), _tensor(c, h, w, 2, line, surface, size))
    assert data[:4] == b"DIMG"
    assert struct.unpack("<8I", data[4:36]) == (0, 42, w, h, c, line, surface, size)
    assert np.array_equal(np.frombuffer(data[36:], np.float16), cube.reshape(-1))
    assert element_offsets  # exported for the runtime and tests


def _softmax_reference(x16: np.ndarray) -> np.ndarray:
    x = x16.astype(np.float32)
    e = np.exp((x - x.max()).astype(np.float64)).astype(np.float32)
    total = np.float32(0)
    for v in e:
        total = np.float32(total + v)
    return half_from_float32(e / total)


def test_emu_softmax_fp16_second_revision():
    mem = bytearray(1 << 16)
    x = (np.random.default_rng(5).standard_normal(10) * 4).astype(np.float16)
    # address list: 0 network desc, 1 op list, 2 buffer list, 3 src, 4 dst
    addrs = [0x0, 0x100, 0x200, 0x1000, 0x2000]
    mem[0:6] = struct.pack("<hhH", 1, 2, 1)
    mem[0x100:0x100 + 13] = struct.pack("<B3xffB", 1, 1.0, 1.0, 1)
    for idx, at in ((3, 0x200), (4, 0x300)):
        mem[at:at + 26] = struct.pack("<hIIHHHHII", idx, 0, 32, 3, 1, 1, 10, 32, 32)
    mem[0x1000:0x1000 + 20] = x.tobytes()
    task = EmuTask(addrs, lambda a, n: bytes(mem[a:a + n]),
                   lambda a, d: mem.__setitem__(slice(a, a + len(d)), d))
    assert task.run() == 1
    got = np.frombuffer(bytes(mem[0x2000:0x2000 + 20]), np.uint16)
    want = _softmax_reference(x)
    # glibc expf and float64 exp rounded to float32 agree except on rare last-bit cases
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert got.tolist() == [int(v) for v in got]


def test_pgm_to_fp16_and_int8_features(tmp_path):
    from sim.runtime.image import image_to_tensor, read_pgm

    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    path = tmp_path / "x.pgm"
    path.write_bytes(b"P5\n# comment\n4 3\n255\n" + pixels.tobytes())
    assert np.array_equal(read_pgm(path), pixels)
    line = 4 * 32
    half = image_to_tensor(pixels, _tensor(1, 3, 4, 2, line, 3 * line, 3 * line), (10.0,) * 4, 2)
    got = np.frombuffer(half, np.uint16).reshape(3, 4, 16)[:, :, 0]
    want = ((pixels.astype(np.float32) - 10) / 2).astype(np.float16).view(np.uint16)
    assert np.array_equal(got, want)  # halves of integers: no ties here
    assert not np.frombuffer(half, np.uint16).reshape(3, 4, 16)[:, :, 1:].any()
    i8 = image_to_tensor(pixels, _tensor(1, 3, 4, 4, line, 3 * line, 3 * line))
    got8 = np.frombuffer(i8, np.int8).reshape(3, 4, 32)[:, :, 0]
    assert np.array_equal(got8, np.floor(pixels.astype(int) * 127 / 255 + 0.5).astype(np.int8))


@pytest.mark.parametrize("header", [b"P2\n4 3\n255\n", b"P5\n4 3\n65535\n", b"P5\n4\n"])
def test_pgm_rejects_other_images(tmp_path, header):
    from sim.errors import SimError
    from sim.runtime.image import read_pgm

    path = tmp_path / "x.pgm"
    path.write_bytes(header + bytes(12))
    with pytest.raises(SimError):
        read_pgm(path)


@pytest.mark.parametrize("size, piece", [(0, 8), (1, 8), (7, 8), (64, 8), (67, 8), (1000, 16),
                                         (3 << 16, 1 << 20), ((3 << 16) + 5, 1 << 14)])
def test_a_recording_compares_memories_as_their_bytes(size, piece):
    """A recorded run compares each memory with the bytes it held before a task
    (runner._holds: pieces of page views, 64-bit words where they fit) and copies it as a
    read-only array (runner._copy): both say what ``Memory.read`` and ``==`` say, for a
    difference in any byte (first, last, across a piece's end, in a never-written page)."""
    from sim.dram import Memory
    from sim.runtime.runner import _copy, _holds

    rng = np.random.default_rng(size)
    mem, base = Memory(), 0x10_0000 - 3  # ranges across a page's end
    data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    mem.write(base, data)
    copied = _copy(mem, base, size)
    assert copied.tobytes() == mem.read(base, size) == data and not copied.flags.writeable
    assert _holds(mem, base, size, data) and _holds(mem, base, size, copied)
    for at in sorted({0, size - 1, piece - 1, piece, size // 2} & set(range(size))):
        changed = bytearray(data)
        changed[at] ^= 0x40
        assert not _holds(mem, base, size, bytes(changed)), at
    unwritten = 0x40_0000  # pages never written read as zeros
    assert _holds(mem, unwritten, size, bytes(size))
    assert size == 0 or not _holds(mem, unwritten, size, b"\1" + bytes(size - 1))


def _x8_tensor(c, h, w):
    """An nv_small int8 output (FEATURE_X8): channel ci of pixel (y, x) at byte
    (ci // 8) * surface + y * line + x * 8 + ci % 8; and a buffer holding a random cube so."""
    line, surface = w * 8, h * w * 8
    size = -(-c // 8) * surface
    cube = np.random.default_rng(c * h * w).integers(-128, 128, (c, h, w)).astype(np.int8)
    buf = np.zeros(size, np.uint8)
    for ci in range(c):
        for y in range(h):
            for x in range(w):
                buf[(ci // 8) * surface + y * line + x * 8 + ci % 8] = cube[ci, y, x].view(np.uint8)
    tensor = TensorDesc("t", 0, 0, size, 0, 3, 4, 2, 37, 0, (1, c, h, w),
                        (1, line, surface, 0, 0, 0, 0, 0))
    return tensor, buf.tobytes(), cube


@pytest.mark.parametrize("c, h, w", [(10, 1, 1), (1000, 1, 1), (5, 7, 4), (17, 3, 2)])
def test_current_runtime_packs_int8_x8_outputs_in_groups_of_8(c, h, w):
    tensor, buf, cube = _x8_tensor(c, h, w)
    data = pack_dimg(buf, tensor, "current")
    line, surface = tensor.strides[1], tensor.strides[2]
    assert struct.unpack("<8I", data[4:36]) == (0, 41, w, h, c, line, surface, tensor.size)
    assert np.array_equal(np.frombuffer(data[36:], np.int8), cube.reshape(-1))


def test_regression_packing_of_a_wide_x8_output_names_the_current_convention():
    """Groups of 32 read past an nv_small output wider than a pixel: the error says why and
    what NVIDIA's current runtime does."""
    tensor, buf, _ = _x8_tensor(5, 1, 4)
    with pytest.raises(SimError, match=r"past its 32-byte buffer in groups of 32 channels "
                       r"\(NVIDIA's current runtime reads it in groups of 8: --dimg current\)"):
        pack_dimg(buf, tensor)


@pytest.mark.parametrize("pixel_format, dtype, regression, current", [
    (36, 4, 40, 40), (37, 4, 40, 41), (36, 3, 41, 42), (37, 3, 41, 42), (36, 2, 42, 43),
    (37, 2, 42, 43)])
def test_surface_format_codes_of_each_convention(pixel_format, dtype, regression, current):
    tensor = TensorDesc("t", 0, 0, 64, 0, 3, dtype, 2, pixel_format, 0, (1, 1, 1, 1),
                        (1, 32, 32, 0, 0, 0, 0, 0))
    assert [feature_meta(tensor, convention)[0].surface_format
            for convention in CONVENTIONS] == [regression, current]


def test_loadable_cli_offers_every_convention():
    from sim.cli.loadable import build_parser

    action = next(a for a in build_parser()._actions if a.dest == "dimg")
    assert tuple(action.choices) == CONVENTIONS and action.default == CONVENTIONS[0]
