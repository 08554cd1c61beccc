"""Where each kernel's runs of atomic-C channels lie in a DC weight stream
(:func:`sim.dma.weights.dc_kernel_runs`), against the stream's index permutation
(:func:`sim.dma.weights.dc_order`) and :func:`sim.dma.weights.pack_weight_dc`'s bytes."""

import numpy as np
import pytest

from sim.dma.align import LayoutError
from sim.dma.weights import (
    dc_kernel_runs,
    dc_order,
    dc_stream,
    pack_weight_dc,
    unpack_weight_dc,
)

# (K, C, R, S), kernels a group, atomic C: whole and short last kernel groups, one group,
# one channel run, one position and several
CASES = [((37, 128, 1, 1), 16, 64), ((16, 64, 3, 3), 16, 64), ((5, 16, 2, 3), 16, 8),
         ((33, 24, 2, 2), 8, 8), ((1, 32, 1, 1), 16, 32), ((20, 64, 6, 6), 16, 32)]


@pytest.mark.parametrize("shape,group,atomic_c", CASES)
def test_each_kernels_runs_are_its_blocks_in_cacc_order(shape, group, atomic_c):
    """Run b of kernel k, lane j, is element (k, channel b // (R*S) * atomic_c + j,
    position b % (R*S)) in the stream's order."""
    k, c, r, s = shape
    order = dc_order(shape, group, atomic_c)
    base, stride = dc_kernel_runs(shape, group, atomic_c)
    runs = c // atomic_c * r * s
    kernel, run, lane = np.meshgrid(np.arange(k), np.arange(runs), np.arange(atomic_c),
                                    indexing="ij")
    channel = run // (r * s) * atomic_c + lane
    pos = run % (r * s)
    want = np.ravel_multi_index((kernel, channel, pos // s, pos % s), shape)
    at = base[:, None, None] + run * stride[:, None, None] + lane
    np.testing.assert_array_equal(order[at], want)
    # every element of the stream is some kernel's: the runs tile it
    assert np.array_equal(np.sort(at.ravel()), np.arange(order.size))


@pytest.mark.parametrize("shape,group,atomic_c", CASES[:3])
def test_a_stream_reads_the_packed_weights(shape, group, atomic_c):
    """:func:`dc_stream` of a packed stream (a read-only view, not copied) finds each
    kernel's weights at its runs, and unpacks as :func:`unpack_weight_dc` does."""
    rng = np.random.default_rng(shape[0])
    w = rng.integers(0, 1 << 16, shape).astype(np.uint16)
    packed = pack_weight_dc(w, "fp16", mac_atomic_c=atomic_c, mac_atomic_k=2 * group)
    packed.flags.writeable = False
    stream = dc_stream(packed, shape, "fp16", mac_atomic_c=atomic_c, mac_atomic_k=2 * group)
    assert np.shares_memory(stream.elements, packed)
    k, c, r, s = shape
    for kernel in range(k):
        for run in range(c // atomic_c * r * s):
            at = stream.base[kernel] + run * stream.stride[kernel]
            channels = slice(run // (r * s) * atomic_c, (run // (r * s) + 1) * atomic_c)
            pos = run % (r * s)
            np.testing.assert_array_equal(stream.elements[at:at + atomic_c],
                                          w[kernel, channels, pos // s, pos % s])
    np.testing.assert_array_equal(stream.unpacked(), w)
    np.testing.assert_array_equal(
        stream.unpacked(),
        unpack_weight_dc(packed, shape, "fp16", mac_atomic_c=atomic_c, mac_atomic_k=2 * group))


def test_channels_not_whole_runs_are_refused():
    with pytest.raises(LayoutError):
        dc_kernel_runs((4, 70, 1, 1), 16, 64)
