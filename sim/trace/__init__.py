"""Trace formats (nv_small ``.cfg``, nv_full ``input.txn``) and the player."""

from .player import TraceResult, TraceStatus, run_trace

__all__ = ["TraceResult", "TraceStatus", "run_trace"]
