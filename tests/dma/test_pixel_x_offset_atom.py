"""The CDMA's pixel X offset stays within the pixels of one memory atom of plane 0: Table 33's
limits are the 32-byte atom's; nv_small's 8-byte atom holds fewer pixels (NVIDIA's RTL asserts
an offset outside its atom mask, and nv_small's RTL bench reads other pixels: T_R8 offset 8 and
T_B8G8R8A8 offset 3 fail there, 7 and 1 pass)."""

import numpy as np
import pytest

from sim.dma.pixel import PIXEL_FORMATS, check_pixel_setting, max_x_offset, pixel_format
from sim.errors import SimError
from sim.gen import generate
from sim.program.conv_modes import program_image, run_mode

# (format, atom bytes, largest X offset): the pixels of plane 0 in one atom, less one
LIMITS = [
    ("T_R8", 32, 31), ("T_R8", 8, 7),
    ("T_B8G8R8A8", 32, 7), ("T_B8G8R8A8", 8, 1),
    ("T_Y8___U8V8_N444", 32, 31), ("T_Y8___U8V8_N444", 8, 7),
    ("T_A16B16G16R16", 32, 3), ("T_R16", 32, 15), ("T_A2B10G10R10", 32, 7),
]


@pytest.mark.parametrize("name, atom, top", LIMITS)
def test_x_offset_limit_is_one_atom_of_pixels(name, atom, top):
    fmt = pixel_format(name)
    assert max_x_offset(fmt, atom) == top
    check_pixel_setting(fmt, x_offset=top, atom_bytes=atom)
    with pytest.raises(SimError, match=rf"X offset {top + 1} is outside 0~{top} .*{atom}-byte"):
        check_pixel_setting(fmt, x_offset=top + 1, atom_bytes=atom)


def test_32_byte_atom_limits_are_table_33s():
    for fmt in PIXEL_FORMATS.values():
        assert max_x_offset(fmt, 32) == fmt.max_x_offset


def _spec(tmp_path, name: str, offset: int, config: str = "nv_small"):
    fmt = pixel_format(name)
    path = tmp_path / f"{name}_{offset}.toml"
    path.write_text(f'config = "{config}"\nseed = 3\n[[layer]]\nunit = "conv"\nmode = "image"\n'
                    f'precision = "int8"\npixel_format = "{name}"\n'
                    f'input = [{fmt.channels}, 3, 5]\nkernels = 2\nkernel = [1, 2]\n'
                    f'pixel_offset = {offset}\n')
    return path


@pytest.mark.parametrize("name, top", [("T_R8", 7), ("T_B8G8R8A8", 1), ("T_Y8___V8U8_N444", 7)])
def test_gen_holds_nv_small_to_its_atom(tmp_path, name, top):
    generate(_spec(tmp_path, name, top), tmp_path / "ok", fmt="cfg")
    with pytest.raises(SimError, match=rf"\.pixel_offset: {top + 1} is outside 0\.\.{top}"):
        generate(_spec(tmp_path, name, top + 1), tmp_path / "bad", fmt="cfg")
    generate(_spec(tmp_path, name, top + 1, "nv_full"), tmp_path / "full", fmt="cfg")


@pytest.mark.parametrize("config, offset, refused", [("nv_small", 1, False),
                                                     ("nv_small", 2, True),
                                                     ("nv_full", 7, False)])
def test_the_cdma_refuses_an_offset_past_the_atom(config, offset, refused):
    image = np.ones((4, 2, 3), np.uint8)
    w = np.ones((1, 4, 1, 1), np.int8)

    def run():
        return run_mode(config, program_image, image, w, fmt="T_A8B8G8R8", precision="int8",
                        x_offset=offset, cvt=(0, 1, 0))
    if refused:
        with pytest.raises(SimError, match=r"T_A8B8G8R8 X offset 2 is outside 0~1"):
            run()
    else:
        assert (run()[0] == 4).all()


def test_the_cdma_names_the_register_of_an_offset_past_the_atom():
    """Programmed past the helper's own check: the CDMA's decode names the register."""
    from sim.conv.modes import compute_conv_layer
    from sim.machine import LayerContext, Machine
    from sim.program.conv_modes import UNITS
    from sim.program.registers import set_reg

    m = Machine("nv_small")
    program_image(m, np.ones((4, 2, 3), np.uint8), np.ones((1, 4, 1, 1), np.int8),
                  fmt="T_A8B8G8R8", precision="int8", x_offset=1, cvt=(0, 1, 0))
    set_reg(m, "NVDLA_CDMA", "D_PIXEL_OFFSET_0", pixel_x_offset=2)
    with pytest.raises(SimError, match=r"NVDLA_CDMA\.D_PIXEL_OFFSET_0 PIXEL_X_OFFSET 2 is past "
                       r"T_A8B8G8R8's 2 pixels of one 8-byte memory atom"):
        compute_conv_layer(LayerContext(m, {u: 0 for u in UNITS}))
