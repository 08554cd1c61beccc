"""tools/cmodel_diff.py without the C-model: its random specs are gen's to take or refuse
(never a crash), and its filter of the known C-model/RTL differences is exact."""

import json
import random
import sys
from pathlib import Path

import pytest

from sim.errors import SimError
from sim.gen import generate

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import cmodel_diff
    finally:
        sys.path.remove(str(REPO / "tools"))
    return cmodel_diff


@pytest.mark.parametrize("only", ["sdp", "pdp", "cdp", "bdma", "rubik", "conv", "chain"])
def test_random_specs_generate_or_are_refused(tmp_path, tool, only):
    """Each drawn spec generates a trace our simulator replays (gen checks it) or gen refuses
    it with a SpecError; a few of them are taken."""
    r = random.Random(only)
    taken = 0
    for i in range(8):
        spec = tmp_path / f"{i}.toml"
        spec.write_text(tool.random_spec(r, {only}))
        try:
            generate(spec, tmp_path / f"t{i}", fmt="cfg")
            taken += 1
        except SimError:
            pass
    assert taken >= 2


@pytest.mark.parametrize("layer, known", [
    ('unit = "pdp"\nprecision = "int8"\ninput = [4, 4, 4]\nmethod = "average"\n'
     'pad = [1, 1, 1, 1]\npad_value = 300', True),
    ('unit = "pdp"\nprecision = "int8"\ninput = [4, 4, 4]\nmethod = "average"\n'
     'pad = [1, 1, 1, 1]\npad_value = -128', False),
    ('unit = "pdp"\nprecision = "int16"\ninput = [4, 4, 4]\nmethod = "average"\n'
     'pad = [1, 1, 1, 1]\npad_value = 300', False),
    ('unit = "pdp"\nprecision = "int8"\ninput = [4, 4, 4]\nmethod = "max"\n'
     'pad = [1, 1, 1, 1]\npad_value = 300', False),
    ('unit = "conv"\nprecision = "int8"\ninput = [4, 4, 4]\npad_value = 300\n'
     'pdp = { method = "average", pad_value = -129 }', True),
    ('unit = "conv"\nprecision = "int8"\ninput = [4, 4, 4]\npad_value = 300', False),
])
def test_int8_average_overflow_is_told_apart(tool, layer, known):
    assert tool.int8_average_overflows(f'config = "nv_full"\n[[layer]]\n{layer}\n') == known


def test_replay_sorts_disagreements_from_known_differences(tool, tmp_path):
    """A stand-in player-harness writes the result; RDMA NaN/Inf polls are known, others bad."""
    harness = tmp_path / "harness.py"
    result = {"trace_done": True, "wait_timeouts": 0, "error": None, "checks": [
        {"kind": "crc", "status": "MATCH", "size": "0x40", "addr": "0x80000000"},
        {"kind": "crc", "status": "MISMATCH", "size": "0x80", "addr": "0x80001000"}],
        "mismatches": ["poll_reg_equal@9 addr=0x0000a078 got=0x00000000 expect=0x5",
                       "poll_reg_equal@12 addr=0x0000b0d8 got=0x00000002 expect=0x5"]}
    harness.write_text("import json, sys\nout = sys.argv[sys.argv.index('-o') + 1]\n"
                       f"open(out + '/result.json', 'w').write(json.dumps({result!r}))\n")
    out = tmp_path / "out"
    out.mkdir()
    bad, known = tool.replay(tmp_path, Path("tp"), harness, None, out, 10)
    assert bad == ["poll poll_reg_equal@12 addr=0x0000b0d8 got=0x00000002 expect=0x5",
                   "crc MISMATCH of 0x80 bytes at 0x80001000"]
    assert known == ["poll poll_reg_equal@9 addr=0x0000a078 got=0x00000000 expect=0x5"]
    assert json.loads((out / "result.json").read_text())["trace_done"]
