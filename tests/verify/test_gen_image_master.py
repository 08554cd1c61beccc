"""nvdla-sim gen on master-map configurations: the CDMA image path reads 8-bit pixel formats
only (NVIDIA's master RTL builds the 10/12/16-bit ones only without FEATURE_DATA_TYPE_INT8,
which every master project defines; nv_small's RTL reads other pixels for them)."""

from __future__ import annotations

import pytest

from sim.configs import CONFIGS
from sim.dma.pixel import PIXEL_FORMATS, pixel_format
from sim.gen import generate

from .gen_helpers import assert_refused, write_spec

MASTER = sorted(n for n, c in CONFIGS.items() if c.address_map == "master")


def _spec(tmp_path, name: str, config: str):
    f = pixel_format(name)
    body = (f'unit = "conv"\nmode = "image"\nkernels = 2\nkernel = [1, 1]\n'
            f'pixel_format = "{name}"\nprecision = "int8"\ninput = [{f.channels}, 3, 4]\n')
    if f.precision != "int8" and f.dtype.kind != "f":
        body += "pixel_cvt = [0, 1, 8]\n"
    return write_spec(tmp_path, body, config=config)


@pytest.mark.parametrize("config", MASTER)
@pytest.mark.parametrize("name", list(PIXEL_FORMATS))
def test_master_configs_take_8_bit_pixel_formats_only(tmp_path, capsys, config, name):
    spec = _spec(tmp_path, name, config)
    fmt = pixel_format(name)
    if fmt.precision == "int8":
        generate(spec, tmp_path / "o", fmt="cfg")  # accepted
    else:
        assert_refused(tmp_path, capsys, spec,
                       rf"\.pixel_format: {name} has {fmt.precision} pixels, which {config}'s CDMA "
                       "cannot read: it takes 8-bit formats only")


def test_nv_full_still_takes_16_bit_pixel_formats(tmp_path):
    generate(_spec(tmp_path, "T_Y16___U16V16_N444", "nv_full"), tmp_path / "o", fmt="cfg")
