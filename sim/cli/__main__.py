"""``python -m sim.cli``: the ``nvdla-sim`` command."""

from . import console

console()
