"""Register-file semantics: groups, pointers, OP_EN, read-only and w1c registers."""

import pytest

from sim.errors import ConfigurationError, SimError
from sim.machine import Machine


@pytest.fixture
def m():
    return Machine("nv_full")


def test_d_registers_have_two_groups_selected_by_producer(m):
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 7)
    m.write_reg("NVDLA_SDP.S_POINTER_0", 1)
    assert m.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0") == 0
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 9)
    assert m.read_reg("NVDLA_SDP.S_POINTER_0") == 1  # producer 1, consumer 0
    m.write_reg("NVDLA_SDP.S_POINTER_0", 0)
    assert m.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0") == 7
    rf = m.regfile
    assert rf.snapshot("NVDLA_SDP", 0).width == 7
    assert rf.snapshot("NVDLA_SDP", 1).width == 9


def test_s_registers_are_single(m):
    m.write_reg("NVDLA_SDP.S_LUT_LE_START_0", 0x1234)
    m.write_reg("NVDLA_SDP.S_POINTER_0", 1)
    assert m.read_reg("NVDLA_SDP.S_LUT_LE_START_0") == 0x1234


def test_op_enable_arms_group_and_status_reflects_it(m):
    m.write_reg("NVDLA_PDP.S_POINTER_0", 1)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    assert m.read_reg("NVDLA_PDP.D_OP_ENABLE_0") == 1
    # group 1 armed while the consumer is 0: PENDING (2) in STATUS_1 [17:16]
    assert m.read_reg("NVDLA_PDP.S_STATUS_0") == 2 << 16
    m.write_reg("NVDLA_PDP.S_POINTER_0", 0)
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    assert m.read_reg("NVDLA_PDP.S_STATUS_0") == (2 << 16) | 1


def test_read_only_registers_ignore_writes(m):
    m.write_reg("NVDLA_SDP.D_STATUS_NAN_OUTPUT_NUM_0", 0xDEAD)
    assert m.read_reg("NVDLA_SDP.D_STATUS_NAN_OUTPUT_NUM_0") == 0
    m.write_reg("NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0", 0)
    assert m.read_reg("NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0") == 1


def test_readback_keeps_only_stored_bits(m):
    m.write_reg("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0", 0x8000_001F)
    assert m.read_reg("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0") == 0x8000_0000
    m.write_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", 0xFFFF_FFFF)
    assert m.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0") == 0x1FFF


def test_interrupt_set_status_w1c_and_mask(m):
    m.write_reg("NVDLA_GLB.S_INTR_SET_0", 0x5)  # SDP_DONE0 | CDP_DONE0
    assert m.read_reg("NVDLA_GLB.S_INTR_STATUS_0") == 0x5
    assert m.read_reg("NVDLA_GLB.S_INTR_SET_0") == 0
    m.write_reg("NVDLA_GLB.S_INTR_MASK_0", 0x5)
    assert not m.interrupt_pending()
    m.write_reg("NVDLA_GLB.S_INTR_STATUS_0", 0x1)
    assert m.read_reg("NVDLA_GLB.S_INTR_STATUS_0") == 0x4
    m.write_reg("NVDLA_GLB.S_INTR_STATUS_0", 0x0)
    assert m.read_reg("NVDLA_GLB.S_INTR_STATUS_0") == 0x4


def test_unknown_register_is_a_clear_error(m):
    with pytest.raises(SimError, match="NVDLA_SDP.D_NOPE_0"):
        m.write_reg("NVDLA_SDP.D_NOPE_0", 1)
    with pytest.raises(SimError, match="0x3ffc"):
        m.read_reg(0x3FFC)


def test_unit_missing_from_config_is_a_clear_error():
    m = Machine("nv_small")
    with pytest.raises(ConfigurationError, match="bdma"):
        m.write_reg("NVDLA_BDMA.CFG_OP_0", 1)


def test_register_address_depends_on_the_config_address_map():
    full, small = Machine("nv_full"), Machine("nv_small")
    full.write_reg(0xB03C, 5)
    small.write_reg(0x903C, 6)
    assert full.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0") == 5
    assert small.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0") == 6


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_each_register_file_starts_from_its_own_reset_words(config):
    """A register file copies a unit's reset words when the unit is first used: every
    register reads its reset value in a fresh file, whatever another file was written."""
    from sim.regfile import RegisterFile

    first = RegisterFile(Machine(config).config.address_map)
    regs = [r for name in first.units for r in first.regmap.units[name].registers]
    for r in regs:  # dirty every word of every group of the first file
        for group in (0, 1) if r.double_buffered else (None,):
            first.poke(r, 0xFFFFFFFF, group)
    second = RegisterFile(first.address_map)
    for r in regs:
        for group in (0, 1) if r.double_buffered else (None,):
            assert second.peek(r, group) == r.reset_value(), r.full_name
            assert first.peek(r, group) == 0xFFFFFFFF
    groups = second.snapshot("NVDLA_SDP", 1)._words
    assert "D_OP_ENABLE_0" in groups and "S_POINTER_0" in groups
    with pytest.raises(KeyError):
        second.single["NOT_A_UNIT"]


def test_engines_with_nothing_launched_run_in_registry_order():
    m = Machine("nv_full")
    assert list(m._by_launch_order()) == m.engines
    m.write_reg("NVDLA_PDP.D_OP_ENABLE_0", 1)
    order = list(m._by_launch_order())
    owners = [e for e in m.engines if "NVDLA_PDP" in e.units]  # the launched unit's first
    assert order == owners + [e for e in m.engines if e not in owners]
