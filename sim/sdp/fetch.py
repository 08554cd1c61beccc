"""When SDP_RDMA reads memory: as its layer starts, not when the SDP computes.

SDP_RDMA is a register block of its own, with its own two register groups,
and it runs its layers on its own: it takes group 0, 1, 0, ... in turn, and
starts a layer as soon as that group's D_OP_ENABLE is set and it has handed
the SDP all the data of the layer before.  Starting, it sends every read of
the layer's enabled operand streams (BRDMA for X1, NRDMA for X2, ERDMA for Y:
per channel or per element, whatever the SDP's stages will take of them); the
memory interface serves them and keeps the answers until the SDP takes them.
So the operands are the bytes memory holds when the RDMA layer starts.

For a layer the convolution feeds on the fly that can be long before the SDP
computes, and the firmware may enable it before the layer that writes one of
its operands has finished: NVIDIA's KMD, running a ResNet, enables the SDP of
the shortcut layer (conv, bias, + shortcut cube, ReLU) while the pooling that
writes the shortcut cube still runs.  NVDLA then adds what memory held at the
enable (zeros, if nothing had been written there yet), and so does NVIDIA's
C-model, whose results are our reference.

How long the RDMA stays with a layer: the SDP keeps the data in one FIFO per
operand (ALU and MUL of X1, X2, Y) and one for the input, each holding
``FIFO_ELEMENTS`` elements in NVIDIA's C-model (9216 entries of 16).  A layer
whose data fit is handed over at once, and the RDMA starts the next group as
soon as that is enabled; otherwise the RDMA waits for the SDP to drain the
FIFOs while that layer computes.  The simulator computes a layer at once, so
it starts the next RDMA layer right after the SDP layer has run.  (Traces
replayed on the C-model bear both out, the FIFO size to the element.)

Not modelled: the memory interface's own buffering, tens of thousands of atoms
per stream, taken as unlimited; and the few cycles the reads themselves take,
which matter only to a write landing in the same instant as the enable.

:class:`RdmaFetch` follows the RDMA's layers for :class:`sim.sdp.engine.SdpEngine`;
:class:`Fetched` serves a layer's streams from the bytes read at its start.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ..chains import SDP_RDMA
from ..configs import Precision
from ..dma.align import align_up
from ..dma.elements import elements_per_atom
from ..errors import SimError
from ..records import record
from .config import USE_ALU, USE_BOTH, USE_MUL, operand_dma
from .rdma import stream_geometry, stream_layout

FIFO_ELEMENTS = 9216 * 16  # elements one SDP operand (or input) FIFO holds
_FIFOS = {USE_MUL: ("mul",), USE_ALU: ("alu",), USE_BOTH: ("alu", "mul")}
_STREAMS = (("BRDMA", "BS"), ("NRDMA", "BN"), ("ERDMA", "EW"))


@record
class Window:
    """Bytes of one memory read when an RDMA layer started."""

    memory: object  # sim.dram.Memory
    address: int
    data: np.ndarray  # uint8


@record
class Fetched:
    """What one RDMA layer read when it started: its operand streams' bytes."""

    windows: tuple = ()

    def view(self, memory):
        """``memory`` as the layer's reads see it: the fetched bytes over the current ones."""
        mine = [w for w in self.windows if w.memory is memory]
        return _FetchedView(memory, mine) if mine else memory


class _FetchedView:
    """A memory whose reads return the fetched bytes where a window covers them.

    Reads still go to the memory first, so its bounds checks and its record
    of the layer's reads stay as they are.
    """

    def __init__(self, memory, windows):
        self._memory, self._windows = memory, windows

    def read_array(self, addr: int, size: int, what: str = "", **kw) -> np.ndarray:
        out = self._memory.read_array(addr, size, what, **kw)
        for w in self._windows:
            lo, hi = max(addr, w.address), min(addr + size, w.address + w.data.size)
            if lo < hi:
                out[lo - addr : hi - addr] = w.data[lo - w.address : hi - w.address]
        return out

    def read_view(self, addr: int, size: int, what: str = "", **kw) -> np.ndarray:
        """:meth:`read_array`, a view of the memory's bytes where no window covers them."""
        if any(addr < w.address + w.data.size and w.address < addr + size
               for w in self._windows):
            return self.read_array(addr, size, what, **kw)
        return self._memory.read_view(addr, size, what, **kw)

    def __getattr__(self, name):
        return getattr(self._memory, name)


@record(frozen=False)
class _Layer:
    group: int
    load: dict  # FIFO name -> elements the layer puts in it
    fetched: Fetched = field(default_factory=Fetched)


def _read_streams(ctx, group: int) -> tuple[Fetched, dict]:
    """Read the enabled operand streams of SDP_RDMA group ``group`` as its registers say.

    Only SDP_RDMA's registers count, as in the hardware.  A stream its
    registers cannot describe, or that falls outside memory, is left out: the
    layer, if it uses it, reports the error when it computes.
    """
    rdma = ctx.regs(SDP_RDMA, group)
    proc = Precision.from_code(rdma.proc_precision)
    if proc is None:
        return Fetched(), {}
    atom = ctx.config.atom_bytes
    width, height, channels = rdma.width + 1, rdma.height + 1, rdma.channel + 1
    per_atom = elements_per_atom(proc, atom)
    cp = align_up(channels, per_atom)
    windows, load = [], {}
    for name, prefix in _STREAMS:
        dma = operand_dma(rdma, name, prefix)
        if not dma.enabled:
            continue
        for fifo in _FIFOS.get(dma.use, ()):
            load[f"{prefix}_{fifo}"] = cp * (height * width if dma.per_element else 1)
        try:
            geometry = stream_geometry(dma, proc, cp, height, width, atom)
            memory = ctx.memory(dma.ram_type)
            data = memory.read_array(dma.address, stream_layout(geometry).extent)
        except SimError:
            continue
        windows.append(Window(memory, dma.address, data))
    source = Precision.from_code(rdma.in_precision)
    if not rdma.flying_mode and source is not None:
        per_atom = elements_per_atom(source, atom)
        load["input"] = align_up(channels, per_atom) * height * width
    return Fetched(tuple(windows)), load


class RdmaFetch:
    """SDP_RDMA's layers: which group it starts next, and what the started ones read."""

    def __init__(self):
        self._next = 0  # the group the RDMA starts next
        self._started: list[_Layer] = []  # started, their SDP layer not run yet; oldest first

    def enabling(self, ctx, group: int) -> None:
        """SDP_RDMA's D_OP_ENABLE of ``group`` is being set (before the write lands).

        ``ctx`` (a :class:`sim.machine.LayerContext`) gives the registers and memories."""
        self._advance(ctx, arming=group)

    def layer_ran(self, ctx, group: int) -> None:
        """The SDP layer of SDP_RDMA group ``group`` has computed (its FIFOs are drained)."""
        started = any(layer.group == group for layer in self._started)
        self._started = [layer for layer in self._started if layer.group != group]
        if not started and self._next == group:  # armed behind the RDMA's back: skip it
            self._next = group ^ 1
        self._advance(ctx, done=group)

    def fetched(self, group: int) -> Fetched | None:
        """What RDMA group ``group`` read when it started; None if it has not started."""
        for layer in self._started:
            if layer.group == group:
                return layer.fetched
        return None

    def _busy(self) -> bool:
        """Is the RDMA still handing over its last layer (a FIFO would overflow)?"""
        total: dict[str, int] = {}
        for layer in self._started:
            for fifo, n in layer.load.items():
                total[fifo] = total.get(fifo, 0) + n
        return any(n > FIFO_ELEMENTS for n in total.values())

    def _advance(self, ctx, arming: int | None = None, done: int | None = None) -> None:
        """Start every layer the RDMA can start now, in group order."""
        while True:
            group = self._next
            if any(layer.group == group for layer in self._started):
                return  # both groups in flight
            if group != arming and (group == done or not ctx.armed(SDP_RDMA, group)):
                return
            if self._busy():
                return
            fetched, load = _read_streams(ctx, group)
            self._started.append(_Layer(group, load, fetched))
            self._next = group ^ 1


__all__ = ["FIFO_ELEMENTS", "Fetched", "RdmaFetch"]
