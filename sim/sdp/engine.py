"""SDP engine: a standalone SDP layer (input from memory through SDP_RDMA)."""

from __future__ import annotations

from ..chains import SDP, sdp_chain, sdp_input_on_the_fly
from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature


class SdpEngine(Engine):
    name = "SDP"
    units = ("NVDLA_SDP", "NVDLA_SDP_RDMA", "NVDLA_PDP")

    def ready(self, machine):
        rf = machine.regfile
        if not rf.is_armed(SDP) or sdp_input_on_the_fly(machine):
            return None
        return armed_groups(machine, sdp_chain(machine))

    def run(self, ctx):
        raise NotImplementedFeature("SDP", "layer")

    def interrupts(self, ctx):
        out = [("SDP", SDP)]
        if "NVDLA_PDP" in ctx.groups:
            out.append(("PDP", "NVDLA_PDP"))
        return out
