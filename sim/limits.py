"""What a simulated memory may cost the host: the per-access and resident limits.

The memory model (``sim.dram``) and the memory-file parsers (``sim.memfiles``)
both check them, so they live below both.
"""

from __future__ import annotations

from .errors import MemoryFault
from .records import record


@record
class MemoryLimits:
    """What one simulated memory may cost the host, so no input can exhaust it.

    ``access``: the most bytes one DMA transfer, fill, load, dump or CRC may
    cover (a register programming a terabyte cube stops here, before any
    allocation); ``resident``: the most bytes of pages a memory may hold.
    """

    access: int = 256 << 20
    resident: int = 2 << 30


DEFAULT_LIMITS = MemoryLimits()


def check_extent(size: int, what: str, limits: MemoryLimits = DEFAULT_LIMITS) -> int:
    """Raise before allocating ``size`` bytes that a single access may not cover."""
    if size < 0:
        raise MemoryFault(f"negative size {size}", where=what)
    if size > limits.access:
        raise MemoryFault(f"{size:#x} bytes exceed the simulator's limit of "
                          f"{limits.access:#x} bytes per access", where=what)
    return size
