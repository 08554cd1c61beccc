"""Bias / PReLU / BN / EW data: BytesPerAtom, hand offsets, round trips."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.configs import get_config
from sim.dma import LayoutError
from sim.dma.operands import (
    operand_format,
    pack_operand,
    read_operand,
    read_sdp_operand,
    unpack_operand,
)

NV_FULL, NV_SMALL = get_config("nv_full"), get_config("nv_small")

# format.rst: BytesPerAtom = ElementPerAtom x ComponentsPerElement x BytesPerComponent
BYTES_PER_ATOM = [
    ("bias", "int8", 1, 1, 32),
    ("bias", "int8", 2, 1, 64),
    ("prelu", "int16", 2, 1, 32),
    ("bn", "int8", 1, 2, 64),
    ("bn", "int8", 2, 2, 128),
    ("bn", "fp16", 2, 2, 64),
    ("ew", "int16", 2, 1, 32),
    ("ew", "int16", 2, 2, 64),
]


@pytest.mark.parametrize("use,precision,size,comps,expected", BYTES_PER_ATOM)
def test_bytes_per_atom(use, precision, size, comps, expected):
    fmt = operand_format(use, precision, size, comps)
    assert fmt.bytes_per_atom(32) == expected


def test_bn_per_channel_pairs_by_hand():
    # int8 pipeline, two-byte components: channel c at 4c, ALU then MUL
    fmt = operand_format("bn", "int8", data_size=2)
    pairs = np.array([[10, -20, 30], [1000, -2000, 3000]], dtype=np.int16)
    data, layout = pack_operand(pairs, fmt, NV_FULL)
    assert data.size == 128  # one atom of 32 elements x 2 components x 2 bytes
    words = data.view("<i2")
    assert list(words[:6]) == [10, 1000, -20, -2000, 30, 3000]
    assert np.all(words[6:] == 0)
    back = unpack_operand(data, 0, fmt, 3, cfg=NV_FULL)
    assert np.array_equal(back, pairs)


def test_bias_per_element_offsets_by_hand():
    # int16 EW with both components: 16 elements x 4 bytes = 64-byte atoms
    fmt = operand_format("ew", "int16", components=2, per_element=True)
    rng = np.random.default_rng(0)
    cube = rng.integers(-30000, 30000, (2, 20, 2, 3)).astype(np.int16)
    data, layout = pack_operand(cube, fmt, NV_FULL)
    assert (layout.line_stride, layout.surface_stride) == (192, 384)
    off = layout.offset(17, 1, 2)
    assert off == 384 + 192 + 2 * 64 + 1 * 4
    assert data[off : off + 4].view("<i2").tolist() == [cube[0, 17, 1, 2], cube[1, 17, 1, 2]]


@settings(max_examples=30, deadline=None)
@given(
    use=st.sampled_from(["bias", "prelu", "bn", "ew"]),
    precision=st.sampled_from(["int8", "int16", "fp16"]),
    size=st.sampled_from([1, 2]), comps=st.sampled_from([1, 2]),
    per_element=st.booleans(),
    c=st.integers(1, 40), h=st.integers(1, 4), w=st.integers(1, 4),
    gap=st.integers(0, 2), seed=st.integers(0, 2**32 - 1),
    cfg=st.sampled_from([NV_FULL, NV_SMALL]),
)
def test_round_trip(use, precision, size, comps, per_element, c, h, w, gap, seed, cfg,
                    flat_memory):
    if precision != "int8":
        size = 2  # a 16-element atom of one-byte components is not a whole memory atom
    if use == "prelu":
        comps, per_element = 1, False
    fmt = operand_format(use, precision, size, comps, per_element)
    dims = (c, h, w) if per_element else (c,)
    shape = ((2,) if comps == 2 else ()) + dims
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.int8 if size == 1 else np.int16)
    arr = rng.integers(info.min, info.max + 1, shape).astype(fmt.dtype)
    strides = {}
    if per_element:
        atom = fmt.bytes_per_atom(cfg.atom_bytes)
        strides = dict(line_stride=(w + gap) * atom, surface_stride=(w + gap) * atom * h + gap * 32)
    data, layout = pack_operand(arr, fmt, cfg, **strides)
    hw = (h, w) if per_element else (1, 1)
    back = unpack_operand(data, 0, fmt, c, *hw, cfg=cfg, **strides)
    assert np.array_equal(back, arr)
    mem = flat_memory(64 + data.size)
    mem.write(64, data)
    got = read_operand(mem, 64, fmt, c, *hw, atom_bytes=cfg.atom_bytes, **strides)
    assert np.array_equal(got, arr)


ERRORS = [
    (lambda: pack_operand(np.zeros(4, np.int8), operand_format("bias", "int16", 1), NV_FULL),
     "BytesPerAtom 16 .* is not a whole memory atom"),
    (lambda: operand_format("bn", "fp16", data_size=1), "fp16 operands take 2 bytes"),
    (lambda: operand_format("prelu", "int8", components=2), "PReLU data is per channel"),
    (lambda: operand_format("gamma", "int8"), "unknown operand use"),
    (lambda: unpack_operand(bytes(256), 16, operand_format("bias", "int8"), 4, atom_bytes=32),
     r"bias: start address 0x10 is not 32-byte aligned \(format.rst Table 35\)"),
    (lambda: pack_operand(np.zeros((4, 2, 2), np.int8),
                          operand_format("ew", "int8", per_element=True), atom_bytes=32,
                          line_stride=32),
     "line stride 0x20 is smaller than a line"),
]


@pytest.mark.parametrize("call,message", ERRORS)
def test_errors(call, message):
    with pytest.raises(LayoutError, match=message):
        call()


def test_sdp_reader_matches_documented_formats(flat_memory):
    fmt = operand_format("ew", "int16", components=2, per_element=True)
    rng = np.random.default_rng(9)
    cube = rng.integers(-30000, 30000, (2, 20, 2, 3)).astype(np.int16)
    data, layout = pack_operand(cube, fmt, NV_FULL)
    mem = flat_memory(data.size + 32)
    mem.write(32, data)
    got = read_sdp_operand(mem, 32, precision="int16", data_size=2, components=2,
                           per_element=True, channels=20, height=2, width=3, atom_bytes=32,
                           line_stride=layout.line_stride, surface_stride=layout.surface_stride)
    assert got.dtype == np.int64 and np.array_equal(got, cube)


def test_sdp_reader_undocumented_combinations(flat_memory):
    # fp16 pipeline with one-byte components, per channel: a 16-byte operand atom
    mem = flat_memory(64)
    mem.write(0, np.array([1, -2, 3, -4], np.int8).view(np.uint8))
    got = read_sdp_operand(mem, 0, precision="fp16", data_size=1, components=1,
                           per_element=False, channels=4, height=5, width=5, atom_bytes=32)
    assert got.shape == (1, 4, 1, 1)
    assert got[0, :, 0, 0].tolist() == [1, -2, 3, -4]
    with pytest.raises(LayoutError, match="fp16 operands take 2 bytes"):
        operand_format("bias", "fp16", data_size=1)
