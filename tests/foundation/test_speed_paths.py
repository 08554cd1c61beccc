"""The shortcuts of the register-write and trace-parsing paths against the plain paths.

* a ``.cfg`` reg_write line split without the regex gives the op the regex gives (and
  a line the shortcut does not take still parses as before);
* a LUT data-port write the machine hands straight to the LUT RAM does what the
  engine's ``on_write`` hook does, listeners told first, and a configuration lacking
  the unit still refuses it;
* the listeners' truth the machine and memories keep follows add/remove.
"""

from __future__ import annotations

import random

import pytest

from sim.errors import SimError
from sim.machine import Machine
from sim.num.lut import LutRam
from sim.trace import cfg
from sim.trace.ops import RegWrite

LUT_DATA = ("NVDLA_SDP.S_LUT_ACCESS_DATA_0", "NVDLA_CDP.S_LUT_ACCESS_DATA_0")


def _regex_op(line: str, where: str):
    """What the regex path alone makes of a line (the parser before the shortcut)."""
    quick = cfg._REG_WRITE.match(line)
    if quick is None:
        return cfg._parse_line(where, line, False)
    reg, text_value, note = quick.groups()
    return RegWrite(reg, cfg.parse_int(text_value, where, "register value", 32), where=where,
                    note=note.strip() if note else "")


def _outcome(parse, text):
    try:
        return [(type(op).__name__, vars(op)) for op in parse(text)]
    except SimError as exc:
        return ("error", str(exc))


LINES = [
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0xffffffff);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x100000000);",  # too wide: an error
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0xzz);",  # not a number
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1_0);",  # underscore: the regex path
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, -1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, +1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0,0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1) ;",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1); // note",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1)",
    "  reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);  ",
    "reg_write(NVDLA-SDP.D_OP_ENABLE_0, 0x1);",  # not a name
    "reg_write(1NVDLA.X_0, 0x1);",  # starts with a digit: the regex path
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1, 2);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, , 0x1);",
    "reg_write(, 0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, );",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1);;",
    "reg_write(NVDLA_SDP.D_OP_ÉNABLE_0, 0x1);",  # non-ASCII: the regex path
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, ٣);",  # a non-ASCII digit
    "reg_write(NVDLA_SDP..D_OP_ENABLE_0, 0x1);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1); reg_write(X.Y_0, 0x2);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1); // a, b",
    'reg_write(NVDLA_SDP.D_OP_ENABLE_0, "0x1");',
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0b101);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0o17);",
    "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 010);",
    "reg_read(NVDLA_SDP.D_OP_ENABLE_0);",
    "// a comment",
    "",
]


@pytest.mark.parametrize("line", LINES)
def test_a_reg_write_line_parses_as_the_regex_path_parses_it(line):
    def plain(text):
        return [op for op in (_regex_op(line, "t.cfg:1"),) if op is not None]

    assert _outcome(lambda text: cfg.parse(text, "t.cfg"), line) == _outcome(plain, line)


def test_random_reg_write_lines_parse_as_the_regex_path_parses_them():
    rng = random.Random(1234)
    alphabet = "reg_write(NVDLA_SDP.D0x1f, );/ \t_-.+zZ9"
    base = "reg_write(NVDLA_SDP.D_OP_ENABLE_0, 0x1f);"
    for _ in range(3000):
        line = list(base)
        for _ in range(rng.randint(1, 3)):  # a few characters replaced, inserted or deleted
            i = rng.randrange(len(line) + 1)
            roll = rng.random()
            if roll < 0.4 and i < len(line):
                line[i] = rng.choice(alphabet)
            elif roll < 0.8:
                line.insert(i, rng.choice(alphabet))
            elif i < len(line):
                del line[i]
        text = "".join(line)
        want = _outcome(lambda t, text=text: [op for op in (_regex_op(text, "t.cfg:1"),)
                                              if op is not None], text)
        assert _outcome(lambda t: cfg.parse(t, "t.cfg"), text) == want, text


def _lut_session(machine: Machine, unit: str, rng: random.Random) -> list[tuple[str, int]]:
    """A LUT upload and readback with edge values, past the table's end too."""
    writes = []
    for table in (0, 1):
        for start in (0, 60, 255, 1023):
            writes.append((f"{unit}.S_LUT_ACCESS_CFG_0", (1 << 17) | (table << 16) | start))
            for _ in range(rng.choice((1, 3, 70))):
                writes.append((f"{unit}.S_LUT_ACCESS_DATA_0",
                               rng.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x1FFFF, 0xFFFFFFFF,
                                           rng.getrandbits(32)))))
    writes.append((f"{unit}.S_LUT_ACCESS_CFG_0", 0))  # read access: data writes ignored
    writes.append((f"{unit}.S_LUT_ACCESS_DATA_0", 0x1234))
    return writes


@pytest.mark.parametrize("unit", ["NVDLA_SDP", "NVDLA_CDP"])
def test_lut_data_port_writes_do_what_the_engine_hook_does(unit):
    fast, hooked = Machine("nv_full"), Machine("nv_full")
    assert f"{unit}.S_LUT_ACCESS_DATA_0" in fast._ports
    hooked._ports = {}  # every write through the engines' on_write hooks
    heard = {id(m): [] for m in (fast, hooked)}

    class Ear:
        def __init__(self, m):
            self.m = m

        def wrote_register(self, register, value):
            heard[id(self.m)].append((register.full_name, value))

    for m in (fast, hooked):
        m.register_listeners.add(Ear(m))
    writes = _lut_session(fast, unit, random.Random(7))
    # by address too: the plans are shared, the port is each machine's own
    writes += [(fast.regfile.address_of(fast._reg(name)), v) for name, v in writes[:40]]
    for m in (fast, hooked):
        for reg, value in writes:
            m.write_reg(reg, value)
    ram = {id(m): m.engines[m._write_hooks[unit][0]] for m in (fast, hooked)}

    def lut_of(engine) -> LutRam:
        return engine.lut if hasattr(engine, "lut") else engine.lut_ram

    a, b = lut_of(ram[id(fast)]), lut_of(ram[id(hooked)])
    assert [list(t) for t in a._entries] == [list(t) for t in b._entries]
    assert (a.addr, a.table, a.write_access) == (b.addr, b.table, b.write_access)
    assert heard[id(fast)] == heard[id(hooked)] and len(heard[id(fast)]) == len(writes)
    for m in (fast, hooked):  # the data port's word never reaches the register file
        reg = m._reg(f"{unit}.S_LUT_ACCESS_DATA_0")
        assert m.regfile.peek(reg) == 0


def test_a_lut_port_of_a_unit_the_configuration_lacks_is_refused():
    m = Machine("nv_small")
    lacking = [name for name in LUT_DATA if name.partition(".")[0] in m._lacking]
    for name in lacking:
        with pytest.raises(SimError):
            m.write_reg(name, 1)


def test_listener_truth_follows_add_and_remove():
    m = Machine("nv_full")

    class Ear:
        def __init__(self):
            self.heard = []

        def wrote_register(self, register, value):
            self.heard.append(value)

        def wrote(self, memory, addr, size):
            self.heard.append((addr, size))

        def wrote_feature(self, *args):
            pass

    ear = Ear()
    assert not m._register_listening and not m.pri_mem._listening
    m.register_listeners.add(ear)
    m.pri_mem.listeners.add(ear)
    assert m._register_listening and m.pri_mem._listening
    m.write_reg("NVDLA_SDP.S_LUT_ACCESS_DATA_0", 5)
    m.pri_mem.write(0x80000000, b"\1\2")
    assert ear.heard == [5, (0x80000000, 2)]
    m.register_listeners.remove(ear)
    m.pri_mem.listeners.remove(ear)
    assert not m._register_listening and not m.pri_mem._listening
    m.write_reg("NVDLA_SDP.S_LUT_ACCESS_DATA_0", 6)
    m.pri_mem.write(0x80000000, b"\3")
    assert ear.heard == [5, (0x80000000, 2)]
