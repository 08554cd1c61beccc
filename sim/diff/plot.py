"""Heatmaps of differing elements: one panel per output surface (batch, surface).

A panel is the surface's H x W grid; a pixel's colour says how many of the
surface's channels differ at (h, w): light grey none, yellow to dark red
some to all.  Panels are drawn pixel for pixel (``figimage``, each element a
``scale`` x ``scale`` square) so a tool can read them back: the report's
``png_panels`` give each panel's place in the image.  Needs matplotlib
(``pip install 'nvdla-sim[plot]'``).
"""

from __future__ import annotations

import io

import numpy as np

from ..dram import write_atomically
from ..errors import SimError

BACKGROUND = np.array([0.88, 0.88, 0.88])
LOW, HIGH = np.array([1.0, 0.85, 0.2]), np.array([0.55, 0.0, 0.0])
MAX_PANELS = 48
TITLE_PX, GAP_PX, MARGIN_PX, PANEL_PX = 18, 14, 10, 160


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise SimError("--png needs matplotlib: pip install 'nvdla-sim[plot]'") from None
    return plt


def surface_counts(cube, elements) -> dict:
    """(n, surface) -> H x W array of differing channels, for every surface of ``cube``."""
    surfaces = -(-cube.channels // cube.group)
    grids = {(n, s): np.zeros((cube.height, cube.width), dtype=np.int64)
             for n in range(cube.batch) for s in range(surfaces)}
    for e in elements:
        grid = grids.setdefault((e.n, e.surface), np.zeros((cube.height, cube.width), np.int64))
        grid[e.h, e.w] += 1
    return grids


def _colour(grid: np.ndarray, lanes: int) -> np.ndarray:
    frac = np.clip(grid / max(lanes, 1), 0, 1)[..., None]
    rgb = LOW + (HIGH - LOW) * frac
    return np.where(grid[..., None] > 0, rgb, BACKGROUND)


def draw_png(report, path) -> list[dict]:
    """Write the heatmaps of ``report`` (a DiffReport) to ``path``; returns the panels."""
    plt = _matplotlib()
    panels = []
    for cube, elements in report.cubes():
        grids = surface_counts(cube, elements)
        order = sorted(grids, key=lambda k: (not grids[k].any(), k))
        for n, s in sorted(order[:MAX_PANELS - len(panels)]):
            lanes = min(cube.group, cube.channels - s * cube.group) if s * cube.group < \
                cube.channels else cube.group
            panels.append({"layer": cube.layer, "unit": cube.unit, "batch": n, "surface": s,
                           "height": cube.height, "width": cube.width, "grid": grids[(n, s)],
                           "lanes": lanes})
        if len(panels) >= MAX_PANELS:
            break
    if not panels:
        panels_out: list[dict] = []
        fig = plt.figure(figsize=(3, 0.6), dpi=100)
        fig.text(0.05, 0.4, "no differences")
        _save(fig, plt, path)
        return panels_out
    for p in panels:
        p["scale"] = max(1, min(16, PANEL_PX // max(p["height"], p["width"])))
    cols = min(4, len(panels))
    cell_w = max(p["width"] * p["scale"] for p in panels) + GAP_PX
    cell_h = max(p["height"] * p["scale"] for p in panels) + TITLE_PX + GAP_PX
    cell_w = max(cell_w, 150)
    rows = -(-len(panels) // cols)
    fig_w, fig_h = 2 * MARGIN_PX + cols * cell_w, 2 * MARGIN_PX + rows * cell_h
    fig = plt.figure(figsize=(fig_w / 100, fig_h / 100), dpi=100)
    for i, p in enumerate(panels):
        x = MARGIN_PX + (i % cols) * cell_w
        y_top = MARGIN_PX + (i // cols) * cell_h + TITLE_PX
        image = np.kron(_colour(p.pop("grid"), p["lanes"]), np.ones((p["scale"], p["scale"], 1)))
        fig.figimage(image, xo=x, yo=fig_h - y_top - image.shape[0], origin="upper")
        fig.text(x / fig_w, (fig_h - y_top + 4) / fig_h,
                 f"layer {p['layer']} {p['unit']} n{p['batch']} s{p['surface']}", fontsize=8)
        p.update(x=x, y=y_top)
    _save(fig, plt, path)
    return panels


def _save(fig, plt, path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_atomically(path, buf.getvalue())
