"""gen's side of the hardware legality rules (:mod:`sim.rules`).

Before a layer is programmed, gen builds the rules' facts from the spec and
obeys every rule, documented limits included: a spec asking for an illegal
layer is an error naming the spec key that decides it and the rule.  The
register values the rules tie to the layer (CBUF entries a line, data and
weight banks) are chosen here as the C-model needs them.
"""

from __future__ import annotations

from dataclasses import replace

from ..dma.align import ceil_div
from ..rules import (
    ConvFacts,
    data_entries_needed,
    describe,
    entries_per_bank,
    line_entries,
    pdp_facts,
    sdp_facts,
    violations,
)

# the spec key that decides each rule (a layer's keys; "sdp."/"pdp." for the units on the fly)
KEYS = {
    "conv.cbuf_full_input": "input",
    "conv.cbuf_weight_group": "kernels",
    "conv.weight_group_margin": "kernels",
    "conv.pad_below_kernel": "pad",
    "conv.dilation_direct_only": "dilation",
    "image.entries_per_line": "input",
    "winograd.padded_input": "pad",
    "winograd.output_multiple_of_4": "pad",
    "winograd.output_size": "pad",
    "winograd.min_output": "input",
    "winograd.no_batch": "batch",
    "sdp.int16_to_int8": "out_precision",
    "sdp.pdp_same_precision": "out_precision",
    "sdp.batch_dst_64": "batch",
    "sdp.winograd_on_the_fly": "mode",
    "sdp.int8_widen_single": "out_precision",
    "sdp.batch_to_memory": "pdp",
    "sdp.winograd_to_memory": "pdp",
    "sdp.eql_output_cvt": "cvt",
    "sdp.eql_single_plain": "y.alu",
    "sdp.operand_two_bytes": "x2.mul",
    "sdp.one_by_one_packed": "input",
    "pdp.pad_below_kernel": "pad",
    "pdp.kernel_max_8": "kernel",
    "pdp.flying_no_split": "input",
    "pdp.flying_windows_tile": "stride",
    "pdp.line_buffer_width": "input",
}


def obey(layer, facts, keys: dict | None = None) -> None:
    """Raise the spec error of the first rule ``facts`` breaks, naming the spec key that
    decides it (``keys`` overrides :data:`KEYS` per rule)."""
    for rule in violations(facts):
        key = (keys or {}).get(rule.name) or KEYS[rule.name]
        raise layer.fail(key, describe(rule, facts))


def cbuf_plan(facts: ConvFacts) -> ConvFacts:
    """``facts`` with the CBUF programming the C-model needs: D_ENTRY_PER_SLICE the
    entries it stores a line in, as few data banks as the input needs and every other
    bank for the weights."""
    cfg = facts.cfg
    entries = line_entries(facts)
    facts = replace(facts, entries=entries)
    needed = ceil_div(data_entries_needed(facts), entries_per_bank(cfg))
    data_banks = min(max(needed, 1), cfg.cbuf_bank_count - 1)
    return replace(facts, data_banks=data_banks, weight_banks=cfg.cbuf_bank_count - data_banks)


def program_cbuf(m, facts: ConvFacts) -> None:
    """Write the CBUF programming of :func:`cbuf_plan` to the CDMA and CSC."""
    for unit in ("NVDLA_CDMA", "NVDLA_CSC"):
        m.set(unit, "D_ENTRY_PER_SLICE_0", entries=facts.entries - 1)
        m.set(unit, "D_BANK_0", data_bank=facts.data_banks - 1,
              weight_bank=facts.weight_banks - 1)


def obeys_rules(m, layer, units) -> None:
    """What gen programmed for ``layer`` (the blocks ``units`` enable), read back from the
    registers as a unit decoder sees it, breaks no rule; one that does is a bug of gen's."""
    from ..conv.layer import conv_facts, conv_mode
    from ..machine import LayerContext

    ctx = LayerContext(m.machine, dict(m.regfile.producer))
    facts = []
    if "NVDLA_CDMA" in units:
        facts.append(conv_facts(ctx, conv_mode(ctx)))
    if "NVDLA_SDP" in units:
        facts.append(sdp_facts(ctx.regs("NVDLA_SDP"), ctx.regs("NVDLA_SDP_RDMA"), m.config))
    if "NVDLA_PDP" in units:
        facts.append(pdp_facts(ctx.regs("NVDLA_PDP"), m.config))
    for fact in facts:
        for rule in violations(fact):
            raise RuntimeError(f"gen programmed layer {layer.index} ({layer.name}) against "
                               f"{rule.name}: {describe(rule, fact)}")
