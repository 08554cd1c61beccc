"""CDP engine: local response normalization (input through CDP_RDMA).

One layer reads a W x H x C feature cube through CDP_RDMA, normalizes each
pixel across channels (:mod:`sim.cdp.lrn`) and writes a cube of the same
size and precision.  The LUT RAM is programmed through S_LUT_ACCESS_CFG/DATA
(:class:`sim.cdp.lut.LutRam`), which this engine intercepts; the tables in
force when the layer runs are used.

Counters stored at layer end: D_NAN_INPUT_NUM / D_INF_INPUT_NUM (fp16: every
element of every atom read, padding channels of the last atom included),
D_NAN_OUTPUT_NUM, D_OUT_SATURATION and the five LUT counters (every channel
of every atom written is counted).
"""

from __future__ import annotations

import numpy as np

from ..chains import CDP, CDP_RDMA
from ..configs import FP16, INT8
from ..dma import read_feature, write_feature
from ..dma.elements import elements_per_atom
from ..engine import Engine, armed_groups
from .config import CdpConfig
from .lrn import N_COUNTERS, NAN_OUTPUT, SATURATION, lrn_fp16, lrn_int
from .lut import COUNTER_NAMES, LutRam

ACCESS_CFG = "S_LUT_ACCESS_CFG_0"
ACCESS_DATA = "S_LUT_ACCESS_DATA_0"


class CdpEngine(Engine):
    name = "CDP"
    units = (CDP, CDP_RDMA)

    def __init__(self):
        self.lut_ram = LutRam()

    def ready(self, machine):
        if not machine.regfile.is_armed(CDP):
            return None
        return armed_groups(machine, (CDP, CDP_RDMA))

    # -- LUT RAM access ----------------------------------------------------------
    def on_write(self, machine, reg, value: int) -> bool:
        if reg.unit != CDP:
            return False
        if reg.name == ACCESS_CFG:
            self.lut_ram.configure(value)
            return False  # the register file keeps the word too
        if reg.name == ACCESS_DATA:
            self.lut_ram.write(value)
            return True
        return False

    def on_read(self, machine, reg):
        if reg.unit != CDP:
            return None
        if reg.name == ACCESS_CFG:
            return self.lut_ram.read_cfg()
        if reg.name == ACCESS_DATA:
            return self.lut_ram.read()
        return None

    # -- layer ------------------------------------------------------------------
    def run(self, ctx):
        cfg = CdpConfig.from_blocks(ctx.regs(CDP), ctx.regs(CDP_RDMA), ctx.config)
        atom = ctx.config.atom_bytes
        group = elements_per_atom(cfg.precision, atom)
        cpad = -(-cfg.channels // group) * group
        shape = (cpad, cfg.height, cfg.width)
        raw = read_feature(ctx.memory(cfg.src_ram), cfg.src_addr, shape, cfg.precision, atom,
                           cfg.src_line_stride, cfg.src_surface_stride,
                           what="NVDLA_CDP_RDMA.D_SRC_BASE_ADDR")
        x = raw.reshape(cpad, -1).astype(np.int64)
        out = np.zeros_like(x)
        counters = np.zeros(N_COUNTERS, np.int64)
        le, lo = self.lut_ram.snapshot()
        half = (cfg.window - 1) // 2
        nan_in = inf_in = 0
        if cfg.precision == FP16:
            bits = x & 0xFFFF
            special = (bits & 0x7C00) == 0x7C00
            nan_in = int(np.count_nonzero(special & ((bits & 0x3FF) != 0)))
            inf_in = int(np.count_nonzero(special & ((bits & 0x3FF) == 0)))
            lrn_fp16(x, cfg.channels, cfg.nan_to_zero, half, cfg.sqsum_bypass, cfg.mul_bypass,
                     le, lo, cfg.lut, out, counters)
            result = out.astype(np.uint16)
        else:
            int8 = cfg.precision == INT8
            pad = _sign_extend(cfg.datin[0], 8 if int8 else 16)
            lrn_int(x, cfg.channels, pad, int8, np.array(cfg.datin, np.int64), half,
                    cfg.sqsum_bypass, cfg.mul_bypass, np.array(cfg.datout, np.int64),
                    le, lo, cfg.lut, out, counters)
            result = out.astype(np.int8 if int8 else np.int16)
            if int8:
                counters[SATURATION] += phantom_saturations(x.size, ctx.config.cdp_throughput)
        write_feature(ctx.memory(cfg.dst_ram), cfg.dst_addr, result.reshape(shape),
                      cfg.precision, atom, cfg.dst_line_stride, cfg.dst_surface_stride,
                      what="NVDLA_CDP.D_DST_BASE_ADDR")
        ctx.set_counter(CDP, "D_NAN_INPUT_NUM_0", nan_in)
        ctx.set_counter(CDP, "D_INF_INPUT_NUM_0", inf_in)
        ctx.set_counter(CDP, "D_NAN_OUTPUT_NUM_0", counters[NAN_OUTPUT])
        ctx.set_counter(CDP, "D_OUT_SATURATION_0", counters[SATURATION])
        for index, name in enumerate(COUNTER_NAMES):
            ctx.set_counter(CDP, name, counters[index])

    def interrupts(self, ctx):
        return [("CDP", CDP)]


def phantom_saturations(elements: int, throughput: int) -> int:
    """Saturations NVDLA's C-model adds for lanes that do not exist (int8 data).

    Its int8 output convertor works on pairs of lanes; with an odd CDP
    throughput (1 on nv_small) every call also converts a second lane read
    past the end of its buffer.  That lane holds stack garbage, which in
    practice always saturates, and D_OUT_SATURATION counts it (observed on
    every nv_small trace of the C-model: one extra saturation per element).
    """
    if throughput % 2 == 0:
        return 0
    return elements // throughput


def _sign_extend(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
