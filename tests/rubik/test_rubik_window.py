"""Rubik's source window (sim.rubik.engine._source_window): one read instead of one per
line, taken only where it cannot differ from the line-by-line reads."""

import random

import numpy as np
import pytest

from sim.dma import rubik
from sim.dma.rubik import ATOM, RubikLayout, read_lines, write_lines
from sim.machine import Machine
from sim.rubik import engine

MODES = ("contract", "split", "merge")


def _layouts(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        ebs = rng.choice((1, 2))
        epa = ATOM // ebs
        sx, sy = rng.randint(1, 4), rng.randint(1, 3)
        cout = rng.randint(1, 3 * epa)
        cin = rng.choice((rng.randint(1, 3 * epa), sx * sy * -(-cout // epa) * epa))
        yield RubikLayout(
            width=rng.randint(1, 9), height=rng.randint(1, 5), in_channels=cin,
            out_channels=cout, ebs=ebs, src=0x1000 * rng.randint(0, 9),
            src_line=ATOM * rng.randint(0, 12), src_surface=ATOM * rng.randint(0, 60),
            src_planar=ATOM * rng.randint(0, 8), dst=0x1000 * rng.randint(0, 9),
            dst_line=ATOM * rng.randint(0, 12), dst_surface=ATOM * rng.randint(0, 60),
            dst_planar=ATOM * rng.randint(0, 8), super_line=ATOM * rng.randint(0, 30),
            stride_x=sx, stride_y=sy)


@pytest.mark.parametrize("mode", MODES)
def test_the_line_tables_are_the_lines_each_mode_moves(mode):
    for layout in _layouts(len(mode), 60):
        reads, writes = [], []

        def read(addr, size, reads=reads):
            reads.append((addr, size))
            return bytes(size)

        def write(addr, data, writes=writes):
            writes.append((addr, len(data)))

        getattr(rubik, mode)(layout, read, write)
        for got, (offsets, size), base in ((reads, read_lines(layout, mode), layout.src),
                                           (writes, write_lines(layout, mode), layout.dst)):
            assert sorted(got) == sorted((base + int(o), size) for o in offsets), layout


def _program(m, mode, layout):
    regs = {
        "D_MISC_CFG_0": MODES.index(mode) | (0 if layout.ebs == 1 else 1) << 8,
        "D_DAIN_RAM_TYPE_0": 1, "D_DAOUT_RAM_TYPE_0": 1,
        "D_DATAIN_SIZE_0_0": (layout.width - 1) | (layout.height - 1) << 16,
        "D_DATAIN_SIZE_1_0": layout.in_channels - 1,
        "D_DATAOUT_SIZE_1_0": layout.out_channels - 1,
        "D_DAIN_ADDR_LOW_0": layout.src, "D_DAOUT_ADDR_LOW_0": layout.dst,
        "D_DAIN_LINE_STRIDE_0": layout.src_line, "D_DAIN_SURF_STRIDE_0": layout.src_surface,
        "D_DAIN_PLANAR_STRIDE_0": layout.src_planar,
        "D_DAOUT_LINE_STRIDE_0": layout.dst_line, "D_DAOUT_SURF_STRIDE_0": layout.dst_surface,
        "D_DAOUT_PLANAR_STRIDE_0": layout.dst_planar,
        "D_CONTRACT_STRIDE_1_0": layout.super_line,
        "D_DECONV_STRIDE_0": (layout.stride_x - 1) | (layout.stride_y - 1) << 16,
    }
    for name, value in regs.items():
        m.write_reg(f"NVDLA_RBK.{name}", value)
    m.write_reg("NVDLA_RBK.D_OP_ENABLE_0", 1)
    m.run()


def _outcome(layout, mode, seed):
    m = Machine("nv_full")
    rng = np.random.default_rng(seed)
    m.load(0x80000000, rng.integers(0, 256, 0x14000, dtype=np.uint8))
    try:
        _program(m, mode, layout)
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the error too
        return type(exc).__name__, str(exc)
    pages = sorted(m.pri_mem._pages)  # the pages held count against the resident limit
    return m.read_memory(0x80000000, 0x14000), m.read_memory(0x80100000, 0x14000), pages


@pytest.mark.parametrize("mode", MODES)
def test_a_window_read_does_what_line_reads_do(mode, monkeypatch):
    """Memory and errors agree with the window and without it; overlapping source and
    destination (in place, or one into the other) included."""
    taken = 0
    original = engine._source_window

    def counting(*args):
        nonlocal taken
        read = original(*args)
        taken += read is not None
        return read

    for i, layout in enumerate(_layouts(100 + len(mode), 40)):
        far = 0x100000 if i % 3 == 0 else 0  # into memory never written: pages made
        layout = RubikLayout(**{**layout.__dict__, "src": 0x80000000 + layout.src,
                                "dst": 0x80000000 + far + layout.dst})
        monkeypatch.setattr(engine, "_source_window", counting)
        fast = _outcome(layout, mode, i)
        monkeypatch.setattr(engine, "_source_window", lambda *args: None)
        assert fast == _outcome(layout, mode, i), layout
    assert taken  # the window was used, and refused elsewhere


def test_a_window_that_meets_the_writes_is_not_taken():
    layout = next(_layouts(5, 1))
    layout = RubikLayout(**{**layout.__dict__, "dst": layout.src})
    m = Machine("nv_full")
    assert engine._source_window(layout, "merge", m.pri_mem, m.pri_mem) is None
    assert engine._source_window(layout, "merge", m.pri_mem, m.sec_mem) is not None


def test_a_window_write_is_refused_where_line_writes_would_differ():
    from sim.dram import PAGE_SIZE, Memory

    mem = Memory()
    lines = (np.array([0, 3 * PAGE_SIZE]), 64)  # two lines, two untouched pages between
    assert not mem.window_write_ok(0, 3 * PAGE_SIZE + 64, lines)
    assert mem.window_write_ok(0, 2 * PAGE_SIZE + 64, (np.array([0, PAGE_SIZE, 2 * PAGE_SIZE]), 64))
    mem.write(PAGE_SIZE, b"x")
    mem.write(2 * PAGE_SIZE, b"x")
    assert mem.window_write_ok(0, 3 * PAGE_SIZE + 64, lines)  # the pages between are held
    assert not mem.window_write_ok(mem.limit - 32, 64, (np.array([0]), 64))  # faults
    mem.log_layer_writes()  # each write is numbered: one per line
    assert not mem.window_write_ok(0, 3 * PAGE_SIZE + 64, lines)
