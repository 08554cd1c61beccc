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
summary line counts them, ``sim.runtime.macs``), the best run's seconds in them and MACs
per second, then the fully connected layers' MAC/s over the convolutions'.  Goal (issue
"Speed"): fully connected layers no slower per MAC than convolutions, a ratio of at least 1.
A network's convolutions can run ahead of its MACs where their data or weights are zero
(AlexNet's grouped convolutions are compiled whole: half their weights are 0), so the ratio
is the network's, not the MAC stage's.
"""

from __future__ import annotations

import time

from timing import compiled_networks, network_arguments, network_inputs, verdict

GOAL_RATIO = 1.0
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


def _kind(layer) -> str:
    """A direct layer of one output pixel whose kernel covers the input is fully connected."""
    fully = layer is not None and layer.out_width * layer.out_height == 1 \
        and (layer.kernel_width, layer.kernel_height) == (layer.in_width, layer.in_height)
    return KINDS[0] if fully else KINDS[1]


def _totals(layers) -> dict[str, tuple[int, int, float]]:
    """kind -> (layers, MACs, seconds)."""
    out = {}
    for kind in KINDS:
        mine = [(m, s) for k, m, s in layers if k == kind]
        out[kind] = (len(mine), sum(m for m, _ in mine), sum(s for _, s in mine))
    return out


def main() -> int:
    args = network_arguments(__doc__.splitlines()[0], repeat=3)
    networks = compiled_networks(args)
    if not networks:
        return 0
    from sim.runtime import read_loadable, run_loadable_bytes

    print(f"{'network':28} {'kind':16} {'layers':>6} {'MACs':>9} {'s':>7} {'MAC/s':>8}")
    for path in networks:
        config = path.parent.parent.name
        loadable, inputs = read_loadable(path), network_inputs(path)
        run_loadable_bytes(loadable, args.firmware, config, inputs)  # loads what loads once
        best = None
        for _ in range(args.repeat):
            clock = LayerClock()
            run_loadable_bytes(loadable, args.firmware, config, inputs, layers=clock)
            totals = _totals(clock.layers)
            if best is None or sum(t[2] for t in totals.values()) < \
                    sum(t[2] for t in best.values()):
                best = totals
        if not all(best[kind][0] for kind in KINDS):
            continue  # nothing to set side by side
        name = f"{config}/{path.parent.name}"
        rates = {}
        for kind in KINDS:
            count, macs, seconds = best[kind]
            rates[kind] = macs / seconds
            print(f"{name:28} {kind:16} {count:6d} {macs / 1e9:8.3f}G {seconds:7.3f} "
                  f"{rates[kind] / 1e9:7.2f}G")
        ratio = rates[KINDS[0]] / rates[KINDS[1]]
        print(f"{name:28} fully connected MAC/s / convolution MAC/s: {ratio:.2f} "
              f"{verdict(ratio, GOAL_RATIO, 'x', at_least=True)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
