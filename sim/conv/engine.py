"""Convolution engine: CDMA -> CSC -> CMAC -> CACC -> SDP (-> PDP) on the fly.

A direct-convolution layer launches when CDMA, CSC, CMAC_A, CMAC_B, CACC and
the SDP chain it feeds are all armed (:mod:`sim.chains`).  The stages:

* :mod:`sim.conv.modes`  -- the dispatcher: direct (:mod:`sim.conv.direct`),
  image input (:mod:`sim.conv.image`) or Winograd (:mod:`sim.conv.winograd`);
* :mod:`sim.conv.layer`  -- decode and cross-check the registers, the mode;
* :mod:`sim.conv.cdma`   -- fetch the feature cube and the weights, counters;
* :mod:`sim.conv.mac_int` (int8/int16) or :mod:`sim.conv.mac_fp16` (fp16) --
  CSC + CMAC + CACC, with the arithmetic of :mod:`sim.num.mac`;
* the SDP receives CACC's cube on the fly (int32 for int8/int16, after
  D_CLIP_CFG truncation; fp32 bit patterns as uint32 for fp16) and writes
  memory.
"""

from __future__ import annotations

from ..chains import CONV_UNITS, SDP, sdp_chain
from ..engine import Engine, armed_groups
from ..lazy import loaded
from ..sdp.engine import prepare_sdp, process_sdp


class ConvEngine(Engine):
    name = "CONV"
    units = (*CONV_UNITS, "NVDLA_SDP", "NVDLA_SDP_RDMA", "NVDLA_PDP")
    idle_status = {"NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0": 1}

    def __init__(self):
        # what the CBUF keeps between this machine's layers (a sim.conv.cdma.Cbuf, made
        # with the first layer: the datapath modules load then)
        self.cbuf = None

    def ready(self, machine):
        rf = machine.regfile
        if not rf.is_armed("NVDLA_CDMA"):
            return None
        if not rf.is_armed(SDP):
            return None
        return armed_groups(machine, (*CONV_UNITS, *sdp_chain(machine)))

    def run(self, ctx):
        if self.cbuf is None:  # the datapaths load with the first layer
            self.cbuf = loaded("sim.conv.cdma").Cbuf()
        prepared = []  # the SDP layer, decoded while the weights are fetched
        out, counters, self.cbuf = loaded("sim.conv.modes").compute_conv_layer(
            ctx, self.cbuf, during=lambda: prepared.append(prepare_sdp(ctx)))
        for (unit, reg), value in counters.items():
            ctx.set_counter(unit, reg, value)
        # CACC's cube goes to the SDP on the fly
        process_sdp(ctx, out, prepared[0] if prepared else None)

    def interrupts(self, ctx):
        out = [("CDMA_DAT", "NVDLA_CDMA"), ("CDMA_WT", "NVDLA_CDMA"), ("CACC", "NVDLA_CACC"),
               ("SDP", SDP)]
        if "NVDLA_PDP" in ctx.groups:
            out.append(("PDP", "NVDLA_PDP"))
        return out
