"""Direct convolution against an independent reference.

The reference convolves the unpacked tensors pixel by pixel with Python
integers and applies the documented CACC delivery: round half away from
zero by CLIP_TRUNCATE bits, saturate to int32, count the saturated values.
"""

from fractions import Fraction

import numpy as np
import pytest

from sim.errors import ConfigurationError
from sim.program.conv import run_conv


def reference_conv(x, w, stride, dilation, pad, pad_value, out_hw):
    c, h, wd = x.shape
    k, _, r, s = w.shape
    sx, sy = stride
    dx, dy = dilation
    left, _, top, _ = pad
    oh, ow = out_hw
    acc = np.zeros((k, oh, ow), dtype=object)
    wi = w.astype(np.int64)
    for oy in range(oh):
        for ox in range(ow):
            total = np.zeros(k, dtype=np.int64)
            for ry in range(r):
                for sx_ in range(s):
                    iy, ix = oy * sy + ry * dy - top, ox * sx + sx_ * dx - left
                    if 0 <= iy < h and 0 <= ix < wd:
                        col = x[:, iy, ix].astype(np.int64)
                    else:
                        col = np.full(c, pad_value, dtype=np.int64)
                    total += wi[:, :, ry, sx_] @ col
            acc[:, oy, ox] = total
    return acc


def reference_cacc(acc, truncate):
    out = np.zeros(acc.shape, dtype=np.int64)
    sat = 0
    for idx, a in np.ndenumerate(acc):
        v = Fraction(int(a), 1 << truncate)
        q = int(abs(v) + Fraction(1, 2)) * (1 if v >= 0 else -1)
        if q > 2**31 - 1 or q < -2**31:
            sat += 1
            q = max(-2**31, min(2**31 - 1, q))
        out[idx] = q
    return out, sat


def signed_pad(value, precision):
    bits = 8 if precision == "int8" else 16
    v = value & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


CASES = [
    # config, precision, C, H, W, K, R, S, stride, dilation, pad (l, r, t, b), pad value, truncate
    ("nv_small", "int8", 5, 6, 7, 3, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 0, 0),
    ("nv_small", "int8", 13, 9, 8, 9, 2, 5, (2, 3), (1, 1), (2, 0, 1, 2), 0x17f, 3),
    ("nv_small", "int8", 20, 11, 10, 17, 3, 2, (1, 2), (2, 3), (0, 2, 1, 0), 0xf3, 5),
    ("nv_small", "int8", 8, 4, 4, 8, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0), 0, 0),
    ("nv_full", "int8", 70, 5, 6, 33, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 0x85, 2),
    ("nv_full", "int8", 3, 12, 9, 40, 5, 4, (3, 2), (2, 1), (3, 1, 2, 2), 0x7f, 7),
    ("nv_full", "int16", 35, 7, 5, 17, 3, 3, (1, 1), (1, 2), (1, 1, 1, 1), 0x8123, 9),
    ("nv_full", "int16", 17, 6, 6, 5, 2, 2, (2, 2), (1, 1), (0, 1, 0, 1), 0x7fff, 0),
    ("nv_full", "int16", 64, 4, 3, 16, 3, 1, (1, 1), (2, 1), (0, 0, 2, 2), 0x1234, 16),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_int_conv_matches_reference(case):
    config, prec, c, h, wd, k, r, s, stride, dil, pad, pad_value, trunc = case
    rng = np.random.default_rng(CASES.index(case))
    dtype = np.int8 if prec == "int8" else np.int16
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, (c, h, wd)).astype(dtype)
    w = rng.integers(info.min, info.max + 1, (k, c, r, s)).astype(dtype)
    out, counters = run_conv(config, x, w, precision=prec, stride=stride, dilation=dil,
                             pad=pad, pad_value=pad_value, truncate=trunc)
    acc = reference_conv(x, w, stride, dil, pad, signed_pad(pad_value, prec), out.shape[1:])
    want, sat = reference_cacc(acc, trunc)
    np.testing.assert_array_equal(out.astype(np.int64), want)
    assert counters[("NVDLA_CACC", "D_OUT_SATURATION_0")] == sat


def test_int16_saturation_is_counted():
    x = np.full((64, 3, 3), 32767, np.int16)
    w = np.full((4, 64, 3, 3), 32767, np.int16)
    w[1] = -32768
    out, counters = run_conv("nv_full", x, w, precision="int16", truncate=0)
    assert out[0, 0, 0] == 2**31 - 1 and out[1, 0, 0] == -2**31
    acc = reference_conv(x, w, (1, 1), (1, 1), (0, 0, 0, 0), 0, (1, 1))
    assert counters[("NVDLA_CACC", "D_OUT_SATURATION_0")] == reference_cacc(acc, 0)[1] == 4


@pytest.mark.parametrize("offset,scale,trunc", [(3, 2, 1), (-20, 7, 3), (100, -1, 0)])
def test_cdma_convertor_int8(offset, scale, trunc):
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (9, 4, 4)).astype(np.int8)
    w = rng.integers(-128, 128, (3, 9, 1, 1)).astype(np.int8)
    out, _ = run_conv("nv_small", x, w, precision="int8", cvt=(offset, scale, trunc))
    conv = np.zeros(x.shape, dtype=np.int64)
    for idx, v in np.ndenumerate(x):
        p = Fraction((int(v) - offset) * scale, 1 << trunc)
        q = int(abs(p) + Fraction(1, 2)) * (1 if p >= 0 else -1)
        conv[idx] = max(-128, min(127, q))
    want = reference_conv(conv, w, (1, 1), (1, 1), (0, 0, 0, 0), 0, (4, 4))
    np.testing.assert_array_equal(out.astype(np.int64), want.astype(np.int64))


def test_invalid_precision_pair_is_rejected():
    from sim.conv.layer import decode_layer
    from sim.machine import LayerContext, Machine
    from sim.program.conv import UNITS, program
    from sim.program.registers import set_reg

    m = Machine("nv_full")
    x = np.zeros((4, 2, 2), np.int8)
    w = np.zeros((1, 4, 1, 1), np.int8)
    program(m, x, w, precision="int8")
    set_reg(m, "NVDLA_CDMA", "D_MISC_CFG_0", in_precision=0, proc_precision=1)
    with pytest.raises(ConfigurationError, match="Table 29"):
        decode_layer(LayerContext(m, {u: 0 for u in UNITS}))


@pytest.mark.parametrize("config,kw,match", [
    ("nv_small", dict(entries=1), "ENTRY_PER_SLICE"),
    ("nv_small", dict(out_size=(4, 2)), "DATAOUT_SIZE"),
    ("nv_full", dict(truncate=17), "CLIP_TRUNCATE"),  # nv_small takes it (test_cacc_truncate)
])
def test_bad_registers_raise(config, kw, match):
    x = np.zeros((40, 3, 4), np.int8)
    w = np.zeros((2, 40, 2, 2), np.int8)
    with pytest.raises(ConfigurationError, match=match):
        run_conv(config, x, w, precision="int8", **kw)


@pytest.mark.parametrize("prec,k", [("int8", 37), ("int16", 20)])
def test_compressed_weights_match_uncompressed(prec, k):
    rng = np.random.default_rng(11)
    dtype = np.int8 if prec == "int8" else np.int16
    x = rng.integers(-100, 100, (70, 4, 5)).astype(dtype)
    w = rng.integers(-100, 100, (k, 70, 3, 2)).astype(dtype)
    w[rng.random(w.shape) < 0.6] = 0
    out, _ = run_conv("nv_full", x, w, precision=prec, compressed=True, pad=(1, 1, 0, 0))
    want = reference_conv(x, w, (1, 1), (1, 1), (1, 1, 0, 0), 0, out.shape[1:])
    np.testing.assert_array_equal(out.astype(np.int64), want.astype(np.int64))


def test_compression_needs_the_feature():
    x = np.zeros((8, 2, 2), np.int8)
    w = np.ones((1, 8, 1, 1), np.int8)
    with pytest.raises(ConfigurationError, match="weight compression"):
        run_conv("nv_small", x, w, precision="int8", compressed=True)


def _layer_with_flags(m, x, w, **flags):
    from sim.conv.layer import decode_layer
    from sim.machine import LayerContext
    from sim.program.conv import UNITS, program
    from sim.program.registers import set_reg

    program(m, x, w, precision="int8")
    set_reg(m, "NVDLA_CDMA", "D_MISC_CFG_0", in_precision=0, proc_precision=0, **flags)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    return ctx, decode_layer(ctx)


def test_weight_reuse_uses_the_weights_kept_in_cbuf():
    from sim.conv.cdma import Cbuf
    from sim.conv.direct import compute_direct_layer as compute_layer
    from sim.machine import Machine

    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, (16, 4, 4)).astype(np.int8)
    w1 = rng.integers(-50, 50, (8, 16, 3, 3)).astype(np.int8)
    w2 = rng.integers(-50, 50, (8, 16, 3, 3)).astype(np.int8)
    m, cbuf = Machine("nv_small"), Cbuf()
    ctx, layer = _layer_with_flags(m, x, w1, skip_weight_rls=1, skip_data_rls=1)
    first, _ = compute_layer(ctx, layer, cbuf)
    x2 = rng.integers(-50, 50, x.shape).astype(np.int8)
    ctx, layer = _layer_with_flags(m, x2, w2, weight_reuse=1, data_reuse=1)
    second, _ = compute_layer(ctx, layer, cbuf)  # memory now holds x2 and w2
    np.testing.assert_array_equal(second, first)
    ctx, layer = _layer_with_flags(m, x2, w2)
    third, _ = compute_layer(ctx, layer, cbuf)
    want = reference_conv(x2, w2, (1, 1), (1, 1), (0, 0, 0, 0), 0, third.shape[2:])
    np.testing.assert_array_equal(third[0].astype(np.int64), want.astype(np.int64))
    ctx, layer = _layer_with_flags(m, x2, w2, weight_reuse=1)
    with pytest.raises(ConfigurationError, match="WEIGHT_REUSE"):
        compute_layer(ctx, layer, cbuf)


@pytest.mark.parametrize("size", [4, 26], ids=["kernels-shared", "rows-split"])
@pytest.mark.parametrize("threads", [1, 2])
def test_weights_reused_keep_their_float32_matrix(size, threads, monkeypatch):
    """A layer reusing the kept weights reuses what the products made of them (their
    float32 matrix, made once: by the weights' thread, or share by share by the products'
    threads) and computes with the kept weights, not those in memory."""
    from sim.conv.cdma import Cbuf
    from sim.conv.direct import compute_direct_layer as compute_layer
    from sim.machine import Machine

    monkeypatch.setattr("sim.jit.cores", lambda: threads)
    monkeypatch.setattr("sim.conv.mac_int.PARALLEL_MACS", 1)  # even these small ones
    rng = np.random.default_rng(size)
    x = rng.integers(-128, 128, (16, size, size)).astype(np.int8)
    w1 = rng.integers(-128, 128, (8, 16, 3, 3)).astype(np.int8)
    m, cbuf = Machine("nv_small"), Cbuf()
    ctx, layer = _layer_with_flags(m, x, w1, skip_weight_rls=1)
    compute_layer(ctx, layer, cbuf)
    prep = cbuf.weight_prep
    assert prep is not None and prep.float32 is not None
    np.testing.assert_array_equal(prep.float32, prep.wmat.astype(np.float32))
    x2 = rng.integers(-128, 128, x.shape).astype(np.int8)
    w2 = rng.integers(-128, 128, w1.shape).astype(np.int8)
    ctx, layer = _layer_with_flags(m, x2, w2, weight_reuse=1, skip_weight_rls=1)
    second, _ = compute_layer(ctx, layer, cbuf)
    assert cbuf.weight_prep is prep
    want = reference_conv(x2, w1, (1, 1), (1, 1), (0, 0, 0, 0), 0, second.shape[2:])
    np.testing.assert_array_equal(second[0].astype(np.int64), want.astype(np.int64))
    ctx, layer = _layer_with_flags(m, x2, w2)  # released: a fresh fetch, a fresh prep
    third, _ = compute_layer(ctx, layer, cbuf)
    assert cbuf.weight_prep is None
    want = reference_conv(x2, w2, (1, 1), (1, 1), (0, 0, 0, 0), 0, third.shape[2:])
    np.testing.assert_array_equal(third[0].astype(np.int64), want.astype(np.int64))


def test_line_packed_flag_must_match_the_stride():
    from sim.conv.layer import decode_layer
    from sim.machine import LayerContext, Machine
    from sim.program.conv import UNITS, program
    from sim.program.registers import set_reg

    m = Machine("nv_small")
    program(m, np.zeros((8, 3, 4), np.int8), np.zeros((1, 8, 1, 1), np.int8), precision="int8")
    set_reg(m, "NVDLA_CDMA", "D_DAIN_MAP_0", line_packed=0, surf_packed=1)
    with pytest.raises(ConfigurationError, match="LINE_PACKED"):
        decode_layer(LayerContext(m, {u: 0 for u in UNITS}))


@pytest.mark.parametrize("config,prec,ram", [("nv_small", "int8", 1), ("nv_full", "int16", 0)])
def test_unpacked_cube_from_either_memory(config, prec, ram):
    rng = np.random.default_rng(5)
    dtype = np.int8 if prec == "int8" else np.int16
    x = rng.integers(-99, 99, (21, 5, 6)).astype(dtype)
    w = rng.integers(-99, 99, (6, 21, 2, 3)).astype(dtype)
    from sim.configs import get_config

    atom = get_config(config).atom_bytes
    line = 9 * atom  # 6 atoms of data, 3 of gap
    out, _ = run_conv(config, x, w, precision=prec, strides=(line, 7 * line), in_ram=ram,
                      pad=(1, 0, 0, 1))
    want = reference_conv(x, w, (1, 1), (1, 1), (1, 0, 0, 1), 0, out.shape[1:])
    np.testing.assert_array_equal(out.astype(np.int64), want.astype(np.int64))
