"""Engines declare the registers whose reads they compute, and compute no others: the
firmware bridge answers repeated reads of every other register from what it learnt."""

import pytest

from sim.errors import SimError
from sim.machine import Machine


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_engines_compute_exactly_the_reads_they_declare(config):
    machine = Machine(config)
    declared_anywhere = set()
    for engine in machine.engines:
        declared = engine.computed_reads()
        declared_anywhere |= declared
        for unit_name in engine.units:
            unit = machine.regfile.units.get(unit_name)
            if unit is None:  # not on this configuration
                continue
            for reg in unit.registers:
                full = f"{reg.unit}.{reg.name}"
                computed = engine.on_read(machine, reg) is not None
                assert computed == (full in declared), (type(engine).__name__, full)
    # the LUT ports of SDP and CDP, BDMA's status (where those units exist)
    assert any(name.endswith("S_LUT_ACCESS_DATA_0") for name in declared_anywhere)


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_reading_a_looked_up_register_is_reading_it_by_address(config):
    """Machine.read_register(r) (the poll's read) answers as read_reg by byte address, the
    LUT ports' stepping reads included: two machines written alike read alike."""
    import random

    machines = [Machine(config), Machine(config)]
    units = machines[0].regfile.units
    regs = [r for unit in units.values() for r in unit.registers
            if not r.name.endswith("D_OP_ENABLE_0") and "LAUNCH" not in r.name]
    rng = random.Random(5)
    writes = [(r, rng.getrandbits(32)) for r in regs for _ in range(2)]
    for m in machines:
        for r, value in writes:
            try:
                m.write_reg(r.full_name, value)
            except SimError:  # a unit this configuration lacks (nv_small's BDMA): both alike
                pass
    by_address, looked_up = machines
    for r in regs * 2:
        assert by_address.read_reg(by_address.regfile.address_of(r)) == \
            looked_up.read_register(looked_up.regfile.register(r.full_name)), r.full_name
