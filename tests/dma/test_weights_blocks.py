"""The block copies of :mod:`sim.dma.weights` against the index permutations.

``pack_*``/``unpack_*`` reshape and transpose whole blocks; the ``*_order``
functions give the same layouts as one gather index each (element i of the
stream is ``w.ravel()[order[i]]``), written independently.  Every layout case
is run: int8/int16/fp16, whole and short last kernel groups and channel chunks,
one group or several, deconvolution's reversed scan, image input with channel
post-extension 1/2/4 (short last line group), Winograd, compressed streams.
"""

import numpy as np
import pytest

from sim.configs import get_config
from sim.dma.elements import as_bytes, element_dtype, from_bytes
from sim.dma.weights import (
    WEIGHT_SIZE_ALIGN,
    compress_weights,
    dc_order,
    decompress_weights,
    group_bytes,
    image_order,
    pack_weight_dc,
    pack_weight_image,
    pack_weight_winograd,
    unpack_weight_dc,
    unpack_weight_image,
    unpack_weight_winograd,
    weight_atomic_c,
    weight_group_size,
    winograd_order,
)

PRECISIONS = ["int8", "int16", "fp16"]
CONFIGS = [get_config(name) for name in ("nv_full", "nv_small")]


def random_weights(rng, shape, precision):
    if precision == "fp16":
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    info = np.iinfo(element_dtype(precision))
    return rng.integers(info.min, info.max + 1, shape).astype(element_dtype(precision))


def gather_stream(w, order, precision):
    """The reference stream: a gather through the order, zero-filled to 128 bytes."""
    raw = as_bytes(np.asarray(w).ravel()[order]).ravel()
    out = np.zeros(-(-raw.size // WEIGHT_SIZE_ALIGN) * WEIGHT_SIZE_ALIGN, np.uint8)
    out[: raw.size] = raw
    return out


def scatter_weights(data, shape, order, precision):
    """The reference unpack: a scatter through the order."""
    size = order.size * np.dtype(element_dtype(precision)).itemsize
    elems = from_bytes(np.asarray(data[:size]).reshape(order.size, -1), precision)
    out = np.empty(order.size, element_dtype(precision))
    out[order] = elems
    return out.reshape(shape)


def dc_shapes(cfg, precision):
    group, atomic_c = weight_group_size(precision, cfg), weight_atomic_c(cfg)
    for k in (1, group - 1, group, group + 3, 3 * group, 2 * group + 1):
        for c in (1, atomic_c - 1, atomic_c, atomic_c + 5, 3 * atomic_c):
            for r, s in ((1, 1), (3, 3), (2, 5)):
                if k >= 1 and c >= 1:
                    yield k, c, r, s


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("reverse", [False, True])
def test_dc_blocks_match_the_gather(cfg, precision, reverse):
    rng = np.random.default_rng(1234)
    group, atomic_c = weight_group_size(precision, cfg), weight_atomic_c(cfg)
    for shape in dc_shapes(cfg, precision):
        w = random_weights(rng, shape, precision)
        order = dc_order(shape, group, atomic_c, reverse)
        want = gather_stream(w, order, precision)
        got = pack_weight_dc(w, precision, cfg, reverse=reverse)
        np.testing.assert_array_equal(got, want, err_msg=str(shape))
        noisy = np.concatenate([want, rng.integers(0, 256, 64, dtype=np.uint8)])
        back = unpack_weight_dc(noisy, shape, precision, cfg, reverse=reverse)
        np.testing.assert_array_equal(back, scatter_weights(noisy, shape, order, precision))
        np.testing.assert_array_equal(back, w)
        assert back.dtype == element_dtype(precision) and back.flags.c_contiguous
        last = unpack_weight_dc(noisy, shape, precision, cfg, reverse=reverse,
                                channels_last=True)
        np.testing.assert_array_equal(last, w)
        assert last.dtype == back.dtype and last.transpose(0, 2, 3, 1).flags.c_contiguous


def test_dc_blocks_with_odd_atoms_and_bytes_input():
    rng = np.random.default_rng(7)
    for k, c, group, atomic_c in ((13, 11, 4, 3), (5, 40, 2, 7), (9, 2, 16, 64)):
        shape = (k, c, 2, 3)
        w = random_weights(rng, shape, "int16")
        order = dc_order(shape, group, atomic_c)
        want = gather_stream(w, order, "int16")
        got = pack_weight_dc(w, "int16", mac_atomic_c=atomic_c, mac_atomic_k=2 * group)
        np.testing.assert_array_equal(got, want)
        back = unpack_weight_dc(bytes(want), shape, "int16", mac_atomic_c=atomic_c,
                                mac_atomic_k=2 * group)
        np.testing.assert_array_equal(back, w)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("post_extension", [1, 2, 4])
def test_image_blocks_match_the_gather(precision, post_extension):
    rng = np.random.default_rng(99 + post_extension)
    cfg = get_config("nv_full")
    group, atomic_c = weight_group_size(precision, cfg), weight_atomic_c(cfg)
    for k in (1, group - 1, group, 2 * group + 5):
        for c, r, s in ((1, 3, 3), (3, 7, 7), (4, 5, 2), (3, 1, 3), (2, 6, 1)):
            if post_extension * s * c > atomic_c:
                continue
            shape = (k, c, r, s)
            w = random_weights(rng, shape, precision)
            order = image_order(shape, group, atomic_c, post_extension)
            want = gather_stream(w, order, precision)
            got = pack_weight_image(w, precision, cfg, post_extension=post_extension)
            np.testing.assert_array_equal(got, want, err_msg=str(shape))
            back = unpack_weight_image(want, shape, precision, cfg,
                                       post_extension=post_extension)
            np.testing.assert_array_equal(back, scatter_weights(want, shape, order, precision))
            np.testing.assert_array_equal(back, w)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_winograd_blocks_match_the_gather(cfg, precision):
    rng = np.random.default_rng(5)
    group = weight_group_size(precision, cfg)
    for k in (1, group - 1, group, 2 * group + 3):
        for c in (4, 12, 36):
            shape = (k, c, 4, 4)
            w = random_weights(rng, shape, precision)
            order = winograd_order(shape, group)
            want = gather_stream(w, order, precision)
            np.testing.assert_array_equal(pack_weight_winograd(w, precision, cfg), want)
            back = unpack_weight_winograd(want, shape, precision, cfg)
            np.testing.assert_array_equal(back, scatter_weights(want, shape, order, precision))
            np.testing.assert_array_equal(back, w)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_compressed_dc_blocks_match_the_gather(precision):
    rng = np.random.default_rng(21)
    cfg = get_config("nv_small")
    group = weight_group_size(precision, cfg)
    shape = (2 * group + 3, 19, 3, 3)
    w = random_weights(rng, shape, precision)
    w[rng.random(shape) < 0.6] = 0
    stream = pack_weight_dc(w, precision, cfg)
    kernel_bytes = int(np.prod(shape[1:])) * np.dtype(element_dtype(precision)).itemsize
    groups = group_bytes(shape[0], kernel_bytes, group)
    packed = compress_weights(stream, precision, groups)
    plain = decompress_weights(packed, precision, groups)
    order = dc_order(shape, group, weight_atomic_c(cfg))
    np.testing.assert_array_equal(unpack_weight_dc(plain, shape, precision, cfg),
                                  scatter_weights(plain, shape, order, precision))
    np.testing.assert_array_equal(unpack_weight_dc(plain, shape, precision, cfg), w)


# (dtype, run of the last axis, last axis contiguous in both) -> the elements the copies move
WORD_CASES = [
    (np.int8, 8, True, "<u8"),  # nv_small's int8 atomic-C runs
    (np.int8, 64, True, "V64"),  # nv_full/nv_large's: a run longer than a word moves whole
    (np.uint16, 8, True, "V16"),  # fp16/int16 runs of 8
    (np.int8, 12, True, "V12"),
    (np.uint16, 4, True, "<u8"),
    (np.int8, 6, True, "<u2"),
    (np.int16, 3, True, np.int16),  # 6 bytes: no wider word divides it
    (np.int8, 1, True, np.int8),
    (np.int8, 8, False, np.int8),  # a strided last axis keeps its elements
]


@pytest.mark.parametrize("dtype, run, contiguous, word", WORD_CASES)
def test_block_copies_move_words_where_runs_allow(dtype, run, contiguous, word):
    from sim.dma.weights import _as_words

    rng = np.random.default_rng(run)
    wide = rng.integers(0, 100, (3, 5, 2 * run)).astype(dtype)
    a = wide[:, :, :run] if contiguous else wide[:, :, ::2]  # (3, 5, run) either way
    b = np.zeros((5, 3, run), dtype).transpose(1, 0, 2)
    wa, wb = _as_words(a, b)
    assert wa.dtype == np.dtype(word) and wb.dtype == np.dtype(word)
    wb[...] = wa
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.name)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_unpacks_split_by_kernel_groups_match_the_gather(cfg, precision, monkeypatch):
    """Large unpacks are split by kernel groups over the cores: every layout, forced to split
    (two cores, any size), against the scatter through the order."""
    import sim.dma.weights as weights

    monkeypatch.setattr(weights, "SPLIT_UNPACK_ELEMENTS", 1)
    monkeypatch.setattr("sim.jit.cores", lambda: 2)
    rng = np.random.default_rng(5)
    group, atomic_c = weight_group_size(precision, cfg), weight_atomic_c(cfg)
    for shape in ((3 * group + 1, atomic_c + 5, 3, 3), (2 * group, 2 * atomic_c, 6, 6),
                  (group - 1, atomic_c - 1, 1, 1)):
        w = random_weights(rng, shape, precision)
        for reverse in (False, True):
            order = dc_order(shape, group, atomic_c, reverse)
            stream = gather_stream(w, order, precision)
            want = scatter_weights(stream, shape, order, precision)
            for channels_last in (False, True):
                got = unpack_weight_dc(stream, shape, precision, cfg, reverse=reverse,
                                       channels_last=channels_last)
                np.testing.assert_array_equal(got, want, err_msg=f"{shape} {reverse}")
        image = (2 * group + 3, 1, 5, 3)  # 3 extended channels: post-extension fits nv_small
        w = random_weights(rng, image, precision)
        for post in (1, 2):
            order = image_order(image, group, atomic_c, post)
            stream = gather_stream(w, order, precision)
            got = unpack_weight_image(stream, image, precision, cfg, post_extension=post)
            np.testing.assert_array_equal(got, scatter_weights(stream, image, order, precision))
        wino = (2 * group + 5, 8, 4, 4)
        w = random_weights(rng, wino, precision)
        order = winograd_order(wino, group)
        stream = gather_stream(w, order, precision)
        got = unpack_weight_winograd(stream, wino, precision, cfg)
        np.testing.assert_array_equal(got, scatter_weights(stream, wino, order, precision))
