"""What gen records while it programs and runs a spec, in order: the trace writers
(:mod:`sim.gen.write`) turn these events into each format's operations."""

from __future__ import annotations

from ..records import record


@record
class LayerBegins:
    """A layer of the spec starts (its description becomes a trace comment)."""

    text: str


@record
class Loaded:
    """The bytes a layer's input needs in memory before it runs."""

    memory: str  # pri_mem | sec_mem
    addr: int
    data: bytes


@record
class OutputReserved:
    """The layer's output region (a sim.gen.memory.Output), zeroed before it runs."""

    output: object


@record
class RegisterWritten:
    register: object  # regs.Register
    value: int


@record
class InterruptRaised:
    source: str  # as GLB.S_INTR_STATUS names it: SDP, CDMA_DAT, ...
    group: int
    lsb: int  # its bit in S_INTR_STATUS


@record
class LayerChecked:
    """The layer has run: its record holds the expected output and counters."""

    record: object  # sim.gen.build.LayerRecord


Event = LayerBegins | Loaded | OutputReserved | RegisterWritten | InterruptRaised | LayerChecked
