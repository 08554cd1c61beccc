"""Small fp16 layers whose products read the weights from their DC stream
(:class:`sim.dma.weights.DcStream`, not unpacked) against the definition and against the
unpacked weights' path: one kernel position and several, batches of pixels, padding,
short last kernel groups, NaNs in weights and data, kernel ranges split anywhere; the
NaN and Inf weights the products count as they read the stream."""

import numpy as np
import pytest

from sim.conv import mac_fp16
from sim.conv.mac_fp16 import MIN_TILE, conv_fp16, reads_stream
from sim.dma.weights import DcStream, dc_stream, pack_weight_dc
from sim.num.fc_carry_tables import carry_bounds
from sim.num.specials import count_nans_and_infs

from .test_fp16 import (
    make_layer,
    network_bits,
    padded_small_layer,
    plant,
    random_bits,
    reference_fp16,
)

GROUP = 16  # kernels a weight group (nv_full fp16)


def as_stream(wt, block, group=GROUP):
    """The weights' DC stream as the CDMA fetches it: a read-only view of the memory."""
    packed = pack_weight_dc(wt, "fp16", mac_atomic_c=block, mac_atomic_k=2 * group)
    packed.flags.writeable = False
    return dc_stream(packed, wt.shape, "fp16", mac_atomic_c=block, mac_atomic_k=2 * group)


@pytest.mark.parametrize("case", ["one_position", "weight_nans", "data_nans", "positions",
                                  "positions_nans", "padded", "padded_nan", "trained"])
@pytest.mark.parametrize("block", [64, 8])
def test_stream_products_are_the_definition(case, block):
    rng = np.random.default_rng(len(case) * 10 + block)
    c, k = 2 * block if block == 64 else 3 * block, 37  # groups of 16, 16 and 5 kernels
    if case.startswith("padded"):
        x, wt, layer = padded_small_layer(rng, c, k, case == "padded_nan")
    else:  # a batch of windows of the kernel's size: one output pixel each
        size = 3 if case.startswith("positions") else 1
        n = 1 if case == "trained" else 5
        if case == "trained":
            x = network_bits(rng, (n, c, size, size), 1.0, 0.4)
            wt = network_bits(rng, (k, c, size, size), 0.02, 0.0)
        else:
            x = random_bits(rng, (n, c, size, size))
            wt = random_bits(rng, (k, c, size, size))
        layer = make_layer((1, 1))
        if case in ("weight_nans", "positions_nans"):
            plant(rng, wt, [0x7C07, 0xFE00, 0x7D11])
        if case in ("data_nans", "positions_nans"):
            plant(rng, x, [0x7E01, 0xFC02])
    layer.batches, layer.channels = x.shape[0], c
    assert reads_stream(layer, block) and x.shape[0] * layer.out_height * layer.out_width < MIN_TILE
    stream = as_stream(wt, block)
    got = conv_fp16(x, stream, layer, block)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, block))
    assert tuple(stream.specials.sum(axis=0)) == count_nans_and_infs(wt) == tuple(stream.totals)
    np.testing.assert_array_equal(got, conv_fp16(x, wt, layer, block))
    has_nan = ((got & 0x7F800000) == 0x7F800000) & ((got & 0x7FFFFF) != 0)
    assert has_nan.any() == ("nan" in case)


@pytest.mark.parametrize("threads,min_kernels", [(2, 1), (3, 1), (3, 7)])
def test_kernel_ranges_split_anywhere(threads, min_kernels, monkeypatch):
    """Threads whose kernel ranges begin inside weight groups (and inside a chunk of
    CACC_KERNELS) read the same blocks."""
    rng = np.random.default_rng(threads * 100 + min_kernels)
    x, wt = random_bits(rng, (3, 128, 2, 2)), random_bits(rng, (45, 128, 2, 2))
    plant(rng, wt, [0x7E05])
    layer = make_layer((1, 1))
    layer.batches, layer.channels = 3, 128
    monkeypatch.setattr(mac_fp16, "cores", lambda: threads)
    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    monkeypatch.setattr(mac_fp16, "MIN_KERNELS", min_kernels)
    stream = as_stream(wt, 64)
    got = conv_fp16(x, stream, layer, 64)
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, 64))
    # each kernel's NaNs and Infs counted once, whichever thread read it, and the threads'
    # totals added up
    np.testing.assert_array_equal(stream.specials, [count_nans_and_infs(kernel) for kernel in wt])
    assert tuple(stream.totals) == count_nans_and_infs(wt) and stream.totals[0] > 0


def test_other_layers_unpack_the_stream():
    """A stream given for a layer the stream path does not take (many pixels; channels not
    whole runs cannot be a stream) is unpacked: the same output as the weights'."""
    rng = np.random.default_rng(4)
    x, wt = random_bits(rng, (1, 64, 6, 6)), random_bits(rng, (9, 64, 2, 2))
    layer = make_layer((5, 5))
    layer.batches, layer.channels = 1, 64
    stream = as_stream(wt, 64)
    assert isinstance(stream, DcStream) and not reads_stream(layer, 64)
    np.testing.assert_array_equal(conv_fp16(x, stream, layer, 64),
                                  reference_fp16(x, wt, layer, 64))
    assert tuple(stream.specials.sum(axis=0)) == count_nans_and_infs(wt) == tuple(stream.totals)
    layer.out_height = layer.out_width = 1
    assert not reads_stream(layer, 128) and reads_stream(layer, 64)


def _fc_layer(m, x, w, **flags):
    """A programmed fp16 fully connected layer (the kernel the input's size), its flags."""
    from sim.conv.layer import decode_layer
    from sim.machine import LayerContext
    from sim.program.conv import UNITS, program
    from sim.program.registers import set_reg

    program(m, x, w, precision="fp16")
    set_reg(m, "NVDLA_CDMA", "D_MISC_CFG_0", in_precision=2, proc_precision=2, **flags)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    return ctx, decode_layer(ctx)


def test_a_layer_streams_its_weights_unless_the_cbuf_keeps_them(monkeypatch):
    """Through the CDMA: an fp16 fully connected layer's weights reach the products as
    their stream (same output, same NaN/Inf counters as the weights'); a layer that keeps
    its weights for the next (SKIP_WEIGHT_RLS) fetches them unpacked, and the next layer
    reusing them computes with them, not with what memory holds by then."""
    import sim.conv.direct as direct
    from sim.conv.cdma import Cbuf
    from sim.machine import Machine

    rng = np.random.default_rng(8)
    x = random_bits(rng, (128, 2, 2))
    w1, w2 = random_bits(rng, (20, 128, 2, 2)), random_bits(rng, (20, 128, 2, 2))
    plant(rng, w1, [0x7C00, 0xFC00, 0x7E03])
    fetched = []

    def fetch_weights(*args, **kw):
        weights, counters = plain_fetch(*args, **kw)
        fetched.append(weights)
        return weights, counters

    plain_fetch = direct.fetch_weights
    monkeypatch.setattr(direct, "fetch_weights", fetch_weights)
    layer_shape = make_layer((1, 1))
    want1 = reference_fp16(x[None], w1, layer_shape, 64)[0]
    m, cbuf = Machine("nv_full"), Cbuf()
    for keep in (0, 1):
        ctx, layer = _fc_layer(m, x, w1, skip_weight_rls=keep)
        out, counters = direct.compute_direct_layer(ctx, layer, cbuf)
        assert isinstance(fetched[-1], DcStream) != bool(keep)
        np.testing.assert_array_equal(out[0], want1)
        nans, infs = count_nans_and_infs(w1)
        assert (counters[("NVDLA_CDMA", "D_NAN_INPUT_WEIGHT_NUM_0")],
                counters[("NVDLA_CDMA", "D_INF_INPUT_WEIGHT_NUM_0")]) == (nans, infs)
        assert nans == 1 and infs >= 2
    np.testing.assert_array_equal(cbuf.weights[1], w1)
    ctx, layer = _fc_layer(m, x, w2, weight_reuse=1)  # memory holds w2 now
    out, _ = direct.compute_direct_layer(ctx, layer, cbuf)
    np.testing.assert_array_equal(out[0], want1)
    ctx, layer = _fc_layer(m, x, w2)
    out, _ = direct.compute_direct_layer(ctx, layer, cbuf)
    assert isinstance(fetched[-1], DcStream)
    np.testing.assert_array_equal(out[0], reference_fp16(x[None], w2, layer_shape, 64)[0])


def _zeroed(rng, x, fraction):
    """``x`` with a fraction of its values +0 or -0 (ReLU'd layers' inputs)."""
    x = x.copy()
    zero = rng.random(x.shape) < fraction
    x[zero] = np.where(rng.random(x.shape) < 0.5, 0x0000, 0x8000)[zero]
    return x


def _spy_live(monkeypatch):
    """The live lanes' layouts conv_fp16 takes (None: the full blocks, or every lane for
    the column kernel: a layout of every lane's place)."""
    taken = []

    def stream_data(cube, *args):
        result = plain(cube, *args)
        has, layout, _ = result[3]
        lanes = result[0][0].shape[1]  # the data's (pixels, lanes)
        taken.append(layout if has and layout[0].size < lanes else None)
        return result

    plain = mac_fp16._fc_stream_data
    monkeypatch.setattr(mac_fp16, "_fc_stream_data", stream_data)
    return taken


LIVE_CASES = [  # (case, fraction of the data zero, block, channels, kernels, live lanes taken)
    ("network", 0.0, 64, 256, 37, False),
    ("network", 0.4, 64, 256, 37, True),
    ("network", 0.5, 64, 128, 37, True),
    ("network", 0.9, 32, 96, 21, True),
    ("network", 1.0, 64, 128, 17, True),
    ("dead_blocks", 0.5, 64, 256, 20, True),  # whole blocks of zeros
    ("full_last_half", 0.0, 64, 128, 20, True),  # a block's last half all live, padded
    ("weight_nan_in_dead_lane", 0.5, 64, 128, 37, True),
    ("data_specials", 0.5, 64, 128, 20, True),  # NaN and Inf data, subnormals
    ("random", 0.6, 32, 128, 19, True),  # every exponent: shifts to 28 and beyond
    ("positions", 0.6, 64, 64, 20, True),  # a 3 x 3 kernel: 9 positions a group
    ("pixels", 0.97, 64, 64, 20, True),  # several output pixels (a small padded layer)
    ("chunks", 0.4, 64, 8192, 3, True),  # more live lanes than a chunk
]


@pytest.mark.parametrize("case,zeros,block,c,k,live", LIVE_CASES)
def test_live_lanes_are_the_definition(case, zeros, block, c, k, live, monkeypatch):
    """Layers whose data are mostly zero take only their live lanes
    (sim.num.fc_live): the same output as the definition and as the full blocks, every
    kernel's NaN and Inf weights counted over its whole runs (dead lanes too)."""
    rng = np.random.default_rng(int(zeros * 100) + c + k + len(case))
    taken = _spy_live(monkeypatch)
    layer = make_layer((1, 1))
    if case == "pixels":  # 3 x 3 pixels of a 3 x 3 kernel, stride 2, padding (0) 1
        layer = make_layer((3, 3), (2, 2), (1, 1), (1, 1), 0)
        x = _zeroed(rng, network_bits(rng, (1, c, 5, 5), 1.0, 0.0), zeros)
        wt = network_bits(rng, (k, c, 3, 3), 0.02, 0.0)
    else:
        size = 3 if case == "positions" else 1
        if case == "random":
            x, wt = random_bits(rng, (1, c, size, size), 0.0), random_bits(rng, (k, c, size, size))
        else:
            x = network_bits(rng, (1, c, size, size), 1.0, 0.0)
            wt = network_bits(rng, (k, c, size, size), 0.02, 0.0)
        x = _zeroed(rng, x, zeros)
    if case == "dead_blocks":
        x[:, :block] = 0
        x[:, 2 * block:3 * block] = 0x8000
    if case == "full_last_half":  # per block: 5 live lanes, then 32: 37, padded to 48
        x[:, :] = 0
        for b in range(c // block):
            x[0, b * block:b * block + 5] = 0x3C00
            x[0, b * block + 32:(b + 1) * block] = 0x3555
        wt[:, :] = np.where(wt == 0, 0x3800, wt)  # no weight 0: every live lane counts
    if case == "weight_nan_in_dead_lane":
        dead = np.flatnonzero(x.reshape(-1) & 0x7FFF == 0)
        wt.reshape(k, -1)[5, dead[0]] = 0x7E11
        wt.reshape(k, -1)[30, dead[-1]] = 0xFC00  # an Inf weight in a dead lane: counted
    if case == "data_specials":
        plant(rng, x, [0x7C00, 0xFC00, 0x0001, 0x83FF, 0x7E05])
    layer.batches, layer.channels = x.shape[0], c
    stream = as_stream(wt, block)
    got = conv_fp16(x, stream, layer, block)
    assert [t is not None for t in taken] == [live]
    np.testing.assert_array_equal(got, reference_fp16(x, wt, layer, block))
    np.testing.assert_array_equal(got, conv_fp16(x, wt, layer, block))
    np.testing.assert_array_equal(stream.specials, [count_nans_and_infs(kernel) for kernel in wt])
    assert tuple(stream.totals) == count_nans_and_infs(wt)
    nan = ((got & 0x7F800000) == 0x7F800000) & ((got & 0x7FFFFF) != 0)
    if case == "weight_nan_in_dead_lane":
        assert nan[0, 5].all() and nan.sum() == 1


@pytest.mark.parametrize("zeros", [0.0, 0.6])
def test_narrow_carry_bounds_place_the_same_columns(zeros, monkeypatch):
    """The uint16 carry bounds conv_fp16 hands the data's call place the same column
    operands (each live datum's bound read at its significand) as the same table in int64:
    every array of the call's result equal; data over many significands."""
    rng = np.random.default_rng(int(zeros * 10) + 3)
    calls = []
    plain = mac_fp16._fc_stream_data

    def stream_data(*args):
        calls.append(args)
        return plain(*args)

    monkeypatch.setattr(mac_fp16, "_fc_stream_data", stream_data)
    c, k = 1024, 32
    x = _zeroed(rng, random_bits(rng, (1, c, 1, 1), 0.0), zeros)
    wt = network_bits(rng, (k, c, 1, 1), 0.02, 0.0)
    layer = make_layer((1, 1))
    layer.batches, layer.channels = 1, c
    conv_fp16(x, as_stream(wt, 64), layer, 64)
    (args,) = calls
    assert args[-1].dtype == np.uint16 and args[-2] == mac_fp16._word_permutes()
    np.testing.assert_array_equal(args[-1], carry_bounds())

    def flat(value):
        if isinstance(value, tuple):
            return [leaf for item in value for leaf in flat(item)]
        return [value]

    narrow, wide = flat(plain(*args)), flat(plain(*args[:-1], carry_bounds().astype(np.int64)))
    assert len(narrow) == len(wide) > 10
    for got, want in zip(narrow, wide, strict=True):
        np.testing.assert_array_equal(got, want)
    assert narrow[5].size > 1 or not args[-2]  # the columns' starts, where they apply
