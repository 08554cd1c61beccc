"""Every hardware layer's output cube, for comparing a network layer by layer.

``nvdla-sim loadable --layers DIR`` attaches a :class:`LayerOutputs` to the
machine: when a layer ends, each feature cube its write DMAs wrote is read
back from memory at once (a later layer may write over it) as a numpy array
in the layer's precision (int8, int16, or float16 from the fp16 bit
patterns), with one summary line: layer, unit, shape, precision, min, max
and NaN count.  Non-feature writes (a BDMA copy, a Rubik reshape) are kept as
their raw bytes.
"""

from __future__ import annotations

import io

import numpy as np

from ..configs import FP16
from ..diff.record import WriteRecorder
from ..dma.feature import gather_feature
from ..records import record


@record(frozen=False)
class LayerOutput:
    layer: int
    engine: str  # CONV, SDP, PDP, ... (what ran)
    unit: str  # the block whose write DMA wrote
    precision: str | None  # None: raw bytes
    array: np.ndarray
    part: int = 0  # several cubes in one layer (a PDP split): numbered

    @property
    def name(self) -> str:
        suffix = f"_part{self.part}" if self.part else ""
        return f"layer{self.layer:03d}_{self.unit}{suffix}.npy"

    def summary(self) -> str:
        a = self.array
        shape = "x".join(map(str, a.shape))
        kind = self.precision or "raw bytes"
        if a.size == 0:
            return f"layer {self.layer} {self.engine}/{self.unit} {shape} {kind} (empty)"
        if a.dtype == np.float16:
            finite = a[np.isfinite(a)]
            nan = int(np.isnan(a).sum())
            lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
            values = f"min {lo:.6g} max {hi:.6g} NaN {nan}"
            inf = int(np.isinf(a).sum())
            values += f" Inf {inf}" if inf else ""
        else:
            values = f"min {int(a.min())} max {int(a.max())} NaN 0"
        return f"layer {self.layer} {self.engine}/{self.unit} {shape} {kind} {values}"

    def npy(self) -> bytes:
        buf = io.BytesIO()
        np.save(buf, self.array, allow_pickle=False)
        return buf.getvalue()


class LayerOutputs:
    """Attach to a machine with :meth:`attach`; :attr:`outputs` fills as layers end.

    It listens to the machine's layers (:class:`sim.listeners.LayerListener`) beside a
    :class:`~sim.diff.record.WriteRecorder` of its own, which listens to the memories;
    other listeners (a diff recorder) may listen at the same time.
    """

    def __init__(self):
        self.recorder = WriteRecorder()
        self.outputs: list[LayerOutput] = []
        self._memories = {}
        self._first = 0  # index of the first write of the current layer

    def attach(self, machine) -> LayerOutputs:
        self.recorder.attach(machine)  # told of a layer's start before this
        machine.listeners.add(self)
        self._memories = {m.name: m for m in machine.memories()}
        return self

    def detach(self, machine) -> None:
        machine.listeners.remove(self)
        self.recorder.detach(machine)

    def layer_begin(self, index: int, engine, ctx) -> None:
        self._first = self.recorder.seq

    def layer_end(self) -> None:
        writes = self.recorder.writes[self._first:]
        parts = 0
        for w in writes:
            mem = self._memories[w.memory]
            if w.layout is not None:
                window = mem.read_array(w.addr, w.layout.extent)
                array = gather_feature(window, 0, w.layout, w.precision)
                array = array[..., : w.channels, :, :]
                if w.precision == FP16:
                    array = np.ascontiguousarray(array).view(np.float16)
                out = LayerOutput(w.layer, w.engine, w.unit, w.precision, array)
            else:
                out = LayerOutput(w.layer, w.engine, w.unit, None,
                                  mem.read_array(w.addr, w.size))
            if w.layout is None and parts and self.outputs[-1].precision is None \
                    and self.outputs[-1].layer == w.layer:
                last = self.outputs[-1]  # a copy line by line: one array per layer
                last.array = np.concatenate([last.array, out.array])
                continue
            out.part = parts
            parts += 1
            self.outputs.append(out)

    def files(self) -> dict[str, bytes | str]:
        files: dict[str, bytes | str] = {o.name: o.npy() for o in self.outputs}
        files["layers.txt"] = "".join(f"{o.summary()} -> {o.name}\n" for o in self.outputs)
        return files
