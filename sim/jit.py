"""The one place numba options live.

Every compiled kernel in the project is decorated with ``@njit`` from here, so
caching and other options are set once: ``cache=True`` keeps CI and user runs
from recompiling on every start.
"""

import numba

JIT_OPTIONS = {"cache": True, "nogil": True}


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options (explicit kwargs win)."""
    options = {**JIT_OPTIONS, **kwargs}
    if args and callable(args[0]):
        return numba.njit(**options)(args[0])
    return numba.njit(*args, **options)
