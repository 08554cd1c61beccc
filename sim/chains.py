"""Which register blocks a layer needs, so fused pipelines launch together.

A layer launches only when the D_OP_ENABLE of every block in its chain is
armed: a direct convolution needs CDMA, CSC, CMAC_A, CMAC_B and CACC, plus
the SDP it feeds on the fly (and the SDP's RDMA when an operand comes from
memory), plus the PDP when the SDP's output goes to the PDP on the fly.
"""

from __future__ import annotations

SDP, SDP_RDMA, PDP, PDP_RDMA = "NVDLA_SDP", "NVDLA_SDP_RDMA", "NVDLA_PDP", "NVDLA_PDP_RDMA"
CDP, CDP_RDMA = "NVDLA_CDP", "NVDLA_CDP_RDMA"
CONV_UNITS = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CACC")


def consumer_block(machine, unit):
    rf = machine.regfile
    return rf.snapshot(unit, rf.consumer[unit])


def sdp_input_on_the_fly(machine) -> bool:
    return consumer_block(machine, SDP).flying_mode == 1


def _stage_reads_memory(block, prefix: str) -> bool:
    """Does the BS/BN/EW stage take an ALU or MUL operand from memory?"""
    def get(field):
        return getattr(block, f"{prefix}_{field}")

    if get("bypass"):
        return False
    return bool((not get("alu_bypass") and get("alu_src"))
                or (not get("mul_bypass") and get("mul_src")))


def sdp_needs_rdma(machine) -> bool:
    """SDP_RDMA runs when the input or any X1/X2/Y operand comes from memory.

    As in the hardware, the SDP's own stage registers decide (a stage not
    bypassed whose ALU or MUL operand source is MEM), not the DMAs' disable
    bits: the SDP waits for the RDMA layer exactly when it will read from it.
    """
    if not sdp_input_on_the_fly(machine):
        return True
    sdp = consumer_block(machine, SDP)
    return any(_stage_reads_memory(sdp, p) for p in ("bs", "bn", "ew"))


def sdp_output_to_pdp(machine) -> bool:
    return consumer_block(machine, SDP).output_dst == 1


def pdp_input_on_the_fly(machine) -> bool:
    return consumer_block(machine, PDP).flying_mode == 0


def sdp_chain(machine) -> list[str]:
    """SDP blocks of a layer (SDP_RDMA when needed, PDP when fed on the fly)."""
    units = [SDP]
    if SDP_RDMA in machine.regfile.units and sdp_needs_rdma(machine):
        units.append(SDP_RDMA)
    if sdp_output_to_pdp(machine):
        units.append(PDP)
    return units
