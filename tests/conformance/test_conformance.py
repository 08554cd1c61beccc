"""Every trace in passing.txt must still pass bit-exactly."""

from pathlib import Path

import pytest

from sim.trace import run_trace

LIST = Path(__file__).with_name("passing.txt")
SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def _listed():
    lines = (line.split("#", 1)[0].strip() for line in LIST.read_text().splitlines())
    return [line for line in lines if line]


@pytest.mark.parametrize("trace", _listed())
def test_trace_passes(trace):
    path = SHARED / trace
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: conformance traces not available")
    assert path.is_dir(), f"listed trace {trace} is missing from {SHARED}"
    config = Path(trace).parent.name
    result = run_trace(path, config)
    assert result.status == "pass", result.message
