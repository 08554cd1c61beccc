"""The player's bare form of a .cfg trace (sim.trace.cfg.parse_bare): plain register writes
as tuples, everything else as parse_cfg's ops, and the same places in errors."""

import pytest

from sim.trace.cfg import bare_where, parse_bare, parse_cfg
from sim.trace.ops import RegWrite
from sim.trace.player import TracePlayer, run_trace

TEXTS = [  # lines of every kind, plain writes among them, and forms that are not plain
    "reg_write(NVDLA_SDP.S_POINTER_0, 0x1);\n",
    "// head\nreg_write(NVDLA_SDP.S_POINTER_0, 0x0);\npoll_reg_equal(NVDLA_SDP.S_STATUS_0, 0x0);\n",
    "reg_write(NVDLA_SDP.S_POINTER_0, 7);\nreg_write(NVDLA_SDP.S_POINTER_0, 0xffffffff);\n",
    "reg_write( NVDLA_SDP.S_POINTER_0 , 0x1 ) ; // a note\nreg_write(NVDLA_SDP.S_POINTER_0, 0x1);",
    'mem_init(pri_mem, 0x80000000, 0x40, ALL_ZERO);\nreg_write(NVDLA_SDP.S_POINTER_0, 0b11);\n'
    "intr_notify(SDP_0, id);\ncheck_nothing(id);\n\n  \n",
    "reg_write(NVDLA_SDP.S_POINTER_0, 0x1); // after\r\nreg_write(NVDLA_SDP.S_POINTER_0, 0x2);\n",
    "reg_write(NVDLA_SDP.S_POINTER_0, 0x0_1);\nreg_write(NVDLA_SDP.S_POINTER_0, 0);\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_bare_ops_are_parse_cfgs_with_their_places(tmp_path, text):
    path = tmp_path / "t.cfg"
    path.write_text(text)
    ops = parse_cfg(path)
    bare = parse_bare(path)
    made = [RegWrite(op[0], op[1], where=bare_where(path, op)) if type(op) is tuple else op
            for op in bare]
    assert made == ops
    assert [op.where for op in made] == [op.where for op in ops]
    assert any(type(op) is tuple for op in bare) == ("reg_write(N" in text)


@pytest.mark.parametrize("value", ["0x100000000", "0xzz", "12ab", "010"])
def test_a_bad_plain_value_is_the_same_error(tmp_path, value):
    path = tmp_path / "t.cfg"
    path.write_text(f"// x\nreg_write(NVDLA_SDP.S_POINTER_0, {value});\n")
    with pytest.raises(Exception) as cfg_error:
        parse_cfg(path)
    with pytest.raises(type(cfg_error.value)) as bare_error:
        parse_bare(path)
    assert str(bare_error.value) == str(cfg_error.value) and "t.cfg:2" in str(cfg_error.value)


def _trace(tmp_path, body):
    folder = tmp_path / "nv_full" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text(body)
    return folder


def test_a_failing_bare_write_is_located_at_its_line(tmp_path):
    folder = _trace(tmp_path, "// x\nreg_write(NVDLA_SDP.S_POINTER_0, 0x0);\n"
                              "reg_write(NVDLA_SDP.D_BOGUS_0, 0x1);\ncheck_nothing(a);\n")
    result = run_trace(folder)
    assert result.status == "error"
    assert result.message.startswith(f"{folder / 't.cfg'}:3: ")


@pytest.mark.parametrize("told", [False, True])
def test_the_player_writes_the_same_either_way(tmp_path, told):
    """A player told of each op (before_op) sees every line as an op, and ends in the
    state of one that writes the bare tuples."""
    folder = _trace(tmp_path, "reg_write(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x5);\n"
                              "reg_write( NVDLA_SDP.D_DATA_CUBE_HEIGHT_0, 0x6 ); // n\n"
                              "poll_reg_equal(NVDLA_SDP.D_DATA_CUBE_WIDTH_0, 0x5);\n")
    seen = []
    player = TracePlayer(folder / "t.cfg", "nv_full", before_op=seen.append if told else None)
    player.play()
    rf = player.machine.regfile
    assert (player.machine.read_reg("NVDLA_SDP.D_DATA_CUBE_WIDTH_0"),
            player.machine.read_reg("NVDLA_SDP.D_DATA_CUBE_HEIGHT_0")) == (5, 6)
    assert player.checks == 1 and rf is player.machine.regfile
    assert [op.cmd for op in seen] == (["reg_write", "reg_write", "poll_reg"] if told else [])
