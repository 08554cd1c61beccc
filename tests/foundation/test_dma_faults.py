"""DMA faults: out-of-space and misaligned addresses, short strides, outputs overlapping inputs,
and requests beyond the simulator's limits.  Each stops with one line naming the unit's register
(or the trace line) and the address, or behaves as documented in sim/dram.py and sim/bdma."""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from sim.dram import Memory, MemoryFault, MemoryLimits
from sim.errors import SimError
from sim.machine import Machine
from sim.trace.player import run_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"
SDP = "nv_small/sdp_4x5x12_bias_relu_cvt_int8"
BDMA = "nv_full/bdma_copy_lines"
CONV = "nv_small/conv_6x7x6_3x3x6x10_pad_int8"


def edited(tmp_path: Path, trace: str, edits: dict) -> Path:
    """A copy of a bundled trace with register values (cfg: by name; txn: by CSB address) or
    whole lines replaced."""
    dest = tmp_path / trace
    shutil.copytree(TRACES / trace, dest)
    path = next(p for p in dest.iterdir() if p.suffix in (".cfg", ".txn"))
    text = path.read_text()
    for key, value in edits.items():
        if key.startswith("line:"):
            text = re.sub(rf"^{re.escape(key[5:])}.*$", value, text, flags=re.MULTILINE)
            continue
        pattern = (rf"(reg_write\({re.escape(key)}, )[^)]*" if "." in key
                   else rf"(write_reg {key} )\S+")
        text, n = re.subn(pattern, lambda m: m.group(1) + hex(value), text)  # noqa: B023
        assert n == 1, key
    path.write_text(text)
    return dest


CASES = [
    # (trace, edits, message parts)
    (SDP, {"NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0": 0xFFFFFFE0},
     ["NVDLA_SDP_RDMA.D_SRC_BASE_ADDR", "read 0xffffffe0", "outside pri_mem", "32-bit"]),
    (SDP, {"NVDLA_SDP.D_DST_BASE_ADDR_LOW_0": 0xFFFFFF00},
     ["NVDLA_SDP.D_DST_BASE_ADDR", "write 0xffffff00", "outside pri_mem"]),
    (SDP, {"NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0": 0x80000004},
     ["NVDLA_SDP_RDMA.D_SRC_BASE_ADDR", "start address 0x80000004", "aligned"]),
    (SDP, {"NVDLA_SDP.D_DST_BASE_ADDR_LOW_0": 0x80100004},
     ["NVDLA_SDP.D_DST_BASE_ADDR", "start address 0x80100004", "aligned"]),
    (SDP, {"NVDLA_SDP_RDMA.D_SRC_LINE_STRIDE_0": 0x10},
     ["NVDLA_SDP_RDMA.D_SRC_BASE_ADDR", "line stride 0x10 is smaller than a line"]),
    (SDP, {"NVDLA_SDP.D_DST_SURFACE_STRIDE_0": 0x40},
     ["NVDLA_SDP.D_DST_BASE_ADDR", "surface stride 0x40 is smaller than a surface"]),
    (SDP, {"NVDLA_SDP.D_DST_BASE_ADDR_LOW_0": 0x80000020},
     ["NVDLA_SDP.D_DST_BASE_ADDR", "write 0x80000020", "overlaps bytes this layer reads",
      "NVDLA_SDP_RDMA.D_SRC_BASE_ADDR 0x80000000", "DMA timing"]),
    (SDP, {"NVDLA_SDP.D_DST_BASE_ADDR_LOW_0": 0x80000100},
     ["overlaps bytes this layer reads"]),
    (CONV, {"NVDLA_CDMA.D_WEIGHT_ADDR_LOW_0": 0xFFFFFF00},
     ["NVDLA_CDMA.D_WEIGHT_ADDR", "read 0xffffff00", "outside pri_mem"]),
    (CONV, {"NVDLA_CDMA.D_DAIN_ADDR_LOW_0_0": 0xFFFFFF00},
     ["NVDLA_CDMA.D_DAIN_ADDR", "read 0xffffff00", "outside pri_mem"]),
    (BDMA, {"0xffff1001": 0xFFFFFFFF, "0xffff1000": 0xFFFFFFE0},
     ["NVDLA_BDMA.CFG_SRC_ADDR", "outside pri_mem", "64-bit"]),
    (BDMA, {"0xffff1006": 0xFFF, "0xffff1009": 0xFFF, "0xffff1004": 0x1FFF},
     ["NVDLA_BDMA", "limit"]),
    (SDP, {"line:mem_init(pri_mem, 0x80100000": "mem_init(pri_mem, 0x0, 0x10000000000, ONES);"},
     [".cfg:5", "fill 0x0+0x10000000000", "outside pri_mem"]),
    (SDP, {"line:check_crc": "check_crc(sync_id_0, 1, 0x80100000, 0xfffffffff, 0x0);"},
     [".cfg:39", "CRC 0x80100000+0xfffffffff", "outside pri_mem"]),
    (BDMA, {"line:load_mem": "load_mem 0x80000000 0x7000000000 src.dat"},
     ["input.txn:2", "load_mem 0x80000000+0x7000000000", "limit"]),
]


@pytest.mark.parametrize("trace, edits, parts", CASES,
                         ids=[f"{t.split('/')[0]}-{i}" for i, (t, _, _) in enumerate(CASES)])
def test_fault_is_one_line_naming_register_and_address(tmp_path, trace, edits, parts):
    result = run_trace(edited(tmp_path, trace, edits))
    assert result.status == "error", result.message
    assert "\n" not in result.message and "internal error" not in result.message
    for part in parts:
        assert part in result.message, result.message


def test_unloaded_memory_reads_zero(tmp_path):
    """Bytes never loaded read as zero (the model's DRAM starts cleared): the layer runs and
    only its check can fail."""
    folder = edited(tmp_path, SDP, {"NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0": 0x90000000})
    result = run_trace(folder)
    assert result.status == "fail" and "CRC" in result.message
    assert Memory().read(0x1234, 4) == bytes(4)


def test_bdma_copy_overlapping_its_source_moves_line_by_line():
    """BDMA copies one line after another: a destination one line above its source repeats
    the first line (the documented behaviour of an overlapping copy)."""
    m = Machine("nv_full")
    m.load(0x80000000, np.arange(256, dtype=np.uint8))
    for name, value in [("CFG_SRC_ADDR_LOW_0", 0x80000000), ("CFG_DST_ADDR_LOW_0", 0x80000040),
                        ("CFG_LINE_0", 1), ("CFG_CMD_0", 3), ("CFG_LINE_REPEAT_0", 2),
                        ("CFG_SRC_LINE_0", 0x40), ("CFG_DST_LINE_0", 0x40), ("CFG_OP_0", 1),
                        ("CFG_LAUNCH0_0", 1)]:
        m.write_reg(f"NVDLA_BDMA.{name}", value)
    m.run()
    got = m.read_array(0x80000000, 256)
    assert (got.reshape(4, 64) == np.arange(64, dtype=np.uint8)).all()


@pytest.mark.parametrize("access, resident, op, parts", [
    (1 << 10, 1 << 20, lambda m: m.read(0, 2048, "X.REG"), ["X.REG", "read 0x0+0x800", "limit"]),
    (1 << 20, 1 << 13, lambda m: m.write(0x10000, bytes(3 * 4096), "Y"), ["Y: write", "hold"]),
    (1 << 20, 1 << 20, lambda m: m.write(-1, b"x"), ["write -0x1+0x1", "outside"]),
    (1 << 20, 1 << 20, lambda m: m.crc32(1 << 40, 2), ["CRC", "outside", "32-bit"]),
])
def test_memory_limits(access, resident, op, parts):
    mem = Memory("pri_mem", 32, MemoryLimits(access=access, resident=resident))
    with pytest.raises(MemoryFault) as info:
        op(mem)
    for part in parts:
        assert part in str(info.value)


def test_overlap_is_checked_only_inside_a_layer():
    mem = Memory()
    mem.read(0, 64)
    mem.write(0, bytes(64))  # outside a layer: a trace loading memory, a test
    mem.begin_layer()
    mem.read(0x100, 64, "A.SRC")
    mem.write(0x140, bytes(64), "A.DST")  # adjacent, not overlapping
    with pytest.raises(SimError, match="A.DST: write 0x13f.*A.SRC 0x100"):
        mem.write(0x13F, b"x", "A.DST")
    mem.end_layer()
    mem.write(0x100, b"x")


def test_reads_from_several_threads_are_all_watched():
    """A layer fetches data and weights side by side: every read of every thread must
    stay watched, or a write onto it would pass unrefused."""
    import sys
    import threading

    mem = Memory()
    mem.begin_layer()
    per_thread, threads = 5000, 4

    def reads(first):
        for i in range(per_thread):
            mem.read(first + 64 * i, 64)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as Python can
    try:
        workers = [threading.Thread(target=reads, args=(t << 24,)) for t in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    for t in range(threads):  # each thread's last read is refused as a write's target
        last = (t << 24) + 64 * (per_thread - 1)
        with pytest.raises(SimError, match="overlaps bytes this layer reads"):
            mem.write(last + 63, b"x")
    every = np.array(sorted((t << 24) + 64 * i for t in range(threads)
                            for i in range(per_thread)), np.uint64)
    windows = mem._read_bytes[:threads * per_thread]
    assert np.array_equal(np.sort(windows[:, 0]), every)
    assert np.array_equal(windows[:, 1] - windows[:, 0], np.full(every.size, 63, np.uint64))
