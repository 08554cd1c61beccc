"""BDMA engine.

Software fills the CFG_* registers and writes CFG_OP.EN=1: the operation is
queued (a FIFO of ``FIFO_DEPTH`` slots) and EN clears itself.  Writing
CFG_LAUNCH0/1 closes a group: every operation queued since the previous
launch runs, then BDMA_DONE_STATUS<group> is raised.  A copy moves
``surf_repeat+1`` surfaces of ``line_repeat+1`` lines of ``(size+1)*32``
bytes; addresses and strides are 32-byte aligned.
"""

from __future__ import annotations

from ..engine import Engine
from ..limits import check_extent
from ..records import record

FIFO_DEPTH = 20
ATOM = 32
UNIT = "NVDLA_BDMA"
STATUS = "STATUS_0"  # computed on read: free FIFO slots, idle and busy groups


@record
class BdmaCopy:
    src: int
    dst: int
    src_ram: int
    dst_ram: int
    line_bytes: int
    lines: int
    surfaces: int
    src_line_stride: int
    dst_line_stride: int
    src_surf_stride: int
    dst_surf_stride: int

    @classmethod
    def from_registers(cls, block) -> BdmaCopy:
        """The copy the CFG_* registers describe.

        Addresses and strides keep bits [31:5] only, as the hardware's registers
        do: a misaligned value is rounded down to its 32-byte atom, not refused.
        """
        def word(name):
            return block.word(name)

        return cls(
            src=(word("CFG_SRC_ADDR_HIGH_0") << 32) | (word("CFG_SRC_ADDR_LOW_0") & ~(ATOM - 1)),
            dst=(word("CFG_DST_ADDR_HIGH_0") << 32) | (word("CFG_DST_ADDR_LOW_0") & ~(ATOM - 1)),
            src_ram=block.src_ram_type,
            dst_ram=block.dst_ram_type,
            line_bytes=(block.reg("CFG_LINE_0").size + 1) * ATOM,
            lines=block.reg("CFG_LINE_REPEAT_0").number + 1,
            surfaces=block.reg("CFG_SURF_REPEAT_0").number + 1,
            src_line_stride=word("CFG_SRC_LINE_0") & ~(ATOM - 1),
            dst_line_stride=word("CFG_DST_LINE_0") & ~(ATOM - 1),
            src_surf_stride=word("CFG_SRC_SURF_0") & ~(ATOM - 1),
            dst_surf_stride=word("CFG_DST_SURF_0") & ~(ATOM - 1),
        )

    def execute(self, ctx) -> None:
        """Copy through the memories ``ctx`` (a :class:`sim.machine.LayerContext`) selects."""
        src_mem = ctx.memory(self.src_ram, f"{UNIT}.CFG_CMD_0.SRC_RAM_TYPE")
        dst_mem = ctx.memory(self.dst_ram, f"{UNIT}.CFG_CMD_0.DST_RAM_TYPE")
        total = self.surfaces * self.lines * self.line_bytes
        check_extent(total, f"{UNIT}: a copy of {self.surfaces} surfaces x {self.lines} lines "
                     f"x {self.line_bytes} bytes", src_mem.limits)
        for s in range(self.surfaces):
            for line in range(self.lines):
                src = self.src + s * self.src_surf_stride + line * self.src_line_stride
                dst = self.dst + s * self.dst_surf_stride + line * self.dst_line_stride
                data = src_mem.read_array(src, self.line_bytes, f"{UNIT}.CFG_SRC_ADDR")
                dst_mem.write(dst, data, f"{UNIT}.CFG_DST_ADDR")


class BdmaEngine(Engine):
    name = "BDMA"
    units = (UNIT,)
    # BDMA is a copy engine: it moves one line at a time, in order (a copy whose
    # destination overlaps its source sees the lines it already wrote)
    refuses_overlap = False

    def __init__(self):
        self.queue: list[BdmaCopy] = []  # operations not yet in a launched group
        self.groups: list[tuple[int, list[BdmaCopy]]] = []  # launched, not yet run

    def on_write(self, machine, reg, value: int) -> bool:
        if reg.unit != UNIT:
            return False
        machine.config.require("bdma", f"{reg.full_name}")
        rf = machine.regfile
        if reg.name == "CFG_OP_0":
            if value & 1:
                if len(self.queue) >= FIFO_DEPTH:
                    from ..errors import SimError

                    raise SimError(f"{reg.full_name}: BDMA operation FIFO is full")
                self.queue.append(BdmaCopy.from_registers(rf.snapshot(UNIT, 0)))
            return True  # EN is a trigger: it never reads back as 1
        for group, name in ((0, "CFG_LAUNCH0_0"), (1, "CFG_LAUNCH1_0")):
            if reg.name == name:
                rf.cpu_write(reg, value)
                if value & 1:
                    self.groups.append((group, self.queue))
                    self.queue = []
                return True
        return False

    def computed_reads(self) -> frozenset:
        return frozenset({f"{UNIT}.{STATUS}"})

    def on_read(self, machine, reg) -> int | None:
        if reg.unit != UNIT or reg.name != STATUS:
            return None
        busy = {g for g, _ in self.groups}
        pending = sum(len(ops) for _, ops in self.groups) + len(self.queue)
        f = reg.field
        value = (FIFO_DEPTH - min(pending, FIFO_DEPTH)) << f("FREE_SLOT").lsb
        value |= (not self.groups and not self.queue) << f("IDLE").lsb
        value |= (0 in busy) << f("GRP0_BUSY").lsb
        value |= (1 in busy) << f("GRP1_BUSY").lsb
        return value

    def ready(self, machine) -> dict | None:
        return {UNIT: self.groups[0][0]} if self.groups else None

    def run(self, ctx) -> None:
        group, ops = self.groups.pop(0)
        for op in ops:
            op.execute(ctx)
        self._group = group

    def interrupts(self, ctx) -> list:
        return [("BDMA", UNIT)]
