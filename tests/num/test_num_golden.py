"""sim.num against the golden vectors NVDLA's own HLS models produced.

One test per file of ../shared/golden/fp: every input array goes to
``getattr(sim.num, name)`` under its own name and every output must match bit
for bit.
"""

from pathlib import Path

import numpy as np
import pytest

import sim.num

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden" / "fp"

PRIMITIVES = [
    "fp16_add", "fp16_sub", "fp16_mul", "fp16_max", "fp16_min",
    "fp17_add", "fp17_sub", "fp17_mul", "fp17_max", "fp17_min",
    "fp32_add", "fp32_sub", "fp32_mul",
    "fp16_to_fp17", "fp16_to_fp32", "fp17_to_fp16", "fp17_to_fp32",
    "fp32_to_fp16", "fp32_to_fp17", "uint16_to_fp17",
]  # fmt: skip
BLOCKS = [
    "cdma_cvt", "cdp_icvt", "cdp_ocvt", "cdp_sq", "csc_cvt",
    "sdp_x", "sdp_c", "sdp_y_cvt", "sdp_y_core", "sdp_y_idx", "sdp_y_inp",
]  # fmt: skip
NOT_INPUTS = {"sat", "targeted", "wrapper_input_type"}


def _is_output(key: str) -> bool:
    """out, out_fraction, ... and sat are results; out_precision is a setting."""
    return key == "sat" or (key.startswith("out") and key != "out_precision")


def _load(name: str) -> dict:
    if not GOLDEN.is_dir():
        pytest.skip(f"{GOLDEN} is absent: golden vectors not available")
    path = GOLDEN / f"{name}.npz"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def _report(name: str, key: str, expected: np.ndarray, got, inputs: dict) -> str:
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{name}.{key}: shape {got.shape} != {expected.shape}"
    bad = np.argwhere(got.astype(np.uint64) != expected.astype(np.uint64))
    if not len(bad):
        return ""
    row = tuple(bad[0])
    shown = {k: hex(int(v[row[: v.ndim]])) for k, v in inputs.items()}
    return (
        f"{name}.{key}: {len(bad)} of {expected.size} differ; first at {row}: inputs {shown}, "
        f"expected {hex(int(expected[row]))}, got {hex(int(got[row]))}"
    )


@pytest.mark.parametrize("name", PRIMITIVES)
def test_primitive(name):
    data = _load(name)
    inputs = {k: data[k] for k in ("a", "b") if k in data}
    got = getattr(sim.num, name)(*inputs.values())
    assert not _report(name, "out", data["out"], got, inputs)


@pytest.mark.parametrize("name", BLOCKS)
def test_block(name):
    data = _load(name)
    inputs = {k: v for k, v in data.items() if not _is_output(k) and k not in NOT_INPUTS}
    outputs = {k: v for k, v in data.items() if _is_output(k)}
    got = getattr(sim.num, name)(**inputs)
    assert set(got) == set(outputs)
    problems = [_report(name, k, v, got[k], inputs) for k, v in outputs.items()]
    assert not any(problems), "\n".join(p for p in problems if p)


def test_every_golden_file_has_a_test():
    if not GOLDEN.is_dir():
        pytest.skip(f"{GOLDEN} is absent: golden vectors not available")
    names = {p.stem for p in GOLDEN.glob("*.npz")}
    assert names <= set(PRIMITIVES + BLOCKS), sorted(names - set(PRIMITIVES + BLOCKS))
