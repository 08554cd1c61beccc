"""The interface every datapath engine implements.

An engine owns one or more register blocks (units) and runs one layer at a
time.  The ``Machine`` asks each engine whether it can launch (``ready``),
runs it with a ``LayerContext`` (its register snapshots, its memories and the
state it owns: never the machine) and then, for every block the layer used,
stores counters, clears OP_EN, flips the consumer pointer and raises the
interrupts the engine names.
"""

from __future__ import annotations


class Engine:
    name = "?"
    units: tuple = ()  # register blocks this engine may consume
    idle_status: dict = {}  # "NVDLA_X.REG_0" -> value a status register reads when idle
    # a layer's write DMA may not touch bytes its read DMAs fetch (sim.dram explains why)
    refuses_overlap: bool = True

    def ready(self, machine) -> dict | None:
        """``{unit: group}`` of the layer to run now, or None."""
        return None

    def run(self, ctx) -> None:
        raise NotImplementedError

    def unit_state(self) -> dict:
        """``{unit: state}`` this engine keeps between layers (a LUT RAM, the RDMA's
        fetches) that ``LayerContext.state(unit)`` serves to whichever engine runs the
        unit (the convolution's fused SDP, say)."""
        return {}

    def interrupts(self, ctx) -> list:
        """(source, unit) pairs: raise ``<source>_DONE_STATUS<group of unit>``."""
        return []

    def on_write(self, machine, reg, value: int) -> bool:
        """Handle a CSB write with side effects of its own; True if consumed."""
        return False

    def write_hooks(self) -> frozenset | None:
        """Full names of the registers whose writes :meth:`on_write` acts on (the machine
        hands it only those: every trace line is a write); None: every register of the
        engine's units."""
        return None

    def on_read(self, machine, reg) -> int | None:
        """Value of a register this engine computes on read (one of :meth:`computed_reads`),
        else None."""
        return None

    def computed_reads(self) -> frozenset:
        """Full names (``UNIT.REGISTER``) of the registers :meth:`on_read` computes: their
        value is not the register file's word, and reading one may change state (a LUT
        port steps its address).  None here."""
        return frozenset()

    def data_ports(self) -> dict:
        """Register full name -> the callable that consumes its every write exactly as
        :meth:`on_write` would, for ports written thousands of times (a LUT upload): the
        machine calls it directly.  None here."""
        return {}


def armed_groups(machine, units) -> dict | None:
    """``{unit: consumer group}`` if every unit's consumer group is armed."""
    rf = machine.regfile
    if all(rf.is_armed(u) for u in units):
        return {u: rf.consumer[u] for u in units}
    return None
