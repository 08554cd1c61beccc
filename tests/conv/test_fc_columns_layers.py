"""Fully connected fp16 layers read from their DC stream with the column kernel
(sim.num.fc_columns) against the definition and the live lanes' gather path it stands in
for: kernel counts of one weight group, a short last group (17, 31, 1000), whole groups
(48), thread ranges; a group with an Inf or NaN weight and data with a NaN (the gather's
path, NaN and Inf counters as the stream holds them); several pixels (not taken)."""

import numpy as np
import pytest

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import conv_fp16
from sim.num.fc_columns import no_column_operands, word_permutes
from sim.num.specials import count_nans_and_infs

from .test_fp16 import make_layer, network_bits, plant, reference_fp16
from .test_fp16_stream import as_stream


def _spy(monkeypatch, use_columns=True):
    """Records whether each layer got column operands; without ``use_columns`` none (the
    gather's path for every kernel)."""
    taken = []
    plain = mac_fp16.with_carry_rows

    def operands(*args):
        ops = plain(*args) if use_columns else no_column_operands()
        taken.append(ops[0].size > 0)
        return ops

    monkeypatch.setattr(mac_fp16, "with_carry_rows", operands)
    return taken


def _layer(rng, pixels, channels, kernels, zeros=0.5):
    x = network_bits(rng, (pixels, channels, 1, 1), 1.0, zeros)
    w = network_bits(rng, (kernels, channels, 1, 1), 0.02, 0.05)
    # a few lanes 12 to 28 bits below their block's largest: flagged lanes
    w.reshape(-1)[rng.choice(w.size, w.size // 50, replace=False)] &= 0x83FF | (3 << 10)
    layer = make_layer((1, 1))
    layer.batches, layer.channels = pixels, channels
    return x, w, layer


def _both_paths(monkeypatch, x, w, layer):
    """(the output and the stream's counters with the column kernel where it takes the
    layer, whether it did; the same by the gather's path)."""
    results = []
    for use in (True, False):
        with monkeypatch.context() as patch:
            taken = _spy(patch, use)
            stream = as_stream(w, 64)
            results.append((conv_fp16(x, stream, layer, 64), stream.specials.copy(), taken))
            assert tuple(stream.totals) == tuple(stream.specials.sum(axis=0))
    return results


@pytest.mark.parametrize("kernels,channels,threads", [(16, 256, 2), (17, 128, 2), (31, 320, 2),
                                                      (48, 192, 3), (1000, 128, 2),
                                                      (80, 576, 1)])
def test_column_layers_are_the_definition_and_the_gather(kernels, channels, threads,
                                                          monkeypatch):
    monkeypatch.setattr(mac_fp16, "cores", lambda: threads)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    monkeypatch.setattr(mac_fp16, "MIN_KERNELS", 16)
    rng = np.random.default_rng(kernels + channels)
    x, w, layer = _layer(rng, 1, channels, kernels)
    (got, specials, taken), (plain, plain_specials, _) = _both_paths(monkeypatch, x, w, layer)
    assert taken == [word_permutes()]
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_array_equal(specials, plain_specials)
    np.testing.assert_array_equal(got, reference_fp16(x, w, layer, 64))


@pytest.mark.parametrize("case", ["inf_weight", "nan_weight", "both", "nan_data", "pixels"])
def test_layers_the_columns_leave(case, monkeypatch):
    """An Inf or NaN weight leaves its group to the gather (which counts it); a NaN datum
    or several pixels leave the whole layer."""
    rng = np.random.default_rng(len(case))
    pixels = 3 if case == "pixels" else 1
    x, w, layer = _layer(rng, pixels, 192, 40, 0.8 if pixels > 1 else 0.5)  # lanes live in any
    if case in ("inf_weight", "both"):
        w[20, 100, 0, 0] = 0xFC00
    if case in ("nan_weight", "both"):
        w[35, 7, 0, 0] = 0x7E01
        w[3, 64, 0, 0] = 0x7C00
    if case == "nan_data":
        plant(rng, x, [0x7E00])
    (got, specials, taken), (plain, plain_specials, _) = _both_paths(monkeypatch, x, w, layer)
    assert taken == [word_permutes() and case not in ("nan_data", "pixels")]
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_array_equal(got, reference_fp16(x, w, layer, 64))
    np.testing.assert_array_equal(specials, plain_specials)
    np.testing.assert_array_equal(specials, [count_nans_and_infs(kernel) for kernel in w])


def test_zero_weights_beside_the_largest_data(monkeypatch):
    """A +0 or -0 weight (odd and even kernels) on each block's largest data value: left
    out of the block exponent, as the definition leaves it."""
    rng = np.random.default_rng(9)
    x, w, layer = _layer(rng, 1, 192, 32)
    x[0, ::64, 0, 0] = 0x7000  # far above every other datum
    w[0::2, ::64, 0, 0] = 0x8000
    w[1::2, ::64, 0, 0] = 0x0000
    (got, specials, taken), (plain, _, _) = _both_paths(monkeypatch, x, w, layer)
    assert taken == [word_permutes()]
    np.testing.assert_array_equal(got, reference_fp16(x, w, layer, 64))
    np.testing.assert_array_equal(got, plain)


@pytest.mark.parametrize("zeros", [0.0, 0.1])
def test_dense_layers_take_the_columns_with_every_lane_live(zeros, monkeypatch):
    """Data with few zeros (the live lanes' gather would not pay): the column kernel still
    takes the layer, every lane a column, zero data among them (on a processor without its
    word permutations the layer takes the whole runs' path, which wants no operands)."""
    rng = np.random.default_rng(int(zeros * 10) + 3)
    x, w, layer = _layer(rng, 1, 256, 40, zeros)
    (got, specials, taken), (plain, plain_specials, _) = _both_paths(monkeypatch, x, w, layer)
    assert taken == ([True] if word_permutes() else [])
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_array_equal(specials, plain_specials)
    np.testing.assert_array_equal(got, reference_fp16(x, w, layer, 64))
