"""Heatmaps of differing elements: one panel per output surface (batch, surface).

A panel is the surface's H x W grid; a pixel's colour says how many of the
surface's channels differ at (h, w): light grey none, yellow to dark red
some to all (the colour bar at the bottom).  Each panel's title names its
layer, unit, batch and surface and the channels that differ in it; its axes
mark the first and last line (h) and pixel (w).  Panels are drawn pixel for
pixel (``figimage``, each element a ``scale`` x ``scale`` square) so a tool
can read them back: the report's ``png_panels`` give each panel's place in the
image.  Needs matplotlib
(``pip install 'nvdla-sim[plot]'``).
"""

from __future__ import annotations

import io

import numpy as np

from ..dma.align import ceil_div
from ..errors import SimError
from ..files import write_atomically

BACKGROUND = np.array([0.88, 0.88, 0.88])
LOW, HIGH = np.array([1.0, 0.85, 0.2]), np.array([0.55, 0.0, 0.0])
MAX_PANELS = 48
TITLE_PX, GAP_PX, MARGIN_PX, PANEL_PX = 30, 14, 10, 160
AXIS_PX = 26  # left of and below a panel: its h and w tick labels
BAR_PX = 56  # the colour bar and its legend under the panels


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise SimError("--png needs matplotlib: pip install 'nvdla-sim[plot]'") from None
    return plt


def surface_channels(cube, elements) -> dict:
    """(n, surface) -> the sorted channels that differ somewhere in that surface."""
    out: dict = {}
    for e in elements:
        out.setdefault((e.n, e.surface), set()).add(e.c)
    return {k: sorted(v) for k, v in out.items()}


def _channel_list(channels: list[int]) -> str:
    shown = ", ".join(map(str, channels[:6]))
    return f"c {shown}{', ...' if len(channels) > 6 else ''} differ" if channels else "no diff"


def surface_counts(cube, elements) -> dict:
    """(n, surface) -> H x W array of differing channels, for every surface of ``cube``."""
    surfaces = ceil_div(cube.channels, cube.group)
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
        channels = surface_channels(cube, elements)
        order = sorted(grids, key=lambda k: (not grids[k].any(), k))
        for n, s in sorted(order[:MAX_PANELS - len(panels)]):
            lanes = min(cube.group, cube.channels - s * cube.group) if s * cube.group < \
                cube.channels else cube.group
            panels.append({"layer": cube.layer, "unit": cube.unit, "batch": n, "surface": s,
                           "height": cube.height, "width": cube.width, "grid": grids[(n, s)],
                           "lanes": lanes, "channels": channels.get((n, s), [])})
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
    cell_w = max(p["width"] * p["scale"] for p in panels) + AXIS_PX + GAP_PX
    cell_h = max(p["height"] * p["scale"] for p in panels) + TITLE_PX + AXIS_PX + GAP_PX
    cell_w = max(cell_w, 180)
    rows = ceil_div(len(panels), cols)
    fig_w = max(2 * MARGIN_PX + cols * cell_w, 420)
    fig_h = 2 * MARGIN_PX + rows * cell_h + BAR_PX
    fig = plt.figure(figsize=(fig_w / 100, fig_h / 100), dpi=100)

    def text(x_px, y_px, words, **kw):  # pixel coordinates from the top left
        fig.text(x_px / fig_w, 1 - y_px / fig_h, words, fontsize=7, **kw)

    for i, p in enumerate(panels):
        x = MARGIN_PX + (i % cols) * cell_w + AXIS_PX
        y_top = MARGIN_PX + (i // cols) * cell_h + TITLE_PX
        image = np.kron(_colour(p.pop("grid"), p["lanes"]), np.ones((p["scale"], p["scale"], 1)))
        fig.figimage(image, xo=x, yo=fig_h - y_top - image.shape[0], origin="upper")
        text(x - AXIS_PX, y_top - TITLE_PX + 10,
             f"layer {p['layer']} {p['unit']} n{p['batch']} s{p['surface']}", va="center")
        text(x - AXIS_PX, y_top - 8, f"{_channel_list(p['channels'])} (of {p['lanes']} lanes)",
             va="center")
        s_px, h_px, w_px = p["scale"], p["height"] * p["scale"], p["width"] * p["scale"]
        for h in sorted({0, p["height"] - 1}):  # h ticks on the left, w ticks below
            text(x - 3, y_top + h * s_px + s_px / 2, str(h), ha="right", va="center")
        for w in sorted({0, p["width"] - 1}):
            text(x + w * s_px + s_px / 2, y_top + h_px + 7, str(w), ha="center", va="center")
        text(x - AXIS_PX + 2, y_top + h_px / 2, "h", va="center")
        text(x + w_px / 2, y_top + h_px + 18, "w", ha="center", va="center")
        p.update(x=x, y=y_top)
    _colour_bar(fig, text, fig_w, fig_h)
    _save(fig, plt, path)
    return panels


def _colour_bar(fig, text, fig_w: int, fig_h: int) -> None:
    """The scale under the panels: grey, then one differing channel to all of them."""
    width, height = 200, 10
    x, y_top = MARGIN_PX + 40, fig_h - BAR_PX + 6
    frac = np.linspace(0, 1, width)[None, :, None]
    strip = np.repeat(LOW + (HIGH - LOW) * frac, height, axis=0)
    swatch = np.broadcast_to(BACKGROUND, (height, 16, 3))
    fig.figimage(swatch, xo=MARGIN_PX, yo=fig_h - y_top - height, origin="upper")
    fig.figimage(strip, xo=x, yo=fig_h - y_top - height, origin="upper")
    text(MARGIN_PX, y_top + height + 8, "none", va="center")
    text(x, y_top + height + 8, "one channel", va="center")
    text(x + width, y_top + height + 8, "all lanes", ha="right", va="center")
    text(MARGIN_PX, y_top + height + 22,
         "colour: how many channels of the surface differ at (h, w)", va="center")


def _save(fig, plt, path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_atomically(path, buf.getvalue())
