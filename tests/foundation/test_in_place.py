"""Outputs over a layer's own input: computed where the result cannot depend on DMA timing.

NVIDIA's compiler places outputs over inputs to save memory.  The result is
the hardware's when every byte the layer writes was already consumed: a
convolution's input sits in the convolution buffer once fetched, an SDP
writing each element where it read it has read it first, and a write into
the gaps of a strided input touches nothing the layer reads.  A write onto
bytes the layer still streams in is refused.  Each case is compared with the
same layer run out of place.
"""

import numpy as np
import pytest

from sim.dma.feature import pack_feature, read_feature
from sim.dram import MemoryFault
from sim.machine import Machine
from sim.program.cdp import linear_lut, program_cdp
from sim.program.conv import program
from sim.program.pdp import Pooling, program_pdp, program_pdp_rdma
from sim.program.sdp import program_sdp_output, start_sdp_add

SRC = 0x8010_0000
OUT_OF_PLACE = 0x8080_0000
CONV_UNITS = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CACC",
              "NVDLA_SDP")


def _sdp(dst: int, line: int, surface: int, cube: np.ndarray) -> np.ndarray:
    """int8 cube + 7 through X1, src and dst with the same strides; returns the output."""
    m = Machine("nv_small")
    data, lay = pack_feature(cube, precision="int8", atom_bytes=8, line_stride=line,
                             surface_stride=surface)
    m.load(SRC, data)
    start_sdp_add(m, cube.shape, (SRC, lay), (dst, lay), 7)
    m.run()
    return read_feature(m.memory(1), dst, cube.shape, "int8", 8, line, surface)


@pytest.mark.parametrize("dst_offset, line_stride, refused", [
    (0, None, False),  # in place, element for element
    (0x40, 0x80, False),  # into the gaps between the input's lines (line stride twice a line)
    (0x20, None, True),  # one line later: overwrites lines not yet read
    (0x08, 0x80, True),  # inside the lines, shifted by an atom
])
def test_sdp_output_over_its_input(dst_offset, line_stride, refused):
    rng = np.random.default_rng(5)
    cube = rng.integers(-128, 128, (16, 4, 8), dtype=np.int64).astype(np.int8)
    line = line_stride or 8 * 8  # W atoms of 8 bytes
    surface = line * 4
    if refused:
        with pytest.raises(MemoryFault, match="overlaps bytes this layer reads"):
            _sdp(SRC + dst_offset, line, surface, cube)
        return
    got = _sdp(SRC + dst_offset, line, surface, cube)
    np.testing.assert_array_equal(got, _sdp(OUT_OF_PLACE, line, surface, cube))
    np.testing.assert_array_equal(got, np.clip(cube.astype(np.int64) + 7, -128, 127))


def _conv(dst: int) -> bytes:
    """A 3x3 int8 convolution of a 16x6x6 cube at SRC, its 8x4x4 output at ``dst``."""
    rng = np.random.default_rng(9)
    x = rng.integers(-20, 20, (16, 6, 6), dtype=np.int64).astype(np.int8)
    w = rng.integers(-3, 4, (8, 16, 3, 3), dtype=np.int64).astype(np.int8)
    m = Machine("nv_small")
    program(m, x, w, precision="int8", in_addr=SRC)
    program_sdp_output(m, dst, (8, 4, 4), "int8")
    for unit in CONV_UNITS:
        m.write_reg(f"{unit}.D_OP_ENABLE_0", 1)
    assert m.run() == 1
    return m.read_memory(dst, 8 * 4 * 4)


def test_convolution_output_over_its_own_input_uses_what_the_buffer_holds():
    assert _conv(SRC) == _conv(OUT_OF_PLACE)


@pytest.mark.parametrize("write, overlaps", [
    ((0x100, 0x100), False),  # the gap between the two lines read
    ((0x0F0, 0x20), True),  # across the end of the first line
    ((0x300, 0x10), False),  # past the window
    ((0x2FF, 0x02), True),  # the last byte read
])
def test_bytes_really_moved_decide_overlap_even_at_the_top_of_64_bits(write, overlaps):
    from sim.dram import LayerAccess

    top = (1 << 64) - 0x1000
    read = LayerAccess(top, 0x300, "read", (np.array([0x200, 0x000]), 0x100))
    offset, size = write
    assert read.intersects(LayerAccess(top + offset, size, "write")) is overlaps


@pytest.mark.parametrize("write, overlaps", [
    ((0x100, 0x100), False),  # the gap between the two lines read
    ((0x0F0, 0x20), True),  # across the end of the first line
    ((0x2FF, 0x02), True),  # the last byte read
    ((0x300, 0x10), None),  # past the window: the lines are never asked for
])
def test_lines_given_as_a_function_are_made_only_when_the_windows_meet(write, overlaps):
    from sim.dram import LayerAccess

    calls = []

    def lines():
        calls.append(1)
        return np.array([0x200, 0x000]), 0x100

    read = LayerAccess(0x1000, 0x300, "read", lines)
    offset, size = write
    writes = [LayerAccess(0x1000 + offset, size, "write") for _ in range(2)]
    assert [read.intersects(w) for w in writes] == [bool(overlaps)] * 2
    assert len(calls) == (0 if overlaps is None else 1)  # made once, then kept


@pytest.mark.parametrize("base", [0x8000_0000, (1 << 64) - (1 << 20)])
def test_reads_near_a_write_are_exactly_those_whose_windows_meet_it(base):
    """Many reads (a unit moving lines): the array test picks what a pairwise test picks."""
    from sim.dram import LayerAccess, Memory

    rng = np.random.default_rng(7)
    mem = Memory()
    mem.begin_layer()
    reads = [LayerAccess(base + int(a), int(n), "r") for a, n in
             zip(rng.integers(0, 1 << 19, 200), rng.integers(1, 512, 200), strict=True)]
    for read in reads:
        mem._record_read(read)
    for a, n in zip(rng.integers(0, 1 << 19, 50), rng.integers(1, 4096, 50), strict=True):
        write = LayerAccess(base + int(a), int(n), "w")
        want = [r for r in reads if r.addr < write.addr + write.size
                and write.addr < r.addr + r.size]
        assert mem._reads_near(write) == want


def _lrn(dst: int, line: int, cube: np.ndarray) -> np.ndarray:
    """A 5-channel int8 LRN of ``cube`` at SRC through CDP, its output at ``dst`` with
    the input's strides (NVIDIA's compiler writes LRN over its own input so)."""
    m = Machine("nv_small")
    c, h, w = cube.shape
    data, lay = pack_feature(cube, precision="int8", atom_bytes=8, line_stride=line,
                             surface_stride=line * h)
    m.load(SRC, data)
    program_cdp(m, cube.shape, "int8", (SRC, lay), (dst, lay), window=5, datin=(0, 1, 0),
                datout=(0, 1, 12), lut=linear_lut("int8", 5))
    m.write_reg("NVDLA_CDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_CDP.D_OP_ENABLE_0", 1)
    assert m.run() == 1
    return read_feature(m.memory(1), dst, cube.shape, "int8", 8, line, line * h)


@pytest.mark.parametrize("dst_offset, line_stride, refused", [
    (0, None, False),  # in place: each element where it was read, fetched once
    (0x40, 0x80, False),  # into the gaps between the input's lines
    (0x20, None, True),  # one line later: overwrites lines not yet read
])
def test_lrn_output_over_its_input(dst_offset, line_stride, refused):
    rng = np.random.default_rng(11)
    cube = rng.integers(-128, 128, (20, 4, 8), dtype=np.int64).astype(np.int8)
    line = line_stride or 8 * 8
    if refused:
        with pytest.raises(MemoryFault, match="overlaps bytes this layer reads"):
            _lrn(SRC + dst_offset, line, cube)
        return
    got = _lrn(SRC + dst_offset, line, cube)
    np.testing.assert_array_equal(got, _lrn(OUT_OF_PLACE, line, cube))
    assert np.any(got != cube)  # the layer changed the data it overwrote


def _pool(dst_offset: int, out_line: int | None, cube: np.ndarray) -> np.ndarray:
    """A 2x2/2 int8 max pooling of ``cube`` at SRC through PDP_RDMA, its output at SRC +
    ``dst_offset`` (OUT_OF_PLACE for None) with line stride ``out_line`` (packed if None)."""
    m = Machine("nv_small")
    c, h, w = cube.shape
    line = w * 8
    data, lay = pack_feature(cube, precision="int8", atom_bytes=8, line_stride=line,
                             surface_stride=line * h)
    m.load(SRC, data)
    oh, ow = h // 2, w // 2
    o_line = out_line or ow * 8
    _, out_lay = pack_feature(np.zeros((c, oh, ow), np.int8), precision="int8", atom_bytes=8,
                              line_stride=o_line, surface_stride=o_line * oh)
    dst = OUT_OF_PLACE if dst_offset is None else SRC + dst_offset
    pool = Pooling("max", (2, 2), (2, 2), (0, 0, 0, 0), 0)
    program_pdp(m, cube.shape, "int8", pool, (dst, out_lay), src=(SRC, lay))
    program_pdp_rdma(m, cube.shape, "int8", pool, (SRC, lay))
    m.write_reg("NVDLA_PDP_RDMA.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    assert m.run() == 1
    return read_feature(m.memory(1), dst, (c, oh, ow), "int8", 8, o_line, o_line * oh)


@pytest.mark.parametrize("dst_offset, out_line, refused", [
    (0, None, False),  # in place, packed: each output line lands on lines already read
    (0, 8 * 8, False),  # in place with the input's line stride
    (64, None, False),  # an input line on: still behind each window's last line
    (2 * 64, None, True),  # two lines on: output line 0 onto input line 2, not yet read
    (-0x100, 8 * 8, False),  # below the input
])
def test_pooling_output_over_its_input(dst_offset, out_line, refused):
    rng = np.random.default_rng(13)
    cube = rng.integers(-128, 128, (16, 6, 8), dtype=np.int64).astype(np.int8)
    if refused:
        with pytest.raises(MemoryFault, match="overlaps bytes this layer reads"):
            _pool(dst_offset, out_line, cube)
        return
    got = _pool(dst_offset, out_line, cube)
    np.testing.assert_array_equal(got, _pool(None, out_line, cube))
    np.testing.assert_array_equal(got, cube.reshape(16, 3, 2, 4, 2).max(axis=(2, 4)))
