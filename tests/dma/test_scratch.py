"""Scratch memory (sim.dma.feature.scratch_bytes): reused per slot and thread, never shared
between slots or threads; writes through it leave memory as new windows did."""

import threading

import numpy as np

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
