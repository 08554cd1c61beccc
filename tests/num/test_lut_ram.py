"""sim.num.lut.LutRam keeps its entries as Python ints and hands out arrays made
after the last write: random access streams against a plain array model."""

import numpy as np
import pytest

from sim.num.lut import LE_ENTRIES, LO_ENTRIES, LutRam


class ArrayRam:
    """The straightforward model: int64 arrays written entry by entry."""

    def __init__(self, clamp):
        self.tables = [np.zeros(LE_ENTRIES, np.int64), np.zeros(LO_ENTRIES, np.int64)]
        self.clamp, self.table, self.addr, self.writing = clamp, 0, 0, False

    def configure(self, value):
        self.addr, self.table = value & 0x3FF, (value >> 16) & 1
        self.writing = bool(value >> 17 & 1)

    def _entry(self):
        size = self.tables[self.table].size
        return self.addr if self.addr < size else (size - 1 if self.clamp else None)

    def _advance(self):
        if self.addr < self.tables[self.table].size - 1:
            self.addr += 1

    def write(self, value):
        if self.writing:
            entry = self._entry()
            if entry is not None:
                v = value & 0xFFFF
                self.tables[self.table][entry] = v - 0x10000 if v & 0x8000 else v
            self._advance()

    def read(self):
        if self.writing:
            return 0
        entry = self._entry()
        value = 0 if entry is None else int(self.tables[self.table][entry]) & 0xFFFF
        self._advance()
        return value


@pytest.mark.parametrize("past_end", ["ignore", "clamp"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_streams_match_the_array_model(past_end, seed):
    rng = np.random.default_rng(seed)
    ram, model = LutRam(past_end=past_end), ArrayRam(past_end == "clamp")
    for _ in range(60):
        cfg = int(rng.integers(0, 2)) << 17 | int(rng.integers(0, 2)) << 16 | int(
            rng.choice([0, 1, 60, 63, 64, 65, 200, 255, 256, 257, 300, 1023]))
        ram.configure(cfg)
        model.configure(cfg)
        for _ in range(int(rng.integers(0, 12))):
            if rng.random() < 0.7:
                v = int(rng.integers(0, 1 << 32))
                ram.write(v)
                model.write(v)
            else:
                assert ram.read() == model.read()
            assert ram.addr == model.addr
        if rng.random() < 0.3:  # arrays handed out between writes follow the entries
            np.testing.assert_array_equal(ram.le, model.tables[0])
            np.testing.assert_array_equal(ram.lo, model.tables[1])
    le, lo = ram.snapshot()
    np.testing.assert_array_equal(le, model.tables[0])
    np.testing.assert_array_equal(lo, model.tables[1])
    assert le.dtype == lo.dtype == np.int64


def test_arrays_are_remade_after_a_write():
    ram = LutRam()
    ram.configure(1 << 17)
    before = ram.le
    assert ram.le is before  # no write: the same arrays
    ram.write(0xFFFF)
    assert ram.le is not before and ram.le[0] == -1 and before[0] == 0
