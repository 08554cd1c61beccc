"""A CSB write of a register that only stores its bits skips the machine's general write
path (``Machine._plain_writes``, ``RegisterFile.write_plain``), and so does one of a data
port (a LUT's, ``Machine._port_writes``): for any register, value and order of writes, on
every configuration, the register file and the LUTs end as the general path leaves them
(words, groups, pointers, armed groups, launches, LUT entries and pointer) and errors are
the same."""

from __future__ import annotations

import random

import pytest

from sim.configs import CONFIGS
from sim.errors import SimError
from sim.machine import Machine


class _Never(dict):
    """A shortcut table that sends every write down the general path."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def get(self, key, default=None):
        return self.answer


def _general(config: str) -> Machine:
    m = Machine(config)
    m._plain_writes = _Never(False)
    m._port_writes = _Never(None)
    return m


def _luts(m: Machine):
    return [(lut._entries, lut.addr, lut.table, lut.write_access)
            for lut in (getattr(e, "lut", None) for e in m.engines) if lut is not None]


def _state(m: Machine):
    rf = m.regfile
    return ({u: dict(w) for u, w in rf.single.items()},
            {u: [dict(g) for g in w] for u, w in rf.grouped.items()},
            dict(rf.producer), dict(rf.consumer), {u: list(a) for u, a in rf.armed.items()},
            list(m._launches), m.interrupt_status(), _luts(m))


def _write(m: Machine, reg, value):
    try:
        m.write_reg(reg, value)
    except SimError as exc:
        return type(exc).__name__, str(exc)
    return None


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("seed", range(3))
def test_plain_writes_leave_what_the_general_path_leaves(config, seed):
    rng = random.Random(seed)
    fast, general = Machine(config), _general(config)
    names = [r.full_name for r in fast.regfile.regmap]
    luts = [name for name in names if "S_LUT_ACCESS_" in name]  # often, to upload some
    values = [0, 1, 0xFFFFFFFF, 0x20001, 0x80000000]
    for _ in range(3000):
        reg = rng.choice(luts if rng.random() < 0.3 else names)
        if rng.random() < 0.1:  # a byte address, as .txn traces name registers
            try:
                reg = fast.regfile.address_of(fast.regfile.register(reg))
            except (KeyError, SimError):
                pass
        value = rng.choice(values) if rng.random() < 0.5 else rng.getrandbits(32)
        assert _write(fast, reg, value) == _write(general, reg, value), reg
        assert _state(fast) == _state(general), reg
    assert any(fast._plain_writes.values())  # the shortcuts were taken
    if config != "nv_small":  # it has no LUTs
        assert fast._port_writes


def test_register_listeners_see_plain_writes_too():
    m = Machine("nv_full")
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 1)  # now known as plain
    assert m._plain_writes["NVDLA_SDP.D_DATA_CUBE_WIDTH_0"]
    seen = []

    class Listener:
        def wrote_register(self, reg, value):
            seen.append((reg.full_name, value))

    m.register_listeners.add(Listener())
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 5)
    assert seen == [("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 5)]
