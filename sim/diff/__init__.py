"""Compare a device's memory with a trace's expected results and localise differences.

:func:`diff_trace` runs a trace on the simulator, recording which layer and
unit wrote every byte (:mod:`sim.diff.record`), loads the memory a device
under test produced (:mod:`sim.diff.actual`) and reports each differing
element in the layer's own coordinates (:mod:`sim.diff.localise`);
:mod:`sim.diff.plot` draws heatmaps (matplotlib, the ``[plot]`` extra).
"""

from .report import DiffReport, diff_trace, explain_mismatch

__all__ = ["DiffReport", "diff_trace", "explain_mismatch"]
