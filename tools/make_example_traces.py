"""Regenerate the example traces bundled in traces/ (our own, not NVIDIA's).

Each example's expected output is computed here by an independent numpy
model of the operation, not by the simulator.  Run: python tools/make_example_traces.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from recording import REGMAP, hex_lines, register_address, txn_write

from sim.files import write_folder_atomically
from sim.trace import txn
from sim.trace.ops import Comment, DumpMem, LoadMem, PollReg, Wait

ROOT = Path(__file__).resolve().parents[1] / "traces"
STATUS = "NVDLA_GLB.S_INTR_STATUS_0"
BDMA_DONE = "BDMA_DONE_STATUS0"  # the S_INTR_STATUS_0 field of the BDMA's group 0


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
    status = register_address(STATUS)
    done = 1 << REGMAP.by_name(STATUS).field(BDMA_DONE).lsb
    ops = [Comment(f"Example: BDMA copies {surfaces} surface(s) of {lines} line(s) of "
                   f"{line_bytes} bytes"),
           LoadMem(src, src_extent, "src.dat")]
    ops += [txn_write(f"NVDLA_BDMA.{reg}", value) for reg, value in regs]
    ops.append(txn_write("NVDLA_BDMA.CFG_OP_0", 1))
    ops.append(txn_write("NVDLA_BDMA.CFG_LAUNCH0_0", 1))
    ops.append(Wait())
    ops.append(PollReg(status, done, done, note=BDMA_DONE))
    ops.append(txn_write(STATUS, 0xFFFFFFFF, note="clear"))
    ops.append(DumpMem(dst, dst_extent, "dst.dat"))
    files["input.txn"] = txn.format(ops)
    write_folder_atomically(folder, files)


def main() -> None:
    bdma_example("bdma_copy_lines", 0x80000000, 0x80100000, 2, 4, 1, 0x100, 0x40, 0, 0, 1)
    bdma_example("bdma_copy_surfaces", 0x80000000, 0x80200000, 1, 3, 2, 0x40, 0x20, 0x200,
                 0x80, 2)


if __name__ == "__main__":
    main()
