"""Helpers shared by the layout tests."""

import numpy as np
import pytest


class FlatMemory:
    """The memory interface DMA engines use: read_array / write on a flat buffer (and
    notify_feature, which tells nobody here)."""

    def __init__(self, size: int, fill: int = 0xEE):
        self.buf = np.full(size, fill, dtype=np.uint8)

    def read_array(self, addr: int, size: int, what: str = "", *, lines=None,
                   mode: str = "") -> np.ndarray:
        return self.buf[addr : addr + size].copy()

    def read_for_update(self, addr: int, size: int, what: str = "") -> np.ndarray:
        return self.read_array(addr, size)

    def read(self, addr: int, size: int) -> bytes:
        return self.read_array(addr, size).tobytes()

    def write(self, addr: int, data, what: str = "", *, lines=None) -> None:
        raw = np.frombuffer(bytes(data), np.uint8) if isinstance(data, bytes) else data
        self.buf[addr : addr + raw.size] = raw

    def notify_feature(self, addr: int, layout, precision: str, what: str = "") -> None:
        pass


@pytest.fixture(scope="session")
def flat_memory():
    return FlatMemory
