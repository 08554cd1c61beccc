"""CDP engine: local response normalization (input through CDP_RDMA).

One layer reads a W x H x C feature cube through CDP_RDMA, normalizes each
pixel across channels (:mod:`sim.cdp.lrn`) and writes a cube of the same
size and precision.  The LUT RAM is programmed through S_LUT_ACCESS_CFG/DATA
(:class:`sim.num.lut.LutRam`), which this engine intercepts; the tables in
force when the layer runs are used.

The whole last atom of each pixel is read and written, so the channels that
pad it to a whole atom are processed too.  Counters stored at layer end:
D_NAN_INPUT_NUM / D_INF_INPUT_NUM (fp16: every element of every atom read,
padding channels of the last atom included), D_NAN_OUTPUT_NUM,
D_OUT_SATURATION (0 where the configuration's RTL ties it to 0) and the five LUT
counters (every channel of every atom).
"""

from __future__ import annotations

from ..chains import CDP, CDP_RDMA
from ..dma import read_feature, write_feature
from ..dma.align import align_up
from ..dma.elements import element_dtype, elements_per_atom
from ..dram import ELEMENTWISE
from ..engine import Engine, armed_groups
from ..num.lut import ACCESS_DATA, LUT_PORTS, LutRam


class CdpEngine(Engine):
    name = "CDP"
    units = (CDP, CDP_RDMA)

    def __init__(self):
        self.lut_ram = LutRam(cfg_readback="address", past_end="ignore")

    def ready(self, machine):
        if not machine.regfile.is_armed(CDP):
            return None
        return armed_groups(machine, (CDP, CDP_RDMA))

    # -- LUT RAM access ----------------------------------------------------------
    def on_write(self, machine, reg, value: int) -> bool:
        return reg.unit == CDP and self.lut_ram.on_write(reg.name, value)

    def write_hooks(self) -> frozenset:
        return self.computed_reads()  # the LUT's ports

    def on_read(self, machine, reg):
        return self.lut_ram.on_read(reg.name) if reg.unit == CDP else None

    def computed_reads(self) -> frozenset:
        return frozenset(f"{CDP}.{port}" for port in LUT_PORTS)

    def data_ports(self) -> dict:
        """Register -> what consumes its every write, as :meth:`on_write` would (the
        machine calls it directly: a LUT upload is thousands of writes)."""
        return {f"{CDP}.{ACCESS_DATA}": self.lut_ram.write}

    # -- layer ------------------------------------------------------------------
    def run(self, ctx):
        from .config import CdpConfig  # the decoder and datapath load with the first layer
        from .lrn import LrnSettings, normalize

        cfg = CdpConfig.from_blocks(ctx.regs(CDP), ctx.regs(CDP_RDMA), ctx.config)
        atom = ctx.config.atom_bytes
        group = elements_per_atom(cfg.precision, atom)
        shape = (align_up(cfg.channels, group), cfg.height, cfg.width)
        src_mem = ctx.memory(cfg.src_ram, "NVDLA_CDP_RDMA.D_SRC_DMA_CFG_0.SRC_RAM_TYPE")
        dst_mem = ctx.memory(cfg.dst_ram, "NVDLA_CDP.D_DST_DMA_CFG_0.DST_RAM_TYPE")
        # CDP_RDMA fetches each input byte once (line by line, a run of atoms of every
        # surface at a time) and the datapath keeps the channel window itself, so an
        # output written over its own input with the same strides (NVIDIA's compiler
        # places LRN so) only overwrites elements already read: ELEMENTWISE
        raw = read_feature(src_mem, cfg.src_addr, shape, cfg.precision, atom,
                           cfg.src_line_stride, cfg.src_surface_stride,
                           what="NVDLA_CDP_RDMA.D_SRC_BASE_ADDR", mode=ELEMENTWISE)
        settings = LrnSettings(
            precision=cfg.precision, window=cfg.window, sqsum_bypass=cfg.sqsum_bypass,
            mul_bypass=cfg.mul_bypass, nan_to_zero=cfg.nan_to_zero, datin=cfg.datin,
            datout=cfg.datout,
        )
        le, lo = self.lut_ram.snapshot()
        out, counters = normalize(raw.reshape(shape[0], -1), cfg.channels, settings, le, lo,
                                  cfg.lut)
        result = out.astype(element_dtype(cfg.precision)).reshape(shape)
        write_feature(dst_mem, cfg.dst_addr, result, cfg.precision, atom,
                      cfg.dst_line_stride, cfg.dst_surface_stride,
                      what="NVDLA_CDP.D_DST_BASE_ADDR")
        if not ctx.config.cdp_saturation_counter:
            counters["D_OUT_SATURATION_0"] = 0  # the register is tied to 0 there
        for name, value in counters.items():
            ctx.set_counter(CDP, name, value)

    def interrupts(self, ctx):
        return [("CDP", CDP)]
