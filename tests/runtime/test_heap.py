"""keep_freed_memory (sim.runtime.heap): blocks a network's layers free are reused as they
are, with no fresh page faulted in (each costs the kernel a zeroed page)."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

# in a process of its own (a fresh heap): arrays of a network's sizes made and freed twice;
# prints the minor page faults of the second pass
SCRIPT = """
import resource, sys
import numpy as np
from sim.runtime.heap import keep_freed_memory

if sys.argv[1] == "keep":
    assert keep_freed_memory()
def layers():
    for size in (9 << 20, 1 << 20, 4 << 20, 12 << 20, 2 << 20, 9 << 20, 3 << 20):
        a = np.ones(size, np.uint8)
        b = np.ones(size // 2, np.uint8)
        del a, b
layers()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
layers()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):
        return False


def _second_pass_faults(mode: str) -> int:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                         env=env, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(),
                    reason="glibc's allocator only")
def test_freed_blocks_are_reused_without_fresh_pages():
    # a page or two may still come (Python's own small objects)
    assert _second_pass_faults("keep") < 16
    # and without it the same blocks do come back as fresh pages (the test can fail)
    assert _second_pass_faults("default") > 64


def test_elsewhere_it_does_nothing(monkeypatch):
    from sim.runtime import heap

    monkeypatch.setattr(heap, "sys", SimpleNamespace(platform="darwin"))  # heap's alone
    assert heap.keep_freed_memory() is False
