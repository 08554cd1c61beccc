"""Winograd against direct convolution and the documented pre-addition; batch
mode against single runs; features the configuration lacks."""

import numpy as np
import pytest

from sim.conv.direct import compute_direct_layer as compute_layer
from sim.conv.layer import decode_layer
from sim.dma.feature import pack_feature
from sim.dma.weights import winograd_weights
from sim.errors import ConfigurationError
from sim.machine import LayerContext, Machine
from sim.program.conv import UNITS, program, run_conv
from sim.program.conv_modes import program_winograd, run_mode
from sim.program.registers import set_reg

BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])


def direct_conv(xp, w, stride):
    """Valid convolution of an already padded (C, H, W) input, exact int64/float64."""
    k, _, r, s = w.shape
    oh = (xp.shape[1] - r) // stride[1] + 1
    ow = (xp.shape[2] - s) // stride[0] + 1
    out = np.zeros((k, oh, ow), dtype=w.dtype if w.dtype.kind == "f" else np.int64)
    for oy in range(oh):
        for ox in range(ow):
            patch = xp[:, oy * stride[1]: oy * stride[1] + r, ox * stride[0]: ox * stride[0] + s]
            out[:, oy, ox] = np.einsum("crs,kcrs->k", patch, w)
    return out


def framed(x, pad, value):
    left, right, top, bottom = pad
    c, h, w = x.shape
    out = np.full((c, top + h + bottom, left + w + right), value, dtype=np.int64)
    out[:, top: top + h, left: left + w] = x
    return out


def round_shift(v, n):
    return v if n == 0 else np.sign(v) * ((np.abs(v) + (1 << (n - 1))) >> n)


@pytest.mark.parametrize("precision,stride,pad,c,k", [
    ("int16", (1, 1), (1, 3, 1, 3), 5, 3),
    ("int8", (1, 1), (0, 1, 2, 1), 37, 2),
    ("int8", (2, 2), (1, 1, 2, 0), 3, 4),
    ("int16", (2, 1), (1, 1, 0, 2), 2, 2),
])
def test_integer_winograd_equals_direct_convolution(precision, stride, pad, c, k):
    """Weights G w G^T scaled by 4 are exact; CACC's truncation by 2 undoes the scale."""
    rng = np.random.default_rng(c * 7 + k)
    dtype = np.int8 if precision == "int8" else np.int16
    sx, sy = stride
    h = 4 * sy * 2 - pad[2] - pad[3]
    wd = 4 * sx * 2 - pad[0] - pad[1]
    x = rng.integers(-8, 8, (c, h, wd)).astype(dtype)
    w = rng.integers(-6, 6, (k, c, 3 * sy, 3 * sx)).astype(dtype)
    w4 = winograd_weights(w, precision, stride=sx, scale=4) if sx == sy else None
    if w4 is None:  # different strides per axis: extend by hand (rows by sy, cols by sx)
        w4 = _winograd_weights_xy(w, precision, sx, sy)
    out, counters = run_mode("nv_full", program_winograd, x, w4, precision=precision,
                             stride=stride, pad=pad, pad_value=3, truncate=2)
    ref = direct_conv(framed(x, pad, 3), w.astype(np.int64), stride)
    np.testing.assert_array_equal(out, ref[:, : out.shape[1], : out.shape[2]])
    assert counters[("NVDLA_CACC", "D_OUT_SATURATION_0")] == 0


def _winograd_weights_xy(w, precision, sx, sy):
    from sim.dma.feature import padded_channels
    k, c, r, s = w.shape
    cp = padded_channels(c, precision, 32)
    full = np.zeros((k, cp, 3 * sy, 3 * sx), dtype=np.int64)
    full[:, :c, :r, :s] = w
    ext = full.reshape(k, cp, 3, sy, 3, sx).transpose(0, 3, 5, 1, 2, 4).reshape(k, -1, 3, 3)
    g = np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]])
    w4 = np.einsum("ij,kcjl,ml->kcim", g, ext, g)
    return w4.astype(np.int8 if precision == "int8" else np.int16)


@pytest.mark.parametrize("precision,pra", [("int8", 0), ("int8", 2), ("int16", 3),
                                           ("int16", 1)])
def test_pre_addition_truncation_and_saturation_bit_exact(precision, pra):
    """Large data: Bt d B is rounded by PRA_TRUNCATE and saturated before the MAC."""
    rng = np.random.default_rng(pra + 11)
    info = np.iinfo(np.int8 if precision == "int8" else np.int16)
    c, k, h, wd = 6, 3, 8, 8
    x = rng.integers(info.min, info.max + 1, (c, h, wd)).astype(info.dtype)
    cp = 32 if precision == "int8" else 16
    w4 = np.zeros((k, cp, 4, 4), info.dtype)
    w4[:, :c] = rng.integers(-20, 20, (k, c, 4, 4))
    out, _ = run_mode("nv_full", program_winograd, x, w4, precision=precision,
                      pra_truncate=pra, truncate=1, out_size=(4, 4))
    d = x.astype(np.int64)
    ref = np.zeros((k, 4, 4), np.int64)
    for oy in range(2):
        for ox in range(2):
            tile = d[:, 2 * oy: 2 * oy + 4, 2 * ox: 2 * ox + 4]
            t = np.einsum("ij,cjl,ml->cim", BT, tile, BT)
            t = np.clip(round_shift(t, pra), info.min, info.max)
            m = np.einsum("cij,kcij->kij", t, w4[:, :c].astype(np.int64))
            ref[:, 2 * oy: 2 * oy + 2, 2 * ox: 2 * ox + 2] = np.einsum("ij,kjl,ml->kim", AT, m,
                                                                        AT)
    np.testing.assert_array_equal(out, np.clip(round_shift(ref, 1), -(1 << 31), (1 << 31) - 1))


def test_fp16_winograd_equals_direct_for_exact_values():
    rng = np.random.default_rng(5)
    c, k = 4, 2
    x = rng.integers(-4, 5, (c, 8, 8)).astype(np.float16)
    w = rng.integers(-2, 3, (k, c, 3, 3)).astype(np.float16)
    w4 = winograd_weights(w.view(np.uint16), "fp16")
    out, _ = run_mode("nv_full", program_winograd, x.view(np.uint16), w4, precision="fp16")
    ref = direct_conv(x.astype(np.float64), w.astype(np.float64), (1, 1))
    np.testing.assert_array_equal(out.view(np.float32), ref[:, :4, :4].astype(np.float32))


def test_fp16_winograd_nan_sticks_through_later_channel_groups():
    """A NaN in the first channel group makes its tile's outputs that NaN, whatever the
    later groups add (CACC keeps the first NaN)."""
    rng = np.random.default_rng(9)
    c, k = 12, 2  # three 4-channel groups, added in order
    x = rng.integers(-4, 5, (c, 8, 8)).astype(np.float16).view(np.uint16)
    x[1, 2, 3] = 0x7E05
    w = rng.integers(-2, 3, (k, c, 3, 3)).astype(np.float16)
    w4 = winograd_weights(w.view(np.uint16), "fp16")
    outs = []
    for later in (0, 4):  # the later groups add nothing, then something
        x[4:] = rng.integers(-later, later + 1, (c - 4, 8, 8)).astype(np.float16).view(np.uint16)
        outs.append(run_mode("nv_full", program_winograd, x, w4, precision="fp16")[0])
    nan = (outs[0] & 0x7F800000 == 0x7F800000) & (outs[0] & 0x7FFFFF != 0)
    assert nan.any()
    np.testing.assert_array_equal(outs[0][nan], outs[1][nan])


def test_winograd_is_rejected_on_nv_small():
    x = np.zeros((4, 8, 8), np.int8)
    w4 = np.zeros((1, 8, 4, 4), np.int8)
    with pytest.raises(ConfigurationError, match="winograd"):
        run_mode("nv_small", program_winograd, x, w4, precision="int8")


# -- batch --------------------------------------------------------------------

def _batch_layer(config, xs, w, precision, **kw):
    m = Machine(config)
    program(m, xs[0], w, precision=precision, **kw)
    n = len(xs)
    data, layout = pack_feature(np.stack(xs), m.config, precision=precision)
    m.load(0x100000, data)
    set_reg(m, "NVDLA_CDMA", "D_BATCH_NUMBER_0", batches=n - 1)
    set_reg(m, "NVDLA_CDMA", "D_BATCH_STRIDE_0", batch_stride=layout.batch_stride)
    set_reg(m, "NVDLA_CSC", "D_BATCH_NUMBER_0", batches=n - 1)
    set_reg(m, "NVDLA_CACC", "D_BATCH_NUMBER_0", batches=n - 1)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    return compute_layer(ctx, decode_layer(ctx))[0]


@pytest.mark.parametrize("precision,n", [("int8", 3), ("int16", 2), ("fp16", 4)])
def test_batch_equals_single_runs(precision, n):
    rng = np.random.default_rng(n)
    dtype = {"int8": np.int8, "int16": np.int16, "fp16": np.float16}[precision]
    xs = [rng.integers(-9, 9, (5, 6, 7)).astype(dtype) for _ in range(n)]
    w = rng.integers(-9, 9, (3, 5, 2, 3)).astype(dtype)
    if precision == "fp16":
        xs = [x.view(np.uint16) for x in xs]
        w = w.view(np.uint16)
    kw = dict(stride=(2, 1), pad=(1, 0, 1, 1), pad_value=1)
    out = _batch_layer("nv_full", xs, w, precision, **kw)
    for b in range(n):
        single, _ = run_conv("nv_full", xs[b], w, precision=precision, **kw)
        np.testing.assert_array_equal(out[b], single)


def test_batch_is_rejected_on_nv_small():
    xs = [np.zeros((4, 3, 3), np.int8)] * 2
    with pytest.raises(ConfigurationError, match="D_BATCH_NUMBER"):
        _batch_layer("nv_small", xs, np.zeros((1, 4, 1, 1), np.int8), "int8")


# -- deconvolution (strided weight split into direct-convolution layers) -------

@pytest.mark.parametrize("stride,kernel", [((2, 2), (3, 3)), ((2, 3), (4, 5)), ((3, 1), (2, 3))])
def test_deconvolution_by_weight_split(stride, kernel):
    from sim.conv.deconv import deconv_output_size, deconv_phases, interleave
    from sim.dma.weights import pack_weight_dc, pack_weight_deconv

    sx, sy = stride
    s, r = kernel
    rng = np.random.default_rng(sx * 10 + sy)
    c, h, wd, k = 3, 4, 5, 2
    x = rng.integers(-20, 20, (c, h, wd)).astype(np.int8)
    w = rng.integers(-20, 20, (k, c, r, s)).astype(np.int8)
    oh, ow = deconv_output_size(h, wd, r, s, sx, sy)
    ref = np.zeros((k, oh, ow), np.int64)  # transposed convolution: scatter every input pixel
    for iy in range(h):
        for ix in range(wd):
            ref[:, iy * sy: iy * sy + r, ix * sx: ix * sx + s] += np.einsum(
                "c,kcrs->krs", x[:, iy, ix].astype(np.int64), w.astype(np.int64))
    streams = pack_weight_deconv(w, "int8", None, stride_x=sx, stride_y=sy, mac_atomic_c=64,
                                 mac_atomic_k=32)
    outs = []
    for phase, stream in zip(deconv_phases(w, sx, sy), streams, strict=True):
        np.testing.assert_array_equal(
            pack_weight_dc(phase.kernel, "int8", None, mac_atomic_c=64, mac_atomic_k=32), stream)
        pads = (phase.pad_x, phase.pad_x, phase.pad_y, phase.pad_y)
        out, _ = run_conv("nv_full", x, phase.kernel, precision="int8", pad=pads)
        outs.append(out)
    np.testing.assert_array_equal(interleave(outs, (k, oh, ow), sx, sy), ref)


def test_winograd_mode_must_agree_across_units():
    x = np.zeros((4, 8, 8), np.int16)
    w4 = np.zeros((1, 16, 4, 4), np.int16)

    def mixed(m, *a, **kw):
        program_winograd(m, *a, **kw)
        set_reg(m, "NVDLA_CACC", "D_MISC_CFG_0", proc_precision=1, conv_mode=0)

    with pytest.raises(ConfigurationError, match="NVDLA_CACC.D_MISC_CFG_0"):
        run_mode("nv_full", mixed, x, w4, precision="int16")


@pytest.mark.parametrize("precision", ["int8", "int16"])
def test_winograd_ignores_the_cdma_convertor(precision):
    """NVDLA's C-model converts data on the direct and image paths only (CVT_EN ignored here)."""
    rng = np.random.default_rng(11)
    dtype = np.int8 if precision == "int8" else np.int16
    x = rng.integers(-8, 8, (5, 8, 8)).astype(dtype)
    w4 = winograd_weights(rng.integers(-6, 6, (3, 5, 3, 3)).astype(dtype), precision, scale=4)

    def with_cvt(m, *a, **kw):
        program_winograd(m, *a, **kw)
        m.write_reg("NVDLA_CDMA.D_CVT_CFG_0", 1 | 3 << 4)
        m.write_reg("NVDLA_CDMA.D_CVT_OFFSET_0", 0xFFF3)
        m.write_reg("NVDLA_CDMA.D_CVT_SCALE_0", 5)

    plain, _ = run_mode("nv_full", program_winograd, x, w4, precision=precision, truncate=2)
    converted, _ = run_mode("nv_full", with_cvt, x, w4, precision=precision, truncate=2)
    np.testing.assert_array_equal(converted, plain)
