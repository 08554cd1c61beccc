"""Modules a datapath loads with its first layer, not at start-up, nor at every layer."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType


@functools.cache
def loaded(name: str) -> ModuleType:
    """The module ``name`` (absolute), imported by the first call.  A function's own
    ``from .x import y`` runs the import machinery at every call: 5-15 us of a layer with
    the caches cold, a few such a layer.  Callers look functions up on the module at each
    call, so tests that patch them still reach them."""
    return importlib.import_module(name)
