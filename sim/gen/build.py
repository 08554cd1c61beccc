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

from ..errors import SimError, SpecError
from ..machine import Machine
from ..program.bdma import launch_bdma
from ..program.registers import set_reg
from . import units
from .events import (
    Event,
    InterruptRaised,
    LayerBegins,
    LayerChecked,
    Loaded,
    OutputReserved,
    RegisterWritten,
)
from .legality import obeys_rules
from .memory import Allocator, Output
from .spec import LayerSpec, Spec

COUNTER_WORDS = ("NAN", "INF", "SATURATION", "LUT_")


@dataclass
class LayerRecord:
    spec: LayerSpec
    output: Output
    interrupts: list = field(default_factory=list)  # (source, group)
    counters: list = field(default_factory=list)  # (register full name, value)
    expected: bytes = b""


class GenMachine(Machine):
    """A Machine that records what a trace needs to replay it."""

    def __init__(self, config):
        super().__init__(config)
        self.ops: list[Event] = []  # what a trace of the spec needs, in order
        self.chained: set[tuple[str, int]] = set()  # inputs already in memory (chaining)
        self._ctx = None
        self.last_counters: dict = {}
        self.listeners.add(self)
        self.register_listeners.add(self)

    # layer listener (sim.listeners.LayerListener): keep the counters of the last layer
    def layer_begin(self, index, engine, ctx) -> None:
        self._ctx = ctx

    def layer_end(self) -> None:
        self.last_counters.update(self._ctx.counters)
        self._ctx = None

    # register listener (sim.listeners.RegisterListener): every write goes in the trace
    def wrote_register(self, register, value: int) -> None:
        self.ops.append(RegisterWritten(register, int(value) & 0xFFFFFFFF))

    def load(self, addr, data, ram=1):
        memory = self.memory(ram).name
        raw = np.asarray(data, dtype=np.uint8).tobytes() if not isinstance(data, bytes) else data
        if (memory, addr) not in self.chained:
            self.ops.append(Loaded(memory, addr, raw))
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
            for source, group, lsb in self.done_interrupts(self.interrupt_status() & ~before):
                raised.append((source, group))
                self.ops.append(InterruptRaised(source, group, lsb))
                self.clear_interrupt(source, group)
        if not raised:
            raise SimError("the layer raised no interrupt (not launched)")
        return raised


def build(spec: Spec, progress=None) -> tuple[GenMachine, list[LayerRecord]]:
    """Program and run every layer of ``spec``; returns the machine and the layer records."""
    m = GenMachine(spec.config)
    alloc = Allocator()
    rng = np.random.default_rng(spec.seed)
    records: list[LayerRecord] = []
    outputs: dict[str, LayerRecord] = {}
    for layer in spec.layers:
        m.ops.append(LayerBegins(f"layer {layer.index} ({layer.name}): {layer.unit} "
                                 f"{layer.precision}"))
        builder = getattr(units, f"build_{layer.unit}")
        try:
            output, enable = builder(m, layer, alloc, rng, outputs)
            obeys_rules(m, layer, enable)
            m.ops.append(OutputReserved(output))
            interrupts = m.launch(enable)
        except SpecError:  # names the layer and its key already
            raise
        except SimError as exc:
            exc.locate(f"layer {layer.index} ({layer.name}): the simulator rejects this layer")
            raise
        record = LayerRecord(layer, output, interrupts)
        record.expected = m.memory(output.memory).read(output.addr, output.size)
        for (unit, reg), value in sorted(m.last_counters.items()):
            if any(word in reg for word in COUNTER_WORDS) and "STALL" not in reg:
                record.counters.append((f"{unit}.{reg}", value & 0xFFFFFFFF))
        m.ops.append(LayerChecked(record))
        records.append(record)
        outputs[layer.name] = record
        if progress is not None:
            progress.step(f"layer {layer.index} {layer.name} ({layer.unit})")
    return m, records
