"""Engines declare the registers whose reads they compute, and compute no others: the
firmware bridge answers repeated reads of every other register from what it learnt."""

import pytest

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
