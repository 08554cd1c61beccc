"""gen's expected results held to references that share nothing with the simulator.

``gen`` computes its goldens with the simulator, so running them on the simulator
proves only that it agrees with itself.  Here the inputs gen wrote are decoded
with the documented feature layout (format.rst: element (c, h, w) at surface
c // C', line h, atom w, lane c % C'), the layer is computed by an independent
reference (tests/pdp/reference.py, written from the documented semantics, or the
byte copy a BDMA does), and the golden file gen wrote must hold exactly that.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pdp.reference import pool_int  # tests/ is on the path: its folders are packages

from sim.gen import generate
from sim.memfiles import read_hex_dat, read_record_dat, record_runs
from sim.trace.cfg import parse_cfg

SPECS = Path(__file__).resolve().parents[2] / "examples" / "specs"


def _registers(trace: Path) -> dict[str, int]:
    """The last value the trace writes to each register (by name)."""
    return {op.args[0]: op.args[1] for op in parse_cfg(trace) if op.cmd == "reg_write"}


def _cube(data: bytes, shape, atom: int, line: int, surface: int) -> np.ndarray:
    """An int8 (C, H, W) cube from its bytes, by the documented layout (8-bit lanes)."""
    c, h, w = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    offsets = (c // atom) * surface + h * line + w * atom + c % atom
    return np.frombuffer(data, np.int8)[offsets]


def test_pdp_golden_is_the_documented_pooling(tmp_path):
    """examples/specs/pdp_int8.toml: int8 3x3 average, stride 2, padding 1 of value -20,
    on a 16x9x11 cube (nv_small: 8-lane atoms)."""
    folder = tmp_path / "pdp"
    generate(SPECS / "pdp_int8.toml", folder, fmt="both")  # the cfg has the CRC, txn the bytes
    regs = _registers(folder / "pdp.cfg")
    (records,) = [record_runs(read_record_dat(p)) for p in folder.glob("layer0_in*.dat")]
    assert len(records) == 1 and records[0][0] == 0
    src = _cube(records[0][1], (16, 9, 11), 8, regs["NVDLA_PDP_RDMA.D_SRC_LINE_STRIDE_0"],
                regs["NVDLA_PDP_RDMA.D_SRC_SURFACE_STRIDE_0"])
    want = pool_int(src, (3, 3), (2, 2), (1, 1, 1, 1), "average", pad_value=-20,
                    recip=(regs["NVDLA_PDP.D_RECIP_KERNEL_WIDTH_0"],
                           regs["NVDLA_PDP.D_RECIP_KERNEL_HEIGHT_0"]))
    assert want.shape == (16, 5, 6)
    golden = read_hex_dat(folder / "layer0_out.dat")
    got = _cube(golden, want.shape, 8, regs["NVDLA_PDP.D_DST_LINE_STRIDE_0"],
                regs["NVDLA_PDP.D_DST_SURFACE_STRIDE_0"])
    np.testing.assert_array_equal(got, want)


def test_bdma_golden_is_the_copy(tmp_path):
    """examples/specs/bdma_copy.toml: 2 surfaces of 4 lines of 64 bytes, packed on both
    sides: the destination holds the source's bytes."""
    folder = tmp_path / "nv_full" / "bdma"
    generate(SPECS / "bdma_copy.toml", folder, fmt="txn")
    (src,) = folder.glob("*layer0_in1.dat")
    data = read_hex_dat(src)
    assert len(data) == 2 * 4 * 64
    assert read_hex_dat(folder / "layer0_out.dat") == data
