"""Feature cubes read as views of the memory's pages (sim.dram.Memory.read_view) read what
the window copies read (the path of a memory that cannot lend its pages), and record the
same layer reads."""

import numpy as np
import pytest

from sim.dma import feature
from sim.dram import PAGE_SIZE, Memory


class _CopiesOnly:
    """A sim.dram.Memory without read_view: read_feature takes a window copy."""

    def __init__(self, memory):
        self._memory = memory

    def read_array(self, *args, **kwargs):
        return self._memory.read_array(*args, **kwargs)


# (precision, channels, height, width, line gap, surface gap, how the pages were written)
CASES = [
    ("int8", 64, 56, 56, 0, 0, "one write"),  # packed, pages of one slab: a view
    ("int8", 64, 7, 7, 0, 0, "one write"),  # one page
    ("int8", 40, 5, 9, 32, 64, "one write"),  # gaps between lines and surfaces
    ("int16", 48, 30, 30, 0, 0, "one write"),
    ("int8", 64, 56, 56, 0, 0, "page by page"),  # pages out of order: a copy
    ("int8", 64, 56, 56, 0, 0, "none"),  # pages never written: a copy of zeros
]


@pytest.mark.parametrize("precision, c, h, w, line_gap, surface_gap, pages", CASES)
def test_lent_pages_read_as_copies(precision, c, h, w, line_gap, surface_gap, pages):
    atom = 32
    group = atom // (1 if precision == "int8" else 2)
    line = w * atom + line_gap
    surface = h * line + surface_gap
    extent = (c // group - 1) * surface + h * line
    addr = 0x8000_0000 + 3 * atom
    mem = Memory()
    data = np.random.default_rng(c * h + w).integers(0, 256, extent, dtype=np.uint8)
    if pages == "one write":
        mem.write(addr, data)
    elif pages == "page by page":  # backwards: no two pages in slab order
        for start in reversed(range(0, extent, PAGE_SIZE)):
            mem.write(addr + start, data[start: start + PAGE_SIZE])
    reads = []
    for io in (mem, _CopiesOnly(mem)):
        mem.begin_layer()
        reads.append(feature.read_feature(io, addr, (c, h, w), precision, atom, line,
                                          surface, what="cube"))
        reads.append([(r.addr, r.size, r.what, r.mode) for r in mem._layer_reads])
        mem.end_layer()
    lent, lent_reads, copied, copied_reads = reads
    assert lent.flags.writeable and not np.shares_memory(lent, data)
    np.testing.assert_array_equal(lent, copied)
    assert lent_reads == copied_reads
    assert (mem._slab_view(addr, extent) is not None) == (pages == "one write")
