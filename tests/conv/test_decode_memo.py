"""sim.conv.layer.decode_layer remembers decoded layers: a hit is what a fresh decode
gives, and a changed register is another layer (fixed seeds)."""

import numpy as np

import sim.conv.layer as conv_layer
from sim import records
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


ADDRESSES = (("D_DAIN_ADDR_LOW_0_0", "datain_addr_low_0", "in_addr"),
             ("D_DAIN_ADDR_HIGH_0_0", "datain_addr_high_0", "in_addr"),
             ("D_WEIGHT_ADDR_LOW_0", "weight_addr_low", "weight_addr"),
             ("D_WEIGHT_ADDR_HIGH_0", "weight_addr_high", "weight_addr"),
             ("D_WGS_ADDR_LOW_0", "wgs_addr_low", "wgs_addr"),
             ("D_WMB_ADDR_HIGH_0", "wmb_addr_high", "wmb_addr"),
             ("D_DAIN_ADDR_LOW_1_0", "datain_addr_low_1", None))  # no direct layer's field


def test_a_layer_at_other_addresses_is_the_remembered_one_moved(count_calls):
    """Only ADDRESS_REGISTERS changed: no decoding, and what a fresh decode gives."""
    fresh = conv_layer._decode_layer
    decodes = count_calls(fresh, (conv_layer, "_decode_layer"))
    rng = np.random.default_rng(12)
    x = rng.integers(-50, 50, (16, 4, 4)).astype(np.int8)
    w = rng.integers(-50, 50, (8, 16, 3, 3)).astype(np.int8)
    m = Machine("nv_small")
    ctx, first = _layer_with_flags(m, x, w)
    assert len(decodes) == 1 and conv_layer.decode_layer(ctx) is first  # same addresses
    for reg, field, attr in ADDRESSES:
        value = int(rng.integers(1, 1 << 12)) << 8
        set_reg(m, "NVDLA_CDMA", reg, **{field: value})
        moved = conv_layer.decode_layer(ctx)
        assert len(decodes) == 1  # a hit
        assert moved == fresh(ctx)
        if attr is not None:
            assert getattr(moved, attr) != getattr(first, attr)
    set_reg(m, "NVDLA_CACC", "D_CLIP_CFG_0", clip_truncate=2)  # not an address: decoded
    assert conv_layer.decode_layer(ctx) == fresh(ctx) and len(decodes) == 2


def test_address_registers_are_whole_registers_of_addresses():
    """Each of ADDRESS_REGISTERS holds one address field on every map, no other field."""
    for name in ("nv_small", "nv_large", "nv_full"):
        regmap = Machine(name).regfile.regmap
        for reg_name in conv_layer.ADDRESS_REGISTERS:
            reg = regmap.by_name(f"NVDLA_CDMA.{reg_name}")
            assert [f.name for f in reg.fields] and all("ADDR" in f.name for f in reg.fields)


def test_records_replace_is_dataclasses_replace():
    import dataclasses

    import pytest

    rng = np.random.default_rng(13)
    x = rng.integers(-50, 50, (16, 4, 4)).astype(np.int8)
    w = rng.integers(-50, 50, (8, 16, 3, 3)).astype(np.int8)
    _, layer = _layer_with_flags(Machine("nv_small"), x, w)
    changes = dict(in_addr=0x1000, channels=3, banks=(1, 2), weight_reuse=True)
    moved = records.replace(layer, **changes)
    assert moved == dataclasses.replace(layer, **changes) != layer
    assert records.replace(layer) == layer
    with pytest.raises(TypeError, match="no field"):
        records.replace(layer, in_adr=1)
