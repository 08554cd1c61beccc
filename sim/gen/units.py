"""Per-unit layer builders for ``gen``: validate a layer's options, write its memory and
registers on a :class:`~sim.gen.build.GenMachine`, and say which blocks to enable.

Each ``build_<unit>(m, layer, alloc, rng, outputs)`` returns (the layer's
:class:`~sim.gen.build.Output`, the blocks whose D_OP_ENABLE starts it, in the
order firmware writes them: consumers first).
"""

from __future__ import annotations

import numpy as np

from ..dma.operands import operand_format, pack_operand
from ..dma.weights import winograd_weights
from .build import Output, input_cube, output_region, padded
from .data import random_cube
from .spec import (
    ALU_ALGOS,
    CONV_MODES,
    FLY_PDP_KEYS,
    FLY_SDP_KEYS,
    POOLING,
    STAGE_KEYS,
    check_keys,
    choice,
    dims,
    integer,
)

CODES = {"int8": 0, "int16": 1, "fp16": 2}
SDP, SDP_RDMA = "NVDLA_SDP", "NVDLA_SDP_RDMA"
PDP, PDP_RDMA = "NVDLA_PDP", "NVDLA_PDP_RDMA"
CDP, CDP_RDMA = "NVDLA_CDP", "NVDLA_CDP_RDMA"
CONV_ENABLE = ("NVDLA_CACC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CSC", "NVDLA_CDMA")
STAGES = {"x1": ("bs", "BRDMA", "BS"), "x2": ("bn", "NRDMA", "BN"), "y": ("ew", "ERDMA", "EW")}


def _fp16_bits(value: float) -> int:
    return int(np.array([value], dtype=np.float16).view(np.uint16)[0])


def _operand_value(layer, key: str, value, proc: str, bits: int = 16) -> int:
    """A register operand: an integer for int8/int16 processing, a number for fp16."""
    if proc == "fp16":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise layer.fail(key, f"expected a number, got {value!r}")
        return _fp16_bits(float(value))
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return integer(layer, key, value, lo, hi) & ((1 << bits) - 1)


def _cvt(layer, key: str, value, default=(0, 1, 0)) -> tuple[int, int, int]:
    """(offset, scale, shift) of an output convertor."""
    if value is None:
        return default
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise layer.fail(key, f"expected [offset, scale, shift], got {value!r}")
    offset = integer(layer, f"{key}[0]", value[0], -(1 << 31), (1 << 31) - 1)
    scale = integer(layer, f"{key}[1]", value[1], -(1 << 15), (1 << 15) - 1)
    shift = integer(layer, f"{key}[2]", value[2], 0, 63)
    return offset, scale, shift


# -- SDP ------------------------------------------------------------------------------------

def _out_precision(layer, cfg, value, proc: str, key: str = "out_precision") -> str:
    out = value or proc
    choice(layer, key, out, ("int8", "int16", "fp16"))
    if (proc == "fp16") != (out == "fp16"):
        raise layer.fail(key, f"{proc} processing cannot write {out}: fp16 goes to fp16, "
                         "integers to int8/int16")
    if not cfg.supports(out):
        raise layer.fail(key, f"{cfg.name} does not support {out}")
    return out


def _stage(m, layer, alloc, rng, key: str, table, proc: str, channels: int) -> None:
    """Program one of X1 (BS), X2 (BN), Y (EW), operands from registers or memory."""
    p, dma, P = STAGES[key]
    table = check_keys(layer, key, table, STAGE_KEYS)
    if key == "y" and table and not m.config.sdp_ew:
        raise layer.fail("y", f"{m.config.name} has no SDP Y (EW) stage")
    alu, mul = table.get("alu"), table.get("mul")
    if alu is not None:
        choice(layer, f"{key}.alu", alu, tuple(ALU_ALGOS))
    alu_src = table.get("alu_operand", 0) == "memory" and alu is not None
    mul_src = mul == "memory"
    memory = [u for u, on in (("alu", alu_src), ("mul", mul_src)) if on]
    relu = bool(table.get("relu", False))
    prelu = bool(table.get("prelu", False))
    if prelu and mul is None:
        raise layer.fail(f"{key}.prelu", "PReLU needs a multiplier (mul)")
    bypass = not table
    fields = {f"{p}_bypass": int(bypass), f"{p}_alu_bypass": int(alu is None),
              f"{p}_alu_algo": ALU_ALGOS.get(alu, 0), f"{p}_mul_bypass": int(mul is None),
              f"{p}_mul_prelu": int(prelu)}
    if key == "y":
        fields[f"{p}_lut_bypass"] = 1
        if relu:
            raise layer.fail("y.relu", "the Y stage has no ReLU (use x1 or x2)")
    else:
        fields[f"{p}_relu_bypass"] = int(not relu)
    m.set(SDP, f"D_DP_{P}_CFG_0", **fields)
    alu_cfg = {f"{p}_alu_src": int(alu_src)}
    mul_cfg = {f"{p}_mul_src": int(mul_src)}
    if key == "y":
        alu_cfg[f"{p}_alu_cvt_bypass"] = 1
        mul_cfg[f"{p}_mul_cvt_bypass"] = 1
    else:
        alu_cfg[f"{p}_alu_shift_value"] = integer(layer, f"{key}.alu_shift",
                                                  table.get("alu_shift", 0), 0, 63)
        mul_cfg[f"{p}_mul_shift_value"] = integer(layer, f"{key}.mul_shift",
                                                  table.get("mul_shift", 0), 0, 255)
    m.set(SDP, f"D_DP_{P}_ALU_CFG_0", **alu_cfg)
    m.set(SDP, f"D_DP_{P}_MUL_CFG_0", **mul_cfg)
    if key == "y":
        m.set(SDP, "D_DP_EW_TRUNCATE_VALUE_0",
              ew_truncate=integer(layer, "y.mul_shift", table.get("mul_shift", 0), 0, 255))
    if alu is not None and not alu_src:
        m.set(SDP, f"D_DP_{P}_ALU_SRC_VALUE_0", **{f"{p}_alu_operand": _operand_value(
            layer, f"{key}.alu_operand", table.get("alu_operand", 0), proc,
            32 if key == "y" else 16)})
    if mul is not None and not mul_src:
        m.set(SDP, f"D_DP_{P}_MUL_SRC_VALUE_0", **{f"{p}_mul_operand": _operand_value(
            layer, f"{key}.mul", mul, proc, 32 if key == "y" else 16)})
    low = dma.lower()
    if not memory:
        if key != "y" or m.config.sdp_ew:
            m.set(SDP_RDMA, f"D_{dma}_CFG_0", **{f"{low}_disable": 1})
        return
    use = "both" if len(memory) == 2 else memory[0]
    size = 1 if proc == "int8" else 2
    fmt = operand_format("bn" if use == "both" else "bias", proc, size,
                         2 if use == "both" else 1, False)
    shape = (2, channels) if use == "both" else (channels,)
    if proc == "fp16":
        values = rng.uniform(-2, 2, shape).astype(np.float16).view(np.uint16)
    else:
        values = rng.integers(-100 if size == 2 else -32, 101 if size == 2 else 33,
                              shape).astype(np.int8 if size == 1 else np.int16)
    data, lay = pack_operand(values, fmt, m.config)
    addr = alloc.take(lay.extent)
    m.load(addr, data)
    m.set(SDP_RDMA, f"D_{dma}_CFG_0", **{f"{low}_disable": 0,
          f"{low}_data_use": {"mul": 0, "alu": 1, "both": 2}[use],
          f"{low}_data_size": size - 1, f"{low}_data_mode": 0, f"{low}_ram_type": 1})
    m.set(SDP_RDMA, f"D_{P}_BASE_ADDR_LOW_0", **{f"{P.lower()}_base_addr_low": addr})
    m.set(SDP_RDMA, f"D_{P}_LINE_STRIDE_0", **{f"{P.lower()}_line_stride": lay.line_stride})
    m.set(SDP_RDMA, f"D_{P}_SURFACE_STRIDE_0",
          **{f"{P.lower()}_surface_stride": lay.surface_stride})


def _sdp_core(m, shape, out: Output | None, proc: str, out_prec: str, cvt, flying: bool,
              to_pdp: bool = False, winograd: bool = False, nan_to_zero: bool = False) -> None:
    c, h, w = shape
    m.set(SDP, "D_DATA_CUBE_WIDTH_0", width=w - 1)
    m.set(SDP, "D_DATA_CUBE_HEIGHT_0", height=h - 1)
    m.set(SDP, "D_DATA_CUBE_CHANNEL_0", channel=c - 1)
    if out is not None:
        m.set(SDP, "D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=out.addr)
        m.set(SDP, "D_DST_LINE_STRIDE_0", dst_line_stride=out.layout.line_stride)
        m.set(SDP, "D_DST_SURFACE_STRIDE_0", dst_surface_stride=out.layout.surface_stride)
        m.set(SDP, "D_DST_DMA_CFG_0", dst_ram_type=1)
    m.set(SDP, "D_FEATURE_MODE_CFG_0", flying_mode=int(flying), output_dst=int(to_pdp),
          winograd=int(winograd), nan_to_zero=int(nan_to_zero))
    m.set(SDP, "D_DATA_FORMAT_0", proc_precision=CODES[proc], out_precision=CODES[out_prec])
    m.set(SDP, "D_CVT_OFFSET_0", cvt_offset=cvt[0] & 0xFFFFFFFF)
    m.set(SDP, "D_CVT_SCALE_0", cvt_scale=cvt[1] & 0xFFFF)
    m.set(SDP, "D_CVT_SHIFT_0", cvt_shift=cvt[2])
    m.set(SDP, "D_PERF_ENABLE_0", perf_dma_en=1, perf_lut_en=1, perf_sat_en=1,
          perf_nan_inf_count_en=1)


def _read_dma(m, unit: str, shape, src: int, lay) -> None:
    """The input cube of an SDP_RDMA or CDP_RDMA (same register names): size, address, strides."""
    c, h, w = shape
    m.set(unit, "D_DATA_CUBE_WIDTH_0", width=w - 1)
    m.set(unit, "D_DATA_CUBE_HEIGHT_0", height=h - 1)
    m.set(unit, "D_DATA_CUBE_CHANNEL_0", channel=c - 1)
    m.set(unit, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=src)
    m.set(unit, "D_SRC_LINE_STRIDE_0", src_line_stride=lay.line_stride)
    m.set(unit, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=lay.surface_stride)
    m.set(unit, "D_SRC_DMA_CFG_0", src_ram_type=1)


def build_sdp(m, layer, alloc, rng, outputs):
    proc = layer.precision
    out_prec = _out_precision(layer, m.config, layer.get("out_precision"), proc)
    m.select_group([SDP, SDP_RDMA])
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    c, h, w = cube.shape
    if isinstance(layer.input, tuple):
        from ..dma.feature import pack_feature

        data, _ = pack_feature(cube, m.config, precision=proc)
        m.load(src, data)
    out = output_region(m, alloc, (c, h, w), out_prec)
    _read_dma(m, SDP_RDMA, (c, h, w), src, lay)
    m.set(SDP_RDMA, "D_FEATURE_MODE_CFG_0", flying_mode=0, in_precision=CODES[proc],
          proc_precision=CODES[proc], out_precision=CODES[out_prec])
    m.set(SDP_RDMA, "D_PERF_ENABLE_0", perf_dma_en=1, perf_nan_inf_count_en=1)
    channels = padded(c, proc, m.config.atom_bytes)
    for key in ("x1", "x2", "y"):
        _stage(m, layer, alloc, rng, key, layer.get(key), proc, channels)
    _sdp_core(m, (c, h, w), out, proc, out_prec, _cvt(layer, "cvt", layer.get("cvt")), False,
              nan_to_zero=bool(layer.get("nan_to_zero", False)))
    return out, (SDP, SDP_RDMA)


# -- PDP ------------------------------------------------------------------------------------

def _recip(kernel: int, precision: str) -> int:
    """RECIP_KERNEL_* for a kernel size: 1/k with 16 fraction bits, or fp17 for fp16."""
    if precision != "fp16":
        return 0x10000 // kernel
    from ..num.ops import fp32_to_fp17

    bits = int(np.array([1.0 / kernel], dtype=np.float32).view(np.uint32)[0])
    return int(fp32_to_fp17(bits))


def _pooling(layer, table, shape) -> dict:
    """Validated pooling options and the output size."""
    c, h, w = shape
    method = choice(layer, "method", table.get("method", "max"), tuple(POOLING))
    kh, kw = dims(layer, "kernel", table.get("kernel", [2, 2]), 2, 1, 8)
    sh, sw = dims(layer, "stride", table.get("stride", [kh, kw]), 2, 1, 16)
    left, right, top, bottom = dims(layer, "pad", table.get("pad", 0), 4, 0, 7)
    if left >= kw or right >= kw or top >= kh or bottom >= kh:
        raise layer.fail("pad", f"padding {[left, right, top, bottom]} must be smaller than "
                         f"the kernel {[kh, kw]} on each side")
    pad_value = table.get("pad_value", 0)
    if layer.precision == "fp16" and pad_value != 0:
        raise layer.fail("pad_value", "gen supports padding values for int8/int16 only")
    pad_value = integer(layer, "pad_value", pad_value, -(1 << 15), (1 << 15) - 1)
    ow = (w + left + right - kw) // sw + 1
    oh = (h + top + bottom - kh) // sh + 1
    if ow < 1 or oh < 1 or w + left + right < kw or h + top + bottom < kh:
        raise layer.fail("kernel", f"a {kh}x{kw} kernel does not fit the padded {h}x{w} input")
    return dict(method=method, kernel=(kh, kw), stride=(sh, sw), pad=(left, right, top, bottom),
                pad_value=pad_value, out=(c, oh, ow))


def _pdp_core(m, layer, pool: dict, shape, out: Output, flying: bool, src=None) -> None:
    c, h, w = shape
    _, oh, ow = pool["out"]
    kh, kw = pool["kernel"]
    sh, sw = pool["stride"]
    left, right, top, bottom = pool["pad"]
    code = CODES[layer.precision]
    m.set(PDP, "D_DATA_CUBE_IN_WIDTH_0", cube_in_width=w - 1)
    m.set(PDP, "D_DATA_CUBE_IN_HEIGHT_0", cube_in_height=h - 1)
    m.set(PDP, "D_DATA_CUBE_IN_CHANNEL_0", cube_in_channel=c - 1)
    m.set(PDP, "D_DATA_CUBE_OUT_WIDTH_0", cube_out_width=ow - 1)
    m.set(PDP, "D_DATA_CUBE_OUT_HEIGHT_0", cube_out_height=oh - 1)
    m.set(PDP, "D_DATA_CUBE_OUT_CHANNEL_0", cube_out_channel=c - 1)
    m.set(PDP, "D_OPERATION_MODE_CFG_0", pooling_method=POOLING[pool["method"]],
          flying_mode=int(not flying), split_num=0)
    m.set(PDP, "D_NAN_FLUSH_TO_ZERO_0", nan_to_zero=int(bool(layer.get("nan_to_zero", False))))
    m.set(PDP, "D_PARTIAL_WIDTH_IN_0", partial_width_in_first=w - 1)
    m.set(PDP, "D_PARTIAL_WIDTH_OUT_0", partial_width_out_first=ow - 1)
    m.set(PDP, "D_POOLING_KERNEL_CFG_0", kernel_width=kw - 1, kernel_height=kh - 1,
          kernel_stride_width=sw - 1, kernel_stride_height=sh - 1)
    m.set(PDP, "D_RECIP_KERNEL_WIDTH_0", recip_kernel_width=_recip(kw, layer.precision))
    m.set(PDP, "D_RECIP_KERNEL_HEIGHT_0", recip_kernel_height=_recip(kh, layer.precision))
    m.set(PDP, "D_POOLING_PADDING_CFG_0", pad_left=left, pad_top=top, pad_right=right,
          pad_bottom=bottom)
    for n in range(1, 8):  # the sum of n padded elements, as firmware programs it
        m.set(PDP, f"D_POOLING_PADDING_VALUE_{n}_CFG_0",
              **{f"pad_value_{n}x": (n * pool["pad_value"]) & 0x7FFFF})
    if src is not None:
        addr, lay = src
        m.set(PDP, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=addr)
        m.set(PDP, "D_SRC_LINE_STRIDE_0", src_line_stride=lay.line_stride)
        m.set(PDP, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=lay.surface_stride)
    m.set(PDP, "D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=out.addr)
    m.set(PDP, "D_DST_LINE_STRIDE_0", dst_line_stride=out.layout.line_stride)
    m.set(PDP, "D_DST_SURFACE_STRIDE_0", dst_surface_stride=out.layout.surface_stride)
    m.set(PDP, "D_DST_RAM_CFG_0", dst_ram_type=1)
    m.set(PDP, "D_DATA_FORMAT_0", input_data=code)


def build_pdp(m, layer, alloc, rng, outputs):
    m.select_group([PDP, PDP_RDMA])
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    c, h, w = cube.shape
    pool = _pooling(layer, layer.options, (c, h, w))
    if isinstance(layer.input, tuple):
        from ..dma.feature import pack_feature

        data, _ = pack_feature(cube, m.config, precision=layer.precision)
        m.load(src, data)
    out = output_region(m, alloc, pool["out"], layer.precision)
    kh, kw = pool["kernel"]
    sh, sw = pool["stride"]
    m.set(PDP_RDMA, "D_DATA_CUBE_IN_WIDTH_0", cube_in_width=w - 1)
    m.set(PDP_RDMA, "D_DATA_CUBE_IN_HEIGHT_0", cube_in_height=h - 1)
    m.set(PDP_RDMA, "D_DATA_CUBE_IN_CHANNEL_0", cube_in_channel=c - 1)
    m.set(PDP_RDMA, "D_FLYING_MODE_0", flying_mode=1)
    m.set(PDP_RDMA, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=src)
    m.set(PDP_RDMA, "D_SRC_LINE_STRIDE_0", src_line_stride=lay.line_stride)
    m.set(PDP_RDMA, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=lay.surface_stride)
    m.set(PDP_RDMA, "D_SRC_RAM_CFG_0", src_ram_type=1)
    m.set(PDP_RDMA, "D_DATA_FORMAT_0", input_data=CODES[layer.precision])
    m.set(PDP_RDMA, "D_OPERATION_MODE_CFG_0", split_num=0)
    m.set(PDP_RDMA, "D_POOLING_KERNEL_CFG_0", kernel_width=kw - 1,
          kernel_stride_width=sw - 1)
    m.set(PDP_RDMA, "D_POOLING_PADDING_CFG_0", pad_width=pool["pad"][0])
    m.set(PDP_RDMA, "D_PARTIAL_WIDTH_IN_0", partial_width_in_first=w - 1)
    _pdp_core(m, layer, pool, (c, h, w), out, False, (src, lay))
    return out, (PDP, PDP_RDMA)


# -- CDP ------------------------------------------------------------------------------------

def build_cdp(m, layer, alloc, rng, outputs):
    if layer.precision == "fp16":
        raise layer.fail("precision", "gen builds CDP layers in int8/int16 (fp16 LUTs are "
                         "not generated yet)")
    m.select_group([CDP, CDP_RDMA])
    window = layer.get("window", 5)
    choice(layer, "window", window, (3, 5, 7, 9))
    datin = _cvt(layer, "datin", layer.get("datin"), (0, 1, 0))
    datout = _cvt(layer, "datout", layer.get("datout"), (0, 1, 16))
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    c, h, w = cube.shape
    if isinstance(layer.input, tuple):
        from ..dma.feature import pack_feature

        data, _ = pack_feature(cube, m.config, precision=layer.precision)
        m.load(src, data)
    out = output_region(m, alloc, (c, h, w), layer.precision)
    bits = 9 if layer.precision == "int8" else 17  # the input convertor's width
    max_sum = window * (1 << (bits - 1)) ** 2
    le_sel = max(0, (max_sum >> 6).bit_length())
    lo_sel = max(0, (max_sum >> 8).bit_length())
    le = 16000 - (16000 // 80) * np.arange(65)  # a decreasing line: 1/sqrt-like enough
    lo = 16000 - (16000 // 320) * np.arange(257)
    _read_dma(m, CDP_RDMA, (c, h, w), src, lay)
    m.set(CDP_RDMA, "D_DATA_FORMAT_0", input_data=CODES[layer.precision])
    for table_id, table in ((0, le), (1, lo)):
        m.set(CDP, "S_LUT_ACCESS_CFG_0", lut_addr=0, lut_table_id=table_id, lut_access_type=1)
        for value in table:
            m.set(CDP, "S_LUT_ACCESS_DATA_0", lut_data=int(value) & 0xFFFF)
    m.set(CDP, "S_LUT_CFG_0", lut_le_function=1)
    m.set(CDP, "S_LUT_INFO_0", lut_le_index_offset=0, lut_le_index_select=le_sel,
          lut_lo_index_select=lo_sel)
    m.set(CDP, "S_LUT_LE_START_LOW_0", lut_le_start_low=0)
    m.set(CDP, "S_LUT_LE_END_LOW_0", lut_le_end_low=(64 << le_sel) & 0xFFFFFFFF)
    m.set(CDP, "S_LUT_LO_START_LOW_0", lut_lo_start_low=0)
    m.set(CDP, "S_LUT_LO_END_LOW_0", lut_lo_end_low=(256 << lo_sel) & 0xFFFFFFFF)
    m.set(CDP, "D_FUNC_BYPASS_0", sqsum_bypass=int(bool(layer.get("sqsum_bypass", False))),
          mul_bypass=int(bool(layer.get("mul_bypass", False))))
    m.set(CDP, "D_LRN_CFG_0", normalz_len=(window - 3) // 2)
    m.set(CDP, "D_DATA_FORMAT_0", input_data_type=CODES[layer.precision])
    m.set(CDP, "D_DATIN_OFFSET_0", datin_offset=datin[0] & 0xFFFF)
    m.set(CDP, "D_DATIN_SCALE_0", datin_scale=datin[1] & 0xFFFF)
    m.set(CDP, "D_DATIN_SHIFTER_0", datin_shifter=datin[2])
    m.set(CDP, "D_DATOUT_OFFSET_0", datout_offset=datout[0] & 0xFFFFFFFF)
    m.set(CDP, "D_DATOUT_SCALE_0", datout_scale=datout[1] & 0xFFFF)
    m.set(CDP, "D_DATOUT_SHIFTER_0", datout_shifter=datout[2])
    m.set(CDP, "D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=out.addr)
    m.set(CDP, "D_DST_LINE_STRIDE_0", dst_line_stride=out.layout.line_stride)
    m.set(CDP, "D_DST_SURFACE_STRIDE_0", dst_surface_stride=out.layout.surface_stride)
    m.set(CDP, "D_DST_DMA_CFG_0", dst_ram_type=1)
    m.set(CDP, "D_PERF_ENABLE_0", dma_en=1, lut_en=1)
    return out, (CDP, CDP_RDMA)


# -- BDMA -----------------------------------------------------------------------------------

def build_bdma(m, layer, alloc, rng, outputs):
    cfg = m.config
    if not cfg.bdma:
        raise layer.fail("unit", f"{cfg.name} has no BDMA")
    line = integer(layer, "line_bytes", layer.get("line_bytes", 64), 32, 8192)
    if line % 32:
        raise layer.fail("line_bytes", f"{line} is not a multiple of 32 (BDMA moves 32-byte "
                         "atoms)")
    lines = integer(layer, "lines", layer.get("lines", 4), 1, 8192)
    surfaces = integer(layer, "surfaces", layer.get("surfaces", 1), 1, 8192)
    mems = {}
    for key in ("src", "dst"):
        ram = choice(layer, key, layer.get(key, "mc"), ("mc", "cv"))
        if ram == "cv" and not cfg.secondary_memory:
            raise layer.fail(key, f"{cfg.name} has no CV-SRAM")
        mems[key] = "sec_mem" if ram == "cv" else "pri_mem"
    size = line * lines * surfaces
    src = alloc.take(size, mems["src"])
    m.load(src, rng.integers(0, 256, size, dtype=np.uint8), mems["src"])
    out = Output(mems["dst"], alloc.take(size, mems["dst"]), size)
    b = "NVDLA_BDMA"  # address and stride fields hold bits 31:5: write whole words
    m.write_reg(f"{b}.CFG_SRC_ADDR_LOW_0", src & 0xFFFFFFFF)
    m.write_reg(f"{b}.CFG_SRC_ADDR_HIGH_0", src >> 32)
    m.write_reg(f"{b}.CFG_DST_ADDR_LOW_0", out.addr & 0xFFFFFFFF)
    m.write_reg(f"{b}.CFG_DST_ADDR_HIGH_0", out.addr >> 32)
    m.set(b, "CFG_LINE_0", size=line // 32 - 1)
    m.set(b, "CFG_CMD_0", src_ram_type=int(mems["src"] == "pri_mem"),
          dst_ram_type=int(mems["dst"] == "pri_mem"))
    m.set(b, "CFG_LINE_REPEAT_0", number=lines - 1)
    m.write_reg(f"{b}.CFG_SRC_LINE_0", line)
    m.write_reg(f"{b}.CFG_DST_LINE_0", line)
    m.set(b, "CFG_SURF_REPEAT_0", number=surfaces - 1)
    m.write_reg(f"{b}.CFG_SRC_SURF_0", line * lines)
    m.write_reg(f"{b}.CFG_DST_SURF_0", line * lines)
    m.set(b, "CFG_OP_0", en=1)
    return out, (b,)


# -- convolution ----------------------------------------------------------------------------

def _truncate(layer, c, r, s, dmax, wmax) -> int:
    """CACC truncation that keeps the accumulator's typical values in the output range."""
    if layer.precision == "fp16":
        return 0
    bits = 8 if layer.precision == "int8" else 16
    typical = int(np.sqrt(c * r * s)) * dmax * wmax
    return max(0, typical.bit_length() - (bits - 1) + 1)


def build_conv(m, layer, alloc, rng, outputs):
    from ..conv.program import program
    from ..conv.program_modes import program_image, program_winograd

    cfg = m.config
    mode = choice(layer, "mode", layer.get("mode", "direct"), CONV_MODES)
    if mode == "winograd":
        cfg.require("winograd", layer.where("mode"))
    if layer.get("batch", 1) != 1:
        raise layer.fail("batch", "gen builds batch 1 convolutions (batches are not generated "
                         "yet)")
    proc = layer.precision
    units = list(CONV_ENABLE) + [SDP]
    fly_sdp = check_keys(layer, "sdp", layer.get("sdp"), FLY_SDP_KEYS)
    fly_pdp = layer.get("pdp")
    if fly_pdp is not None:
        fly_pdp = check_keys(layer, "pdp", fly_pdp, FLY_PDP_KEYS)
        units.append(PDP)
    m.select_group(units + [SDP_RDMA])
    k = integer(layer, "kernels", layer.get("kernels", 8), 1, 8192)
    r, s = dims(layer, "kernel", layer.get("kernel", [3, 3]), 2, 1, 32)
    sy, sx = dims(layer, "stride", layer.get("stride", [1, 1]), 2, 1, 8)
    dy, dx = dims(layer, "dilation", layer.get("dilation", [1, 1]), 2, 1, 32)
    pad = tuple(dims(layer, "pad", layer.get("pad", 0), 4, 0, 31))
    left, right, top, bottom = pad
    pad_value = integer(layer, "pad_value", layer.get("pad_value", 0), -(1 << 15),
                        (1 << 15) - 1)
    if mode == "image":
        if isinstance(layer.input, str):
            raise layer.fail("input", "image input reads pixels from memory, not a chained "
                             "feature cube")
        from ..dma.pixel import pixel_format

        fmt = pixel_format(layer.get("pixel_format", "T_A8B8G8R8"))
        if fmt.dtype != np.uint8:
            raise layer.fail("pixel_format", "gen builds 8-bit pixel formats")
        c, h, w = layer.input
        if c != fmt.channels:
            raise layer.fail("input", f"{fmt.name} has {fmt.channels} channels, not {c}")
        image = rng.integers(0, 256, (c, h, w)).astype(np.uint8)
        cube = None
    else:
        cube, src, lay = input_cube(m, layer, alloc, rng, outputs, "conv")
        c, h, w = cube.shape
    if mode == "winograd" and ((r, s) != (3, 3) or (sy, sx) != (1, 1) or (dy, dx) != (1, 1)):
        raise layer.fail("kernel", "Winograd convolution takes 3x3 kernels, stride 1, no "
                         "dilation")
    ext_w = (s - 1) * dx + 1
    ext_h = (r - 1) * dy + 1
    out_w = (w + left + right - ext_w) // sx + 1
    out_h = (h + top + bottom - ext_h) // sy + 1
    if w + left + right < ext_w or h + top + bottom < ext_h:
        raise layer.fail("kernel", f"a {r}x{s} kernel (dilated {ext_h}x{ext_w}) does not fit "
                         f"the padded {h}x{w} input")
    wt = random_cube(rng, (k, c, r, s), proc, None, "weight")
    lo, hi = _ranges(layer, proc)
    truncate = layer.get("truncate")
    if truncate is None:
        truncate = _truncate(layer, c, r, s, max(abs(lo), abs(hi)),
                             max(abs(v) for v in (_wrange(proc))))
    truncate = integer(layer, "truncate", truncate, 0, 31)
    _check_cbuf(layer, cfg, c, h, w, k, r, s, proc, mode)
    if mode == "winograd":
        w4 = winograd_weights(wt, proc, scale=1.0 if proc == "fp16" else 4.0)
        wt_addr = alloc.take(w4.size * 2 + 4096)
        out_w, out_h = program_winograd(m, cube, w4, precision=proc, pad=pad,
                                        pad_value=pad_value, truncate=truncate, in_addr=src,
                                        wt_addr=wt_addr)
    elif mode == "image":
        in_addr = alloc.take(h * w * 4 * 2 + 4096)
        wt_addr = alloc.take(wt.size * 8 + 4096)
        out_w, out_h = program_image(m, image, wt, fmt=fmt.name, precision=proc,
                                     cvt=(128, 1, 0), stride=(sx, sy), pad=pad,
                                     pad_value=pad_value, truncate=truncate, in_addr=in_addr,
                                     wt_addr=wt_addr)
    else:
        wt_addr = alloc.take(-(-wt.size * (1 if proc == "int8" else 2) // 128) * 128 + 128)
        program(m, cube, wt, precision=proc, stride=(sx, sy), dilation=(dx, dy), pad=pad,
                pad_value=pad_value, truncate=truncate,
                nan_to_zero=bool(layer.get("nan_to_zero", False)), in_addr=src,
                wt_addr=wt_addr)
    out_prec = _out_precision(layer, cfg, fly_sdp.get("out_precision"), proc,
                              "sdp.out_precision")
    shape = (k, out_h, out_w)
    bias = fly_sdp.get("bias")
    mul = fly_sdp.get("mul")
    x1 = {}
    if bias is not None:
        x1.update(alu="sum", alu_operand=bias)
    if mul is not None:
        x1.update(mul=mul, mul_shift=fly_sdp.get("mul_shift", 0))
    if fly_sdp.get("relu"):
        x1["relu"] = True
    for key, table in (("x1", x1), ("x2", {}), ("y", {})):
        if key == "y" and not cfg.sdp_ew:
            m.set(SDP, "D_DP_EW_CFG_0", ew_bypass=1, ew_alu_bypass=1, ew_mul_bypass=1,
                  ew_lut_bypass=1)
            continue
        _stage(m, layer, alloc, rng, key, table, proc, padded(k, proc, cfg.atom_bytes))
    cvt = _cvt(layer, "sdp.cvt", fly_sdp.get("cvt"))
    if fly_pdp is None:
        out = output_region(m, alloc, shape, out_prec)
        _sdp_core(m, shape, out, proc, out_prec, cvt, True, winograd=mode == "winograd")
        return out, tuple(units)
    pdp_layer = _PoolView(layer, out_prec)
    pool = _pooling(pdp_layer, fly_pdp, shape)
    out = output_region(m, alloc, pool["out"], out_prec)
    _sdp_core(m, shape, None, proc, out_prec, cvt, True, to_pdp=True,
              winograd=mode == "winograd")
    _pdp_core(m, pdp_layer, pool, shape, out, True)
    return out, (PDP, *units[:-1])


class _PoolView:
    """A conv layer seen as the PDP it feeds: its keys are under ``pdp.``."""

    def __init__(self, layer, precision: str):
        self._layer = layer
        self.precision = precision
        self.options = layer.get("pdp")

    def fail(self, key, rule):
        return self._layer.fail(f"pdp.{key}", rule)

    def where(self, key):
        return self._layer.where(f"pdp.{key}")

    def get(self, key, default=None):
        return self.options.get(key, default)


def _ranges(layer, proc):
    from .data import RANGES

    data = layer.get("data") or {}
    lo, hi = RANGES[proc]["conv"]
    return (data.get("low") if data.get("low") is not None else lo,
            data.get("high") if data.get("high") is not None else hi)


def _wrange(proc):
    from .data import RANGES

    return RANGES[proc]["weight"]


def _check_cbuf(layer, cfg, c, h, w, k, r, s, proc, mode) -> None:
    """The input and weights must fit the CBUF banks the programming uses (8 + 8)."""
    bpe = 1 if proc == "int8" else 2
    bank = cfg.cbuf_bank_depth * cfg.cbuf_bank_width
    banks = min(8, cfg.cbuf_bank_count // 2)
    atoms = -(-c * bpe // cfg.atom_bytes)
    data = h * w * atoms * cfg.atom_bytes
    weights = k * c * r * s * bpe * (16 / 9 if mode == "winograd" else 1)
    if data > banks * bank:
        raise layer.fail("input", f"the input ({data} bytes) does not fit {banks} CBUF banks "
                         f"of {bank} bytes on {cfg.name}")
    if weights > banks * bank:
        raise layer.fail("kernels", f"the weights ({int(weights)} bytes) do not fit {banks} "
                         f"CBUF banks of {bank} bytes on {cfg.name}")
