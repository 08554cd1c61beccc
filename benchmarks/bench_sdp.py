"""SDP throughput against numpy doing the same arithmetic in float32, in the same run.

Cases (256 x 256 x 64 cube, X1 + X2 + Y enabled):
* int8 -> int8: X1 ALU sum + MUL + truncation + ReLU, X2 MUL with a per-channel
  operand from memory + truncation, Y MUL + ALU with register operands, output
  convertor;
* fp16 -> fp16: the same stages in fp32 (Y in fp32 too);
* int8 with the LUT (LE exponent + LO linear) after the Y core.

numpy computes the same formulas in float32 (not bit-exact: it only sets the
pace).  Prints elements per second for the datapath (``run_pipeline`` on a
cube already in memory order), for a whole memory-to-memory layer through a
``Machine`` (SDP_RDMA reads, datapath, write DMA; from D_OP_ENABLE to idle) and
for numpy, and the ratio
numpy / simulator.  Run: ``python benchmarks/bench_sdp.py``.
"""

from __future__ import annotations

import time

import numpy as np
from timing import best_of

from sim.dma import pack_feature
from sim.machine import LayerContext, Machine
from sim.program.registers import write_fields as put
from sim.sdp.config import decode
from sim.sdp.engine import SDP, SDP_RDMA, padded_channels
from sim.sdp.pipeline import run_pipeline
from sim.sdp.rdma import read_operands

C, H, W = 64, 256, 256
SRC, DST, BN = 0x8000_0000, 0x9000_0000, 0xA000_0000
PREC = {"int8": 0, "fp16": 2}


def h(x):
    return int(np.array(x, dtype=np.float16).view(np.uint16))


def f32(x):
    return int(np.array(x, dtype=np.float32).view(np.uint32))


def program(m, prec, image, bn_image, lut):
    fp = prec == "fp16"
    line, surface = W * 32, H * W * 32
    for unit in (SDP, SDP_RDMA):
        m.write_reg(f"{unit}.D_DATA_CUBE_WIDTH_0", W - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_HEIGHT_0", H - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_CHANNEL_0", C - 1)
    m.load(SRC, image)
    m.load(BN, bn_image)
    m.write_reg(f"{SDP_RDMA}.D_SRC_BASE_ADDR_LOW_0", SRC)
    m.write_reg(f"{SDP_RDMA}.D_SRC_LINE_STRIDE_0", line)
    m.write_reg(f"{SDP_RDMA}.D_SRC_SURFACE_STRIDE_0", surface)
    put(m, f"{SDP_RDMA}.D_SRC_DMA_CFG_0", src_ram_type=1)
    put(m, f"{SDP_RDMA}.D_FEATURE_MODE_CFG_0", in_precision=PREC[prec],
        proc_precision=PREC[prec], out_precision=PREC[prec])
    put(m, f"{SDP_RDMA}.D_NRDMA_CFG_0", nrdma_disable=0, nrdma_data_use=0,
        nrdma_data_size=int(fp), nrdma_ram_type=1)
    m.write_reg(f"{SDP_RDMA}.D_BN_BASE_ADDR_LOW_0", BN)
    m.write_reg(f"{SDP}.D_DST_BASE_ADDR_LOW_0", DST)
    m.write_reg(f"{SDP}.D_DST_LINE_STRIDE_0", line)
    m.write_reg(f"{SDP}.D_DST_SURFACE_STRIDE_0", surface)
    put(m, f"{SDP}.D_DST_DMA_CFG_0", dst_ram_type=1)
    put(m, f"{SDP}.D_DATA_FORMAT_0", proc_precision=PREC[prec], out_precision=PREC[prec])
    put(m, f"{SDP}.D_CVT_SCALE_0", cvt_scale=1)
    put(m, f"{SDP}.D_CVT_SHIFT_0", cvt_shift=0 if fp else 2)
    put(m, f"{SDP}.D_PERF_ENABLE_0", perf_sat_en=1, perf_lut_en=1, perf_nan_inf_count_en=1)
    put(m, f"{SDP}.D_DP_BS_CFG_0", bs_bypass=0, bs_alu_bypass=0, bs_alu_algo=2, bs_mul_bypass=0,
        bs_relu_bypass=0)
    put(m, f"{SDP}.D_DP_BS_ALU_CFG_0", bs_alu_shift_value=0 if fp else 4)
    put(m, f"{SDP}.D_DP_BS_ALU_SRC_VALUE_0", bs_alu_operand=h(0.5) if fp else 5)
    put(m, f"{SDP}.D_DP_BS_MUL_CFG_0", bs_mul_shift_value=0 if fp else 3)
    put(m, f"{SDP}.D_DP_BS_MUL_SRC_VALUE_0", bs_mul_operand=h(1.25) if fp else 11)
    put(m, f"{SDP}.D_DP_BN_CFG_0", bn_bypass=0, bn_alu_bypass=1, bn_mul_bypass=0,
        bn_relu_bypass=1)
    put(m, f"{SDP}.D_DP_BN_MUL_CFG_0", bn_mul_src=1, bn_mul_shift_value=0 if fp else 2)
    put(m, f"{SDP}.D_DP_EW_CFG_0", ew_bypass=0, ew_alu_bypass=0, ew_alu_algo=2,
        ew_mul_bypass=0, ew_lut_bypass=int(not lut))
    put(m, f"{SDP}.D_DP_EW_ALU_SRC_VALUE_0", ew_alu_operand=f32(-3.0) if fp else -3)
    put(m, f"{SDP}.D_DP_EW_MUL_SRC_VALUE_0", ew_mul_operand=f32(0.75) if fp else 3)
    put(m, f"{SDP}.D_DP_EW_TRUNCATE_VALUE_0", ew_truncate=0 if fp else 1)
    if lut:
        put(m, f"{SDP}.S_LUT_ACCESS_CFG_0", lut_table_id=0, lut_access_type=1)
        for k in range(65):
            put(m, f"{SDP}.S_LUT_ACCESS_DATA_0", lut_data=k * 3)
        put(m, f"{SDP}.S_LUT_ACCESS_CFG_0", lut_table_id=1, lut_access_type=1)
        for k in range(257):
            put(m, f"{SDP}.S_LUT_ACCESS_DATA_0", lut_data=100 - k)
        put(m, f"{SDP}.S_LUT_INFO_0", lut_le_index_offset=0, lut_lo_index_select=2)
        put(m, f"{SDP}.S_LUT_LO_START_0", lut_lo_start=-200)
        put(m, f"{SDP}.S_LUT_CFG_0", lut_le_function=0, lut_hybrid_priority=1)


def numpy_same(x, bn, fp):
    """The same formulas in float32."""
    v = x.astype(np.float32)
    if fp:
        v = np.maximum((v + np.float32(0.5)) * np.float32(1.25), 0)
        v = v * bn.astype(np.float32)[:, None, None]
        v = v * np.float32(0.75) + np.float32(-3.0)
        return v.astype(np.float16)
    v = np.maximum(np.round((v + 80) * 11 / 8), 0)
    v = np.round(v * bn.astype(np.float32)[:, None, None] / 4)
    v = np.round(v * 3 / 2) - 3
    return np.clip(np.round(v / 4), -128, 127).astype(np.int8)


def case(name, prec, lut=False):
    rng = np.random.default_rng(1)
    fp = prec == "fp16"
    if fp:
        x = rng.standard_normal((C, H, W)).astype(np.float16)
        bn = rng.uniform(-2, 2, size=C).astype(np.float16)
        bn_bytes = bn.view(np.uint8)
    else:
        x = rng.integers(-128, 128, size=(C, H, W)).astype(np.int8)
        bn = rng.integers(-20, 20, size=C).astype(np.int8)
        bn_bytes = bn.view(np.uint8)
    image, _ = pack_feature(x, atom_bytes=32, precision=prec)

    def layer_time() -> float:
        """One layer from D_OP_ENABLE to idle (the machine is built and programmed untimed)."""
        m = Machine("nv_full")
        program(m, prec, image, bn_bytes, lut)
        start = time.perf_counter()
        m.write_reg(f"{SDP}.D_OP_ENABLE_0", 1)
        m.write_reg(f"{SDP_RDMA}.D_OP_ENABLE_0", 1)
        m.run()
        return time.perf_counter() - start

    m = Machine("nv_full")
    program(m, prec, image, bn_bytes, lut)
    groups = {SDP: 0, SDP_RDMA: 0}
    ctx = LayerContext(m, groups)
    layer_cfg = decode(ctx.regs(SDP), ctx.regs(SDP_RDMA), m.config)
    cp = padded_channels(layer_cfg, 32)
    ops = read_operands(ctx, layer_cfg, cp)
    data = (x.view(np.uint16) if fp else x).astype(np.int64)[None]
    engine = next(e for e in m.engines if e.name == "SDP")

    def datapath():
        run_pipeline(layer_cfg, data, ops, engine.lut, from_memory=True)

    t_dp = best_of(datapath)
    layer_time()
    t_layer = min(layer_time() for _ in range(3))
    t_np = best_of(lambda: numpy_same(x, bn, fp))
    n = C * H * W
    print(f"{name}: datapath {n / t_dp / 1e6:7.1f} Melem/s | layer {n / t_layer / 1e6:7.1f} "
          f"Melem/s | numpy float32 {n / t_np / 1e6:7.1f} Melem/s | numpy/datapath "
          f"{t_dp / t_np:5.1f}x | numpy/layer {t_layer / t_np:5.1f}x")


def main():
    print(f"SDP, {W}x{H}x{C} cube, X1+X2+Y")
    case("int8 -> int8      ", "int8")
    case("fp16 -> fp16      ", "fp16")
    case("int8 + LUT        ", "int8", lut=True)


if __name__ == "__main__":
    main()
