"""fp16 tile layers reading their weights' DC stream: the stream unpacked and transposed in one
pass (``mac_fp16._stream_innermost``) is the unpacked weights' transpose, its lane bits, NaN
flags and NaN/Inf counts; layers given the stream are the definition, their counters the
counts of the unpacked weights."""

import numpy as np
import pytest

from sim.configs import CONFIGS
from sim.conv import mac_fp16
from sim.conv.mac_fp16 import SQUARE, _kernels_innermost, _stream_innermost, conv_fp16
from sim.dma.weights import dc_stream, pack_weight_dc
from sim.num.specials import count_nans_and_infs
from sim.program.conv import run_conv

from .test_fp16 import CDMA, make_layer, plant, random_bits, reference_fp16

NV_FULL = CONFIGS["nv_full"]


def stream_of(wt, atomic_c=None, atomic_k=None):
    """The DC stream of fp16 weights (K, C, R, S) as the CDMA fetches it (nv_full's atomics
    unless given)."""
    packed = pack_weight_dc(wt, "fp16", NV_FULL, mac_atomic_c=atomic_c, mac_atomic_k=atomic_k)
    return dc_stream(packed, wt.shape, "fp16", NV_FULL, mac_atomic_c=atomic_c,
                     mac_atomic_k=atomic_k)


@pytest.mark.parametrize("k,c,r,s,atomic_c,atomic_k,specials", [
    (5, 64, 1, 1, None, None, False),     # one short group
    (300, 128, 3, 3, None, None, True),   # two squares, the last group short
    (513, 64, 2, 3, None, None, True),    # three squares, a last square of one kernel
    (40, 96, 3, 1, 32, 16, False),        # runs of 32 channels, groups of 8
    (17, 8, 3, 3, 8, 64, True),           # runs of 8 channels, groups of 32 (one short)
])
def test_stream_transpose_is_the_unpacked_weights_transpose(k, c, r, s, atomic_c, atomic_k,
                                                            specials):
    """Against the transpose of the unpacked weights (``_kernels_innermost``): the (R*S, C,
    K) words, each square's lane bits and NaN flag, and each square's NaN and Inf counts
    (those of count_nans_and_infs over its kernels); dead lanes in some squares only."""
    rng = np.random.default_rng(k * 31 + c)
    wt = random_bits(rng, (k, c, r, s), zeros=0.3)
    wt[:, 1] = 0  # a lane dead in every kernel
    wt[: min(k, SQUARE), 2] = 0x8000  # dead in the first square only (-0)
    if specials:  # NaNs and Infs in the last square only
        wt[-1, 0, 0, 0], wt[-1, c - 1, r - 1, s - 1] = 0x7E01, 0xFC00
    stream = stream_of(wt, atomic_c, atomic_k)
    squares = -(-k // SQUARE)
    want = np.empty((r * s, c, k), np.uint16)
    want_bits, want_nan = np.zeros((squares, c), np.uint16), np.zeros(squares, np.bool_)
    _kernels_innermost(wt.reshape(k, c, r * s), want, want_bits, want_nan, (0, squares))
    got = np.full((r * s, c, k), 0x1234, np.uint16)
    got_bits, counts = np.zeros((squares, c), np.uint16), np.zeros((squares, 2), np.int64)
    for first in range(squares):  # square by square, as threads take them
        _stream_innermost(stream.elements, stream.base, stream.stride, stream.atomic_c,
                          stream.group, got, got_bits, counts, (first, first + 1))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_bits, want_bits)
    np.testing.assert_array_equal(counts[:, 0] > 0, want_nan)
    for square in range(squares):
        kernels = wt[square * SQUARE:(square + 1) * SQUARE]
        assert tuple(counts[square]) == count_nans_and_infs(kernels)
    assert want_nan.any() == specials


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["plain", "nans", "groups_of_12", "runs_of_32"])
def test_tile_layers_from_the_stream_are_the_definition(case, threads, monkeypatch):
    """A tile layer given its weights' stream is the definition of the unpacked weights
    (batches, strides, padding, dead lanes, NaN and Inf weights), and counts the stream's
    NaNs and Infs into its specials: whether it transposes the stream (groups that tile a
    square) or unpacks it first (groups of 12, runs of 32 where the MAC's block is 64)."""
    monkeypatch.setattr(mac_fp16, "cores", lambda: threads)
    rng = np.random.default_rng(len(case) + threads)
    atomic_c, atomic_k = {"groups_of_12": (None, 24), "runs_of_32": (32, None)}.get(
        case, (None, None))
    layer = make_layer((5, 6), (2, 1), (1, 1), (1, 0), int(np.float16(-1.5).view(np.uint16)))
    layer.batches, layer.channels = 2, 128
    x = random_bits(rng, (2, 128, 9, 6))
    wt = random_bits(rng, (270, 128, 3, 2), zeros=0.1)
    wt[:, 5] = 0  # a dead lane
    if case == "nans":
        plant(rng, wt, [0x7C07, 0xFE00, 0x7C00])
    stream = stream_of(wt, atomic_c, atomic_k)
    stream.specials[:] = 99  # stale counts of an earlier read
    got = conv_fp16(x, stream, layer, 64)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, 64))
    assert tuple(stream.specials.sum(axis=0)) == count_nans_and_infs(wt)


@pytest.mark.parametrize("kernels", [20, 300])
def test_a_programmed_tile_layer_counts_its_weights_nans_and_infs(kernels):
    """Through the CDMA (the weights fetched as their stream and handed to the products):
    the layer's output is the definition and the weight counters count every NaN and Inf."""
    rng = np.random.default_rng(kernels)
    x = random_bits(rng, (64, 6, 5))
    wt = random_bits(rng, (kernels, 64, 3, 3), zeros=0.1)
    plant(rng, wt, [0x7E01, 0xFC00, 0x7C00, 0xFD00])
    out, counters = run_conv("nv_full", x, wt, precision="fp16", pad=(1, 1, 1, 1))
    layer = make_layer((6, 5), pad=(1, 1))
    np.testing.assert_array_equal(out, reference_fp16(x[None], wt, layer, 64)[0])
    nans, infs = count_nans_and_infs(wt)
    assert nans == 2 and infs >= 2  # random patterns hold Infs of their own
    assert counters[(CDMA, "D_NAN_INPUT_WEIGHT_NUM_0")] == nans
    assert counters[(CDMA, "D_INF_INPUT_WEIGHT_NUM_0")] == infs
