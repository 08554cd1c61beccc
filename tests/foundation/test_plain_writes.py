"""A CSB write of a register that only stores its bits skips the machine's general write
path (``Machine._plain_writes``, ``RegisterFile.write_plain``): for any register, value and
order of writes, on every configuration, the register file ends as the general path
leaves it (words, groups, pointers, armed groups, launches) and errors are the same."""

from __future__ import annotations

import random

import pytest

from sim.configs import CONFIGS
from sim.errors import SimError
from sim.machine import Machine


class _NeverPlain(dict):
    """A plain-writes table that sends every write down the general path."""

    def get(self, key, default=None):
        return False


def _general(config: str) -> Machine:
    m = Machine(config)
    m._plain_writes = _NeverPlain()
    return m


def _state(m: Machine):
    rf = m.regfile
    return ({u: dict(w) for u, w in rf.single.items()},
            {u: [dict(g) for g in w] for u, w in rf.grouped.items()},
            dict(rf.producer), dict(rf.consumer), {u: list(a) for u, a in rf.armed.items()},
            list(m._launches), m.interrupt_status())


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
    names = [r.full_name for r in fast.regfile.regmap
             if not r.name.startswith("S_LUT_ACCESS_DATA")]  # LUT data: a port, not a word
    values = [0, 1, 0xFFFFFFFF, 0x20001, 0x80000000]
    for _ in range(3000):
        reg = rng.choice(names)
        if rng.random() < 0.1:  # a byte address, as .txn traces name registers
            try:
                reg = fast.regfile.address_of(fast.regfile.register(reg))
            except (KeyError, SimError):
                pass
        value = rng.choice(values) if rng.random() < 0.5 else rng.getrandbits(32)
        assert _write(fast, reg, value) == _write(general, reg, value), reg
        assert _state(fast) == _state(general), reg
    assert any(fast._plain_writes.values())  # the shortcut was taken


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
