"""Memory._slab_view's one look-up of a page run against the page-by-page check it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from sim.dram import PAGE_BITS, PAGE_SIZE, Memory

PAGES = 24  # the pages the random memories use: 0..PAGES-1


def _one_slab_in_order(mem: Memory, first: int, last: int) -> bool:
    """The plain check: pages ``first..last`` all held, rows of one slab one after another."""
    pages = [mem._pages.get(p) for p in range(first, last + 1)]
    if any(page is None for page in pages):
        return False
    slab, row = pages[0].base, mem._rows[first]
    return all(page.base is slab and mem._rows[first + i] == row + i
               for i, page in enumerate(pages))


def _random_memory(rng: np.random.Generator) -> Memory:
    """Pages made by every path that makes them, in random orders: held ranges, long and
    one-page writes, zero fills."""
    mem = Memory()
    for _ in range(rng.integers(1, 8)):
        first = int(rng.integers(0, PAGES))
        count = int(rng.integers(1, 6))
        addr = first * PAGE_SIZE + int(rng.integers(0, PAGE_SIZE))
        size = min(count * PAGE_SIZE, PAGES * PAGE_SIZE - addr)
        how = rng.integers(0, 4)
        if how == 0:
            mem.hold([(addr, size), (int(rng.integers(0, PAGES)) * PAGE_SIZE, PAGE_SIZE)])
        elif how == 1:
            mem.write(addr, rng.integers(0, 256, size, dtype=np.uint8))
        elif how == 2:
            mem.write(first * PAGE_SIZE + 3, b"\x07")
        else:
            mem.fill(addr, size, "ALL_ZERO")
    return mem


@pytest.mark.parametrize("seed", range(40))
def test_slab_view_is_a_view_exactly_where_the_pages_are_one_slab_in_order(seed):
    rng = np.random.default_rng(seed)
    mem = _random_memory(rng)
    for first in range(PAGES):
        for last in range(first, PAGES):
            addr = (first << PAGE_BITS) + 5
            size = ((last - first) << PAGE_BITS) + 1
            view = mem._slab_view(addr, size)
            assert (view is not None) == _one_slab_in_order(mem, first, last), (first, last)
            if view is not None:
                np.testing.assert_array_equal(view, mem._copy_out(addr, size))


def test_a_page_made_after_the_one_behind_it_does_not_join_its_run():
    """Page 1 made first (row 0 of its slab), then page 0 (a later row): not in order."""
    mem = Memory()
    mem.write(PAGE_SIZE, b"\x01")
    mem.write(0, b"\x02")
    assert mem._slab_view(0, PAGE_SIZE + 1) is None
    mem.hold([(4 * PAGE_SIZE, 3 * PAGE_SIZE)])
    view = mem._slab_view(4 * PAGE_SIZE + 1, 3 * PAGE_SIZE - 2)
    assert view is not None and not view.any()
