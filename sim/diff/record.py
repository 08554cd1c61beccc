"""Who wrote which bytes: a recorder attached to a Machine while a trace plays.

The recorder listens (:mod:`sim.listeners`): the machine tells it when a
layer starts and ends; each memory tells it of every write, and
:func:`sim.dma.feature.write_feature` adds the
:class:`~sim.dma.feature.FeatureLayout` of the cube it wrote.  Other
listeners (``--layers``, another recorder) may listen at the same time.  Writes made
outside a layer are the trace's own loads (``mem_load``, ``mem_init``,
``load_mem``), recorded with the trace line that made them.
"""

from __future__ import annotations

import numpy as np

from ..dma.feature import FeatureLayout
from ..listeners import memory_listeners
from ..records import record


@record(frozen=False)
class Write:
    """One write to memory, in program order (``seq``)."""

    seq: int
    memory: str  # pri_mem | sec_mem
    addr: int
    size: int
    layer: int | None  # index of the layer (0 = the first the trace runs); None: the trace
    engine: str  # CONV, SDP, PDP, CDP, BDMA, RUBIK, or "trace"
    unit: str  # the block whose write DMA wrote (SDP, PDP, ...), or the trace line
    layout: FeatureLayout | None = None  # a feature cube (write_feature), else raw bytes
    precision: str | None = None
    channels: int | None = None  # the cube's real channels (the layout may hold pad lanes)
    part: int = 0  # index among the writes of its layer (a BDMA copy: one per line)

    @property
    def end(self) -> int:
        return self.addr + self.size

    def label(self) -> str:
        if self.layer is None:
            return f"trace load ({self.unit})"
        return f"layer {self.layer} {self.engine}" + (
            f" (written by {self.unit})" if self.unit != self.engine else "")


# writer block -> (block, register, field) holding the output cube's channels - 1: the
# engines write whole atoms, so the cube they hand to write_feature may hold pad lanes
OUTPUT_CHANNELS = {
    "NVDLA_SDP": ("NVDLA_SDP", "D_DATA_CUBE_CHANNEL_0", "channel"),
    "NVDLA_PDP": ("NVDLA_PDP", "D_DATA_CUBE_OUT_CHANNEL_0", "cube_out_channel"),
    "NVDLA_CDP": ("NVDLA_CDP_RDMA", "D_DATA_CUBE_CHANNEL_0", "channel"),
}


def _unit_of(what: str, engine: str) -> str:
    """``NVDLA_SDP.D_DST_BASE_ADDR`` -> ``SDP``."""
    block = what.split(".", 1)[0] if what else ""
    return block.removeprefix("NVDLA_") or engine


class WriteRecorder:
    """Attach with :meth:`attach` (detach with :meth:`detach`); read :attr:`writes` afterwards.

    A :class:`~sim.listeners.LayerListener` and :class:`~sim.listeners.MemoryListener`.
    """

    def __init__(self):
        self.writes: list[Write] = []
        self._layer: int | None = None
        self._engine = "trace"
        self._ctx = None
        self._parts = 0
        self.where = "trace"  # the trace line being played (set by the player)

    def attach(self, machine) -> WriteRecorder:
        """Listen to ``machine``'s layers and to every memory's writes."""
        machine.listeners.add(self)
        for mem in machine.memories():
            memory_listeners(mem).add(self)
        return self

    def detach(self, machine) -> None:
        machine.listeners.remove(self)
        for mem in machine.memories():
            memory_listeners(mem).remove(self)

    @property
    def seq(self) -> int:
        """Sequence number the next write will get."""
        return len(self.writes)

    # -- machine hooks -------------------------------------------------------------
    def layer_begin(self, index: int, engine, ctx) -> None:
        self._layer, self._engine, self._ctx = index, engine.name, ctx
        self._parts = 0

    def layer_end(self) -> None:
        self._layer, self._engine, self._ctx = None, "trace", None

    def _real_channels(self, what: str, layout: FeatureLayout) -> int:
        block = what.split(".", 1)[0] if what else ""
        where = OUTPUT_CHANNELS.get(block)
        if where is None or self._ctx is None or where[0] not in self._ctx.groups:
            return layout.channels
        unit, register, name = where
        value = getattr(self._ctx.regs(unit).reg(register), name) + 1
        return min(value, layout.channels)

    # -- memory hooks ---------------------------------------------------------------
    def wrote(self, memory, addr: int, size: int) -> None:
        unit = self._engine if self._layer is not None else self.where
        part = self._parts if self._layer is not None else 0
        if self._layer is not None:
            self._parts += 1
        self.writes.append(Write(len(self.writes), memory.name, addr, size, self._layer,
                                 self._engine, unit, part=part))

    def wrote_feature(self, memory, addr: int, layout: FeatureLayout, precision: str,
                      what: str) -> None:
        """The last write of ``memory`` at ``addr`` held this feature cube."""
        for w in reversed(self.writes):
            if w.memory == memory.name and w.addr == addr:
                w.layout, w.precision = layout, precision
                w.channels = self._real_channels(what, layout)
                w.unit = _unit_of(what, self._engine)
                return

    # -- queries -------------------------------------------------------------------------
    def layers(self) -> list[tuple[int, str]]:
        """(index, engine) of every layer that wrote memory, in order."""
        seen = {}
        for w in self.writes:
            if w.layer is not None:
                seen.setdefault(w.layer, w.engine)
        return sorted(seen.items())


def element_map(layout: FeatureLayout):
    """Every element of ``layout`` (padding lanes of the last atom included).

    Returns (sorted start offsets, coordinates (n, c, h, w) of each, int64
    arrays): the offsets come from :meth:`FeatureLayout.element_offsets`, the
    one place that knows where an element lives.
    """
    full = FeatureLayout(layout.padded_channels, layout.height, layout.width, layout.group,
                         layout.element_bytes, layout.line_stride, layout.surface_stride,
                         layout.batch_stride, layout.batch)
    offsets = full.element_offsets()
    if full.batch == 1:
        offsets = offsets[None]
    flat = offsets.ravel()
    order = np.argsort(flat, kind="stable")
    coords = np.stack(np.unravel_index(order, offsets.shape), axis=1)
    return flat[order], coords
