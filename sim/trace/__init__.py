"""Trace formats (nv_small ``.cfg``, nv_full ``input.txn``) and the player."""

from .player import TraceResult, run_trace

__all__ = ["TraceResult", "run_trace"]
