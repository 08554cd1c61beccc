"""Rubik through its registers against an independent numpy model of each mode."""

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim.dma.align import ceil_div
from sim.dma.feature import pack_feature, unpack_feature
from sim.errors import ConfigurationError, SimError
from sim.machine import Machine

RBK = "NVDLA_RBK"
SRC, DST = 0x80000000, 0x80800000
DTYPES = {"int8": np.int8, "int16": np.int16, "fp16": np.float16}


def _program(m, mode, precision, w, h, cin, cout, src_line, src_surf, src_planar, dst_line,
             dst_surf, dst_planar, super_line=0, stride=(1, 1)):
    regs = {
        "D_MISC_CFG_0": mode | Precision(precision).code << 8,
        "D_DAIN_RAM_TYPE_0": 1, "D_DAOUT_RAM_TYPE_0": 1,
        "D_DATAIN_SIZE_0_0": (w - 1) | (h - 1) << 16, "D_DATAIN_SIZE_1_0": cin - 1,
        "D_DATAOUT_SIZE_1_0": cout - 1,
        "D_DAIN_ADDR_LOW_0": SRC, "D_DAOUT_ADDR_LOW_0": DST,
        "D_DAIN_LINE_STRIDE_0": src_line, "D_DAIN_SURF_STRIDE_0": src_surf,
        "D_DAIN_PLANAR_STRIDE_0": src_planar, "D_DAOUT_LINE_STRIDE_0": dst_line,
        "D_DAOUT_SURF_STRIDE_0": dst_surf, "D_DAOUT_PLANAR_STRIDE_0": dst_planar,
        "D_CONTRACT_STRIDE_1_0": super_line,
        "D_DECONV_STRIDE_0": (stride[0] - 1) | (stride[1] - 1) << 16,
    }
    for name, value in regs.items():
        m.write_reg(f"{RBK}.{name}", value)
    m.write_reg(f"{RBK}.D_OP_ENABLE_0", 1)
    assert m.run() == 1
    assert m.interrupt_set("RUBIK", 0)


def _cube(rng, shape, precision):
    dtype = DTYPES[precision]
    if dtype is np.float16:
        return rng.standard_normal(shape).astype(np.float16)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("stride", [(1, 1), (2, 3), (4, 1), (10, 2)])
def test_contract_is_the_deconvolution_phase_interleave(precision, stride):
    rng = np.random.default_rng(sum(stride))
    sx, sy = stride
    cout, h, w = 20, 3, 5
    epa = 32 if precision == "int8" else 16
    cin = sx * sy * ceil_div(cout, epa) * epa
    phases = _cube(rng, (sy, sx, cout, h, w), precision)
    # input channel group (y*sx + x) holds phase (y, x), padded to whole surfaces
    full = np.zeros((sy * sx, ceil_div(cout, epa) * epa, h, w), phases.dtype)
    full[:, :cout] = phases.reshape(sy * sx, cout, h, w)
    data, layout = pack_feature(full.reshape(cin, h, w), atom_bytes=32)
    m = Machine("nv_full")
    m.load(SRC, data)
    out_w, out_h = w * sx, h * sy
    line = out_w * 32
    _program(m, 0, precision, w, h, cin, cout, layout.line_stride, layout.surface_stride, 0,
             line, line * out_h, 0, super_line=line * sy, stride=stride)
    got = unpack_feature(m.read_array(DST, line * out_h * ceil_div(cout, epa)), 0,
                         (cout, out_h, out_w), precision=precision, atom_bytes=32)
    want = np.zeros((cout, out_h, out_w), phases.dtype)
    for y in range(sy):
        for x in range(sx):
            want[:, y::sy, x::sx] = phases[y, x]
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("shape", [(3, 2, 5), (21, 1, 70), (40, 3, 2)])
def test_split_then_merge_round_trips_through_planes(precision, shape):
    c, h, w = shape
    rng = np.random.default_rng(c)
    cube = _cube(rng, shape, precision)
    ebs = Precision(precision).bytes
    data, layout = pack_feature(cube, atom_bytes=32)
    m = Machine("nv_full")
    m.load(SRC, data)
    plane_line = ceil_div(w * ebs, 32) * 32 + 64
    planar = plane_line * h
    _program(m, 1, precision, w, h, c, c, layout.line_stride, layout.surface_stride, 0,
             plane_line, 0, planar)
    for ch in range(c):
        for y in range(h):
            got = m.read_array(DST + ch * planar + y * plane_line, w * ebs)
            assert got.tobytes() == cube[ch, y].tobytes()
            pad = ceil_div(w * ebs, 32) * 32 - w * ebs  # the last atom is zero-filled
            assert not m.read_array(DST + ch * planar + y * plane_line + w * ebs, pad).any()
    # and back: merge the planes into a cube elsewhere
    back = 0x81000000
    m.write_reg(f"{RBK}.S_POINTER_0", 1)
    for name, value in {"D_MISC_CFG_0": 2 | Precision(precision).code << 8,
                        "D_DAIN_RAM_TYPE_0": 1, "D_DAOUT_RAM_TYPE_0": 1,
                        "D_DATAIN_SIZE_0_0": (w - 1) | (h - 1) << 16,
                        "D_DATAIN_SIZE_1_0": c - 1, "D_DATAOUT_SIZE_1_0": c - 1,
                        "D_DAIN_ADDR_LOW_0": DST, "D_DAOUT_ADDR_LOW_0": back,
                        "D_DAIN_LINE_STRIDE_0": plane_line, "D_DAIN_PLANAR_STRIDE_0": planar,
                        "D_DAOUT_LINE_STRIDE_0": layout.line_stride,
                        "D_DAOUT_SURF_STRIDE_0": layout.surface_stride}.items():
        m.write_reg(f"{RBK}.{name}", value)
    m.write_reg(f"{RBK}.D_OP_ENABLE_0", 1)
    assert m.run() == 1 and m.interrupt_set("RUBIK", 1)
    assert m.read_array(back, data.size).tobytes() == data.tobytes()  # pad lanes zero too


@pytest.mark.parametrize("config", ["nv_small", "nv_large"])
def test_rubik_on_a_configuration_without_it(config):
    m = Machine(config)
    with pytest.raises(SimError, match="RBK"):
        m.write_reg(f"{RBK}.D_MISC_CFG_0", 0)
        m.write_reg(f"{RBK}.D_OP_ENABLE_0", 1)
        m.run()


@pytest.mark.parametrize("regs, message", [
    ({"D_MISC_CFG_0": 3}, "RUBIK_MODE 3 is reserved"),
    ({"D_MISC_CFG_0": 3 << 8}, "IN_PRECISION 3 is reserved"),
    ({"D_MISC_CFG_0": 1, "D_DATAIN_SIZE_1_0": 40, "D_DATAOUT_SIZE_1_0": 3}, "split mode"),
])
def test_reserved_and_hanging_programming_is_rejected(regs, message):
    m = Machine("nv_full")
    for name, value in regs.items():
        m.write_reg(f"{RBK}.{name}", value)
    m.write_reg(f"{RBK}.D_OP_ENABLE_0", 1)
    with pytest.raises(ConfigurationError, match=message):
        m.run()


def test_a_layer_beyond_the_simulators_work_limit_is_refused():
    """Found by tools/fuzz.py: an 8192 x 8192 merge ran for minutes, line by line."""
    m = Machine("nv_full")
    for name, value in {"D_MISC_CFG_0": 2, "D_DATAIN_SIZE_0_0": 0xFFFFFFFF,
                        "D_DATAIN_SIZE_1_0": 95}.items():
        m.write_reg(f"{RBK}.{name}", value)
    m.write_reg(f"{RBK}.D_OP_ENABLE_0", 1)
    with pytest.raises(SimError, match="simulator's limit"):
        m.run()
