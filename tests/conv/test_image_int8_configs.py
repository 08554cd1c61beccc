"""Image input on int8-only configurations: NVIDIA's master RTL (every master project
defines FEATURE_DATA_TYPE_INT8) builds the CDMA image path for the 8-bit pixel formats only;
nv_small's RTL reads other pixels for the rest, so the simulator refuses them there."""

import numpy as np
import pytest

from sim.configs import CONFIGS
from sim.dma.pixel import PIXEL_FORMATS, pixel_format
from sim.errors import ConfigurationError
from sim.program.conv_modes import program_image, run_mode

INT8_ONLY = sorted(n for n, c in CONFIGS.items() if not c.supports("int16"))


def _run(config: str, name: str):
    fmt = pixel_format(name)
    image = np.ones((fmt.channels, 2, 3), fmt.dtype)
    w = np.ones((1, fmt.channels, 1, 1), np.int8)
    return run_mode(config, program_image, image, w, fmt=name, precision="int8",
                    in_precision=str(fmt.precision), cvt=(0, 1, 0))


@pytest.mark.parametrize("config", INT8_ONLY)
@pytest.mark.parametrize("name", [n for n in PIXEL_FORMATS
                                  if pixel_format(n).precision != "int8"
                                  and pixel_format(n).dtype.kind != "f"])
def test_wide_pixel_formats_are_refused_on_int8_only_configs(config, name):
    with pytest.raises(ConfigurationError, match=rf"PIXEL_FORMAT {name}.*does not support"):
        _run(config, name)


@pytest.mark.parametrize("config", INT8_ONLY + ["nv_full"])
@pytest.mark.parametrize("name", ["T_R8", "T_A8B8G8R8", "T_Y8___V8U8_N444"])
def test_8_bit_pixel_formats_run_everywhere(config, name):
    out, _ = _run(config, name)
    assert out.size and (out == pixel_format(name).channels).all()  # ones times ones


def test_wide_pixel_formats_still_run_on_nv_full():
    out, _ = _run("nv_full", "T_Y16___U16V16_N444")
    assert out.size
