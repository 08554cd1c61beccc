"""What the example-trace tools share: a recording Machine and the input.txn writer.

The tools (``python tools/make_*.py``) program registers through a Machine
that is never run and write what it recorded as a trace, through the trace
formatters of ``sim.trace.cfg`` and ``sim.trace.txn``; their expected outputs
come from independent numpy models, never from the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim import regs
from sim.machine import Machine
from sim.program.registers import set_reg
from sim.trace import txn
from sim.trace.ops import Comment, DumpMem, LoadMem, RegWrite, Wait

REGMAP = regs.load()


@dataclass(frozen=True)
class Load:
    """A memory load the tool made (its trace op is written with the file it goes in)."""

    addr: int
    data: bytes


class Recorder(Machine):
    """A Machine that records register writes (by name) and memory loads in order (never
    run)."""

    def __init__(self, config: str = "nv_full"):
        super().__init__(config)
        self.writes: list[RegWrite] = []
        self.loads: list[Load] = []

    def write_reg(self, reg, value):
        super().write_reg(reg, value)
        self.writes.append(RegWrite(self._reg(reg).full_name, value & 0xFFFFFFFF))

    def load(self, addr, data, ram=1):
        super().load(addr, data, ram)
        self.loads.append(Load(addr, np.asarray(data, dtype=np.uint8).tobytes()))

    def set(self, unit: str, reg: str, **fields) -> None:
        set_reg(self, f"NVDLA_{unit}", reg, **fields)

    def enable(self, *units: str) -> None:
        for unit in units:
            self.set(unit, "D_OP_ENABLE_0", op_en=1)


def register_address(name: str, address_map: str = "nvdlav1") -> int:
    """The byte address of the register ``name`` (``NVDLA_BDMA.CFG_OP_0``) on a map."""
    return REGMAP.address(REGMAP.by_name(name), address_map)


def txn_write(name: str, value: int, address_map: str = "nvdlav1", note: str | None = None
              ) -> RegWrite:
    """An input.txn write_reg of the register ``name``, named in its comment."""
    return RegWrite(register_address(name, address_map), value,
                    note=name if note is None else note)


def hex_lines(data: bytes) -> str:
    return "\n".join(" ".join(f"0x{b:02x}" for b in data[i: i + 32])
                     for i in range(0, len(data), 32)) + "\n"


def txn_files(m: Recorder, comments: list[str], enable: list[str], out_addr: int,
              expected: bytes) -> dict:
    """An nv_full ``input.txn`` folder: load_mem inputs, write_reg by nvdlav1 address,
    the D_OP_ENABLE of each block in ``enable`` (full unit names), wait, dump_mem."""
    files = {}
    ops = [Comment(c) for c in comments]
    for load in m.loads:
        fname = f"in{len(files) + 1}.dat"
        files[fname] = hex_lines(load.data)
        ops.append(LoadMem(load.addr, len(load.data), fname))
    ops += [txn_write(w.reg, w.value, m.config.address_map) for w in m.writes]
    ops += [txn_write(f"{unit}.D_OP_ENABLE_0", 1) for unit in enable]
    ops.append(Wait())
    ops.append(DumpMem(out_addr, len(expected), "expected.dat"))
    files["expected.dat"] = hex_lines(expected)
    files["input.txn"] = txn.format(ops)
    return files
