"""The MAC counter reads the direct layer the convolution engine decoded (no second decode),
and counts the same as decoding the registers again."""

import importlib

import sim.conv.layer as conv_layer
import sim.conv.modes as conv_modes
from sim.gen.spec import load_spec
from sim.machine import Machine
from sim.runtime import macs as macs_module
from sim.runtime.macs import MacCounter

gen_build = importlib.import_module("sim.gen.build")  # the module (sim.gen exports build)

DIRECT = ('precision = "int8"\ninput = [40, 9, 11]\nkernels = 5\nkernel = [3, 2]\n'
          "stride = [2, 1]\npad = [1, 0, 2, 1]")
EXPECTED = 11 * 5 * 5 * 40 * 3 * 2  # out_w * out_h * kernels * C * R * S


class _Recorder(MacCounter):
    """A MAC counter that also counts through a fresh decode of the registers."""

    def __init__(self):
        super().__init__()
        self.decoded = []

    def layer_end(self) -> None:
        if self._ctx is not None:
            ctx = self._ctx
            left = ctx.conv_layer
            ctx.conv_layer = None  # what the count would be without the engine's layer
            self.decoded.append(macs_module.conv_layer_macs(ctx))
            ctx.conv_layer = left
        super().layer_end()


def _build(tmp_path, monkeypatch, counter):
    def machine(name):
        m = Machine(name)
        counter.attach(m)
        return m
    monkeypatch.setattr(gen_build, "Machine", machine)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'config = "nv_full"\nseed = 3\n\n[[layer]]\nunit = "conv"\n{DIRECT}\n')
    gen_build.build(load_spec(spec))


def test_a_direct_layer_is_decoded_once(tmp_path, monkeypatch, count_calls):
    calls = count_calls(conv_layer.decode_layer, (conv_layer, "decode_layer"),
                        (conv_modes, "decode_layer"))
    counter = MacCounter()
    _build(tmp_path, monkeypatch, counter)
    assert (counter.conv_layers, counter.macs) == (1, EXPECTED)
    assert len(calls) == 1


def test_the_engine_layer_counts_as_the_registers_do(tmp_path, monkeypatch):
    counter = _Recorder()
    _build(tmp_path, monkeypatch, counter)
    assert counter.decoded == [EXPECTED]
    assert (counter.conv_layers, counter.macs) == (1, EXPECTED)
