"""The convolution layer of each mode: the dispatcher above direct, image-input and Winograd.

:func:`compute_conv_layer` decodes the layer's mode (:func:`sim.conv.layer.conv_mode`) and
runs the matching pipeline; each returns CACC's output cube for the SDP and the counters
``{(unit, register): value}``.  Direct layers may reuse data and weights a previous layer
left in the CBUF; image-input and Winograd layers leave nothing there for the next one.
"""

from __future__ import annotations

import numpy as np

from .cdma import Cbuf
from .direct import compute_direct_layer
from .layer import DIRECT, IMAGE, conv_mode, decode_layer


def compute_conv_layer(ctx, cbuf: Cbuf | None = None, during=None
                       ) -> tuple[np.ndarray, dict, Cbuf]:
    """CACC's output cube, the layer's counters and what the CBUF holds afterwards.

    The cube is (K, H', W'), or (N, K, H', W') for a direct layer of several batches.
    A direct layer's decoded configuration is left on the context (``ctx.conv_layer``,
    None for the other modes, which decode inside their pipelines) for the layer's
    listeners: sim.runtime.macs counts its MACs from it instead of decoding it again.
    ``during``: called once while a direct layer's weights are fetched
    (:func:`sim.conv.direct.compute_direct_layer`); the other modes do not call it.
    """
    mode = conv_mode(ctx)
    ctx.conv_layer = None
    if mode == DIRECT:
        layer = ctx.conv_layer = decode_layer(ctx)
        cbuf = cbuf or Cbuf()
        out, counters = compute_direct_layer(ctx, layer, cbuf, during)
        return (out if layer.batches > 1 else out[0]), counters, cbuf
    if mode == IMAGE:  # the rarer modes load with their first layer
        from .image import compute_image_layer as compute
    else:
        from .winograd import compute_winograd_layer as compute
    out, counters = compute(ctx)
    return out, counters, Cbuf()
