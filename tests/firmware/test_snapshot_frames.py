"""The status-register snapshots the bridge sends with each call and read answer
(sim.firmware.driver Firmware._snapshot), made by a plan kept per 'before': the same
bytes as packing entry by entry, as registers change and the firmware's reads are learnt."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from sim.firmware import driver
from sim.firmware.driver import ENTRY, Firmware


class Machine:
    """Registers as a dict, read by address or by the register at an address."""

    def __init__(self):
        self.values: dict[int, int] = {}
        self.regfile = SimpleNamespace(register_at=lambda addr: SimpleNamespace(addr=addr))

    def read_reg(self, addr):
        return self.values.get(addr, 0)

    def read_register(self, reg):
        return self.read_reg(reg.addr)


def _rules(machine, addr):
    return addr * 3 & 0xFFFF, addr >> 4, addr ^ 0x40, addr & 1


def _entry_by_entry(fw, before) -> bytes:  # the straightforward form
    follow = fw._follow.get(before) or {}
    return b"".join(ENTRY.pack(addr, fw.machine.read_reg(addr) & 0xFFFFFFFF,
                               *_rules(fw.machine, addr)) for addr in follow)


def test_snapshots_by_plan_are_the_entries_packed_one_by_one(monkeypatch):
    monkeypatch.setattr(driver, "write_rules", _rules)
    fw = Firmware.__new__(Firmware)
    fw.machine, fw._follow, fw._write_rules, fw._snapshot_plans = Machine(), {}, {}, {}
    rng = np.random.default_rng(9)
    befores = ["interrupt", "dla_execute_task", 0x1000, 0x2004]
    sent = 0
    for _ in range(300):
        before = befores[int(rng.integers(len(befores)))]
        if rng.random() < 0.3:  # the firmware read one more register after it
            addr = int(rng.integers(0, 64)) * 4 + 0x1000
            fw._follow.setdefault(before, {})[addr] = None
        for addr in list(fw.machine.values) + [0x1000]:  # the machine stepped
            if rng.random() < 0.5:
                fw.machine.values[addr] = int(rng.integers(0, 1 << 33))  # a bit past 32
        got = fw._snapshot(before)
        assert got == _entry_by_entry(fw, before)
        sent += len(got) // ENTRY.size
    assert sent > 500
