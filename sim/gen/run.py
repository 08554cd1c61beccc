"""Program and run every layer of a spec on a recording machine (above the unit builders).

:mod:`sim.gen.build` holds the recording machine, :mod:`sim.gen.memory` the
helpers the unit builders of :mod:`sim.gen.units` share; this module drives
them, so none imports another in a circle.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimError
from . import units
from .build import COUNTER_WORDS, GenMachine, LayerRecord
from .memory import Allocator
from .spec import Spec


def build(spec: Spec, progress=None) -> tuple[GenMachine, list[LayerRecord]]:
    """Program and run every layer of ``spec``; returns the machine and the layer records."""
    m = GenMachine(spec.config)
    alloc = Allocator()
    rng = np.random.default_rng(spec.seed)
    records: list[LayerRecord] = []
    outputs: dict[str, LayerRecord] = {}
    for layer in spec.layers:
        m.ops.append(("comment", f"layer {layer.index} ({layer.name}): {layer.unit} "
                      f"{layer.precision}"))
        builder = getattr(units, f"build_{layer.unit}")
        try:
            output, enable = builder(m, layer, alloc, rng, outputs)
            m.ops.append(("init", output))
            interrupts = m.launch(enable)
        except SimError as exc:
            if str(exc).startswith("layer "):
                raise
            raise SimError(f"layer {layer.index} ({layer.name}): the simulator rejects this "
                           f"layer: {exc}") from None
        record = LayerRecord(layer, output, interrupts)
        record.expected = m.memory(output.memory).read(output.addr, output.size)
        for (unit, reg), value in sorted(m.last_counters.items()):
            if any(word in reg for word in COUNTER_WORDS) and "STALL" not in reg:
                record.counters.append((f"{unit}.{reg}", value & 0xFFFFFFFF))
        m.ops.append(("check", record))
        records.append(record)
        outputs[layer.name] = record
        if progress is not None:
            progress.step(f"layer {layer.index} {layer.name} ({layer.unit})")
    return m, records
