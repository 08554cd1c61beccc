"""Deconvolution end to end through registers: one direct-convolution layer per stride phase
(SDP writing each phase's cube into its group of surfaces), then Rubik's contract mode
interleaving the phases, against a numpy transposed convolution."""

import numpy as np
import pytest

from sim.conv.deconv import deconv_output_size, deconv_phases
from sim.dma.align import ceil_div
from sim.dma.feature import unpack_feature
from sim.machine import Machine
from sim.program.conv import program
from sim.program.sdp import program_sdp_output

CONV_UNITS = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CACC",
              "NVDLA_SDP")
PHASES, OUT = 0x90000000, 0xA0000000
DTYPE = {"int8": np.int8, "int16": np.int16, "fp16": np.float16}


def transposed_conv(x, w, sx, sy):
    k, c, r, s = w.shape
    _, h, wd = x.shape
    oh, ow = deconv_output_size(h, wd, r, s, sx, sy)
    ref = np.zeros((k, oh, ow))
    for iy in range(h):
        for ix in range(wd):
            ref[:, iy * sy: iy * sy + r, ix * sx: ix * sx + s] += np.einsum(
                "c,kcrs->krs", x[:, iy, ix].astype(np.float64), w.astype(np.float64))
    return ref


def run_deconvolution(x, w, sx, sy, precision):
    m = Machine("nv_full")
    k = w.shape[0]
    epa = 32 if precision == "int8" else 16
    surfaces = ceil_div(k, epa)
    phases = deconv_phases(w, sx, sy)
    h_out = w_out = line = surface = None
    for index, phase in enumerate(phases):
        r, s = phase.kernel.shape[2:]
        h_out = x.shape[1] + 2 * phase.pad_y - r + 1
        w_out = x.shape[2] + 2 * phase.pad_x - s + 1
        pads = (phase.pad_x, phase.pad_x, phase.pad_y, phase.pad_y)
        for unit in CONV_UNITS:  # ping-pong register groups, as the firmware does
            m.write_reg(f"{unit}.S_POINTER_0", index % 2)
        program(m, x, phase.kernel.astype(x.dtype), precision=precision, pad=pads)
        line, surface = w_out * 32, w_out * 32 * h_out
        program_sdp_output(m, PHASES + index * surfaces * surface, (k, h_out, w_out), precision)
        for unit in CONV_UNITS:
            m.write_reg(f"{unit}.D_OP_ENABLE_0", 1)
        assert m.run() == 1
    out_line = w_out * sx * 32
    regs = {
        "D_MISC_CFG_0": 0 | {"int8": 0, "int16": 1, "fp16": 2}[precision] << 8,
        "D_DAIN_RAM_TYPE_0": 1, "D_DAOUT_RAM_TYPE_0": 1,
        "D_DATAIN_SIZE_0_0": (w_out - 1) | (h_out - 1) << 16,
        "D_DATAIN_SIZE_1_0": len(phases) * surfaces * epa - 1, "D_DATAOUT_SIZE_1_0": k - 1,
        "D_DAIN_ADDR_LOW_0": PHASES, "D_DAOUT_ADDR_LOW_0": OUT,
        "D_DAIN_LINE_STRIDE_0": line, "D_DAIN_SURF_STRIDE_0": surface,
        "D_DAOUT_LINE_STRIDE_0": out_line, "D_CONTRACT_STRIDE_1_0": out_line * sy,
        "D_DAOUT_SURF_STRIDE_0": out_line * sy * h_out,
        "D_DECONV_STRIDE_0": (sx - 1) | (sy - 1) << 16,
    }
    for name, value in regs.items():
        m.write_reg(f"NVDLA_RBK.{name}", value)
    m.write_reg("NVDLA_RBK.D_OP_ENABLE_0", 1)
    m.run()
    shape = (k, h_out * sy, w_out * sx)
    size = out_line * sy * h_out * surfaces
    return unpack_feature(m.read_array(OUT, size), 0, shape, precision=precision, atom_bytes=32)


@pytest.mark.parametrize("precision", ["int8", "int16", "fp16"])
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (3, 1), (1, 4), (4, 3)])
def test_deconvolution_through_registers_equals_transposed_convolution(precision, stride):
    sx, sy = stride
    rng = np.random.default_rng(sx * 5 + sy)
    c, h, wd, k = 3, 3, 4, 5
    x = rng.integers(-3, 4, (c, h, wd)).astype(DTYPE[precision])
    w = rng.integers(-3, 4, (k, c, 3, 2)).astype(DTYPE[precision])  # small: no saturation
    got = run_deconvolution(x, w, sx, sy, precision)
    if precision == "fp16":
        got = np.ascontiguousarray(got).view(np.float16)
    ref = transposed_conv(x, w, sx, sy)
    crop = got[:, : ref.shape[1], : ref.shape[2]].astype(np.float64)
    np.testing.assert_array_equal(crop, ref)
