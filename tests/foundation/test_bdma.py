"""BDMA: queued operations, group launch, interrupts, strides, both memories."""

import numpy as np
import pytest

from sim.machine import Machine


def program(m, **cfg):
    defaults = dict(
        CFG_SRC_ADDR_HIGH_0=0, CFG_DST_ADDR_HIGH_0=0, CFG_CMD_0=3, CFG_LINE_REPEAT_0=0,
        CFG_SURF_REPEAT_0=0, CFG_SRC_LINE_0=0, CFG_DST_LINE_0=0, CFG_SRC_SURF_0=0,
        CFG_DST_SURF_0=0,
    )
    for name, value in {**defaults, **cfg}.items():
        m.write_reg(f"NVDLA_BDMA.{name}", value)
    m.write_reg("NVDLA_BDMA.CFG_OP_0", 1)


def reference_copy(src, line_bytes, lines, surfaces, sl, dl, ss, ds, size):
    out = np.zeros(size, np.uint8)
    for s in range(surfaces):
        for i in range(lines):
            out[s * ds + i * dl : s * ds + i * dl + line_bytes] = \
                src[s * ss + i * sl : s * ss + i * sl + line_bytes]
    return out


@pytest.mark.parametrize(
    "atoms, lines, surfaces, sl, dl, ss, ds",
    [(1, 1, 1, 0, 0, 0, 0), (2, 4, 1, 0x100, 0x40, 0, 0), (1, 3, 2, 0x40, 0x20, 0x200, 0x80)],
)
def test_copy_matches_reference(atoms, lines, surfaces, sl, dl, ss, ds):
    m = Machine("nv_full")
    src = np.random.default_rng(atoms + lines).integers(0, 256, 0x1000, dtype=np.uint8)
    m.load(0x8000_0000, src)
    program(m, CFG_SRC_ADDR_LOW_0=0x8000_0000, CFG_DST_ADDR_LOW_0=0x8010_0000,
            CFG_LINE_0=atoms - 1, CFG_LINE_REPEAT_0=lines - 1, CFG_SURF_REPEAT_0=surfaces - 1,
            CFG_SRC_LINE_0=sl, CFG_DST_LINE_0=dl, CFG_SRC_SURF_0=ss, CFG_DST_SURF_0=ds)
    m.write_reg("NVDLA_BDMA.CFG_LAUNCH0_0", 1)
    assert m.run() == 1
    want = reference_copy(src, atoms * 32, lines, surfaces, sl, dl, ss, ds, 0x800)
    assert np.array_equal(m.read_array(0x8010_0000, 0x800), want)
    assert m.interrupt_set("BDMA", 0) and not m.interrupt_set("BDMA", 1)


def test_operations_wait_for_launch_and_status_counts_slots():
    m = Machine("nv_full")
    program(m, CFG_SRC_ADDR_LOW_0=0x8000_0000, CFG_DST_ADDR_LOW_0=0x8000_1000, CFG_LINE_0=0)
    program(m, CFG_SRC_ADDR_LOW_0=0x8000_0000, CFG_DST_ADDR_LOW_0=0x8000_2000, CFG_LINE_0=0)
    status = m.read_reg("NVDLA_BDMA.STATUS_0")
    assert status & 0xFF == 18 and not status >> 8 & 1
    assert m.run() == 0  # nothing launched yet
    m.write_reg("NVDLA_BDMA.CFG_LAUNCH1_0", 1)
    assert m.read_reg("NVDLA_BDMA.STATUS_0") >> 10 & 1  # GRP1_BUSY
    assert m.run() == 1
    assert m.interrupt_set("BDMA", 1)
    assert m.read_reg("NVDLA_BDMA.STATUS_0") == 20 | 1 << 8


def test_copy_between_memories():
    m = Machine("nv_full")
    m.load(0x5000_0000, bytes(range(64)), ram="sec_mem")
    program(m, CFG_SRC_ADDR_LOW_0=0x5000_0000, CFG_DST_ADDR_LOW_0=0x8000_0000, CFG_LINE_0=1,
            CFG_CMD_0=0b10)  # CV-SRAM -> MC
    m.write_reg("NVDLA_BDMA.CFG_LAUNCH0_0", 1)
    m.run()
    assert m.read_memory(0x8000_0000, 64) == bytes(range(64))
