"""CSB reads through the register file's read plans against the rule written out: a
pointer shows producer and consumer, a status the groups' states, any other register its
word's readable bits (of the producer's group for a D_ register)."""

import random

import pytest

from sim.machine import Machine
from sim.regfile import IDLE, PENDING, RUNNING


def _expected(rf, reg) -> int:
    unit = reg.unit
    if reg.name == "S_POINTER_0" and unit in rf.producer:
        return rf.producer[unit] | rf.consumer[unit] << 16
    if reg.name == "S_STATUS_0" and unit in rf.armed:
        states = [IDLE if not rf.armed[unit][g] else
                  RUNNING if rf.consumer[unit] == g else PENDING for g in (0, 1)]
        return states[0] | states[1] << 16
    group = rf.producer[unit] if reg.double_buffered else None
    return rf.peek(reg, group) & reg.mask(rf.address_map, ("rw", "ro", "w1c"))


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_every_register_reads_as_the_rule_says(config):
    rng = random.Random(3)
    for _ in range(2):  # the second machine reads through the plans the first made
        m = Machine(config)
        rf = m.regfile
        registers = [r for r in rf.regmap if r.unit in rf.units]
        for _ in range(3):
            for reg in rng.sample(registers, len(registers) // 2):
                rf.poke(reg, rng.getrandbits(32), 0 if reg.double_buffered else None)
                if reg.double_buffered:
                    rf.poke(reg, rng.getrandbits(32), 1)
            for unit in rf.producer:
                rf.producer[unit] = rng.randrange(2)
                rf.consumer[unit] = rng.randrange(2)
                rf.armed[unit] = [rng.random() < 0.5, rng.random() < 0.5]
            for reg in registers:
                assert rf.cpu_read(reg) == _expected(rf, reg), reg.full_name
