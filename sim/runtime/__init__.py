"""Run NVIDIA's compiled networks (loadables): :func:`run_loadable`.

:mod:`.loadable` reads the flatbuffer, :mod:`.runner` places memories and runs
the tasks (DLA tasks through :mod:`sim.firmware`, EMU tasks in :mod:`.emu`),
:mod:`.dimg` writes outputs as NVIDIA's runtime does.
"""

from .loadable import LoadableError, parse_loadable, read_loadable
from .runner import RunResult, run_loadable, run_loadable_bytes

__all__ = ["LoadableError", "RunResult", "parse_loadable", "read_loadable", "run_loadable",
           "run_loadable_bytes"]
