"""What gen records while it programs and runs a spec, in order: the trace writers
(:mod:`sim.gen.write`) turn these events into each format's operations."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayerBegins:
    """A layer of the spec starts (its description becomes a trace comment)."""

    text: str


@dataclass(frozen=True)
class Loaded:
    """The bytes a layer's input needs in memory before it runs."""

    memory: str  # pri_mem | sec_mem
    addr: int
    data: bytes


@dataclass(frozen=True)
class OutputReserved:
    """The layer's output region (a sim.gen.memory.Output), zeroed before it runs."""

    output: object


@dataclass(frozen=True)
class RegisterWritten:
    register: object  # regs.Register
    value: int


@dataclass(frozen=True)
class InterruptRaised:
    source: str  # as GLB.S_INTR_STATUS names it: SDP, CDMA_DAT, ...
    group: int
    lsb: int  # its bit in S_INTR_STATUS


@dataclass(frozen=True)
class LayerChecked:
    """The layer has run: its record holds the expected output and counters."""

    record: object  # sim.gen.build.LayerRecord


Event = LayerBegins | Loaded | OutputReserved | RegisterWritten | InterruptRaised | LayerChecked
