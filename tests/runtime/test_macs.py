"""The MAC count of a run (sim.runtime.macs): each convolution's logical multiply-accumulates.

Expected counts are worked out from the layer shapes alone, never from the registers:
generated layers of each mode from their spec, and LeNet from its Caffe prototxt.
"""

import importlib
import re
from pathlib import Path

import pytest

from sim.cli import main
from sim.gen.spec import load_spec
from sim.machine import Machine
from sim.runtime import read_loadable, run_loadable_bytes
from sim.runtime.macs import MacCounter
from sim.runtime.runner import input_tensor

gen_build = importlib.import_module("sim.gen.build")  # the module (sim.gen exports build)
build = gen_build.build

NETWORKS = Path(__file__).resolve().parents[2].parent / "shared" / "networks"


def _counted(tmp_path, monkeypatch, config: str, layer: str) -> MacCounter:
    counter = MacCounter()
    monkeypatch.setattr(gen_build, "Machine", lambda name: _attached(name, counter))
    spec = tmp_path / "spec.toml"
    spec.write_text(f'config = "{config}"\nseed = 3\n\n[[layer]]\nunit = "conv"\n{layer}\n')
    build(load_spec(spec))
    return counter


def _attached(name, counter: MacCounter) -> Machine:
    m = Machine(name)
    counter.attach(m)
    return m


# (config, spec lines, expected MACs = out_w * out_h * kernels * C * R * S * batches)
CASES = [
    ("nv_full", 'precision = "int8"\ninput = [40, 9, 11]\nkernels = 5\nkernel = [3, 2]\n'
     "stride = [2, 1]\npad = [1, 0, 2, 1]",
     # out_h = (9 + 2 + 1 - 3) // 2 + 1 = 5, out_w = (11 + 1 + 0 - 2) // 1 + 1 = 11
     11 * 5 * 5 * 40 * 3 * 2),
    ("nv_full", 'precision = "int8"\ninput = [16, 12, 12]\nkernels = 4\nkernel = [3, 3]\n'
     "dilation = [2, 2]",  # a dilated 3x3 spans 5x5: 8x8 outputs, still 9 taps each
     8 * 8 * 4 * 16 * 3 * 3),
    ("nv_full", 'precision = "int8"\ninput = [8, 6, 7]\nkernels = 3\nkernel = [1, 1]\n'
     "batch = 3", 7 * 6 * 3 * 8 * 1 * 1 * 3),
    ("nv_full", 'precision = "fp16"\ninput = [8, 5, 5]\nkernels = 2\nkernel = [5, 5]',
     1 * 1 * 2 * 8 * 5 * 5),  # a fully-connected layer
    ("nv_full", 'precision = "int8"\nmode = "winograd"\ninput = [32, 8, 8]\nkernels = 16\n'
     "pad = [1, 3, 1, 3]",  # padded 12x12, the 4x4 tiles give 8x8 outputs of the 3x3 kernel
     8 * 8 * 16 * 32 * 3 * 3),
    ("nv_full", 'precision = "int8"\nmode = "image"\ninput = [4, 10, 9]\nkernels = 6\n'
     "kernel = [3, 2]",  # T_A8B8G8R8: 4 channels; out 8x8
     8 * 8 * 6 * 4 * 3 * 2),
]


@pytest.mark.parametrize("config,layer,expected", CASES,
                         ids=["strided", "dilated", "batches", "fc", "winograd", "image"])
def test_mac_count_of_a_generated_layer(tmp_path, monkeypatch, config, layer, expected):
    counter = _counted(tmp_path, monkeypatch, config, layer)
    assert (counter.conv_layers, counter.macs) == (1, expected)


def test_non_convolution_layers_count_nothing(tmp_path, monkeypatch):
    counter = MacCounter()
    monkeypatch.setattr(gen_build, "Machine", lambda name: _attached(name, counter))
    spec = tmp_path / "spec.toml"
    spec.write_text('config = "nv_full"\n\n[[layer]]\nunit = "pdp"\nprecision = "int8"\n'
                    'input = [8, 6, 6]\nmethod = "max"\nkernel = [2, 2]\nstride = [2, 2]\n')
    build(load_spec(spec))
    assert (counter.conv_layers, counter.macs) == (0, 0)


# -- LeNet, compiled by NVIDIA's compiler: the count from its prototxt --------------------------
def _prototxt_macs(text: str, input_channels: int) -> int:
    """MACs of a Caffe model of Convolution/Pooling/InnerProduct layers (others keep the
    shape), the input having ``input_channels`` (what the compiled network's tensor has)."""
    dims = [int(d) for d in re.search(r"input_shape\s*{([^}]*)}", text).group(1).split("dim:")[1:]]
    _, c, h, w = dims
    c = input_channels
    macs = 0
    for body in re.findall(r"layer\s*{(.*?)\n}", text, re.S):
        kind = re.search(r'type:\s*"(\w+)"', body).group(1)

        def num(key, default=None, body=body):
            found = re.search(rf"\b{key}:\s*(\d+)", body)
            return int(found.group(1)) if found else default
        if kind == "Convolution":
            k, r, s, p = num("num_output"), num("kernel_size"), num("stride", 1), num("pad", 0)
            h, w = (h + 2 * p - r) // s + 1, (w + 2 * p - r) // s + 1
            macs += h * w * k * c * r * r
            c = k
        elif kind == "Pooling":  # Caffe rounds pooled sizes up
            r, s, p = num("kernel_size"), num("stride", 1), num("pad", 0)
            h, w = -(-(h + 2 * p - r) // s) + 1, -(-(w + 2 * p - r) // s) + 1
        elif kind == "InnerProduct":
            k = num("num_output")
            macs += k * c * h * w
            c, h, w = k, 1, 1
    return macs


def test_prototxt_macs_by_hand():
    """The reference itself, against LeNet worked out by hand (1 input channel)."""
    text = ('input_shape { dim: 1 dim: 1 dim: 28 dim: 28 }\n'
            'layer {\n  type: "Convolution"\n  convolution_param { num_output: 20 '
            'kernel_size: 5 }\n}\nlayer {\n  type: "Pooling"\n  pooling_param { pool: MAX '
            'kernel_size: 2 stride: 2 }\n}\nlayer {\n  type: "InnerProduct"\n  '
            'inner_product_param { num_output: 10 }\n}\n')
    assert _prototxt_macs(text, 1) == 24 * 24 * 20 * 25 + 10 * 20 * 12 * 12


@pytest.mark.parametrize("config", ["nv_small", "nv_large", "nv_full"])
def test_lenet_mac_count_matches_its_prototxt(nvidia_kmd, config):
    folder = NETWORKS / config / "lenet"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: no compiled LeNet")
    loadable = read_loadable(folder / "lenet.nvdla")
    # NVIDIA's compiler feeds a grey image as a 4-component pixel format: the compiled
    # network's input tensor (and so its first convolution) has 4 channels
    channels = input_tensor(loadable, 0).dims[1]
    expected = _prototxt_macs((folder / "lenet.prototxt").read_text(), channels)
    result = run_loadable_bytes(loadable, nvidia_kmd, config,
                                {0: (folder / "input.bin").read_bytes()})
    assert result.macs == expected


def test_cli_summary_prints_the_mac_count(nvidia_kmd, tmp_path, capsys):
    """bench_networks reads the count from this line."""
    folder = NETWORKS / "nv_small" / "lenet"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: no compiled LeNet")
    code = main(["loadable", str(folder / "lenet.nvdla"), "--firmware", str(nvidia_kmd),
                 "--config", "nv_small", "--input", str(folder / "input.bin"), "-o",
                 str(tmp_path / "out")])
    assert code == 0
    channels = input_tensor(read_loadable(folder / "lenet.nvdla"), 0).dims[1]
    expected = _prototxt_macs((folder / "lenet.prototxt").read_text(), channels)
    assert f"6 hardware layers, {expected} MACs, 1 output in" in capsys.readouterr().out
