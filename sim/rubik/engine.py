"""RUBIK engine: contract/split/merge (not modelled yet)."""

from __future__ import annotations

from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature

RBK = "NVDLA_RBK"


class RubikEngine(Engine):
    name = "RUBIK"
    units = (RBK,)

    def ready(self, machine):
        if RBK not in machine.regfile.units:
            return None
        return armed_groups(machine, (RBK,))

    def run(self, ctx):
        raise NotImplementedFeature("RUBIK", "layer")

    def interrupts(self, ctx):
        return [("RUBIK", RBK)]
