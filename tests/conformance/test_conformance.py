"""Every trace in passing.txt must still pass bit-exactly; every one in rejected.txt must
be refused with the hardware rule it breaks."""

import re
import shutil
from pathlib import Path

import pytest

from sim.trace import run_trace

LIST = Path(__file__).with_name("passing.txt")
REJECTED = Path(__file__).with_name("rejected.txt")
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


def _rejected() -> list[tuple[str, str]]:
    lines = (line.split("#", 1)[0].strip() for line in REJECTED.read_text().splitlines())
    return [tuple(line.split(None, 1)) for line in lines if line]


@pytest.mark.parametrize("trace, rule", _rejected())
def test_trace_breaking_a_rule_is_refused(trace, rule):
    path = SHARED / trace
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: conformance traces not available")
    assert path.is_dir(), f"listed trace {trace} is missing from {SHARED}"
    result = run_trace(path, Path(trace).parent.name)
    assert result.status == "error" and rule in result.message, result.message
    assert "internal error" not in result.message and "\n" not in result.message


def _integer_lrn():
    """Listed CDP traces with integer data (their names say the precision)."""
    return [t for t in _listed() if "cdp" in Path(t).name and "fp16" not in Path(t).name]


@pytest.mark.parametrize("path", ["numpy", "lookups", "memo"])
@pytest.mark.parametrize("trace", _integer_lrn())
def test_integer_lrn_passes_in_numpy_and_in_the_fused_kernel(trace, path, monkeypatch):
    """Small layers run the CDP's integer LRN in numpy while numba is not loaded, in the
    fused kernel large layers take once it is: force each, the kernel looking each sum
    up or every reachable sum once (the memo), and hold them to the same traces."""
    import sim.cdp.lrn as lrn

    monkeypatch.setattr(lrn, "_fused", lambda _x: path != "numpy")
    monkeypatch.setattr(lrn, "MEMO_SHARE", 0 if path == "memo" else 1 << 62)
    test_trace_passes(trace)


def _integer_sdp():
    return [t for t in _listed() if "sdp" in Path(t).name and "fp16" not in Path(t).name]


@pytest.mark.parametrize("memo", [False, True], ids=["lookups", "memo"])
@pytest.mark.parametrize("trace", _integer_sdp())
def test_integer_sdp_passes_with_the_lut_kernel(trace, memo, monkeypatch):
    """Large integer SDP layers look up the LUT in a kernel (sim.sdp.lut_int), each value
    or every value of the block's range once (the memo); force both."""
    import sim.sdp.lut_int as lut_int

    monkeypatch.setattr(lut_int, "KERNEL_MIN", 0)
    monkeypatch.setattr(lut_int, "MEMO_SHARE", 0 if memo else 1 << 62)
    test_trace_passes(trace)


RTL_DIFFERS = Path(__file__).with_name("rtl_differs.txt")


def _rtl_differs() -> list[tuple[str, str, str]]:
    lines = (line.split("#", 1)[0].strip() for line in RTL_DIFFERS.read_text().splitlines())
    return [tuple(line.split()[:3]) for line in lines if line]


@pytest.mark.parametrize("trace, register, rtl_value", _rtl_differs())
def test_trace_expecting_the_c_models_register_gets_the_rtls(trace, register, rtl_value,
                                                             tmp_path):
    path = SHARED / trace
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: conformance traces not available")
    config = Path(trace).parent.name
    result = run_trace(path, config)
    assert result.status == "fail" and f"{register} reads {rtl_value}" in result.message, \
        result.message
    copy = tmp_path / config / path.name
    shutil.copytree(path, copy)
    (cfg,) = copy.glob("*.cfg")
    text, n = re.subn(rf"poll_reg_equal\({re.escape(register)}, 0x[0-9a-f]+\)",
                      f"poll_reg_equal({register}, {rtl_value})", cfg.read_text())
    assert n == 1
    cfg.write_text(text)
    result = run_trace(copy, config)
    assert result.status == "pass", result.message
