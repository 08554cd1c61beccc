"""Direct convolution of a feature cube: CDMA fetch (or CBUF reuse) -> CSC/CMAC -> CACC.

int8/int16 go through :mod:`sim.conv.mac_int` (exact sums, CACC truncation);
fp16 through :mod:`sim.conv.mac_fp16` (block-aligned MACs, 48-bit CACC, fp32 out).
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16
from ..dma.weights import DcStream
from ..errors import ConfigurationError
from ..jit import run_split
from ..lazy import loaded
from .cdma import Cbuf, fetch_feature, fetch_weights
from .layer import CACC, CDMA, ConvLayer, layer_counters
from .mac_int import WeightPrep, conv_cacc, kernels_shared

DATA_COUNTERS = ("D_NAN_INPUT_DATA_NUM_0", "D_INF_INPUT_DATA_NUM_0")
WEIGHT_COUNTERS = ("D_NAN_INPUT_WEIGHT_NUM_0", "D_INF_INPUT_WEIGHT_NUM_0")
#: A layer fetching fewer bytes (data and weights) fetches them on one thread: handing the
#: weights to another costs about what fetching this much takes (small traces' layers
#: ran 5% faster in a row).
OVERLAP_BYTES = 1 << 16
#: Weights this many times the data's bytes or more are fetched after the data on the
#: calling thread: the data side is then too short to overlap, and the weights' unpack
#: and NaN counts spread over the cores themselves (from a helper thread they could not).
WEIGHTS_ALONE = 8


def _reused(kept, shape, what: str):
    if kept is not None and kept[0].shape != shape:
        raise ConfigurationError(f"{CDMA}.D_MISC_CFG_0: {what}_REUSE, but the CBUF holds a "
                                 f"{kept[0].shape} cube and the layer needs {shape}")
    return kept


def _stream_weights(ctx, layer: ConvLayer) -> bool:
    """Whether the products take the layer's weights as their DC stream (fp16 layers: the
    products of a small layer read it as it is, :func:`sim.conv.mac_fp16.reads_stream`;
    the others unpack it in one pass with the transpose they make of it); not where the
    CBUF keeps them for the next layer (SKIP_WEIGHT_RLS: kept unpacked)."""
    return layer.precision == FP16 and not layer.skip_weight_release


def compute_direct_layer(ctx, layer: ConvLayer, cbuf: Cbuf | None = None, during=None
                         ) -> tuple[np.ndarray, dict]:
    """CACC's output cube (N, K, H', W') and the counters of the layer.

    Counters map (unit, register) to value.  ``cbuf`` carries data and
    weights a previous layer left in the CBUF (reuse/release flags).

    The weights of a layer of ``OVERLAP_BYTES`` or more (and less than ``WEIGHTS_ALONE``
    times its data) are fetched (and made ready for the products) by another thread
    while this one fetches the data and then calls ``during()`` (work of the layer's
    that needs neither, such as the SDP's operands);
    errors are raised in the order of a fetch of the data, then of the weights.
    """
    cbuf = cbuf or Cbuf()
    integer = layer.precision != FP16

    def data_side():
        data = _reused(cbuf.reused_data(layer),
                       (layer.batches, layer.channels, layer.in_height, layer.in_width), "DATA")
        if data is None:
            cube, found = fetch_feature(ctx, layer)
            data = (cube, {name: found.get(name, 0) for name in DATA_COUNTERS})
        return data

    def weight_side():
        kernels = _reused(cbuf.reused_weights(layer),
                          (layer.kernels, layer.channels, layer.kernel_height,
                           layer.kernel_width), "WEIGHT")
        if kernels is None:
            weights, found = fetch_weights(ctx, layer, as_stream=_stream_weights(ctx, layer))
            kernels = (weights, {name: found.get(name, 0) for name in WEIGHT_COUNTERS})
        if not integer:
            return kernels, None
        prep = cbuf.kept_prep(kernels[0])  # reused weights: already prepared
        return kernels, prep or WeightPrep(kernels[0], float32=not kernels_shared(layer))

    results: list = [None, None]

    def sides(start: int, stop: int) -> None:
        for i in range(start, stop):
            try:
                results[i] = (True, (data_side, weight_side)[i]())
            except Exception as exc:  # noqa: BLE001 - raised below, in the fetch order
                results[i] = (False, exc)
            if i == 0 and during is not None:
                during()

    data_bytes = layer.element_bytes * (
        layer.batches * layer.channels * layer.in_height * layer.in_width)
    overlap = layer.weight_bytes + data_bytes >= OVERLAP_BYTES \
        and layer.weight_bytes < WEIGHTS_ALONE * data_bytes
    run_split(sides, 2, min_chunk=1 if overlap else 2)
    for ok, value in results:
        if not ok:
            raise value
    data, (kernels, prep) = results[0][1], results[1][1]
    cbuf.keep(layer, data, kernels, prep)
    cube, weights = data[0], kernels[0]
    counters = layer_counters(data[1], kernels[1])
    if not integer:
        out = loaded("sim.conv.mac_fp16").conv_fp16(cube, weights, layer, ctx.config.mac_atomic_c)
        if isinstance(weights, DcStream):  # its NaNs and Infs, counted as the products read it
            nans, infs = (int(n) for n in weights.totals)
            counters[(CDMA, WEIGHT_COUNTERS[0])] += nans
            counters[(CDMA, WEIGHT_COUNTERS[1])] += infs
    else:
        out, saturated = conv_cacc(cube, weights, layer, prep)
        counters[(CACC, "D_OUT_SATURATION_0")] = saturated
    return out, counters
