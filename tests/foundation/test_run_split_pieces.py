"""sim.jit.run_split with ``pieces``: the threads take slices one at a time."""

import threading

import pytest

from sim import jit


@pytest.mark.parametrize("n,pieces,min_chunk", [(10, 10, 1), (10, 3, 1), (7, 20, 1), (100, 8, 60),
                                                (1, 4, 1), (0, 4, 1)])
def test_pieces_cover_every_index_once(n, pieces, min_chunk, monkeypatch):
    monkeypatch.setattr(jit, "cores", lambda: 3)
    seen, calls = [], []
    lock = threading.Lock()

    def body(start, stop):
        with lock:
            calls.append((start, stop))
            seen.extend(range(start, stop))

    jit.run_split(body, n, min_chunk, pieces=pieces)
    assert sorted(seen) == list(range(n))
    workers = max(1, min(3, n // min_chunk))
    assert len(calls) == (1 if workers == 1 else max(workers, min(pieces, n)))


def test_a_slow_thread_leaves_its_pieces_to_the_others(monkeypatch):
    """The thread held up by the first slice takes no other: a fixed split (half the
    slices each) would wait for it, and this test would time out."""
    monkeypatch.setattr(jit, "cores", lambda: 2)
    done, others = threading.Event(), []
    lock = threading.Lock()

    def body(start, stop):
        if start == 0:
            assert done.wait(timeout=10), "the other thread did not take the other slices"
            return
        with lock:
            others.append(start)
            if len(others) == 7:
                done.set()

    jit.run_split(body, 8, pieces=8)
    assert sorted(others) == list(range(1, 8))
