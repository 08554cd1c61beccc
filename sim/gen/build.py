"""Build a trace from a spec: program each layer on a recording Machine and run it.

The :class:`GenMachine` records, in order, the memory it is given, every
register write, the interrupts each layer raises and what the layer wrote
(its output region, the counters it set).  Layers run one after another
(each waits for its interrupts), so the simulator's results become the
trace's expectations and a later layer may read an earlier one's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..dma.elements import element_dtype, elements_per_atom
from ..dma.feature import FeatureLayout, feature_layout, read_feature
from ..errors import SimError
from ..machine import Machine
from ..program.bdma import launch_bdma
from ..program.registers import set_reg
from .data import random_cube
from .spec import LayerSpec

BASE = {"pri_mem": 0x80000000, "sec_mem": 0x50000000}  # NVIDIA's traces use these windows
ALIGN = 0x100
RAM = {"pri_mem": 1, "sec_mem": 0}  # RAM_TYPE: MC 1, CV-SRAM 0
COUNTER_WORDS = ("NAN", "INF", "SATURATION", "LUT_")


@dataclass
class Output:
    """What a layer wrote: a feature cube (chainable) or raw bytes (BDMA)."""

    memory: str
    addr: int
    size: int
    precision: str | None = None
    layout: FeatureLayout | None = None


@dataclass
class LayerRecord:
    spec: LayerSpec
    output: Output
    interrupts: list = field(default_factory=list)  # (source, group)
    counters: list = field(default_factory=list)  # (register full name, value)
    expected: bytes = b""


class Allocator:
    """Non-overlapping regions, ALIGN-aligned, per memory."""

    def __init__(self):
        self.next = dict(BASE)

    def take(self, size: int, memory: str = "pri_mem") -> int:
        addr = self.next[memory]
        self.next[memory] = -(-(addr + max(size, 1)) // ALIGN) * ALIGN
        return addr


class GenMachine(Machine):
    """A Machine that records what a trace needs to replay it."""

    def __init__(self, config):
        super().__init__(config)
        self.ops: list[tuple] = []
        self.chained: set[tuple[str, int]] = set()  # inputs already in memory (chaining)
        self._ctx = None
        self.last_counters: dict = {}
        self.observer = self

    # observer hooks (sim.machine): keep the counters of the last layer
    def layer_begin(self, index, engine, ctx) -> None:
        self._ctx = ctx

    def layer_end(self) -> None:
        self.last_counters.update(self._ctx.counters)
        self._ctx = None

    def write_reg(self, reg, value):
        r = self._reg(reg)
        self.ops.append(("reg", r, int(value) & 0xFFFFFFFF))
        super().write_reg(reg, value)

    def load(self, addr, data, ram=1):
        memory = self.memory(ram).name
        raw = np.asarray(data, dtype=np.uint8).tobytes() if not isinstance(data, bytes) else data
        if (memory, addr) not in self.chained:
            self.ops.append(("load", memory, addr, raw))
            super().load(addr, data, ram)

    def set(self, unit: str, reg: str, **fields) -> None:
        set_reg(self, unit, reg, **fields)

    def select_group(self, units) -> None:
        """Point each unit's producer at the group that runs next (as firmware does)."""
        rf = self.regfile
        for unit in units:
            if unit in rf.producer and rf.producer[unit] != rf.consumer[unit]:
                self.set(unit, "S_POINTER_0", producer=rf.consumer[unit])

    def launch(self, units) -> list:
        """Set OP_EN of ``units`` in order, run the layer; returns its interrupts."""
        self.last_counters = {}
        for unit in units:
            if unit == "NVDLA_BDMA":  # BDMA: queued operations run when their group launches
                launch_bdma(self)
            else:
                self.set(unit, "D_OP_ENABLE_0", op_en=1)
        raised = []
        while True:
            before = self.interrupt_status()
            if not self.step():
                break
            new = self.interrupt_status() & ~before
            glb = self.regfile.register("NVDLA_GLB.S_INTR_STATUS_0")
            for f in glb.fields:
                if new >> f.lsb & 1 and f.name.endswith(("STATUS0", "STATUS1")):
                    source, _, group = f.name.rpartition("_DONE_STATUS")
                    raised.append((source, int(group)))
                    self.ops.append(("intr", source, int(group), f.lsb))
                    self.clear_interrupt(source, int(group))
        if not raised:
            raise SimError("the layer raised no interrupt (not launched)")
        return raised


# -- helpers the unit builders share ---------------------------------------------------------

def input_cube(m: GenMachine, layer: LayerSpec, alloc: Allocator, rng, outputs: dict,
               kind: str = "feature"):
    """(elements (C, H, W), address, layout) of a layer's input, chained or random."""
    cfg = m.config
    atom = cfg.atom_bytes
    if isinstance(layer.input, str):
        src = outputs[layer.input].output
        if src.layout is None:
            raise layer.fail("input", f"{layer.input!r} writes raw bytes, not a feature cube")
        if src.precision != layer.precision:
            raise layer.fail("input", f"{layer.input!r} writes {src.precision} but this layer "
                             f"reads {layer.precision}: set precision = \"{src.precision}\"")
        if src.layout.batch != 1:
            raise layer.fail("input", f"{layer.input!r} writes a batch of cubes")
        lay = src.layout
        cube = read_feature(m.memory(src.memory), src.addr, (lay.channels, lay.height,
                                                             lay.width),
                            layer.precision, atom, lay.line_stride, lay.surface_stride)
        m.chained.add((src.memory, src.addr))
        return cube, src.addr, lay
    c, h, w = layer.input
    cube = random_cube(rng, (c, h, w), layer.precision, layer.get("data"), kind)
    lay = feature_layout((c, h, w), layer.precision, atom)
    return cube, alloc.take(lay.extent), lay


def output_region(m: GenMachine, alloc: Allocator, shape, precision: str,
                  memory: str = "pri_mem") -> Output:
    lay = feature_layout(shape, precision, m.config.atom_bytes)
    return Output(memory, alloc.take(lay.extent, memory), lay.extent, precision, lay)


def padded(channels: int, precision: str, atom: int) -> int:
    group = elements_per_atom(precision, atom)
    return -(-channels // group) * group


def dtype_of(precision: str):
    return element_dtype(precision)
