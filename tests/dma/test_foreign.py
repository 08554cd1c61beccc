"""Foreign layouts (DV-SDK, Kneron): offsets by hand, round trips, errors, CLI."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cli.layout import main as layout_main
from sim.dma import LayoutError
from sim.dma.foreign import (
    KNERON_LAYOUTS,
    dvsdk_byte_offset,
    dvsdk_size,
    kneron_byte_offset,
    kneron_size,
    pack_dvsdk,
    pack_foreign,
    pack_kneron,
    unpack_dvsdk,
    unpack_foreign,
    unpack_kneron,
)

# -- DV-SDK -------------------------------------------------------------------

# 20 channels (chunks of 8, 8, 4), H=3, W=5: (c, y, x, DWHC element, DHWC element)
DV_20 = [
    (0, 0, 0, 0, 0),
    (7, 0, 0, 7, 7),
    (0, 1, 0, 8, 40),  # DWHC: y is inner (next pixel); DHWC: next row = 5 pixels of 8
    (0, 0, 1, 24, 8),  # DWHC: next column = 3 pixels of 8
    (8, 0, 0, 120, 120),  # second chunk starts after 8*3*5 elements
    (9, 0, 1, 145, 129),
    (16, 0, 0, 240, 240),  # last chunk: 4 channels per pixel
    (17, 1, 0, 245, 261),
    (17, 2, 4, 297, 297),  # 16*15 + (4*3 + 2)*4 + 1 = 240 + (2*5 + 4)*4 + 1
    (19, 2, 4, 299, 299),  # the last element: no padding
]


@pytest.mark.parametrize("c,y,x,dwhc,dhwc", DV_20)
def test_dvsdk_20_channel_offsets_by_hand(c, y, x, dwhc, dhwc):
    assert dvsdk_byte_offset((20, 3, 5), c, y, x) == 2 * dwhc
    assert dvsdk_byte_offset((20, 3, 5), c, y, x, transpose=True) == 2 * dhwc
    # a leading depth axis places whole 600-byte tensors one after another
    assert dvsdk_byte_offset((2, 20, 3, 5), c, y, x, d=1) == 600 + 2 * dwhc


@pytest.mark.parametrize("transpose", [False, True])
def test_dvsdk_pack_puts_each_element_at_its_offset(transpose):
    shape = (2, 20, 3, 5)
    codes = np.arange(np.prod(shape), dtype=np.uint16).reshape(shape) + 0x1000
    raw = pack_dvsdk(codes, transpose)
    assert len(raw) == dvsdk_size(shape) == 1200
    for d, c, y, x in np.ndindex(*shape):
        off = dvsdk_byte_offset(shape, c, y, x, d=d, transpose=transpose)
        assert int.from_bytes(raw[off:off + 2], "little") == codes[d, c, y, x]


def test_dvsdk_float16_little_endian():
    raw = pack_dvsdk(np.array([[[1.0]], [[-2.0]]], dtype=np.float16))
    assert raw == bytes([0x00, 0x3C, 0x00, 0xC0])


dv_shapes = st.tuples(st.integers(1, 3), st.integers(1, 19), st.integers(1, 4),
                      st.integers(1, 5), st.booleans())


@settings(max_examples=40, deadline=None)
@given(dv_shapes, st.booleans(), st.integers(0, 2**32 - 1))
def test_dvsdk_round_trip(dims, transpose, seed):
    depth, c, h, w, batched = dims
    shape = (depth, c, h, w) if batched else (c, h, w)
    bits = np.random.default_rng(seed).integers(0, 1 << 16, shape).astype(np.uint16)
    raw = pack_dvsdk(bits, transpose)
    assert len(raw) == dvsdk_size(shape)
    got = unpack_dvsdk(raw, shape, transpose)
    assert got.dtype == np.float16 and got.shape == shape
    assert np.array_equal(got.view(np.uint16), bits)  # NaN payloads and -0.0 kept
    last = (depth - 1 if batched else 0, c - 1, h - 1, w - 1)
    assert dvsdk_byte_offset(shape, *last[1:], d=last[0], transpose=transpose) == len(raw) - 2


# -- Kneron -------------------------------------------------------------------

def _coded(shape, code):
    """int8 array whose element (c, y, x) is code(c, y, x)."""
    c, y, x = np.indices(shape)
    return code(c, y, x).astype(np.int8)


def test_kneron_4w4c8b_entry_table():
    a = _coded((4, 1, 8), lambda c, y, x: 10 * x + c)  # P{x}CH{c} = 10x + c
    raw = pack_kneron(a, "4W4C8B")
    assert len(raw) == 32
    assert raw[5] == 11  # byte 5 of entry 0 is P1CH1
    assert list(raw[:16]) == [10 * (j // 4) + j % 4 for j in range(16)]  # P0CH0 ... P3CH3
    assert list(raw[16:32]) == [10 * (4 + j // 4) + j % 4 for j in range(16)]  # pixels 4..7


def test_kneron_16w1c8b_entry_table():
    raw = pack_kneron(_coded((1, 1, 32), lambda c, y, x: x), "16W1C8B")
    assert raw[16] == 16  # entry 1, byte 0 is P16CH0
    assert list(raw) == list(range(32))


def test_kneron_1w16c8b_entry_table():
    raw = pack_kneron(_coded((16, 1, 3), lambda c, y, x: 16 * x + c), "1W16C8B")
    assert raw[2 * 16 + 15] == 47  # entry 2, byte 15 is P2CH15
    assert list(raw) == list(range(48))  # entry k = pixel k, byte j = CHj


def test_kneron_padding_is_zero():
    # 5 channels -> blocks of 4 channels (3 zero channels), width 3 -> 4 (one zero pixel)
    a = np.full((5, 2, 3), -1, dtype=np.int8)
    raw = np.frombuffer(pack_kneron(a, "4W4C8B"), np.int8).reshape(2, 2, 4, 4)
    assert raw.size == kneron_size(a.shape, "4W4C8B") == 64
    assert (raw[:, :, 3, :] == 0).all()  # pixel 3 of every row
    assert (raw[1, :, :3, 1:] == 0).all() and (raw[1, :, :3, 0] == -1).all()
    assert (raw[0, :, :3, :] == -1).all()


# (layout, shape, (c, y, x), byte offset)
KNERON_OFFSETS = [
    ("4W4C8B", (4, 1, 4), (1, 0, 1), 5),
    ("16W1C8B", (1, 1, 32), (0, 0, 16), 16),
    ("1W16C8B", (16, 1, 3), (15, 0, 2), 47),
    ("4W4C8B", (6, 2, 5), (5, 1, 4), 2 * 32 + 32 + 16 + 1),  # Wa=8: rows of 32 bytes
    ("16W1C8B", (3, 2, 17), (2, 1, 0), 2 * 64 + 32),  # Wa=32: rows of 32, channels of 64
    ("1W16C8B", (20, 3, 2), (17, 2, 1), 96 + 2 * 32 + 16 + 1),  # block 1 after 3*2*16 bytes
]


@pytest.mark.parametrize("layout,shape,index,offset", KNERON_OFFSETS)
def test_kneron_offsets_by_hand(layout, shape, index, offset):
    assert kneron_byte_offset(shape, layout, *index) == offset
    assert kneron_byte_offset(shape, f"kneron-{layout.lower()}", *index) == offset


def test_kneron_kl520_width_alignment():
    a = np.arange(4 * 5, dtype=np.int8).reshape(4, 1, 5)
    raw = pack_kneron(a, "4W4C8B", width_align=16)
    assert len(raw) == kneron_size(a.shape, "4W4C8B", width_align=16) == 64
    assert kneron_byte_offset(a.shape, "4W4C8B", 0, 0, 4, width_align=16) == 16
    assert np.array_equal(unpack_kneron(raw, a.shape, "4W4C8B", width_align=16), a)


kn_shapes = st.tuples(st.integers(1, 40), st.integers(1, 3), st.integers(1, 37))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(KNERON_LAYOUTS)), kn_shapes, st.integers(0, 2**32 - 1))
def test_kneron_round_trip(layout, shape, seed):
    a = np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)
    raw = pack_kneron(a, layout)
    assert len(raw) == kneron_size(shape, layout) and len(raw) % 16 == 0
    got = unpack_kneron(raw, shape, layout)
    assert got.dtype == np.int8 and np.array_equal(got, a)
    stored = np.frombuffer(raw, np.int8)
    offsets = [kneron_byte_offset(shape, layout, *i) for i in np.ndindex(*shape)]
    assert np.array_equal(stored[offsets], a.ravel())
    mask = np.ones(len(raw), bool)
    mask[offsets] = False
    assert not stored[mask].any()  # everything else is zero padding


# -- errors -------------------------------------------------------------------

ERRORS = [
    (lambda: pack_dvsdk(np.zeros((2, 1, 1), np.float32)), "must be float16"),
    (lambda: pack_dvsdk(np.zeros((2, 1), np.float16)), "(C, H, W) or (D, C, H, W)"),
    (lambda: unpack_dvsdk(bytes(11), (3, 1, 2)), "data has 11 bytes, the shape needs 12"),
    (lambda: unpack_dvsdk(bytes(12), (3, 0, 2)), "positive dimensions"),
    (lambda: dvsdk_byte_offset((20, 3, 5), 20, 0, 0), "outside the shape"),
    (lambda: pack_kneron(np.zeros((2, 1, 1), np.uint8), "4W4C8B"), "must be int8"),
    (lambda: pack_kneron(np.zeros((2, 1, 1), np.int16), "1W16C8B"), "must be int8"),
    (lambda: pack_kneron(np.zeros((1, 2, 1, 1), np.int8), "1W16C8B"), "is not (C, H, W)"),
    (lambda: unpack_kneron(bytes(31), (17, 1, 1), "1W16C8B"), "data has 31 bytes, the shape "
     "needs 32"),
    (lambda: pack_kneron(np.zeros((1, 1, 1), np.int8), "8W2C8B"), "unknown Kneron layout"),
    (lambda: pack_kneron(np.zeros((1, 1, 1), np.int8), "4W4C8B", width_align=6),
     "not a positive multiple of 4"),
    (lambda: pack_foreign("kneron-16w1c8b", np.zeros((1, 1, 1), np.int8), transpose=True),
     "applies to dvsdk only"),
    (lambda: unpack_foreign("nope", bytes(4), (1, 1, 1)), "unknown foreign layout"),
]


@pytest.mark.parametrize("call,message", ERRORS)
def test_errors_name_the_rule(call, message):
    with pytest.raises(LayoutError) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value)


# -- CLI ----------------------------------------------------------------------

RNG = np.random.default_rng(11)
DV_DATA = RNG.standard_normal((20, 3, 5)).astype(np.float16)
KN_DATA = RNG.integers(-128, 128, (21, 2, 19)).astype(np.int8)

# (format, array, --shape, options)
CLI_CASES = [
    ("dvsdk", DV_DATA, "20,3,5", []),
    ("dvsdk", DV_DATA, "20,3,5", ["--transpose"]),
    ("dvsdk", DV_DATA.reshape(4, 5, 3, 5), "4,5,3,5", []),
    ("kneron-4w4c8b", KN_DATA, "21,2,19", []),
    ("kneron-1w16c8b", KN_DATA, "21,2,19", []),
    ("KNERON-16W1C8B", KN_DATA, "21,2,19", []),
]


@pytest.mark.parametrize("suffix", [".bin", ".dat"])
@pytest.mark.parametrize("name,array,shape,options", CLI_CASES)
def test_cli_round_trip(tmp_path, name, array, shape, options, suffix):
    src, mem, back = tmp_path / "in.npy", tmp_path / f"image{suffix}", tmp_path / "out.npy"
    np.save(src, array)
    assert layout_main(["pack", name, str(src), str(mem), *options]) == 0
    if suffix == ".bin":
        assert mem.read_bytes() == pack_foreign(name, array, "--transpose" in options)
    else:
        assert mem.read_text().startswith("{")
    assert layout_main(["unpack", name, str(mem), str(back), "--shape", shape, *options]) == 0
    got = np.load(back)
    assert got.dtype == array.dtype
    assert np.array_equal(got.view(np.uint8), array.view(np.uint8))


CLI_ERRORS = [
    (["pack", "dvsdk", "INT8", "OUT"], "must be float16"),
    (["pack", "kneron-4w4c8b", "FP16", "OUT"], "must be int8"),
    (["pack", "kneron-1w16c8b", "INT8", "OUT", "--transpose"], "applies to dvsdk only"),
    (["pack", "dvsdk", "FP16", "OUT", "--precision", "int8"], "data are fp16"),
    (["unpack", "kneron-16w1c8b", "SHORT", "OUT", "--shape", "3,2,2"], "the shape needs 96"),
    (["unpack", "dvsdk", "SHORT", "OUT", "--shape", "3,2"], "(C, H, W) or (D, C, H, W)"),
]


@pytest.mark.parametrize("argv,message", CLI_ERRORS)
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    np.save(tmp_path / "int8.npy", np.zeros((3, 2, 2), np.int8))
    np.save(tmp_path / "fp16.npy", np.zeros((3, 2, 2), np.float16))
    (tmp_path / "short.bin").write_bytes(bytes(10))
    paths = {"INT8": tmp_path / "int8.npy", "FP16": tmp_path / "fp16.npy",
             "SHORT": tmp_path / "short.bin", "OUT": tmp_path / "out"}
    argv = [str(paths.get(a, a)) for a in argv]
    assert layout_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
