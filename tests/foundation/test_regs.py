"""The register table: invariants, lookups, and coverage of the shared traces."""

import re

import pytest
from sim.regs import RegisterMapError, parse_table

from sim import regs


def test_table_loads_and_validates():
    table = regs.load()
    assert len(table) > 400
    regs.validate(table)


@pytest.mark.parametrize(
    "name, amap, addr",
    [
        ("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", "nvdlav1", 0xB03C),
        ("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", "master", 0x903C),
        ("NVDLA_GLB.S_INTR_STATUS_0", "nvdlav1", 0x000C),
        ("NVDLA_GLB.S_INTR_STATUS_0", "master", 0x100C),
        ("NVDLA_BDMA.CFG_SRC_ADDR_LOW_0", "nvdlav1", 0x4000),
        ("NVDLA_CDMA.S_STATUS_0", "nvdlav1", 0x5000),
        ("NVDLA_CFGROM.CFGROM_HW_VERSION_0", "master", 0x0),
    ],
)
def test_addresses_round_trip(name, amap, addr):
    table = regs.load()
    reg = table.by_name(name)
    assert table.address(reg, amap) == addr
    assert table.by_address(addr, amap) is reg


def test_nvdlav1_address_fields_store_bits_31_to_5():
    f = regs.load().by_name("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0").field("DST_BASE_ADDR_LOW")
    assert f.decode(0x8000_001F, "nvdlav1") == 0x8000_0000
    assert f.decode(0x8000_001F, "master") == 0x8000_001F


@pytest.mark.parametrize(
    "text, reason",
    [
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x0\n  F 3:0 rw\n  G 4:2 rw\n", "overlaps"),
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x0\n  F 1:0 rw reset=0x4\n", "reset"),
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x0\n  F 1:0 rw\nreg B_0 0x0\n", "share"),
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x2\n", "aligned"),
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x0\n  F 1:0 xx\n", "access"),
        ("unit U nvdlav1=0x0 master=0x0\nreg A_0 0x0\n  F 40:0 rw\n", "range"),
    ],
)
def test_malformed_tables_are_rejected(text, reason):
    with pytest.raises(RegisterMapError, match=reason):
        parse_table(text, "t.regmap")


def test_every_register_named_in_shared_traces_resolves(shared_dir):
    table = regs.load()
    names = set()
    for path in shared_dir.rglob("*.cfg"):
        names.update(re.findall(r"\b(NVDLA_[A-Z_]+\.[A-Z0-9_]+)", path.read_text()))
    assert names, "no register names found in the shared traces"
    missing = sorted(n for n in names if n not in {r.full_name for r in table})
    assert not missing


def test_every_register_address_in_shared_txn_traces_resolves(shared_dir):
    table = regs.load()
    addrs = set()
    for path in shared_dir.rglob("input.txn"):
        addrs.update(int(a, 16) for a in re.findall(r"^(?:write|read)_reg (0x[0-9a-f]+)",
                                                     path.read_text(), re.M))
    assert addrs
    for a in addrs:
        table.by_address((a & 0xFFFF) << 2, "nvdlav1")


@pytest.mark.parametrize("name, owned", [
    ("NVDLA_GLB.S_INTR_MASK_0", True),  # only software writes it
    ("NVDLA_SDP.D_DATA_CUBE_WIDTH_0", True),
    ("NVDLA_SDP.D_OP_ENABLE_0", False),  # cleared by the hardware when the layer is done
    ("NVDLA_BDMA.CFG_LAUNCH0_0", False),  # likewise
    ("NVDLA_SDP.S_POINTER_0", False),  # CONSUMER is the hardware's
    ("NVDLA_GLB.S_INTR_STATUS_0", False),  # set by the hardware
    ("NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0", False),
    ("NVDLA_CDP.D_OUT_SATURATION_0", False),  # a counter
])
def test_registers_only_software_changes(name, owned):
    """What a recorded trace may poll for: a read of such a register cannot depend on timing."""
    assert regs.load().by_name(name).software_owned is owned
