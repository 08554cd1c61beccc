"""The column kernel (sim.num.fc_columns: a weight group's 16 kernels across the vector)
against the definition (tests/num/mac_reference.py) and the full blocks' path
(sim.num.mac_fc): every shift 0..60, both product signs at shift 8 over many low bytes,
products just below, at and above the carry bounds at 12 (shifted by 12 and by 16),
blocks with no, one or every lane flagged, dead blocks, live counts 1 to 64 (odd ones
padded with a dead column), zero, subnormal and Inf data, zero and subnormal weights,
tiles apart in the stream; and its report of a group with an Inf or NaN weight."""

import functools

import numpy as np
import pytest

from sim.jit import njit
from sim.num.fc_carry_tables import carry8_rows, carry_bounds
from sim.num.fc_columns import (
    BLOCK,
    KERNELS,
    TILE,
    column_offsets,
    column_operands,
    column_work,
    columns_group,
    table_words_host,
    table_words_portable,
)
from sim.num.mac import MAC_BITS, cacc_accumulate, fp16_mac_operands
from sim.num.mac_fc import fc_data
from sim.num.rounding import sign_extend

from .test_mac_fc import _bits, _definition_blocks, _fc_blocks


def _stream(rng, w, gap):
    """The weights (16, lanes) as a group's tiles (block ``b``'s 16 x 64 tile, kernel-major,
    ``TILE + gap`` words apart, random words between), from a random first word: (stream,
    first, stride)."""
    n_blocks = w.shape[1] // BLOCK
    first, stride = int(rng.integers(0, 100)), TILE + gap
    stream = rng.integers(0, 1 << 16, first + n_blocks * stride + gap).astype(np.uint16)
    for b in range(n_blocks):
        at = first + b * stride
        stream[at:at + TILE] = w[:, b * BLOCK:(b + 1) * BLOCK].reshape(-1)
    return stream, first, stride


def _columns(x, w, live, gap=0, seed=0):
    """columns_group's (block exponents, sums) (16, n_blocks) and largest magnitude of
    data ``x`` (lanes,) and weights ``w`` (16, lanes), lanes ``live`` (bools) live."""
    rng = np.random.default_rng(seed)
    n_blocks = x.size // BLOCK
    sign, sig, exp = fp16_mac_operands(x)
    lanes = np.flatnonzero(live)
    data = tuple(a[lanes] for a in fc_data(sign, sig, 4 * exp))
    ops = column_operands(data, lanes, n_blocks)
    stream, first, stride = _stream(rng, w, gap)
    exps = np.full((n_blocks, KERNELS), -7, np.int32)
    sums = np.full((n_blocks, KERNELS), -7, np.int64)
    largest = columns_group(stream, first, stride, n_blocks, ops, _dirty_work(rng, ops),
                            exps, sums, _no_chain(n_blocks), 0)
    return exps.T, sums.T, largest


def _dirty_work(rng, ops):
    """column_work's scratch with random words where it is not zeroed (its flagged lanes'
    arrays): whatever memory it gets, every word the kernel reads it writes first."""
    work = column_work(ops[0][-1])
    for scratch in work[1:6]:
        scratch[:] = rng.integers(0, 1 << 8 * scratch.itemsize, scratch.size, dtype=np.uint64)
    return work


def _no_chain(n_blocks):
    """columns_group's chain of an earlier group's blocks when there is none to add."""
    return (np.zeros((n_blocks, KERNELS), np.int32), np.zeros((n_blocks, KERNELS), np.int64),
            np.zeros(KERNELS, np.int64), np.zeros(KERNELS, np.int64))


def _finite(w):
    """Weights without exponent field 31 (the column kernel leaves those groups)."""
    w = w.copy()
    w[(w >> 10) & 31 == 31] &= 0xFBFF
    return w


def _assert_blocks(x, w, live, gap=0, seed=0):
    n_blocks = x.size // BLOCK
    exps, sums, largest = _columns(x, w, live, gap, seed)
    assert largest == (w & 0x7FFF).max()
    want = _definition_blocks(x, w, BLOCK, 1, n_blocks)
    np.testing.assert_array_equal(exps, want[0])
    np.testing.assert_array_equal(sums, want[1])
    sign, sig, exp = fp16_mac_operands(x)
    full = _fc_blocks(fc_data(sign, sig, 4 * exp), w, BLOCK, 1, n_blocks)
    np.testing.assert_array_equal(sums, full[1])


def _zeroed(rng, x, zeros):
    x = x.copy()
    x[rng.random(x.shape) < zeros] = 0
    x[rng.random(x.shape) < 0.5 * (x == 0)] = 0x8000
    return x


CASES = [  # (kind of data, kind of weights, fraction of zero data, blocks)
    ("network", "network", 0.4, 6),
    ("network", "network", 0.0, 3),
    ("spread", "spread", 0.3, 8),  # every shift 0..28: flagged lanes, the tree
    ("random", "random", 0.5, 6),  # every shift to 60, Inf data, subnormals
    ("edges", "edges", 0.2, 5),  # zeros, subnormals, Inf data, the largest
    ("largest", "largest", 0.0, 2),  # every shift 0: nothing flagged, sums near 2**34
    ("spread", "random", 0.9, 4),
    ("random", "network", 0.2, 3),
]


@pytest.mark.parametrize("d_kind,w_kind,zeros,n_blocks", CASES)
def test_columns_are_the_definition(d_kind, w_kind, zeros, n_blocks):
    rng = np.random.default_rng(int(zeros * 10) + 17 * n_blocks + len(d_kind + w_kind))
    lanes = n_blocks * BLOCK
    x = _zeroed(rng, _bits(rng, d_kind, lanes), zeros)
    w = _finite(_bits(rng, w_kind, (KERNELS, lanes)))
    w[:, rng.integers(0, lanes)] &= 0x8000  # a zero weight in every kernel
    # the live lanes: the data's not zero and a few zero ones (live in another pixel)
    live = (x & 0x7FFF != 0) | (rng.random(lanes) < 0.1)
    _assert_blocks(x, w, live, gap=int(rng.integers(0, 3)) * BLOCK, seed=n_blocks)


@pytest.mark.parametrize("count", [0, 1, 2, 15, 16, 17, 31, 63, 64])
def test_live_counts(count):
    """Blocks of ``count`` live lanes (odd counts padded with a dead column), one block all
    dead."""
    rng = np.random.default_rng(count)
    x = _bits(rng, "spread", 3 * BLOCK)
    w = _finite(_bits(rng, "spread", (KERNELS, 3 * BLOCK)))
    live = np.zeros(3 * BLOCK, bool)
    for b in (0, 2):
        live[b * BLOCK + rng.choice(BLOCK, count, replace=False)] = True
    x[~live] = 0
    _assert_blocks(x, w, live, seed=count)


def _group_bits(rng, field, shape, subnormals=False):
    """Weights or data of exponent fields ``field`` to ``field + 3`` (one lane exponent:
    ``field & 0x1C``; 30 at most: no Inf), random signs and mantissas (field 0:
    subnormals among them)."""
    fields = np.minimum(rng.integers(field, field + 4, shape), 30)
    if subnormals:
        fields[rng.random(shape) < 0.3] = 0
    return ((rng.integers(0, 2, shape) << 15) | (fields << 10)
            | rng.integers(0, 1024, shape)).astype(np.uint16)


@pytest.mark.parametrize("shift,subnormals", [(4, False), (8, False), (8, True), (12, False),
                                              (16, False), (20, True), (24, False),
                                              (28, False), (32, False), (36, False),
                                              (60, False)])
def test_one_shift(shift, subnormals):
    """Every lane but each block's first at one shift: the first lane's weights
    ``shift`` above the others' (at 8: both signs, every low byte of the weights, many
    of the data's)."""
    rng = np.random.default_rng(shift + subnormals)
    n_blocks = 24 if shift == 8 else 4
    lanes = n_blocks * BLOCK
    x = _group_bits(rng, 12, lanes)
    low = 0 if subnormals else 4
    top = low + shift
    w = _group_bits(rng, low, (KERNELS, lanes), subnormals)
    if top <= 28:
        w[:, ::BLOCK] = _group_bits(rng, top, (KERNELS, n_blocks))
    else:  # beyond the weights' exponents: the data's first lane instead
        x[::BLOCK] = _group_bits(rng, 12 + shift - 16, n_blocks)
        w[:, ::BLOCK] = _group_bits(rng, low + 16, (KERNELS, n_blocks))
    _assert_blocks(x, w, np.ones(lanes, bool), seed=shift)


@functools.cache
def _fp16_of_magnitude():
    """For each CMAC magnitude of a normal number, fp16 bits (sign 0) of an exponent
    field 4 to 7 that has it."""
    out = {}
    for field in range(4, 8):
        for mantissa in range(1024):
            out.setdefault((mantissa | 0x400) << (field & 3), (field << 10) | mantissa)
    return out


@pytest.mark.parametrize("shift", [12, 16])
def test_products_at_the_bounds(shift):
    """Products whose low 12 bits are just below, at and above their data value's carry
    bound at 12, both signs, at shift 12 (flagged below the bound only), and the same
    products at 16 (every lane there flagged: the bound means nothing at 16, these are
    products with carries of either value): each lane one data value, its 16 kernels'
    weights chosen for it."""
    rng = np.random.default_rng(shift)
    bounds = carry_bounds()
    bits_of = _fp16_of_magnitude()
    magnitudes = np.array(sorted(bits_of), np.int64)
    mask = 0xFFF
    x, columns = [], []  # a lane's data bits, its 16 weights' bits
    for d in rng.permutation(magnitudes):
        if bounds[d] == 0:
            continue
        chosen = []
        for negative in (0, 1):
            low = (-(magnitudes * d) if negative else magnitudes * d) & mask
            for near in (-2, -1, 0, 1):
                hit = np.flatnonzero(low == int(bounds[d]) + near)
                chosen += [bits_of[int(magnitudes[m])] | negative << 15 for m in hit[:2]]
        if len(chosen) >= 4:
            x.append(bits_of[int(d)])
            columns.append([chosen[k % len(chosen)] for k in range(KERNELS)])
        if len(x) == 4 * (BLOCK - 1):
            break
    assert len(x) == 4 * (BLOCK - 1)
    n_blocks = 4
    lanes = n_blocks * BLOCK
    data = np.zeros(lanes, np.uint16)
    w = np.zeros((KERNELS, lanes), np.uint16)
    at = [lane for lane in range(lanes) if lane % BLOCK]
    data[at] = x
    w[:, at] = np.array(columns, np.uint16).T
    # each block's first lane: weights ``shift`` above the others' (fields 4 to 7)
    data[::BLOCK] = _group_bits(rng, 4, n_blocks) & 0x7FFF
    w[:, ::BLOCK] = _group_bits(rng, 4 + shift, (KERNELS, n_blocks))
    _assert_blocks(data, w, np.ones(lanes, bool), seed=shift)


@pytest.mark.parametrize("flagged,n_blocks", [("none", 2), ("one", 2), ("all", 2), ("all", 7)])
def test_flagged_lanes(flagged, n_blocks):
    """No lane flagged (every shift 0 or 4), one (a lane at 24), every one (20 to 28); on
    7 blocks every one of 7 * 1024 lanes (the scratch's room, not zeroed first, filled)."""
    rng = np.random.default_rng(len(flagged))
    lanes = n_blocks * BLOCK
    x = _group_bits(rng, 12, lanes)
    if flagged == "all":
        w = _group_bits(rng, 0, (KERNELS, lanes))
        w[:, rng.random(lanes) < 0.5] = _group_bits(rng, 4, (KERNELS, lanes))[:, :1]
        w[:, ::BLOCK] = _group_bits(rng, 28, (KERNELS, n_blocks))
        x[::BLOCK] = _group_bits(rng, 16, n_blocks)  # lane exponents 20 to 28 above the rest
    else:
        w = _group_bits(rng, 8, (KERNELS, lanes))
        w[:, rng.random(lanes) < 0.5] = _group_bits(rng, 12, (KERNELS, 1))
        if flagged == "one":
            w[3, 70] = _group_bits(rng, 0, 1)[0]
            w[3, 70] = (w[3, 70] & 0x83FF) | 0x0400  # field 1: 24 below field 24-27's
            w[3, 64] = _group_bits(rng, 24, 1)[0]
    _assert_blocks(x, w, np.ones(lanes, bool), seed=3)


@pytest.mark.parametrize("special", [0x7C00, 0xFC00, 0x7E00, 0x7C01])
def test_a_group_with_an_inf_or_nan_weight_is_reported(special):
    rng = np.random.default_rng(special)
    x = _bits(rng, "network", 2 * BLOCK)
    w = _bits(rng, "network", (KERNELS, 2 * BLOCK))
    w[5, 100] = special
    assert _columns(x, w, np.ones(2 * BLOCK, bool))[2] >= 0x7C00


@njit
def _cacc_one_by_one(exps, sums):
    """The 16 accumulators of blocks (blocks, 16), by CACC's own step, a block at a time."""
    acc_e, acc_m = np.zeros(KERNELS, np.int64), np.zeros(KERNELS, np.int64)
    for b in range(exps.shape[0]):
        for k in range(KERNELS):
            acc_e[k], acc_m[k] = cacc_accumulate(acc_e[k], acc_m[k], exps[b, k],
                                                 sign_extend(sums[b, k], MAC_BITS))
    return acc_e, acc_m


@pytest.mark.parametrize("n_blocks", [1, 3])
def test_an_earlier_groups_cacc_runs_beside_a_group(n_blocks):
    """While it makes a group's blocks, columns_group accumulates an earlier group's (its
    chain): the same accumulators as CACC's step block by block, and the group's own
    blocks as without a chain."""
    rng = np.random.default_rng(40 + n_blocks)
    lanes = n_blocks * BLOCK
    x = _bits(rng, "network", lanes)
    groups = [_finite(_bits(rng, "network", (KERNELS, lanes))) for _ in range(2)]
    sign, sig, exp = fp16_mac_operands(x)
    ops = column_operands(fc_data(sign, sig, 4 * exp), np.arange(lanes), n_blocks)
    work = column_work(ops[0][-1])
    blocks = [(np.zeros((n_blocks, KERNELS), np.int32), np.zeros((n_blocks, KERNELS), np.int64))
              for _ in groups]
    chain = _no_chain(n_blocks)
    for g, w in enumerate(groups):
        stream, first, stride = _stream(rng, w, 0)
        if g:
            chain = (*blocks[0], chain[2], chain[3])
        columns_group(stream, first, stride, n_blocks, ops, work, *blocks[g], chain,
                      n_blocks if g else 0)
    for got, want in zip(chain[2:], _cacc_one_by_one(*blocks[0]), strict=True):
        np.testing.assert_array_equal(got, want)
    assert chain[3].any()  # the data made sums: a chain that did nothing would show
    exps, sums, _ = _columns(x, groups[1], np.ones(lanes, bool))
    np.testing.assert_array_equal(blocks[1][0].T, exps)
    np.testing.assert_array_equal(blocks[1][1].T, sums)


def test_a_wrong_column_is_seen():
    """The comparison can fail: the data of one live lane moved to another column."""
    rng = np.random.default_rng(1)
    x = _bits(rng, "network", 2 * BLOCK)
    w = _bits(rng, "network", (KERNELS, 2 * BLOCK))
    live = np.ones(2 * BLOCK, bool)
    exps, sums, _ = _columns(x, w, live)
    y = x.copy()
    y[[3, 4]] = y[[4, 3]]
    assert not np.array_equal(sums, _definition_blocks(y, w, BLOCK, 1, 2)[1])
    assert np.array_equal(sums, _definition_blocks(x, w, BLOCK, 1, 2)[1])


def test_a_block_of_too_many_columns_is_refused():
    """The block loop notes at most a block's 32 pairs: operands that would give a block
    more columns (a lane listed twice) are refused, not run past that scratch."""
    rng = np.random.default_rng(2)
    x = _bits(rng, "network", BLOCK)
    sign, sig, exp = fp16_mac_operands(x)
    lanes = np.concatenate([np.arange(BLOCK), [5, 6]])
    data = tuple(a[lanes % BLOCK] for a in fc_data(sign, sig, 4 * exp))
    with pytest.raises(ValueError, match="more than 64 columns"):
        column_operands(data, lanes, 1)
    column_operands(tuple(a[:BLOCK] for a in data), lanes[:BLOCK], 1)  # 64 are fine


def test_column_offsets_are_a_permutation_of_whole_columns():
    offsets = column_offsets(np.arange(BLOCK))
    assert (offsets % KERNELS == 0).all()
    assert sorted(offsets // KERNELS) == list(range(BLOCK))


@pytest.mark.parametrize("zero", [0x0000, 0x8000])
def test_a_zero_weight_beside_the_largest_datum(zero):
    """A +0 or -0 weight on each block's largest data value leaves that lane out of the
    block exponent (every kernel's in block 0, the even kernels' in block 1): counted, the
    lane would lift the exponent 20 above the others' and shift their products away."""
    rng = np.random.default_rng(zero)
    lanes = 2 * BLOCK
    x = _group_bits(rng, 4, lanes)
    w = _group_bits(rng, 4, (KERNELS, lanes))
    x[::BLOCK] = 0x7000  # exponent field 28: lane exponent 28 + the weight's
    w[:, 0] = zero
    w[::2, BLOCK] = zero
    _assert_blocks(x, w, np.ones(lanes, bool), seed=zero)


@njit
def _looked_up(table, rows, index):
    host = np.zeros((rows.shape[0], 32), np.uint16)
    portable = np.zeros((rows.shape[0], 32), np.uint16)
    for i in range(rows.shape[0]):
        table_words_host(table, rows[i, 0], rows[i, 1], index[i], host[i])
        table_words_portable(table, rows[i, 0], rows[i, 1], index[i], portable[i])
    return host, portable


def test_carry_lookup_without_word_permutes_is_the_same():
    """The lookup a processor without AVX-512BW's word permutations compiles (one word at
    a time) reads what the permutation reads: the table's rows at the indices."""
    rng = np.random.default_rng(9)
    table = carry8_rows()
    rows = rng.integers(0, 512, (200, 2))
    index = rng.integers(0, 32, (200, 32)).astype(np.uint16)
    host, portable = _looked_up(table, rows, index)
    want = np.where(np.arange(32) < 16, table[rows[:, :1], index], table[rows[:, 1:], index])
    np.testing.assert_array_equal(portable, want)
    np.testing.assert_array_equal(host, want)
