"""What the example-trace tools share: a recording Machine and the input.txn writer.

The tools (``python tools/make_*.py``) program registers through a Machine
that is never run and write what it recorded as a trace; their expected
outputs come from independent numpy models, never from the simulator.
"""

from __future__ import annotations

import numpy as np

from sim import regs
from sim.machine import Machine
from sim.program.registers import set_reg

REGMAP = regs.load()


class Recorder(Machine):
    """A Machine that records register writes and memory loads in order (never run)."""

    def __init__(self, config: str = "nv_full"):
        super().__init__(config)
        self.ops = []

    def write_reg(self, reg, value):
        super().write_reg(reg, value)
        r = self._reg(reg)
        self.ops.append(("reg", REGMAP.address(r, self.config.address_map), value & 0xFFFFFFFF,
                         r.full_name))

    def load(self, addr, data, ram=1):
        super().load(addr, data, ram)
        self.ops.append(("mem", addr, np.asarray(data, dtype=np.uint8).tobytes()))

    def set(self, unit: str, reg: str, **fields) -> None:
        set_reg(self, f"NVDLA_{unit}", reg, **fields)

    def enable(self, *units: str) -> None:
        for unit in units:
            self.set(unit, "D_OP_ENABLE_0", op_en=1)


def hex_lines(data: bytes) -> str:
    return "\n".join(" ".join(f"0x{b:02x}" for b in data[i: i + 32])
                     for i in range(0, len(data), 32)) + "\n"


def txn_files(m: Recorder, comments: list[str], enable: list[str], out_addr: int,
              expected: bytes) -> dict:
    """An nv_full ``input.txn`` folder: load_mem inputs, write_reg by nvdlav1 address,
    the D_OP_ENABLE of each block in ``enable`` (full unit names), wait, dump_mem."""
    files = {}
    lines = [f"# {c}" for c in comments]
    for op in m.ops:
        if op[0] == "mem":
            fname = f"in{len(files) + 1}.dat"
            files[fname] = hex_lines(op[2])
            lines.append(f"load_mem {op[1]:#x} {len(op[2]):#x} {fname}")
    for op in m.ops:
        if op[0] == "reg":
            lines.append(f"write_reg {0xFFFF0000 | (op[1] >> 2):#010x} {op[2]:#x} # {op[3]}")
    for unit in enable:
        r = REGMAP.by_name(f"{unit}.D_OP_ENABLE_0")
        lines.append(f"write_reg {0xFFFF0000 | (REGMAP.address(r, 'nvdlav1') >> 2):#010x} 0x1 "
                     f"# {unit}.D_OP_ENABLE_0")
    lines.append("wait")
    lines.append(f"dump_mem {out_addr:#x} {len(expected):#x} expected.dat")
    files["expected.dat"] = hex_lines(expected)
    files["input.txn"] = "\n".join(lines) + "\n"
    return files
