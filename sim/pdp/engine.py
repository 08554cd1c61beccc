"""PDP engine: a standalone pooling layer (input from memory through PDP_RDMA)."""

from __future__ import annotations

from ..chains import PDP, PDP_RDMA, pdp_input_on_the_fly
from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature


class PdpEngine(Engine):
    name = "PDP"
    units = (PDP, PDP_RDMA)

    def ready(self, machine):
        if not machine.regfile.is_armed(PDP) or pdp_input_on_the_fly(machine):
            return None
        return armed_groups(machine, (PDP, PDP_RDMA))

    def run(self, ctx):
        raise NotImplementedFeature("PDP", "layer")

    def interrupts(self, ctx):
        return [("PDP", PDP)]
