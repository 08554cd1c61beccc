"""Whole vectors of 16-bit words (sim.num.fc_pieces) against numpy: the maximum of a piece
and of a run of half pieces, a piece set, the exact sum and the or of a half piece of
32-bit words; the prefetch hint."""

import numpy as np
import pytest

from sim.jit import njit
from sim.num import fc_pieces as pieces


@njit
def _maxima(words, starts):
    out = np.zeros(starts.size, np.uint16)
    for i in range(starts.size):
        out[i] = pieces.piece_max(words, starts[i])
    return out


@njit
def _filled(words, start, value):
    pieces.piece_fill(words, start, value)


@pytest.mark.parametrize("seed", range(4))
def test_piece_max_is_the_maximum_of_its_words(seed):
    """At every start (unaligned too), the largest anywhere among the 32, 0xFFFF included."""
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 1 << (4 * seed + 4), 200).astype(np.uint16)
    words[rng.integers(0, 200)] = 0xFFFF if seed == 3 else words.max()
    starts = np.arange(200 - pieces.PIECE + 1)
    want = np.array([words[s:s + pieces.PIECE].max() for s in starts], np.uint16)
    np.testing.assert_array_equal(_maxima(words, starts), want)


@pytest.mark.parametrize("start", [0, 1, 31, 33])
def test_piece_fill_sets_its_words_only(start):
    words = np.arange(100, dtype=np.uint16)
    want = words.copy()
    want[start:start + pieces.PIECE] = 0xBEEF
    _filled(words, start, 0xBEEF)
    np.testing.assert_array_equal(words, want)


@njit
def _hinted_sum(words, hints):
    for i in hints:
        pieces.prefetch(words, i)
    return words.sum()


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_prefetch_changes_nothing(dtype):
    """A hint anywhere, past the array's end too (the kernels' last chunks), never faults
    nor writes: the words read the same after it."""
    words = np.arange(1000, dtype=dtype)
    before = words.copy()
    assert _hinted_sum(words, np.array([0, 31, 999, 1000, 5000])) == before.sum()
    assert np.array_equal(words, before)


@njit
def _run_maxima(words, runs, floor):
    out = np.zeros(len(runs), np.uint16)
    for i in range(len(runs)):
        out[i] = pieces.vectors_max(words, runs[i][0], runs[i][1], floor)
    return out


@pytest.mark.parametrize("floor", [0, 512, 0xFFFF])
def test_vectors_max_is_the_maximum_of_its_vectors_and_the_floor(floor):
    """Runs of whole vectors anywhere (none: the floor), 0xFFFF included."""
    rng = np.random.default_rng(floor)
    words = rng.integers(0, 1 << 16, 20 * pieces.HALF_PIECE).astype(np.uint16)
    words[77] = 0xFFFF
    runs = [(0, 1), (0, 20), (3, 4), (4, 9), (7, 7), (19, 20)]
    half = pieces.HALF_PIECE
    want = [max([floor] + list(words[a * half:b * half])) for a, b in runs]
    np.testing.assert_array_equal(_run_maxima(words, np.array(runs), floor), want)


@njit
def _half_sums(words, starts):
    out = np.zeros(starts.size, np.int64)
    for i in range(starts.size):
        out[i] = pieces.half_piece_wide_sum(words, starts[i])
    return out


@njit
def _half_ors(words, starts):
    out = np.zeros(starts.size, np.uint32)
    for i in range(starts.size):
        out[i] = pieces.half_piece_or(words, starts[i])
    return out


def test_half_piece_wide_sum_adds_its_words_exactly():
    """At every start, int32 words of every magnitude (the extremes too: a 32-bit sum would
    wrap) added as int64."""
    rng = np.random.default_rng(9)
    words = rng.integers(-(1 << 31), 1 << 31, 100, dtype=np.int64).astype(np.int32)
    words[10:10 + pieces.HALF_PIECE] = np.iinfo(np.int32).max
    words[40:40 + pieces.HALF_PIECE] = np.iinfo(np.int32).min
    starts = np.arange(100 - pieces.HALF_PIECE + 1)
    want = [int(words[s:s + pieces.HALF_PIECE].astype(np.int64).sum()) for s in starts]
    np.testing.assert_array_equal(_half_sums(words, starts), want)


def test_half_piece_or_ors_its_words():
    """At every start, words mostly 0 with single bits here and there."""
    rng = np.random.default_rng(10)
    words = np.zeros(100, np.uint32)
    words[rng.integers(0, 100, 6)] = np.uint32(1) << rng.integers(0, 32, 6).astype(np.uint32)
    starts = np.arange(100 - pieces.HALF_PIECE + 1)
    want = [np.bitwise_or.reduce(words[s:s + pieces.HALF_PIECE]) for s in starts]
    np.testing.assert_array_equal(_half_ors(words, starts), want)
