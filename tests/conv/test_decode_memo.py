"""sim.conv.layer.decode_layer remembers decoded layers: a hit is what a fresh decode
gives, and a changed register is another layer (fixed seeds)."""

import numpy as np

import sim.conv.layer as conv_layer
from sim.machine import LayerContext, Machine
from sim.program.conv import UNITS, program
from sim.program.registers import set_reg


def _layer_with_flags(m, x, w, **flags):
    program(m, x, w, precision="int8")
    set_reg(m, "NVDLA_CDMA", "D_MISC_CFG_0", in_precision=0, proc_precision=0, **flags)
    ctx = LayerContext(m, {u: 0 for u in UNITS})
    return ctx, conv_layer.decode_layer(ctx)


def test_decode_memo_matches_a_fresh_decode(monkeypatch):
    monkeypatch.setattr(conv_layer, "MEMO_SIZE", 2)  # forgetting is exercised too
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, (16, 4, 4)).astype(np.int8)
    w = rng.integers(-50, 50, (8, 16, 3, 3)).astype(np.int8)
    layers = []
    for flags in ({}, {"weight_reuse": 1}, {"data_reuse": 1}, {}):
        ctx, layer = _layer_with_flags(Machine("nv_small"), x, w, **flags)
        assert layer == conv_layer._decode_layer(ctx)
        assert conv_layer.decode_layer(ctx) is layer  # remembered
        layers.append(layer)
    assert layers[0] == layers[3] and layers[1] != layers[0] and layers[2] != layers[0]
    assert layers[1].weight_reuse and not layers[0].weight_reuse
    m = Machine("nv_small")
    ctx, first = _layer_with_flags(m, x, w)
    set_reg(m, "NVDLA_CACC", "D_CLIP_CFG_0", clip_truncate=3)  # one field: another layer
    assert conv_layer.decode_layer(ctx).clip_truncate == 3 != first.clip_truncate
