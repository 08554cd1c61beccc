"""Inside a network: each convolution layer's time, fully connected layers against the others.

    python benchmarks/bench_layers.py [--shared ../shared] [--firmware KMD_DIR]
        [--repeat N] [--only TEXT]

``bench_conv.py`` holds the fully connected fp16 MAC stage to the convolution's on equal
random data; this script measures what a user's network does with its own data.  Each
network in ``<shared>/networks`` (NVIDIA's KMD firmware as for ``bench_networks.py``) runs
in this process: once untimed (modules, kernels and the firmware's build load once per
process), then ``--repeat`` times with a layer listener timing every hardware layer (a
convolution layer's time includes its SDP's, which writes its output).  A layer is fully
connected when it is a direct convolution of one output pixel whose kernel covers its
input.  Printed per network with both kinds: each kind's layers, logical MACs (as the
summary line counts them, ``sim.runtime.macs``), their seconds in the run where they took
least (each kind its own best of ``--repeat``: a busy moment of the machine slows one kind
in one run, not its best) and MACs per second, then the fully connected layers' MAC/s over
the convolutions'.

Logical MACs count products of zeros too, which the simulator skips where it can (as it
may: they add nothing), and networks differ there: AlexNet's grouped convolutions are
compiled whole (half their weights are 0) and ReLU zeroes a quarter to a half of each
layer's data, so 39% of its convolutions' logical MACs have two non-zero operands against
60% of its fully connected layers'.  So each layer's non-zero products
(:func:`nonzero_products` of its input and weights as its CDMA fetches them, counted before
it runs in the untimed run; a Winograd layer's counted whole, which can only raise the
convolutions' rate) are printed too, with each kind's rate of them and their ratio.  Goal
(issue "Speed"): AlexNet-class fully connected layers no slower per MAC than
convolutions, read on equal work: a ratio of non-zero products a second of at least 1
(``bench_conv.py`` holds the two MAC stages to each other on equal dense data).  A
network's one small classifier layer (a few M MACs) takes about a millisecond, mostly the
fixed cost of a layer: its ratio is printed, judged only from ``FC_CLASS_MACS`` on.
"""

from __future__ import annotations

import time

import numpy as np
from timing import compiled_networks, network_arguments, network_inputs, verdict

GOAL_RATIO = 1.0
#: Fully connected layers of this many logical MACs in all (AlexNet's: 59 M) are judged by
#: the goal; a classifier head of a few M MACs is mostly a layer's fixed cost
FC_CLASS_MACS = 10_000_000
KINDS = ("fully connected", "convolution")


class LayerClock:
    """A layer listener (``sim.listeners.LayerListener``) timing each convolution layer:
    (kind, MACs, seconds) in :attr:`layers`; attached as the runner's ``layers`` argument."""

    def __init__(self):
        self.layers: list[tuple[str, int, float]] = []
        self._begun = None  # (context, start) of the running convolution layer

    def attach(self, machine) -> None:
        machine.listeners.add(self)

    def layer_begin(self, index: int, engine, ctx) -> None:
        from sim.runtime.macs import CONV_ENGINE

        self._begun = (ctx, time.perf_counter()) if engine.name == CONV_ENGINE else None

    def layer_end(self) -> None:
        if self._begun is None:
            return
        ctx, start = self._begun
        seconds = time.perf_counter() - start
        from sim.runtime.macs import conv_layer_macs

        macs = conv_layer_macs(ctx)  # leaves ctx.conv_layer for a direct layer
        self.layers.append((_kind(getattr(ctx, "conv_layer", None)), macs, seconds))
        self._begun = None


class ProductCounter:
    """A layer listener counting each convolution layer's non-zero products
    (:func:`layer_products`) before it runs: :attr:`products`, in the layers' order."""

    def __init__(self):
        self.products: list[int] = []

    def attach(self, machine) -> None:
        machine.listeners.add(self)

    def layer_begin(self, index: int, engine, ctx) -> None:
        from sim.runtime.macs import CONV_ENGINE

        if engine.name == CONV_ENGINE:
            self.products.append(layer_products(ctx))

    def layer_end(self) -> None:
        pass


def layer_products(ctx) -> int:
    """The products of the convolution layer ``ctx`` is about to run whose operands are both
    non-zero, from its input and weights as its CDMA fetches them (a direct or image-input
    layer; a Winograd layer's logical MACs, all counted)."""
    from sim.configs import FP16
    from sim.conv.cdma import fetch_feature, fetch_weights
    from sim.conv.image import decode_image_layer, direct_layer, fetch_image, fetch_image_weights
    from sim.conv.layer import DIRECT, IMAGE, conv_mode, decode_layer
    from sim.conv.mac_int import pad_value_of
    from sim.num.mac import fp16_mac_operands
    from sim.runtime.macs import conv_layer_macs

    mode = conv_mode(ctx)
    if mode == DIRECT:
        layer = decode_layer(ctx)
        cube, _ = fetch_feature(ctx, layer)
        weights, _ = fetch_weights(ctx, layer)
    elif mode == IMAGE:
        image = decode_image_layer(ctx)
        framed, _ = fetch_image(ctx, image)
        weights, _ = fetch_image_weights(ctx, image)
        cube, layer = framed[None], direct_layer(image, framed)
    else:
        return conv_layer_macs(ctx)
    if layer.precision == FP16:  # a zero's CMAC significand is 0 (+0 and -0), no other's
        cube, weights, pad = (fp16_mac_operands(np.asarray(a, np.uint16))[1]
                              for a in (cube, weights, layer.pad_value & 0xFFFF))
    else:
        pad = pad_value_of(layer)
    return nonzero_products(np.asarray(cube) != 0, np.asarray(weights) != 0, bool(pad != 0),
                            layer)


def nonzero_products(data, weights, pad: bool, layer) -> int:
    """The products of a direct layer (``layer``'s geometry) whose operands are both
    non-zero: ``data`` (N, C, H, W) and ``weights`` (K, C, R, S) booleans (non-zero),
    ``pad`` whether the pad element is.  For each kernel position (c, r, s): the kernels
    with a non-zero weight there times the output pixels whose input there is non-zero,
    over the CSC's view of the input (:func:`sim.conv.mac_int.padded_input`, ``im2col``)."""
    from sim.conv.mac_int import im2col, padded_input

    framed, _, _ = padded_input(data, layer, pad)
    seen = im2col(framed, layer).sum(axis=(0, 4, 5), dtype=np.int64)  # (C, R, S)
    return int((seen * weights.sum(axis=0, dtype=np.int64)).sum())


def _kind(layer) -> str:
    """A direct layer of one output pixel whose kernel covers the input is fully connected."""
    fully = layer is not None and layer.out_width * layer.out_height == 1 \
        and (layer.kernel_width, layer.kernel_height) == (layer.in_width, layer.in_height)
    return KINDS[0] if fully else KINDS[1]


def _totals(layers, products) -> dict[str, tuple[int, int, int, float]]:
    """kind -> (layers, MACs, non-zero products, seconds) of a run's ``layers`` (the clock's)
    and their ``products`` (:class:`ProductCounter`'s, the same layers in the same order)."""
    if len(products) != len(layers):
        raise ValueError(f"{len(products)} layers counted, {len(layers)} timed")
    out = {}
    for kind in KINDS:
        mine = [(m, p, s) for (k, m, s), p in zip(layers, products, strict=True) if k == kind]
        out[kind] = (len(mine), sum(m for m, _, _ in mine), sum(p for _, p, _ in mine),
                     sum(s for _, _, s in mine))
    return out


def _goal(ratio: float, fc_macs: int) -> str:
    """The verdict on a network's ratio of non-zero products a second, its fully connected
    layers having ``fc_macs`` logical MACs."""
    if fc_macs < FC_CLASS_MACS:
        return f"(goal for AlexNet-class layers, >= {FC_CLASS_MACS / 1e6:g} M MACs, only)"
    return verdict(ratio, GOAL_RATIO, "x", at_least=True)


def main() -> int:
    args = network_arguments(__doc__.splitlines()[0], repeat=3)
    networks = compiled_networks(args)
    if not networks:
        return 0
    from sim.runtime import read_loadable, run_loadable_bytes

    print(f"{'network':28} {'kind':16} {'layers':>6} {'MACs':>9} {'non-zero':>9} {'s':>7} "
          f"{'MAC/s':>8} {'non-zero/s':>10}")
    for path in networks:
        config = path.parent.parent.name
        loadable, inputs = read_loadable(path), network_inputs(path)
        counter = ProductCounter()  # untimed: loads what loads once, and counts
        run_loadable_bytes(loadable, args.firmware, config, inputs, layers=counter)
        best = {}  # kind -> its totals in the run where its layers took least
        for _ in range(args.repeat):
            clock = LayerClock()
            run_loadable_bytes(loadable, args.firmware, config, inputs, layers=clock)
            for kind, totals in _totals(clock.layers, counter.products).items():
                if kind not in best or totals[3] < best[kind][3]:
                    best[kind] = totals
        if not all(best[kind][0] for kind in KINDS):
            continue  # nothing to set side by side
        name = f"{config}/{path.parent.name}"
        rates, useful = {}, {}
        for kind in KINDS:
            count, macs, products, seconds = best[kind]
            rates[kind], useful[kind] = macs / seconds, products / seconds
            print(f"{name:28} {kind:16} {count:6d} {macs / 1e9:8.3f}G {products / 1e9:8.3f}G "
                  f"{seconds:7.3f} {rates[kind] / 1e9:7.2f}G {useful[kind] / 1e9:9.2f}G")
        ratio = useful[KINDS[0]] / useful[KINDS[1]]
        print(f"{name:28} fully connected / convolution, logical MACs a second: "
              f"{rates[KINDS[0]] / rates[KINDS[1]]:.2f} x (not the goal: zeros differ)")
        print(f"{name:28} fully connected / convolution, non-zero products a second: "
              f"{ratio:.2f} {_goal(ratio, best[KINDS[0]][1])}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
