"""sim.regfile fast paths: ``Block.fields`` (every field in one pass) against the
per-field ``__getattr__`` read, and the snapshot a register file hands out again
until a write changes the unit's words."""

import numpy as np
import pytest

from sim.regfile import Block, RegisterFile

MAPS = ("nvdlav1", "master")


def _random_file(address_map: str, seed: int) -> RegisterFile:
    rf = RegisterFile(address_map)
    rng = np.random.default_rng(seed)
    for unit in rf.units:
        for reg in rf.regmap.units[unit].registers:
            for group in (0, 1) if reg.double_buffered else (None,):
                rf.poke(reg, int(rng.integers(0, 1 << 32)), group)
    return rf


@pytest.mark.parametrize("address_map", MAPS)
def test_fields_equal_per_field_reads(address_map):
    rf = _random_file(address_map, seed=7)
    for unit in rf.units:
        for group in (0, 1):
            fast = rf.snapshot(unit, group)
            values = fast.fields()
            slow = Block(unit, group, dict(fast._words), rf.regmap, address_map)
            decoders = rf.regmap.field_decoders(unit, address_map)
            names = [n for n, e in decoders.items() if e]
            assert names and set(values) <= set(names)
            for name in names:
                assert values.get(name, getattr(slow, name)) == getattr(slow, name), (unit, name)
                assert getattr(fast, name) == getattr(slow, name)
            # the methods of a Block stay methods
            assert callable(fast.precision) and callable(fast.address) and fast.unit == unit


def test_snapshot_is_handed_out_again_until_a_write():
    rf = RegisterFile("nvdlav1")
    m = rf.regmap
    width = m.by_name("NVDLA_SDP.D_DATA_CUBE_WIDTH_0")
    first = rf.snapshot("NVDLA_SDP", 0)
    assert rf.snapshot("NVDLA_SDP", 0) is first
    assert rf.snapshot("NVDLA_SDP", 1) is not first
    other = rf.snapshot("NVDLA_PDP", 0)
    rf.cpu_write(width, 5)  # producer group 0
    now = rf.snapshot("NVDLA_SDP", 0)
    assert now is not first and now.width == 5 and first.width == 0  # the old one is frozen
    assert rf.snapshot("NVDLA_PDP", 0) is other  # another unit's words did not change
    rf.poke(width, 9, group=0)
    assert rf.snapshot("NVDLA_SDP", 0).width == 9
    lut = m.by_name("NVDLA_SDP.S_LUT_LE_START_0")  # a single register: every group sees it
    before = rf.snapshot("NVDLA_SDP", 1)
    rf.cpu_write(lut, 123)
    assert rf.snapshot("NVDLA_SDP", 1).lut_le_start == 123 and before.lut_le_start == 0
    op_en = m.by_name("NVDLA_SDP.D_OP_ENABLE_0")
    rf.cpu_write(op_en, 1)
    assert rf.snapshot("NVDLA_SDP", 0).op_en == 1
    rf.complete("NVDLA_SDP")
    assert rf.snapshot("NVDLA_SDP", 0).op_en == 0


def test_words_key_tells_programs_apart():
    rf = _random_file("nvdlav1", seed=3)
    a = rf.snapshot("NVDLA_CDP", 0)
    b = Block("NVDLA_CDP", 0, dict(a._words), rf.regmap, "nvdlav1")
    assert a.words_key() == b.words_key()
    name = next(iter(a._words))
    b2 = Block("NVDLA_CDP", 0, {**a._words, name: a._words[name] ^ 1}, rf.regmap, "nvdlav1")
    assert b2.words_key() != a.words_key()
    assert a.memo("x") is b.memo("x") and a.memo("x") is not rf.snapshot("NVDLA_PDP", 0).memo("x")


@pytest.mark.parametrize("address_map", MAPS)
def test_values_equal_per_field_reads(address_map):
    rf = _random_file(address_map, seed=11)
    for unit in rf.units:
        fast = rf.snapshot(unit, 1)
        slow = Block(unit, 1, dict(fast._words), rf.regmap, address_map)
        names = tuple(slow.fields())
        for picked in (names, names[::-3], names[:1]):
            want = tuple(getattr(slow, n) for n in picked)
            assert fast.values(picked) == want, unit
            assert fast.values(picked) == want, unit  # again, by the plan kept


@pytest.mark.parametrize("name", ["no_such_field", "group", "unit", "_words"])
def test_values_of_a_name_fields_does_not_decode_is_none(name):
    rf = _random_file("nvdlav1", seed=3)
    for unit in rf.units:
        block = rf.snapshot(unit, 0)
        some = tuple(block.fields())[:2]
        assert block.values((*some, name)) is None
        assert block.values(some) is not None


@pytest.mark.parametrize("address_map", MAPS)
def test_register_views_read_what_field_decode_computes(address_map):
    rf = _random_file(address_map, seed=5)
    for unit in rf.units:
        block = rf.snapshot(unit, 0)
        for reg in rf.regmap.units[unit].registers:
            view = block.reg(reg.name)
            word = block._words[reg.name]
            assert (view.register, view.word, view.address_map) == (reg, word, address_map)
            for f in reg.fields:
                name = f.name.lower()
                if name not in ("register", "word", "address_map") and name[:1] != "_":
                    assert getattr(view, name) == f.decode(word, address_map), (reg, name)


def test_a_register_view_names_a_field_it_lacks():
    view = RegisterFile("nvdlav1").snapshot("NVDLA_CDMA", 0).reg("D_LINE_STRIDE_0")
    for name in ("no_such_field", "_hidden"):
        with pytest.raises(AttributeError, match=f"NVDLA_CDMA.D_LINE_STRIDE_0 has no field "
                                                 f"{name.upper()}"):
            getattr(view, name)
