"""CDP engine: local response normalization (input through CDP_RDMA)."""

from __future__ import annotations

from ..chains import CDP, CDP_RDMA
from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature


class CdpEngine(Engine):
    name = "CDP"
    units = (CDP, CDP_RDMA)

    def ready(self, machine):
        if not machine.regfile.is_armed(CDP):
            return None
        return armed_groups(machine, (CDP, CDP_RDMA))

    def run(self, ctx):
        raise NotImplementedFeature("CDP", "layer")

    def interrupts(self, ctx):
        return [("CDP", CDP)]
