"""Regenerate the example traces bundled in traces/ (our own, not NVIDIA's).

Each example's expected output is computed here by an independent numpy
model of the operation, not by the simulator.  Run: python tools/make_example_traces.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from recording import hex_lines

from sim.dram import write_folder_atomically

ROOT = Path(__file__).resolve().parents[1] / "traces"

# nvdlav1 register byte addresses (BDMA block at 0x4000, GLB at 0x0)
BDMA = {
    "CFG_SRC_ADDR_LOW_0": 0x4000, "CFG_SRC_ADDR_HIGH_0": 0x4004,
    "CFG_DST_ADDR_LOW_0": 0x4008, "CFG_DST_ADDR_HIGH_0": 0x400C,
    "CFG_LINE_0": 0x4010, "CFG_CMD_0": 0x4014, "CFG_LINE_REPEAT_0": 0x4018,
    "CFG_SRC_LINE_0": 0x401C, "CFG_DST_LINE_0": 0x4020, "CFG_SURF_REPEAT_0": 0x4024,
    "CFG_SRC_SURF_0": 0x4028, "CFG_DST_SURF_0": 0x402C, "CFG_OP_0": 0x4030,
    "CFG_LAUNCH0_0": 0x4034,
}
GLB_INTR_STATUS = 0x000C


def csb(byte_addr: int) -> str:
    return f"{0xFFFF0000 | (byte_addr >> 2):#010x}"


def bdma_example(name, src, dst, line_atoms, lines, surfaces, src_line, dst_line, src_surf,
                 dst_surf, seed):
    folder = ROOT / "nv_full" / name
    line_bytes = line_atoms * 32
    src_extent = (surfaces - 1) * src_surf + (lines - 1) * src_line + line_bytes
    dst_extent = (surfaces - 1) * dst_surf + (lines - 1) * dst_line + line_bytes
    data = np.random.default_rng(seed).integers(0, 256, src_extent, dtype=np.uint8)
    expected = np.zeros(dst_extent, dtype=np.uint8)
    for s in range(surfaces):
        for line in range(lines):
            a, b = s * src_surf + line * src_line, s * dst_surf + line * dst_line
            expected[b : b + line_bytes] = data[a : a + line_bytes]
    files = {"src.dat": hex_lines(data.tobytes()), "dst.dat": hex_lines(expected.tobytes())}
    regs = [
        ("CFG_SRC_ADDR_LOW_0", src), ("CFG_SRC_ADDR_HIGH_0", 0),
        ("CFG_DST_ADDR_LOW_0", dst), ("CFG_DST_ADDR_HIGH_0", 0),
        ("CFG_LINE_0", line_atoms - 1), ("CFG_CMD_0", 0x3),
        ("CFG_LINE_REPEAT_0", lines - 1), ("CFG_SRC_LINE_0", src_line),
        ("CFG_DST_LINE_0", dst_line), ("CFG_SURF_REPEAT_0", surfaces - 1),
        ("CFG_SRC_SURF_0", src_surf), ("CFG_DST_SURF_0", dst_surf),
    ]
    out = [f"# Example: BDMA copies {surfaces} surface(s) of {lines} line(s) of {line_bytes} bytes",
           f"load_mem {src:#x} {src_extent:#x} src.dat"]
    for reg, value in regs:
        out.append(f"write_reg {csb(BDMA[reg])} {value:#x} # NVDLA_BDMA.{reg}")
    out.append(f"write_reg {csb(BDMA['CFG_OP_0'])} 0x1 # NVDLA_BDMA.CFG_OP_0")
    out.append(f"write_reg {csb(BDMA['CFG_LAUNCH0_0'])} 0x1 # NVDLA_BDMA.CFG_LAUNCH0_0")
    out.append("wait")
    out.append(f"read_reg {csb(GLB_INTR_STATUS)} 0x00000040 0x00000040 # BDMA_DONE_STATUS0")
    out.append(f"write_reg {csb(GLB_INTR_STATUS)} 0xffffffff # clear")
    out.append(f"dump_mem {dst:#x} {dst_extent:#x} dst.dat")
    files["input.txn"] = "\n".join(out) + "\n"
    write_folder_atomically(folder, files)


if __name__ == "__main__":
    bdma_example("bdma_copy_lines", 0x80000000, 0x80100000, 2, 4, 1, 0x100, 0x40, 0, 0, 1)
    bdma_example("bdma_copy_surfaces", 0x80000000, 0x80200000, 1, 3, 2, 0x40, 0x20, 0x200,
                 0x80, 2)
