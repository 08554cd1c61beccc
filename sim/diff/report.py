"""``diff_trace``: run a trace, compare a device's memory, summarise and write JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import field
from pathlib import Path

import numpy as np

from ..errors import SimError
from ..files import write_atomically
from ..records import record
from .actual import load_actual, region_bytes
from .localise import RegionDiff, build_cubes, compare_region, summarise_cube
from .simulate import Simulation, simulate

FIRST = 10  # differences printed per cube
MAX_JSON = 200_000  # differences listed in the JSON report (counts are always complete)


@record(frozen=False)
class DiffReport:
    sim: Simulation
    regions: list[RegionDiff]
    layer: int | None = None
    expected_from: str = "simulator"  # or "trace" (golden files)
    panels: list = field(default_factory=list)  # PNG panels (sim.diff.plot)

    @property
    def differing_bytes(self) -> int:
        return sum(r.differing_bytes for r in self.regions)

    @property
    def elements(self):
        return [e for r in self.regions for e in r.elements]

    @property
    def byte_diffs(self):
        return [b for r in self.regions for b in r.bytes]

    @property
    def identical(self) -> bool:
        """No byte differs and every byte to compare was in ACTUAL (a missing one is no
        evidence of a match)."""
        return (not self.elements and not self.byte_diffs
                and not any(r.missing_bytes for r in self.regions))

    def cubes(self) -> list[tuple]:
        """(cube, its differing elements) in layer order."""
        groups: dict = {}
        for e in self.elements:
            groups.setdefault(e.cube.key, (e.cube, []))[1].append(e)
        return sorted(groups.values(), key=lambda g: (g[0].layer, g[0].addr))

    def per_layer(self) -> list[dict]:
        """Differing elements and other bytes per (layer, unit) that wrote them."""
        counts: dict = {}
        for e in self.elements:
            key = (e.cube.layer, e.cube.engine, e.cube.unit)
            counts.setdefault(key, [0, 0])[0] += 1
        for b in self.byte_diffs:
            w = b.write
            key = (None, "-", "never written") if w is None else (w.layer, w.engine, w.unit)
            counts.setdefault(key, [0, 0])[1] += 1
        order = sorted(counts, key=lambda k: (k[0] is None, k[0] or 0, k[1], k[2]))
        return [{"layer": k[0], "engine": k[1], "unit": k[2], "elements": counts[k][0],
                 "bytes": counts[k][1]} for k in order]

    # -- output ---------------------------------------------------------------------
    def summary_lines(self, more: str = "see --json") -> list[str]:
        """The summary; ``more`` says where the elements it leaves out are listed."""
        sim = self.sim
        lines = [f"{sim.trace_file} ({sim.config}): {len(self.regions)} checked region(s), "
                 f"{len(sim.layers)} layer(s); expected values from the {self.expected_from}"
                 + ("" if self.layer is None else f"; layer {self.layer} only")]
        for note in sim.notes:
            lines.append(f"  note: the simulator fails {note}")
        for r in self.regions:
            reg = r.region
            text = (f"region {reg.memory} {reg.addr:#x}+{reg.size:#x} ({reg.name}, checked at "
                    f"{reg.where}): ")
            if self.expected_from == "simulator" and not reg.trace_agrees:
                text += "[the simulator itself does not pass this check] "
            if r.missing_bytes == reg.size:
                lines.append(text + "not in ACTUAL")
                continue
            text += (f"{r.differing_bytes} byte(s) differ" if r.differing_bytes
                     else "identical")
            if r.missing_bytes:
                text += f", {r.missing_bytes} byte(s) not in ACTUAL"
            lines.append(text)
        per_layer = self.per_layer()
        if per_layer:
            lines.append("per layer: " + "; ".join(
                f"{'trace load' if p['layer'] is None else 'layer ' + str(p['layer'])} "
                f"{p['engine']}{'' if p['unit'] == p['engine'] else ' (' + p['unit'] + ')'}: "
                f"{p['elements']} element(s), {p['bytes']} other byte(s)"
                for p in per_layer))
        for cube, elements in self.cubes():
            summary = summarise_cube(cube, elements)
            lines.append(f"{cube.label()}: {len(elements)} element(s) differ")
            for p in summary["pattern"]:
                lines.append(f"  pattern: {p}")
            lines.append("  per channel: " + _short(summary["per_channel"], "c"))
            lines.append("  per row: " + _short(summary["per_row"]))
            lines.append("  bits flipped: " + _short(summary["bits"], "bit "))
            for e in elements[:FIRST]:
                lines.append(f"  {e.describe()}")
            if len(elements) > FIRST:
                lines.append(f"  ... {len(elements) - FIRST} more ({more})")
        others = self.byte_diffs
        if others:
            lines.append(f"{len(others)} differing byte(s) outside any layer's output elements:")
            for b in others[:FIRST]:
                lines.append(f"  {b.describe()}")
            if len(others) > FIRST:
                lines.append(f"  ... {len(others) - FIRST} more ({more})")
        missing = sum(r.missing_bytes for r in self.regions)
        if missing:
            lines.append(f"{missing} byte(s) to compare are not in ACTUAL: no verdict on them")
        elif self.identical:
            lines.append("no differences")
        return lines

    def print_summary(self, out=None) -> None:
        out = out or sys.stdout
        for line in self.summary_lines():
            print(line, file=out)

    def as_json(self) -> dict:
        sim = self.sim
        return {
            "trace": str(sim.trace_file),
            "config": sim.config,
            "expected_from": self.expected_from,
            "layer": self.layer,
            "identical": self.identical,
            "notes": sim.notes,
            "layers": [{"layer": i, "engine": e} for i, e in sim.layers],
            "regions": [{"memory": r.region.memory, "address": r.region.addr,
                         "size": r.region.size, "name": r.region.name, "check": r.region.where,
                         "simulator_passes_check": r.region.trace_agrees,
                         "differing_bytes": r.differing_bytes,
                         "missing_bytes": r.missing_bytes} for r in self.regions],
            "per_layer": self.per_layer(),
            "cubes": [summarise_cube(c, es) for c, es in self.cubes()],
            "elements": [e.as_json() for e in self.elements[:MAX_JSON]],
            "elements_truncated": len(self.elements) > MAX_JSON,
            "bytes": [b.as_json() for b in self.byte_diffs[:MAX_JSON]],
            "bytes_truncated": len(self.byte_diffs) > MAX_JSON,
            "png_panels": self.panels,
        }

    def write_json(self, path) -> None:
        write_atomically(path, json.dumps(self.as_json(), indent=1) + "\n")


def _short(counts: dict, prefix: str = "", limit: int = 12) -> str:
    items = list(counts.items())
    text = ", ".join(f"{prefix}{k}: {v}" for k, v in items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "") or "-"


def _check_layer(sim: Simulation, layer: int | None) -> None:
    if layer is not None and layer not in {i for i, _ in sim.layers}:
        known = ", ".join(f"{i} ({e})" for i, e in sim.layers) or "none"
        raise SimError(f"--layer {layer}: the trace has no such layer that writes memory "
                       f"(layers: {known})")


def diff_trace(trace, actual, config: str | None = None, layer: int | None = None,
               base: int | None = None) -> DiffReport:
    """Run ``trace`` and compare every checked region with the memory in ``actual``."""
    sim = simulate(trace, config)
    _check_layer(sim, layer)
    pieces = load_actual(Path(actual), sim.regions, base)
    cubes = build_cubes(sim.writes)
    diffs = []
    for region in sim.regions:
        data, known = region_bytes(region, pieces)
        diffs.append(compare_region(region, region.simulated, data, known, sim.writes, cubes,
                                    layer))
    if all(d.missing_bytes == d.region.size for d in diffs):
        raise SimError(f"{actual}: holds none of the checked regions")
    return DiffReport(sim, diffs, layer)


def explain_mismatch(trace, config: str | None = None) -> DiffReport | None:
    """Where the simulator's output differs from a trace's golden ``dump_mem`` files.

    None when the trace has no golden bytes that differ (CRC checks only).
    """
    sim = simulate(trace, config)
    cubes = build_cubes(sim.writes)
    diffs = []
    for region in sim.regions:
        if region.golden is None or region.trace_agrees:
            continue
        actual = np.frombuffer(region.simulated, dtype=np.uint8)
        diffs.append(compare_region(region, region.golden, actual,
                                    np.ones(region.size, dtype=bool), sim.writes, cubes))
    if not diffs:
        return None
    return DiffReport(sim, diffs, expected_from="trace")
