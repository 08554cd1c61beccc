"""Convolution engine: CDMA -> CSC -> CMAC -> CACC -> SDP (-> PDP) on the fly."""

from __future__ import annotations

from ..chains import CONV_UNITS, SDP, sdp_chain
from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature


class ConvEngine(Engine):
    name = "CONV"
    units = (*CONV_UNITS, "NVDLA_SDP", "NVDLA_SDP_RDMA", "NVDLA_PDP")
    idle_status = {"NVDLA_CDMA.S_CBUF_FLUSH_STATUS_0": 1}

    def ready(self, machine):
        rf = machine.regfile
        if not rf.is_armed("NVDLA_CDMA"):
            return None
        if not rf.is_armed(SDP):
            return None
        return armed_groups(machine, (*CONV_UNITS, *sdp_chain(machine)))

    def run(self, ctx):
        raise NotImplementedFeature("CONV", "direct convolution")

    def interrupts(self, ctx):
        out = [("CDMA_DAT", "NVDLA_CDMA"), ("CDMA_WT", "NVDLA_CDMA"), ("CACC", "NVDLA_CACC"),
               ("SDP", SDP)]
        if "NVDLA_PDP" in ctx.groups:
            out.append(("PDP", "NVDLA_PDP"))
        return out
