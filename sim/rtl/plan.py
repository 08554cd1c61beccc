"""From a trace to the testbench's commands, in the trace's own order.

The simulator replays the trace first (:func:`sim.diff.simulate`), which
validates it and gives the bytes each memory check should see; the commands
then follow the trace line by line:

* ``reg_write`` / ``poll_reg_equal`` / ``read_reg``: a CSB write, or a read
  that must match (a plain read matches anything);
* ``mem_init`` / ``mem_load`` / ``load_mem``: loads of the bytes the trace
  puts there;
* ``intr_notify(SOURCE_GROUP, id)``: wait for exactly that done bit.  The
  interrupt line is the OR of the unmasked status bits, so the bench masks
  every other bit, reads the mask back (a CSB read returns after the writes
  before it landed, so the line no longer shows a bit cleared earlier),
  waits, checks the bit is set, clears it as the firmware's handler would,
  and restores the mask the trace programmed.  Later commands, the next
  layers' register writes among them, reach the hardware only then: a
  register group is reprogrammed after the hardware released it, whatever
  the RTL's timing;
* ``check_crc`` / ``dump_mem``: the bench writes the region to a file there,
  compared with the simulator's bytes (or the trace's golden ``dump_mem``
  file); the verdict of a ``check_crc`` is the CRC of that file.
"""

from __future__ import annotations

import zlib
from dataclasses import field
from pathlib import Path

from ..dram import fill_pattern
from ..errors import SimError
from ..memfiles import read_hex_dat, read_record_file
from ..records import record
from ..regfile import RegisterFile
from ..trace.cfg import parse_cfg
from ..trace.ops import Op
from ..trace.txn import parse_txn
from .commands import DBB_WINDOW, U32, Command, Dump, Load, Read, Wait, Write

STATUS = "NVDLA_GLB.S_INTR_STATUS_0"
MASK = "NVDLA_GLB.S_INTR_MASK_0"
MASK_READBACKS = 2  # CSB round trips between unmasking and waiting: more than the line's
# register-and-synchronise delay (a few clocks in NV_NVDLA_GLB_ic)


@record(frozen=False)
class Check:
    """One memory check of the trace and what decides it."""

    where: str  # trace file:line
    addr: int
    size: int
    file: str  # the region as the bench dumps it
    crc: int | None  # check_crc: the CRC the trace expects
    golden: bytes | None  # dump_mem: the bytes the trace expects
    region: object  # sim.diff.simulate.Region: the simulator's bytes and who wrote them

    def passes(self, data: bytes) -> bool:
        if self.crc is not None:
            return zlib.crc32(data) & U32 == self.crc
        return data == self.golden


@record(frozen=False)
class Plan:
    commands: list[Command] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    waits: dict[int, str] = field(default_factory=dict)  # command index -> interrupt awaited


def parse_trace(trace_file: Path) -> list[Op]:
    return parse_txn(trace_file) if trace_file.suffix == ".txn" else parse_cfg(trace_file)


class _Planner:
    def __init__(self, trace_file: Path, regfile: RegisterFile, regions: list):
        self.folder = trace_file.parent
        self.regfile = regfile
        self.regions = iter(regions)
        self.plan = Plan()
        self.status = regfile.register(STATUS)
        self.mask = regfile.register(MASK)
        self.done_bits = sum(1 << f.lsb for f in self.status.fields
                             if "_DONE_STATUS" in f.name)
        self.trace_mask = self.mask.reset_value()  # what the trace last programmed

    def add(self, command: Command) -> None:
        self.plan.commands.append(command)

    def register(self, op: Op, reg):
        try:
            if isinstance(reg, str):
                return self.regfile.register(reg)
            return self.regfile.register_at(reg)
        except (KeyError, SimError) as exc:
            raise op.fail(f"unknown register {reg if isinstance(reg, str) else hex(reg)} "
                          f"({exc})") from None

    def addr_of(self, reg) -> int:
        return self.regfile.address_of(reg)

    def memory_addr(self, op: Op, memory: str, addr: int, size: int) -> int:
        if memory != "pri_mem":
            raise op.fail(f"{memory} is not on the testbench (it models DBB memory only)")
        if not addr & DBB_WINDOW or addr + size > 1 << 32:
            raise op.fail(f"{addr:#x}+{size:#x} is outside the testbench's DBB memory "
                          f"({DBB_WINDOW:#x}..0xffffffff)")
        return addr

    def file(self, op: Op, name: str) -> Path:
        path = self.folder / name
        if not path.is_file():
            raise op.fail(f"memory file {name!r} not found next to the trace")
        return path

    # -- one handler per trace operation -------------------------------------
    def reg_write(self, op: Op) -> None:
        reg = self.register(op, op.args[0])
        if reg is self.mask:
            self.trace_mask = op.args[1]
        self.add(Write(self.addr_of(reg), op.args[1], op.where))

    def reg_read(self, op: Op) -> None:
        reg = self.register(op, op.args[0])
        self.add(Read(self.addr_of(reg), 0, 0, op.where, f"read {reg.full_name}"))

    def poll_reg(self, op: Op) -> None:
        reg, mask, want = op.args
        reg = self.register(op, reg)
        self.add(Read(self.addr_of(reg), mask, want, op.where,
                      f"{reg.full_name} == {want & mask:#x} (mask {mask:#x})"))

    def intr_notify(self, op: Op) -> None:
        source = op.args[0]
        if not source:  # any interrupt, then clear what it raised
            self.wait_any(op)
            self.add(Write(self.addr_of(self.status), self.done_bits & ~self.trace_mask,
                           op.where))
            return
        self.wait_for(op, self.done_bit(op, source), source)

    def wait_for(self, op: Op, bit: int, name: str) -> None:
        """Wait for one done bit, then clear it (the module docstring says why so)."""
        status, mask = self.addr_of(self.status), self.addr_of(self.mask)
        only = self.done_bits & ~bit
        self.add(Write(mask, only, op.where))
        for _ in range(MASK_READBACKS):
            self.add(Read(mask, U32, only, op.where, "the interrupt mask"))
        self.plan.waits[len(self.plan.commands)] = name
        self.add(Wait(op.where))
        self.add(Read(status, bit, bit, op.where, f"interrupt {name} set"))
        self.add(Write(status, bit, op.where))
        self.add(Write(mask, self.trace_mask, op.where))

    def wait_any(self, op: Op) -> None:
        self.plan.waits[len(self.plan.commands)] = "any interrupt"
        self.add(Wait(op.where))

    def done_bit(self, op: Op, source: str) -> int:
        name, _, group = source.strip().upper().rpartition("_")
        for f in self.status.fields:
            if f.name == f"{name}_DONE_STATUS{group}":
                return 1 << f.lsb
        raise op.fail(f"unknown interrupt {source!r}")

    def wait(self, op: Op, following: Op | None) -> bool:
        """``wait`` (input.txn); the usual ``read_reg`` of one status bit after it makes
        it a wait for that bit.  True when it took ``following`` too."""
        bit = self.awaited_bit(following)
        if bit is None:
            self.wait_any(op)
            return False
        field = next(f for f in self.status.fields if 1 << f.lsb == bit)
        name = field.name.replace("_DONE_STATUS", "_")
        self.wait_for(op, bit, name)
        return True

    def awaited_bit(self, op: Op | None) -> int | None:
        if op is None or op.cmd != "poll_reg":
            return None
        reg, mask, want = op.args
        if self.register(op, reg) is not self.status or mask != want:
            return None
        if mask & self.done_bits != mask or mask & (mask - 1):  # not exactly one done bit
            return None
        return mask

    def mem_init(self, op: Op) -> None:
        memory, addr, size, pattern = op.args
        if isinstance(size, str):
            size = read_record_file(self.file(op, size)).extent
        addr = self.memory_addr(op, memory, addr, size)
        self.add(Load(addr, fill_pattern(pattern, addr, size).tobytes(), op.where))

    def mem_load(self, op: Op) -> None:
        memory, addr, name = op.args
        for offset, payload in read_record_file(self.file(op, name)).runs:
            self.add(Load(self.memory_addr(op, memory, addr + offset, len(payload)),
                          payload, op.where))

    def load_hex(self, op: Op) -> None:
        addr, size, name = op.args
        data = read_hex_dat(self.file(op, name))[:size]
        data += bytes(size - len(data))  # the bench loads what the file holds, then zeros
        self.add(Load(self.memory_addr(op, "pri_mem", addr, size), data, op.where))

    def check_crc(self, op: Op) -> None:
        _sync, memory, addr, size, crc = op.args
        self.memory_addr(op, memory, addr, size)
        self.check(op, addr, size, crc, None)

    def dump_mem(self, op: Op) -> None:
        addr, size, name = op.args
        self.memory_addr(op, "pri_mem", addr, size)
        self.check(op, addr, size, None, read_hex_dat(self.file(op, name))[:size])

    def check(self, op: Op, addr: int, size: int, crc, golden) -> None:
        region = next(self.regions)
        index = len(self.plan.checks)
        file = f"check{index:03d}_{addr:x}.bin"
        expected = golden if golden is not None else region.simulated
        self.plan.checks.append(Check(op.where, addr, size, file, crc, golden, region))
        self.add(Dump(addr, expected, file, op.where))

    def nop(self, op: Op) -> None:
        pass

    check_nothing = nop


def plan_trace(trace_file: Path, config: str, regions: list) -> Plan:
    """The commands that run ``trace_file`` on the bench; ``regions``: the simulator's
    checked regions in trace order (sim.diff.simulate)."""
    from ..configs import CONFIGS

    regfile = RegisterFile(CONFIGS[config].address_map)
    planner = _Planner(trace_file, regfile, regions)
    ops = parse_trace(trace_file)
    skip = False
    for i, op in enumerate(ops):
        if skip:
            skip = False
            continue
        if op.cmd == "wait":
            skip = planner.wait(op, ops[i + 1] if i + 1 < len(ops) else None)
            continue
        handler = getattr(planner, op.cmd, None)
        if handler is None:
            raise op.fail(f"{op.cmd} has no testbench command")
        handler(op)
    return planner.plan
