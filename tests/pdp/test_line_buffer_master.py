"""The PDP line buffer of NVIDIA's master RTL (nv_small, nv_large): gen keeps a pooling line's
output columns within it, as on nv_full.

The master RTL (NV_NVDLA_PDP_CORE_cal2d.v) has 8 banks of (atom / PDP throughput) x 16
entries, atom / throughput entries a column: 16 columns a bank on every configuration.  The
banks are shared by the output lines in flight, ceil(kernel_h / stride_h) rounded up to 1, 2,
4 or 8.  Past that the RTL misbehaves: on nv_small's RTL 129 columns at one line write wrong
bytes and 65 at two (33 at four) never raise the interrupt; the master C-model stalls too.
"""

import pytest

from sim.errors import SimError
from sim.gen import generate

BANKS, COLUMNS_PER_BANK = 8, 16


def lines_in_flight(kernel_h: int, stride_h: int) -> int:
    lines = -(-kernel_h // stride_h)
    return next(n for n in (1, 2, 4, 8) if n >= lines)


CASES = [(cfg, k, s) for cfg in ("nv_small", "nv_large")
         for k, s in ((2, 2), (2, 1), (3, 2), (3, 1), (7, 3), (5, 1), (8, 1))]


def _spec(tmp_path, cfg, kernel_h, stride_h, width):
    path = tmp_path / f"w{width}.toml"
    path.write_text(f'config = "{cfg}"\nseed = 1\n[[layer]]\nunit = "pdp"\nprecision = "int8"\n'
                    f'input = [8, {kernel_h + stride_h}, {width}]\nmethod = "max"\n'
                    f'kernel = [{kernel_h}, 1]\nstride = [{stride_h}, 1]\n')
    return path


@pytest.mark.parametrize("cfg, kernel_h, stride_h", CASES)
def test_gen_keeps_pdp_output_width_within_the_line_buffer(tmp_path, cfg, kernel_h, stride_h):
    columns = BANKS * COLUMNS_PER_BANK // lines_in_flight(kernel_h, stride_h)
    generate(_spec(tmp_path, cfg, kernel_h, stride_h, columns), tmp_path / "fits", fmt="cfg")
    with pytest.raises(SimError, match=rf"{columns + 1} output columns .* exceed the line "
                       rf"buffer's {columns} .*pdp\.line_buffer_width"):
        generate(_spec(tmp_path, cfg, kernel_h, stride_h, columns + 1), tmp_path / "over",
                 fmt="cfg")
