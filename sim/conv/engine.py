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
from ..errors import ConfigurationError, NotImplementedFeature
from .cdma import Cbuf, fetch_feature, fetch_weights
from .layer import CACC, CDMA, ConvLayer, decode_layer
from .mac_int import cacc_truncate, conv_sum
from .modes import special_mode

DATA_COUNTERS = ("D_NAN_INPUT_DATA_NUM_0", "D_INF_INPUT_DATA_NUM_0")
WEIGHT_COUNTERS = ("D_NAN_INPUT_WEIGHT_NUM_0", "D_INF_INPUT_WEIGHT_NUM_0")


def _reused(kept, shape, what: str):
    if kept is not None and kept[0].shape != shape:
        raise ConfigurationError(f"{CDMA}.D_MISC_CFG_0: {what}_REUSE, but the CBUF holds a "
                                 f"{kept[0].shape} cube and the layer needs {shape}")
    return kept


def compute_layer(ctx, layer: ConvLayer, cbuf: Cbuf | None = None) -> tuple[np.ndarray, dict]:
    """CACC's output cube (N, K, H', W') and the counters of the layer.

    Counters map (unit, register) to value.  ``cbuf`` carries data and
    weights a previous layer left in the CBUF (reuse/release flags).
    """
    cbuf = cbuf or Cbuf()
    data = _reused(cbuf.reused_data(layer),
                   (layer.batches, layer.channels, layer.in_height, layer.in_width), "DATA")
    if data is None:
        cube, found = fetch_feature(ctx, layer)
        data = (cube, {name: found.get(name, 0) for name in DATA_COUNTERS})
    kernels = _reused(cbuf.reused_weights(layer),
                      (layer.kernels, layer.channels, layer.kernel_height, layer.kernel_width),
                      "WEIGHT")
    if kernels is None:
        weights, found = fetch_weights(ctx, layer)
        kernels = (weights, {name: found.get(name, 0) for name in WEIGHT_COUNTERS})
    cbuf.keep(layer, data, kernels)
    cube, weights = data[0], kernels[0]
    counters = {(CDMA, name): v for name, v in {**data[1], **kernels[1]}.items()}
    counters[(CACC, "D_OUT_SATURATION_0")] = 0
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

    def __init__(self):
        self.cbuf = Cbuf()  # what the CBUF keeps between this machine's layers

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
            self.cbuf = Cbuf()  # image/Winograd layers: nothing kept for direct layers
        else:
            layer = decode_layer(ctx)
            out, counters = compute_layer(ctx, layer, self.cbuf)
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
