"""Convolution engine: CDMA -> CSC -> CMAC -> CACC -> SDP (-> PDP) on the fly.

A direct-convolution layer launches when CDMA, CSC, CMAC_A, CMAC_B, CACC and
the SDP chain it feeds are all armed (:mod:`sim.chains`).  The stages:

* :mod:`sim.conv.layer`  -- decode and cross-check the registers;
* :mod:`sim.conv.cdma`   -- fetch the feature cube and the weights, counters;
* :mod:`sim.conv.mac_int` (int8/int16) or :mod:`sim.conv.mac_fp16` (fp16) --
  CSC + CMAC + CACC;
* the SDP receives CACC's cube on the fly (int32 for int8/int16, after
  D_CLIP_CFG truncation; fp32 bit patterns as uint32 for fp16) and writes
  memory.
"""

from __future__ import annotations

import numpy as np

from ..chains import CONV_UNITS, SDP, sdp_chain
from ..configs import FP16
from ..engine import Engine, armed_groups
from ..errors import NotImplementedFeature
from .cdma import fetch_feature, fetch_weights
from .layer import CACC, CDMA, ConvLayer, decode_layer
from .mac_int import cacc_truncate, conv_sum
from .modes import special_mode


def compute_layer(ctx, layer: ConvLayer) -> tuple[np.ndarray, dict]:
    """CACC's output cube (N, K, H', W') and the counters of the layer.

    Counters map (unit, register) to value.
    """
    cube, data_counters = fetch_feature(ctx, layer)
    weights, weight_counters = fetch_weights(ctx, layer)
    counters = {(CDMA, k): v for k, v in {**data_counters, **weight_counters}.items()}
    if layer.precision == FP16:
        from .mac_fp16 import conv_fp16
        out = conv_fp16(cube, weights, layer, ctx.config.mac_atomic_c)
    else:
        acc = conv_sum(cube, weights, layer)
        out, saturated = cacc_truncate(acc, layer.clip_truncate)
        counters[(CACC, "D_OUT_SATURATION_0")] = saturated
    return out, counters


def deliver_to_sdp(ctx, cube: np.ndarray) -> None:
    """Hand CACC's output to the SDP on the fly (the SDP writes memory)."""
    try:
        from ..sdp.engine import process_sdp
    except ImportError:
        raise NotImplementedFeature("SDP", "on-the-fly input from CACC") from None
    process_sdp(ctx, cube)


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
        special = special_mode(ctx)  # image input / Winograd (sim.conv.modes)
        if special is not None:
            out, counters = special(ctx)
        else:
            layer = decode_layer(ctx)
            out, counters = compute_layer(ctx, layer)
            out = out if layer.batches > 1 else out[0]
        for (unit, reg), value in counters.items():
            ctx.set_counter(unit, reg, value)
        self.deliver(ctx, out)

    deliver = staticmethod(deliver_to_sdp)

    def interrupts(self, ctx):
        out = [("CDMA_DAT", "NVDLA_CDMA"), ("CDMA_WT", "NVDLA_CDMA"), ("CACC", "NVDLA_CACC"),
               ("SDP", SDP)]
        if "NVDLA_PDP" in ctx.groups:
            out.append(("PDP", "NVDLA_PDP"))
        return out
