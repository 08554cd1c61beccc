"""sim.sdp.config.decode's fast paths: the stages built from one dict of every
field, against reads field by field; and the memo of decoded layers, against a
fresh decode (fixed seeds)."""

import numpy as np
import pytest

from sim.chains import SDP, SDP_RDMA
from sim.errors import ConfigurationError
from sim.machine import LayerContext
from sim.num.vector_int import sign_extend
from sim.program.sdp import put, run_sdp
from sim.regfile import RegisterFile
from sim.sdp import config


def _straight_x(b, p):  # the stage read the plain way, one attribute at a time
    g = lambda f: getattr(b, f"{p}_{f}")  # noqa: E731
    return config.XStage(
        bypass=bool(g("bypass")), alu_bypass=bool(g("alu_bypass")), alu_algo=g("alu_algo"),
        alu_src_mem=bool(g("alu_src")), alu_operand=sign_extend(g("alu_operand"), 16),
        alu_shift=g("alu_shift_value") & 63, mul_bypass=bool(g("mul_bypass")),
        mul_src_mem=bool(g("mul_src")), mul_operand=sign_extend(g("mul_operand"), 16),
        mul_prelu=bool(g("mul_prelu")), mul_shift=g("mul_shift_value") & 63,
        relu_bypass=bool(g("relu_bypass")))


def _straight_y(b):
    return config.YStage(
        bypass=bool(b.ew_bypass), alu_bypass=bool(b.ew_alu_bypass), alu_algo=b.ew_alu_algo,
        alu_src_mem=bool(b.ew_alu_src), alu_operand=b.ew_alu_operand,
        alu_cvt_bypass=bool(b.ew_alu_cvt_bypass),
        alu_cvt_offset=sign_extend(b.ew_alu_cvt_offset, 32),
        alu_cvt_scale=sign_extend(b.ew_alu_cvt_scale, 16),
        alu_cvt_truncate=b.ew_alu_cvt_truncate & 63, mul_bypass=bool(b.ew_mul_bypass),
        mul_src_mem=bool(b.ew_mul_src), mul_operand=b.ew_mul_operand,
        mul_prelu=bool(b.ew_mul_prelu), mul_cvt_bypass=bool(b.ew_mul_cvt_bypass),
        mul_cvt_offset=sign_extend(b.ew_mul_cvt_offset, 32),
        mul_cvt_scale=sign_extend(b.ew_mul_cvt_scale, 16),
        mul_cvt_truncate=b.ew_mul_cvt_truncate & 63, truncate=b.ew_truncate & 0x3FF,
        lut_bypass=bool(b.ew_lut_bypass))


def _straight_lut(b):
    return config.LutConfig(
        le_function_linear=bool(b.lut_le_function), uflow_priority_lo=bool(b.lut_uflow_priority),
        oflow_priority_lo=bool(b.lut_oflow_priority),
        hybrid_priority_lo=bool(b.lut_hybrid_priority),
        le_index_offset=sign_extend(b.lut_le_index_offset, 8),
        le_index_select=sign_extend(b.lut_le_index_select, 8),
        lo_index_select=sign_extend(b.lut_lo_index_select, 8),
        le_start=b.lut_le_start, le_end=b.lut_le_end, lo_start=b.lut_lo_start,
        lo_end=b.lut_lo_end, le_uflow_scale=b.lut_le_slope_uflow_scale,
        le_oflow_scale=b.lut_le_slope_oflow_scale, le_uflow_shift=b.lut_le_slope_uflow_shift,
        le_oflow_shift=b.lut_le_slope_oflow_shift, lo_uflow_scale=b.lut_lo_slope_uflow_scale,
        lo_oflow_scale=b.lut_lo_slope_oflow_scale, lo_uflow_shift=b.lut_lo_slope_uflow_shift,
        lo_oflow_shift=b.lut_lo_slope_oflow_shift)


def _straight_dma(r, name, prefix):
    low, p = name.lower(), prefix.lower()
    return config.OperandDma(
        name, prefix, not getattr(r, f"{low}_disable"), getattr(r, f"{low}_data_use"),
        2 if getattr(r, f"{low}_data_size") else 1, bool(getattr(r, f"{low}_data_mode")),
        getattr(r, f"{low}_ram_type"), r.address(f"{p}_base_addr"),
        getattr(r, f"{p}_line_stride"), getattr(r, f"{p}_surface_stride"),
        getattr(r, f"{p}_batch_stride"))


@pytest.mark.parametrize("address_map", ["nvdlav1", "master"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stages_from_fields_match_reads_field_by_field(address_map, seed):
    rf = RegisterFile(address_map)
    rng = np.random.default_rng(seed)
    for unit in (SDP, SDP_RDMA):
        for reg in rf.regmap.units[unit].registers:
            rf.poke(reg, int(rng.integers(0, 1 << 32)), 0 if reg.double_buffered else None)
    s, r = rf.snapshot(SDP, 0), rf.snapshot(SDP_RDMA, 0)
    plain_s = type(s)(SDP, 0, dict(s._words), rf.regmap, address_map)
    plain_r = type(r)(SDP_RDMA, 0, dict(r._words), rf.regmap, address_map)
    f = s.fields()
    assert config._x_stage(f, "bs") == _straight_x(plain_s, "bs")
    assert config._x_stage(f, "bn") == _straight_x(plain_s, "bn")
    assert config._y_stage(f) == _straight_y(plain_s)
    assert config._lut(f) == _straight_lut(plain_s)
    for name, prefix in (("BRDMA", "BS"), ("NRDMA", "BN"), ("ERDMA", "EW")):
        assert config.operand_dma(r, name, prefix) == _straight_dma(plain_r, name, prefix)


def _programmed(seed):
    rng = np.random.default_rng(seed)
    cube = rng.integers(-100, 100, (8, 3, 5)).astype(np.int16)
    x1 = dict(bypass=0, alu_bypass=0, alu_operand=int(rng.integers(-300, 300)), mul_bypass=0,
              mul_operand=int(rng.integers(-300, 300)), mul_shift=3)
    _, m = run_sdp("nv_full", cube, in_prec="int16", out_prec="int16", x1=x1, go=False)
    return m, LayerContext(m, {SDP: 0, SDP_RDMA: 0})


def _fresh(block):
    return type(block)(block.unit, block.group, dict(block._words), block._regmap,
                       block._address_map)


def test_memo_returns_what_a_fresh_decode_gives(monkeypatch):
    monkeypatch.setattr(config, "MEMO_SIZE", 2)  # forgetting is exercised too
    layers = []
    for seed in (5, 6, 7, 5):
        m, ctx = _programmed(seed)
        s, r = ctx.regs(SDP), ctx.regs(SDP_RDMA)
        layer = config.decode(s, r, m.config)
        assert layer == config._decode(_fresh(s), _fresh(r), m.config)
        assert config.decode(_fresh(s), _fresh(r), m.config) is layer  # a hit
        layers.append(layer)
    assert layers[0] != layers[1] != layers[2] and layers[0] == layers[3]
    # one register changed: another layer, not the remembered one
    m, ctx = _programmed(5)
    put(m, "NVDLA_SDP.D_DP_BS_ALU_SRC_VALUE_0", bs_alu_operand=(layers[0].x1.alu_operand + 1))
    changed = config.decode(ctx.regs(SDP), ctx.regs(SDP_RDMA), m.config)
    assert changed.x1.alu_operand == layers[0].x1.alu_operand + 1


def test_errors_are_not_remembered():
    m, ctx = _programmed(9)
    put(m, "NVDLA_SDP.D_DATA_FORMAT_0", proc_precision=3)  # reserved
    for _ in range(2):
        with pytest.raises(ConfigurationError, match="PROC_PRECISION"):
            config.decode(ctx.regs(SDP), ctx.regs(SDP_RDMA), m.config)


@pytest.mark.parametrize("address_map", ["nvdlav1", "master"])
def test_operand_dma_by_plan_matches_its_general_path(address_map, monkeypatch):
    rf = RegisterFile(address_map)
    rng = np.random.default_rng(4)
    for reg in rf.regmap.units[SDP_RDMA].registers:
        rf.poke(reg, int(rng.integers(0, 1 << 32)), 0 if reg.double_buffered else None)
    r = rf.snapshot(SDP_RDMA, 0)
    names = (("BRDMA", "BS"), ("NRDMA", "BN"), ("ERDMA", "EW"))
    by_plan = [config.operand_dma(r, n, p) for n, p in names]
    assert any(d.address >> 32 for d in by_plan)  # the high half is read too
    monkeypatch.setattr(type(r), "values", lambda self, names: None)
    assert [config.operand_dma(_fresh(r), n, p) for n, p in names] == by_plan
