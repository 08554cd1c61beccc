"""The one place numba options live.

Every compiled kernel in the project is decorated with ``@njit`` from here, so
caching and other options are set once: ``cache=True`` keeps CI and user runs
from recompiling on every start.

Numba invalidates a cached kernel only when the kernel's own source file
changes, not when a helper it inlined from another file does; a stale kernel
would silently compute with old arithmetic.  So the cache lives in a folder
named after a digest of the whole ``sim`` package: any source change starts
from a fresh cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

JIT_OPTIONS = {"cache": True, "nogil": True}


def source_digest() -> str:
    """Digest of every Python source of the ``sim`` package."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _configure_cache() -> None:
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "nvdla-sim"
    )
    path = os.path.join(base, f"numba-{source_digest()}")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return  # unwritable: numba falls back to its own locations
    numba.config.CACHE_DIR = path


_configure_cache()


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options (explicit kwargs win)."""
    options = {**JIT_OPTIONS, **kwargs}
    if args and callable(args[0]):
        return numba.njit(**options)(args[0])
    return numba.njit(*args, **options)
