"""Dispatch of the convolution modes other than direct feature input.

:func:`special_mode` returns the function computing the layer -- image input
(:mod:`sim.conv.image`) or Winograd (:mod:`sim.conv.winograd`) -- or None for
direct convolution of a feature cube.  The function returns CACC's output
cube for the SDP and the counters ``{(unit, register): value}``.
"""

from __future__ import annotations

from .layer import CACC, CDMA, CMAC_A, CMAC_B, CSC


def special_mode(ctx):
    cdma = ctx.regs(CDMA)
    if cdma.datain_format:
        from .image import compute_image_layer
        return compute_image_layer
    if any(ctx.regs(unit).conv_mode for unit in (CDMA, CSC, CMAC_A, CMAC_B, CACC)):
        from .winograd import compute_winograd_layer
        return compute_winograd_layer
    return None


CDMA_COUNTERS = ("D_NAN_INPUT_DATA_NUM_0", "D_INF_INPUT_DATA_NUM_0", "D_NAN_INPUT_WEIGHT_NUM_0",
                 "D_INF_INPUT_WEIGHT_NUM_0")


def layer_counters(data_counters: dict, weight_counters: dict) -> dict:
    """Every CDMA NaN/Inf counter and CACC's saturation count of a layer (0 unless found)."""
    found = {**data_counters, **weight_counters}
    counters = {(CDMA, name): found.get(name, 0) for name in CDMA_COUNTERS}
    counters[(CACC, "D_OUT_SATURATION_0")] = 0
    return counters
