"""The SDP LUT RAM: LE (65 entries) and LO (257 entries) tables of 16 bits.

Software programs them through two single-buffered registers:
S_LUT_ACCESS_CFG selects the table (LUT_TABLE_ID: 0 LE, 1 LO), the first
entry (LUT_ADDR) and the direction (LUT_ACCESS_TYPE: 1 write, 0 read); each
write (or read) of S_LUT_ACCESS_DATA then stores (or returns) one entry and
advances the address, which stops at the table's last entry.
"""

from __future__ import annotations

import numpy as np

LE_ENTRIES, LO_ENTRIES = 65, 257
LE, LO = 0, 1


class LutRam:
    def __init__(self):
        self.tables = [np.zeros(LE_ENTRIES, dtype=np.int64), np.zeros(LO_ENTRIES, dtype=np.int64)]
        self.table = LE
        self.addr = 0
        self.write_mode = False

    def configure(self, value: int) -> None:
        """A write of S_LUT_ACCESS_CFG."""
        self.addr = value & 0x3FF
        self.table = (value >> 16) & 1
        self.write_mode = bool((value >> 17) & 1)

    def cfg_word(self) -> int:
        return self.addr | (self.table << 16) | (int(self.write_mode) << 17)

    def _advance(self) -> None:
        if self.addr < len(self.tables[self.table]) - 1:
            self.addr += 1

    def _index(self) -> int:
        return min(self.addr, len(self.tables[self.table]) - 1)

    def write_data(self, value: int) -> None:
        """A write of S_LUT_ACCESS_DATA (ignored unless the access type is write)."""
        if not self.write_mode:
            return
        v = value & 0xFFFF
        self.tables[self.table][self._index()] = v - 0x10000 if v & 0x8000 else v
        self._advance()

    def read_data(self) -> int:
        """A read of S_LUT_ACCESS_DATA (returns 0 unless the access type is read)."""
        if self.write_mode:
            return 0
        value = int(self.tables[self.table][self._index()]) & 0xFFFF
        self._advance()
        return value

    @property
    def le(self) -> np.ndarray:
        return self.tables[LE]

    @property
    def lo(self) -> np.ndarray:
        return self.tables[LO]
