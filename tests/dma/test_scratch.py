"""Scratch memory (sim.dma.feature.scratch_bytes): reused per slot and thread, never shared
between slots or threads; writes through it leave memory as new windows did."""

import threading

import numpy as np
import pytest

from sim.dma import feature


def test_a_slot_reuses_its_memory_and_grows():
    a = feature.scratch_bytes(1000, "test slot a")
    b = feature.scratch_bytes(500, "test slot a")
    assert a.size == 1000 and b.size == 500 and np.shares_memory(a, b)
    other = feature.scratch_bytes(1000, "test slot b")
    assert not np.shares_memory(a, other)
    big = feature.scratch_bytes(1 << 20, "test slot a")
    assert big.size == 1 << 20
    past = feature.scratch_bytes(feature.SCRATCH_MAX + 1, "test slot a")
    assert not np.shares_memory(past, feature.scratch_bytes(10, "test slot a"))


def test_threads_have_their_own():
    mine = feature.scratch_bytes(4096, "test slot threads")
    seen = []
    worker = threading.Thread(target=lambda: seen.append(
        feature.scratch_bytes(4096, "test slot threads")))
    worker.start()
    worker.join()
    assert not np.shares_memory(mine, seen[0])


class _Memory:
    """The write side of sim.dram.Memory: keeps copies of what it is given."""

    def __init__(self):
        self.writes = []

    def write(self, addr, data, what="", *, lines=None):
        self.writes.append((addr, np.array(data, np.uint8)))

    def notify_feature(self, *args):
        pass


def test_packed_writes_through_scratch_keep_each_cube():
    rng = np.random.default_rng(5)
    mem = _Memory()
    cubes = [rng.integers(-128, 128, shape).astype(np.int8)
             for shape in ((64, 3, 5), (32, 2, 2), (64, 3, 5))]
    for cube in cubes:
        _, height, width = cube.shape
        feature.write_feature(mem, 0x1000, cube, "int8", 32, width * 32, height * width * 32)
    for cube, (_, data) in zip(cubes, mem.writes, strict=True):
        want, _ = feature.pack_feature(cube, precision="int8", atom_bytes=32)
        np.testing.assert_array_equal(data, want)


@pytest.mark.parametrize("precision, dtype", [("int8", np.int8), ("fp16", np.uint16)])
@pytest.mark.parametrize("channels, batch", [(1, 1), (16, 1), (17, 1), (100, 1), (40, 3)])
def test_one_pixel_cubes_written_as_the_scatter_writes_them(precision, dtype, channels,
                                                            batch):
    """A packed 1x1 cube goes to memory as its bytes (no scratch window): the bytes of
    scatter_feature's window, padding channels with the pad value, one batch after another;
    a 1x1 cube with gaps between its surfaces goes through the window and keeps them."""
    rng = np.random.default_rng(channels * 10 + batch)
    info = np.iinfo(dtype)
    cube = rng.integers(info.min, info.max, (batch, channels, 1, 1), endpoint=True,
                        dtype=dtype)
    array = cube if batch > 1 else cube[0]
    for surface_stride in (32, 96):  # packed; 64 bytes of gap after each atom
        layout = feature.feature_layout(array.shape, precision, 32, 32, surface_stride,
                                        None, batch)
        mem = _Memory()
        mem.read_for_update = lambda addr, size, what, fill=0x5A: np.full(size, fill,
                                                                        np.uint8)
        feature.write_feature(mem, 0x2000, array, precision, 32, 32, surface_stride,
                              layout.batch_stride, pad_value=7)
        want = np.full(layout.extent, 0x5A, np.uint8)
        feature.scatter_feature(want, 0, layout, array, precision, pad_value=7)
        (addr, got), = mem.writes
        assert addr == 0x2000
        np.testing.assert_array_equal(got, want, err_msg=f"surface stride {surface_stride}")
        assert layout.in_atom_order == (surface_stride == 32)
