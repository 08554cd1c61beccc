"""Engine.write_hooks: the machine hands an engine's on_write only the registers it
declares; every other register of its units must be one its on_write leaves alone."""

import copy

import pytest

from sim.machine import Machine


def _state(engine):
    return copy.deepcopy({k: v for k, v in vars(engine).items()})


def _equal(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    return all(repr(vars(a[k]) if hasattr(a[k], "__dict__") else a[k])
               == repr(vars(b[k]) if hasattr(b[k], "__dict__") else b[k]) for k in a)


def _declaring():
    m = Machine("nv_full")
    return [type(e).__name__ for e in m.engines if e.write_hooks() is not None]


@pytest.mark.parametrize("name", _declaring())
def test_on_write_acts_on_no_register_it_does_not_declare(name):
    m = Machine("nv_full")
    engine = next(e for e in m.engines if type(e).__name__ == name)
    declared = engine.write_hooks()
    others = [r for unit in engine.units for r in m.regfile.regmap.units[unit].registers
              if r.full_name not in declared]
    assert others
    for value in (0, 1, 0xFFFFFFFF, 0x20001):
        before = _state(engine)
        for reg in others:
            assert not engine.on_write(m, reg, value), reg.full_name
        assert _equal(before, _state(engine))


def test_the_machine_calls_on_write_for_declared_registers_only(monkeypatch):
    m = Machine("nv_full")
    seen = []
    for engine in m.engines:
        original = engine.on_write

        def spy(machine, reg, value, original=original, engine=engine):
            seen.append((type(engine).__name__, reg.full_name))
            return original(machine, reg, value)

        monkeypatch.setattr(engine, "on_write", spy)
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 3)
    m.write_reg("NVDLA_CDP.D_DATIN_OFFSET_0", 3)
    assert seen == []
    m.write_reg("NVDLA_SDP.S_LUT_ACCESS_CFG_0", 1 << 17)
    m.write_reg("NVDLA_CDP.S_LUT_ACCESS_CFG_0", 1 << 17)
    assert seen == [("SdpEngine", "NVDLA_SDP.S_LUT_ACCESS_CFG_0"),
                    ("CdpEngine", "NVDLA_CDP.S_LUT_ACCESS_CFG_0")]
