"""CFGROM: NVIDIA's RTL ROM (vmod/nvdla/cfgrom, master branch) is one static table for every
master-map configuration (its RDL and generated headers are the same for nv_small and
nv_large); the nvdlav1 map (nv_full) has no CFGROM."""

import pytest

from sim.configs import CONFIGS
from sim.errors import SimError
from sim.machine import Machine

# (register, value) rows of the ROM as NVIDIA's RTL hard-codes them
ROM = [("CFGROM_HW_VERSION_0", 0x10001), ("CFGROM_CIF_DESC_0", 0x180002),
       ("CFGROM_CDMA_DESC_0", 0x340003), ("CFGROM_CDMA_BASE_CBUF_BANK_DEPTH_0", 0x200),
       ("CFGROM_CDMA_IMAGE_IN_FORMATS_PACKED_0", 0xCFFF001)]


@pytest.mark.parametrize("config", [c for c in CONFIGS if CONFIGS[c].address_map == "master"])
@pytest.mark.parametrize("reg, value", ROM)
def test_cfgrom_reads_the_rom(config, reg, value):
    m = Machine(config)
    assert m.read_reg(f"NVDLA_CFGROM.{reg}") == value
    m.write_reg(f"NVDLA_CFGROM.{reg}", ~value & 0xFFFFFFFF)  # read-only: writes are ignored
    assert m.read_reg(f"NVDLA_CFGROM.{reg}") == value


def test_nv_full_has_no_cfgrom():
    with pytest.raises(SimError):
        Machine("nv_full").read_reg("NVDLA_CFGROM.CFGROM_HW_VERSION_0")
