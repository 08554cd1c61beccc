"""Program a standalone SDP layer on a Machine, run it and read its output (tests, benchmarks).

:func:`run_sdp` writes the input cube and any operand streams, programs
SDP_RDMA and SDP (X1, X2, Y, LUT, output convertor) and runs the layer;
:func:`program_x`, :func:`program_y` and :func:`program_lut` program one
stage from a dict of field values over defaults that bypass it.
"""

from __future__ import annotations

import numpy as np

from ..dma import pack_feature, read_feature
from ..dma.operands import operand_format, pack_operand
from ..machine import Machine
from ..regs.enums import Precision
from .registers import write_fields

SRC, DST = 0x8000_0000, 0x8040_0000
OPERAND_BASE = {"bs": 0x8100_0000, "bn": 0x8200_0000, "ew": 0x8300_0000}
DMA_NAME = {"bs": "BRDMA", "bn": "NRDMA", "ew": "ERDMA"}
USE = {"mul": 0, "alu": 1, "both": 2}


put = write_fields  # the short name the SDP tests use
SDP = "NVDLA_SDP"


X_DEFAULT = dict(bypass=1, alu_bypass=1, alu_algo=0, alu_src=0, alu_operand=0, alu_shift=0,
                 mul_bypass=1, mul_src=0, mul_operand=0, prelu=0, mul_shift=0, relu_bypass=1)
Y_DEFAULT = dict(bypass=1, alu_bypass=1, alu_algo=0, alu_src=0, alu_operand=0,
                 alu_cvt_bypass=1, alu_cvt_offset=0, alu_cvt_scale=1, alu_cvt_truncate=0,
                 mul_bypass=1, mul_src=0, mul_operand=0, prelu=0, mul_cvt_bypass=1,
                 mul_cvt_offset=0, mul_cvt_scale=1, mul_cvt_truncate=0, truncate=0, lut_bypass=1)


def program_x(m, p: str, cfg: dict | None) -> None:
    c = {**X_DEFAULT, **(cfg or {})}
    P = p.upper()
    put(m, f"NVDLA_SDP.D_DP_{P}_CFG_0", **{f"{p}_bypass": c["bypass"],
        f"{p}_alu_bypass": c["alu_bypass"], f"{p}_alu_algo": c["alu_algo"],
        f"{p}_mul_bypass": c["mul_bypass"], f"{p}_mul_prelu": c["prelu"],
        f"{p}_relu_bypass": c["relu_bypass"]})
    put(m, f"NVDLA_SDP.D_DP_{P}_ALU_CFG_0", **{f"{p}_alu_src": c["alu_src"],
        f"{p}_alu_shift_value": c["alu_shift"]})
    put(m, f"NVDLA_SDP.D_DP_{P}_ALU_SRC_VALUE_0", **{f"{p}_alu_operand": c["alu_operand"]})
    put(m, f"NVDLA_SDP.D_DP_{P}_MUL_CFG_0", **{f"{p}_mul_src": c["mul_src"],
        f"{p}_mul_shift_value": c["mul_shift"]})
    put(m, f"NVDLA_SDP.D_DP_{P}_MUL_SRC_VALUE_0", **{f"{p}_mul_operand": c["mul_operand"]})


def program_y(m, cfg: dict | None) -> None:
    c = {**Y_DEFAULT, **(cfg or {})}
    put(m, "NVDLA_SDP.D_DP_EW_CFG_0", ew_bypass=c["bypass"], ew_alu_bypass=c["alu_bypass"],
        ew_alu_algo=c["alu_algo"], ew_mul_bypass=c["mul_bypass"], ew_mul_prelu=c["prelu"],
        ew_lut_bypass=c["lut_bypass"])
    for op in ("alu", "mul"):  # each operand: source, convertor, register value
        OP = op.upper()
        put(m, f"NVDLA_SDP.D_DP_EW_{OP}_CFG_0", **{f"ew_{op}_src": c[f"{op}_src"],
            f"ew_{op}_cvt_bypass": c[f"{op}_cvt_bypass"]})
        put(m, f"NVDLA_SDP.D_DP_EW_{OP}_SRC_VALUE_0", **{f"ew_{op}_operand": c[f"{op}_operand"]})
        for part in ("offset", "scale", "truncate"):
            put(m, f"NVDLA_SDP.D_DP_EW_{OP}_CVT_{part.upper()}_VALUE_0",
                **{f"ew_{op}_cvt_{part}": c[f"{op}_cvt_{part}"]})
    put(m, "NVDLA_SDP.D_DP_EW_TRUNCATE_VALUE_0", ew_truncate=c["truncate"])


def program_lut(m, cfg: dict | None, le=None, lo=None) -> None:
    """LUT registers (``cfg`` keys: LUT field names without the LUT_ prefix) and tables."""
    for table_id, values in ((0, le), (1, lo)):
        if values is None:
            continue
        put(m, "NVDLA_SDP.S_LUT_ACCESS_CFG_0", lut_addr=0, lut_table_id=table_id,
            lut_access_type=1)
        for v in values:
            put(m, "NVDLA_SDP.S_LUT_ACCESS_DATA_0", lut_data=int(v) & 0xFFFF)
    c = dict(le_function=0, uflow_priority=0, oflow_priority=0, hybrid_priority=0,
             le_index_offset=0, le_index_select=0, lo_index_select=0, le_start=0, le_end=0,
             lo_start=0, lo_end=0, le_slope_uflow_scale=0, le_slope_oflow_scale=0,
             le_slope_uflow_shift=0, le_slope_oflow_shift=0, lo_slope_uflow_scale=0,
             lo_slope_oflow_scale=0, lo_slope_uflow_shift=0, lo_slope_oflow_shift=0)
    c.update(cfg or {})
    put(m, "NVDLA_SDP.S_LUT_CFG_0", lut_le_function=c["le_function"],
        lut_uflow_priority=c["uflow_priority"], lut_oflow_priority=c["oflow_priority"],
        lut_hybrid_priority=c["hybrid_priority"])
    put(m, "NVDLA_SDP.S_LUT_INFO_0", lut_le_index_offset=c["le_index_offset"],
        lut_le_index_select=c["le_index_select"], lut_lo_index_select=c["lo_index_select"])
    for name in ("le_start", "le_end", "lo_start", "lo_end"):
        put(m, f"NVDLA_SDP.S_LUT_{name.upper()}_0", **{f"lut_{name}": c[name]})
    for t in ("le", "lo"):
        put(m, f"NVDLA_SDP.S_LUT_{t.upper()}_SLOPE_SCALE_0",
            **{f"lut_{t}_slope_uflow_scale": c[f"{t}_slope_uflow_scale"],
               f"lut_{t}_slope_oflow_scale": c[f"{t}_slope_oflow_scale"]})
        put(m, f"NVDLA_SDP.S_LUT_{t.upper()}_SLOPE_SHIFT_0",
            **{f"lut_{t}_slope_uflow_shift": c[f"{t}_slope_uflow_shift"],
               f"lut_{t}_slope_oflow_shift": c[f"{t}_slope_oflow_shift"]})


def operand_spec_format(spec: dict, proc: str):
    """The :class:`~sim.dma.operands.OperandFormat` an operand ``spec`` asks for."""
    use = spec["use"]
    size = spec.get("size", Precision(proc).bytes)
    return operand_format("bn" if use == "both" else "bias", proc, size,
                          2 if use == "both" else 1, spec.get("per_element", False))


def program_operand(m, name: str, spec: dict | None, proc: str) -> None:
    """BRDMA/NRDMA/ERDMA of stage ``name`` (bs, bn, ew): disabled when ``spec`` is None.

    ``spec``: ``use`` (mul, alu, both), ``array`` (C or 2, C values), optional
    ``size`` (bytes per component), ``per_element`` and ``addr`` (where the
    operand data go; default OPERAND_BASE[name]).
    """
    dma = DMA_NAME[name]
    low = dma.lower()
    if spec is None:
        put(m, f"NVDLA_SDP_RDMA.D_{dma}_CFG_0", **{f"{low}_disable": 1})
        return
    use = spec["use"]
    fmt = operand_spec_format(spec, proc)
    size, per_element = fmt.data_size, spec.get("per_element", False)
    data, layout = pack_operand(spec["array"], fmt, m.config)
    addr = spec.get("addr", OPERAND_BASE[name])
    m.load(addr, data)
    put(m, f"NVDLA_SDP_RDMA.D_{dma}_CFG_0", **{f"{low}_disable": 0, f"{low}_data_use": USE[use],
        f"{low}_data_size": size - 1, f"{low}_data_mode": int(per_element),
        f"{low}_ram_type": 1})
    P = name.upper()
    m.write_reg(f"NVDLA_SDP_RDMA.D_{P}_BASE_ADDR_LOW_0", addr)
    m.write_reg(f"NVDLA_SDP_RDMA.D_{P}_LINE_STRIDE_0", layout.line_stride)
    m.write_reg(f"NVDLA_SDP_RDMA.D_{P}_SURFACE_STRIDE_0", layout.surface_stride)


def run_sdp(config: str, cube, *, in_prec: str, out_prec: str, proc_prec: str | None = None,
            x1=None, x2=None, y=None, lut=None, le=None, lo=None, cvt=(0, 1, 0),
            nan_to_zero=0, operands=None, machine: Machine | None = None, go: bool = True):
    """Run one SDP layer reading ``cube`` (C, H, W) from memory; returns (output, machine)."""
    m = machine or Machine(config)
    proc = proc_prec or in_prec
    cube = np.asarray(cube)
    c, h, w = cube.shape
    atom = m.config.atom_bytes
    data, in_layout = pack_feature(cube, precision=in_prec, atom_bytes=atom)
    m.load(SRC, data)
    _, out_layout = pack_feature(np.zeros(cube.shape, dtype=np.int16 if out_prec != "int8"
                                          else np.int8), precision=out_prec, atom_bytes=atom)
    for unit in ("NVDLA_SDP_RDMA", "NVDLA_SDP"):
        m.write_reg(f"{unit}.D_DATA_CUBE_WIDTH_0", w - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_HEIGHT_0", h - 1)
        m.write_reg(f"{unit}.D_DATA_CUBE_CHANNEL_0", c - 1)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_BASE_ADDR_LOW_0", SRC)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_LINE_STRIDE_0", in_layout.line_stride)
    m.write_reg("NVDLA_SDP_RDMA.D_SRC_SURFACE_STRIDE_0", in_layout.surface_stride)
    put(m, "NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0", src_ram_type=1)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=0,
        in_precision=Precision(in_prec).code, proc_precision=Precision(proc).code,
        out_precision=Precision(out_prec).code)
    put(m, "NVDLA_SDP_RDMA.D_PERF_ENABLE_0", perf_dma_en=1, perf_nan_inf_count_en=1)
    operands = operands or {}
    for name in ("bs", "bn", "ew"):
        program_operand(m, name, operands.get(name), proc)
    m.write_reg("NVDLA_SDP.D_DST_BASE_ADDR_LOW_0", DST)
    m.write_reg("NVDLA_SDP.D_DST_LINE_STRIDE_0", out_layout.line_stride)
    m.write_reg("NVDLA_SDP.D_DST_SURFACE_STRIDE_0", out_layout.surface_stride)
    put(m, "NVDLA_SDP.D_DST_DMA_CFG_0", dst_ram_type=1)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", flying_mode=0, output_dst=0, winograd=0,
        nan_to_zero=nan_to_zero)
    put(m, "NVDLA_SDP.D_DATA_FORMAT_0", proc_precision=Precision(proc).code,
        out_precision=Precision(out_prec).code)
    put(m, "NVDLA_SDP.D_CVT_OFFSET_0", cvt_offset=cvt[0])
    put(m, "NVDLA_SDP.D_CVT_SCALE_0", cvt_scale=cvt[1])
    put(m, "NVDLA_SDP.D_CVT_SHIFT_0", cvt_shift=cvt[2])
    put(m, "NVDLA_SDP.D_PERF_ENABLE_0", perf_dma_en=1, perf_lut_en=1, perf_sat_en=1,
        perf_nan_inf_count_en=1)
    program_x(m, "bs", x1)
    program_x(m, "bn", x2)
    program_y(m, y)
    program_lut(m, lut, le, lo)
    if not go:
        return None, m
    m.write_reg("NVDLA_SDP.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
    m.run()
    out = read_feature(m.memory(1), DST, cube.shape, out_prec, atom, out_layout.line_stride,
                       out_layout.surface_stride)
    return out, m


def counter(m: Machine, name: str, unit: str = "NVDLA_SDP") -> int:
    """A read-only counter of the group that just ran (group 0)."""
    reg = m.regfile.register(f"{unit}.{name}")
    return m.regfile.peek(reg, 0)


def program_sdp_output(m: Machine, addr: int, shape, precision: str, *, winograd=False,
                       atom_bytes: int | None = None) -> tuple[int, int]:
    """SDP on the fly writing CACC's (K, H, W) cube unchanged; returns (line, surface) strides."""
    k, h, w = shape
    atom = atom_bytes or m.config.atom_bytes
    line = w * atom
    surface = line * h
    code = Precision(precision).code
    put(m, f"{SDP}.D_DATA_CUBE_WIDTH_0", width=w - 1)
    put(m, f"{SDP}.D_DATA_CUBE_HEIGHT_0", height=h - 1)
    put(m, f"{SDP}.D_DATA_CUBE_CHANNEL_0", channel=k - 1)
    put(m, f"{SDP}.D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=addr)
    put(m, f"{SDP}.D_DST_LINE_STRIDE_0", dst_line_stride=line)
    put(m, f"{SDP}.D_DST_SURFACE_STRIDE_0", dst_surface_stride=surface)
    put(m, f"{SDP}.D_DST_DMA_CFG_0", dst_ram_type=1)
    put(m, f"{SDP}.D_DP_BS_CFG_0", bs_bypass=1, bs_alu_bypass=1, bs_mul_bypass=1,
        bs_relu_bypass=1)
    put(m, f"{SDP}.D_DP_BN_CFG_0", bn_bypass=1, bn_alu_bypass=1, bn_mul_bypass=1,
        bn_relu_bypass=1)
    put(m, f"{SDP}.D_DP_EW_CFG_0", ew_bypass=1, ew_alu_bypass=1, ew_mul_bypass=1,
        ew_lut_bypass=1)
    put(m, f"{SDP}.D_FEATURE_MODE_CFG_0", flying_mode=1, winograd=int(bool(winograd)))
    put(m, f"{SDP}.D_DATA_FORMAT_0", proc_precision=code, out_precision=code)
    put(m, f"{SDP}.D_CVT_SCALE_0", cvt_scale=1)
    return line, surface


def program_sdp_core(m, shape, proc: str, out: str, *, dst: tuple | None = None,
                     cvt=(0, 1, 0), flying: bool = False, to_pdp: bool = False,
                     winograd: bool = False, nan_to_zero: bool = False) -> None:
    """The SDP's cube, write DMA (``dst`` = (address, FeatureLayout), batches from the
    layout) or PDP output, precisions, output convertor (offset, scale, shift), counters."""
    c, h, w = shape
    put(m, f"{SDP}.D_DATA_CUBE_WIDTH_0", width=w - 1)
    put(m, f"{SDP}.D_DATA_CUBE_HEIGHT_0", height=h - 1)
    put(m, f"{SDP}.D_DATA_CUBE_CHANNEL_0", channel=c - 1)
    batch = 1
    if dst is not None:
        addr, lay = dst
        batch = lay.batch
        put(m, f"{SDP}.D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=addr)
        put(m, f"{SDP}.D_DST_LINE_STRIDE_0", dst_line_stride=lay.line_stride)
        put(m, f"{SDP}.D_DST_SURFACE_STRIDE_0", dst_surface_stride=lay.surface_stride)
        put(m, f"{SDP}.D_DST_DMA_CFG_0", dst_ram_type=1)
        if batch > 1:
            m.write_reg(f"{SDP}.D_DST_BATCH_STRIDE_0", lay.batch_stride)
    put(m, f"{SDP}.D_FEATURE_MODE_CFG_0", flying_mode=int(flying), output_dst=int(to_pdp),
        winograd=int(winograd), nan_to_zero=int(nan_to_zero), batch_number=batch - 1)
    put(m, f"{SDP}.D_DATA_FORMAT_0", proc_precision=Precision(proc).code,
        out_precision=Precision(out).code)
    put(m, f"{SDP}.D_CVT_OFFSET_0", cvt_offset=cvt[0] & 0xFFFFFFFF)
    put(m, f"{SDP}.D_CVT_SCALE_0", cvt_scale=cvt[1] & 0xFFFF)
    put(m, f"{SDP}.D_CVT_SHIFT_0", cvt_shift=cvt[2])
    put(m, f"{SDP}.D_PERF_ENABLE_0", perf_dma_en=1, perf_lut_en=1, perf_sat_en=1,
        perf_nan_inf_count_en=1)


def program_sdp_input(m, shape, src: tuple, proc: str, out: str) -> None:
    """SDP_RDMA reading the input cube (C, H, W) at ``src`` = (address, FeatureLayout)."""
    from .registers import feature_source

    feature_source(m, "NVDLA_SDP_RDMA", shape, *src)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=0, in_precision=Precision(proc).code,
        proc_precision=Precision(proc).code, out_precision=Precision(out).code)
    put(m, "NVDLA_SDP_RDMA.D_PERF_ENABLE_0", perf_dma_en=1, perf_nan_inf_count_en=1)


def start_sdp_add(m, shape, src: tuple, dst: tuple, operand: int, precision: str = "int8"
                  ) -> None:
    """Program and start an SDP layer from memory that adds the constant ``operand`` to
    every element (X1's ALU; X2 and Y bypassed): ``src``/``dst`` = (address,
    FeatureLayout).  The caller runs the machine."""
    program_sdp_input(m, shape, src, precision, precision)
    program_sdp_core(m, shape, precision, precision, dst=dst)
    program_x(m, "bs", {"bypass": 0, "alu_bypass": 0, "alu_algo": 2, "alu_operand": operand})
    program_x(m, "bn", None)
    put(m, f"{SDP}.D_DP_EW_CFG_0", ew_bypass=1, ew_alu_bypass=1, ew_mul_bypass=1,
        ew_lut_bypass=1)
    m.write_reg(f"{SDP}.D_OP_ENABLE_0", 1)
    m.write_reg("NVDLA_SDP_RDMA.D_OP_ENABLE_0", 1)
