"""Multiply-accumulates of a run: what a network costs, counted as its convolution layers run.

:class:`MacCounter` listens to a machine's layers (:class:`sim.listeners.LayerListener`)
and, when a convolution layer has run, adds the multiply-accumulates of the convolution
its registers describe:

    output width x height x kernels x (input channels x kernel width x kernel height),
    times the batches

-- the layer's *logical* MACs, the figure a network's description gives, never the
hardware's padded lanes and atoms.  By mode:

* direct: the decoded layer (:func:`sim.conv.layer.decode_layer`), dilation aside;
  a fully-connected layer is a direct convolution whose kernel covers the input;
* deconvolution: NVDLA has no deconvolution mode, so it is counted as the direct
  convolutions it runs as (:mod:`sim.conv.deconv`: one per output phase with the
  stride-split kernel, whose zero-filled taps count);
* image input: the pixel format's channels (alpha included when the format has it)
  times the R x S kernel before the CSC's channel pre-extension;
* Winograd F(2x2, 3x3): the 3x3 kernel the transformed 4x4 weights stand for, on the
  channels the CDMA reads times the stride folded into them, not the 16 products per
  tile the CMAC does.

Only layers that completed are counted (``layer_end`` is not called for a layer
that raised).  The convolution engine leaves a direct layer's decoded registers on
the layer context (``ctx.conv_layer``), so those are not decoded twice; image-input
and Winograd layers are decoded again after they ran (a fraction of a millisecond).
"""

from __future__ import annotations

CONV_ENGINE = "CONV"


def direct_layer_macs(layer) -> int:
    """The logical multiply-accumulates of a decoded direct layer (:class:`ConvLayer`)."""
    return (layer.batches * layer.out_width * layer.out_height * layer.kernels
            * layer.channels * layer.kernel_width * layer.kernel_height)


def conv_layer_macs(ctx) -> int:
    """The logical multiply-accumulates of the convolution layer ``ctx`` runs."""
    from ..conv.layer import DIRECT, IMAGE, conv_mode, decode_layer

    layer = getattr(ctx, "conv_layer", None)  # left by sim.conv.modes.compute_conv_layer
    if layer is not None:
        return direct_layer_macs(layer)
    mode = conv_mode(ctx)
    if mode == DIRECT:
        return direct_layer_macs(decode_layer(ctx))
    if mode == IMAGE:
        from ..conv.image import decode_image_layer

        image = decode_image_layer(ctx)  # no batch mode
        return (image.out_width * image.out_height * image.weights.kernels * image.channels
                * image.kernel_width * image.kernel_height)
    from ..conv.winograd import decode_winograd_layer

    wino = decode_winograd_layer(ctx)  # no batch mode
    folded = wino.channels * wino.stride_x * wino.stride_y
    return wino.out_width * wino.out_height * wino.weights.kernels * folded * 3 * 3


class MacCounter:
    """Attach to a machine; :attr:`macs` sums its convolution layers, :attr:`conv_layers`
    counts them."""

    def __init__(self):
        self.macs = 0
        self.conv_layers = 0
        self._ctx = None

    def attach(self, machine) -> MacCounter:
        machine.listeners.add(self)
        return self

    def detach(self, machine) -> None:
        machine.listeners.remove(self)

    def layer_begin(self, index: int, engine, ctx) -> None:
        self._ctx = ctx if engine.name == CONV_ENGINE else None

    def layer_end(self) -> None:
        if self._ctx is not None:
            self.macs += conv_layer_macs(self._ctx)
            self.conv_layers += 1
            self._ctx = None
