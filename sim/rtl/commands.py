"""The command stream NVIDIA's Verilator testbench (``verif/verilator/nvdla.cpp``) reads.

A stream of records, each an opcode byte followed by little-endian 32-bit
fields (facts from the testbench's loader; the encoding below is ours):

====  ===========  =====================================================
code  command      fields
====  ===========  =====================================================
1     wait         (none): hold the CSB queue until the interrupt line rises
2     write        CSB word address, value
3     read         CSB word address, mask, value: read until
                   ``(read & mask) == (value & mask)``, 10 tries, then the
                   run is marked failed (exit 2)
4     dump         address, length, expected bytes, name length, name: at
                   this point of the queue, write the region to the file
                   ``name`` and compare it with the expected bytes (exit 1)
5     load         address, length, bytes
0xFF  end
====  ===========  =====================================================

(Codes 6-9 register the interrupt "sync points" NVIDIA's converter uses; the
testbench serves those only after the whole register sequence has been
sent, so a trace whose later layers wait for earlier ones cannot use them:
this writer orders the stream with ``wait`` instead.)

CSB word address = register byte address >> 2.  Memory addresses with bit
31 set go to the testbench's DBB memory; the others to CV-SRAM, which the
nv_small bench lacks.
"""

from __future__ import annotations

import struct

from ..errors import SimError
from ..records import record

WAIT, WRITE, READ, DUMP, LOAD, END = 1, 2, 3, 4, 5, 0xFF
DBB_WINDOW = 0x80000000  # address bit the bench routes to its DBB memory
U32 = 0xFFFFFFFF


@record
class Wait:
    where: str  # the trace line it stands for


@record
class Write:
    byte_addr: int
    value: int
    where: str


@record
class Read:
    byte_addr: int
    mask: int
    value: int
    where: str
    what: str = ""  # why the read is there, for the verdict's message


@record
class Load:
    addr: int
    data: bytes
    where: str


@record
class Dump:
    addr: int
    expected: bytes
    file: str  # the testbench writes the region here (relative to its folder)
    where: str


Command = Wait | Write | Read | Load | Dump


def _u32(value: int, what: str, where: str) -> int:
    if not 0 <= value <= U32:
        raise SimError(f"{where}: {what} {value:#x} does not fit the testbench's 32 bits")
    return value


def encode(commands: list[Command]) -> bytes:
    """The binary stream, ending with the end marker."""
    out = bytearray()
    for c in commands:
        if isinstance(c, Wait):
            out += struct.pack("<B", WAIT)
        elif isinstance(c, Write):
            out += struct.pack("<BII", WRITE, c.byte_addr >> 2, _u32(c.value, "value", c.where))
        elif isinstance(c, Read):
            out += struct.pack("<BIII", READ, c.byte_addr >> 2, c.mask & U32, c.value & U32)
        elif isinstance(c, Load):
            out += struct.pack("<BII", LOAD, _u32(c.addr, "address", c.where),
                               _u32(len(c.data), "length", c.where))
            out += c.data
        elif isinstance(c, Dump):
            name = c.file.encode()
            out += struct.pack("<BII", DUMP, _u32(c.addr, "address", c.where),
                               _u32(len(c.expected), "length", c.where))
            out += c.expected + struct.pack("<I", len(name)) + name
        else:  # pragma: no cover - the union above is closed
            raise TypeError(c)
    out += struct.pack("<B", END)
    return bytes(out)
