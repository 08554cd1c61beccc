"""Trace formats (nv_small ``.cfg``, nv_full ``input.txn``) and the player.

The player (and the machine behind it) loads when one of its names is first
used, so ``sim.trace.ops``, ``.cfg`` and ``.txn`` import without it.
"""

from __future__ import annotations

__all__ = ["TraceResult", "TraceStatus", "run_trace"]


def __getattr__(name: str):
    if name in __all__:
        from . import player

        return getattr(player, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
