"""Tasks for the minikmd test firmware (``minikmd/``), and a tiny loadable to carry one.

``Program`` captures the register writes our programming helpers make (as a
firmware would compose them) so that they become a minikmd descriptor: the
firmware replays them through ``dla_reg_write``, with DMA base registers
resolved from the task's address list by index.  ``tiny_loadable`` writes a
flatbuffer with the slots of NVIDIA's loadable schema (the fields
``sim.runtime.loadable`` reads): one descriptor memory, one input and one
output tensor, one DLA task.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers

from sim.machine import Machine
from sim.runtime.loadable import FLAG_ALLOC, FLAG_INPUT, FLAG_OUTPUT, FLAG_SET, INTERFACE_DLA1

MINIKMD = Path(__file__).parent / "minikmd"
MAGIC, VERSION = 0x444D4B4D, 1
UNIT_BDMA, UNIT_SDP = 1, 2
NO_ADDRESS = -1


@dataclass
class Op:
    unit: int
    group: int = 0
    writes: list[tuple[int, int, int, int]] = field(default_factory=list)  # reg, value, index, half


class Program:
    """Register writes by name, captured as byte addresses for one register map."""

    def __init__(self, config: str):
        self.regfile = Machine(config).regfile
        self.ops: list[Op] = []
        self.addresses: dict[str, tuple[int, int]] = {}  # register -> (address index, half)

    def op(self, unit: int, group: int = 0) -> Op:
        self.ops.append(Op(unit, group))
        return self.ops[-1]

    def point(self, register: str, index: int, half: int = 0) -> None:
        """Writes of ``register`` add the bus address (low/high word) of list entry ``index``."""
        self.addresses[register] = (index, half)

    def write_reg(self, name: str, value: int) -> None:
        reg = self.regfile.register(name)
        index, half = self.addresses.get(name, (NO_ADDRESS, 0))
        value = 0 if index != NO_ADDRESS else int(value) & 0xFFFFFFFF
        self.ops[-1].writes.append((self.regfile.address_of(reg), value, index, half))

    def descriptor(self, magic: int = MAGIC) -> bytes:
        out = struct.pack("<IHHII", magic, VERSION, len(self.ops), 0, 0)
        for op in self.ops:
            out += struct.pack("<BBH", op.unit, op.group, len(op.writes))
            out += b"".join(struct.pack("<IIhH", *w) for w in op.writes)
        return out


def descriptor_status(data: bytes) -> tuple[int, int]:
    """(status, ops done) the firmware wrote back into a descriptor."""
    return struct.unpack_from("<II", data, 8)


# -- a loadable of one DLA task ---------------------------------------------------------
PIXEL_FEATURE, TYPE_INT8 = 36, 4


def _vector(b: flatbuffers.Builder, prepend, items) -> int:
    b.StartVector(4 if prepend == "offset" else prepend[1], len(items), 4)
    for item in reversed(items):
        if prepend == "offset":
            b.PrependUOffsetTRelative(item)
        else:
            prepend[0](b, item)
    return b.EndVector()


def _offsets(b, items) -> int:
    return _vector(b, "offset", items)


def _table(b: flatbuffers.Builder, slots: list) -> int:
    """slots: (kind, slot, value) with kind in u8/u16/u32/u64/i16/i32/offset."""
    adders = {"u8": b.PrependUint8Slot, "u16": b.PrependUint16Slot, "u32": b.PrependUint32Slot,
              "u64": b.PrependUint64Slot, "i16": b.PrependInt16Slot, "i32": b.PrependInt32Slot,
              "offset": b.PrependUOffsetTRelativeSlot}
    b.StartObject(1 + max(slot for _, slot, _ in slots))
    for kind, slot, value in slots:
        if kind == "version":
            b.Prep(1, 3)
            for part in reversed(value):
                b.PrependUint8(part)
            b.PrependStructSlot(slot, b.Offset(), 0)
        else:
            adders[kind](slot, value, 0)  # written even when 0: defaults forced
    return b.EndObject()


def tiny_loadable(descriptor: bytes, tensor_bytes: int, channels: int = 32) -> bytes:
    """One DLA task whose address list is (descriptor, input tensor, output tensor).

    Both tensors are int8 feature cubes of ``channels`` x 1 x W, W filling
    ``tensor_bytes`` (a multiple of 32); input 0 and output 0 bind them.
    """
    b = flatbuffers.Builder(1024)
    b.ForceDefaults(True)
    width = tensor_bytes // channels
    u16 = (flatbuffers.Builder.PrependUint16, 2)
    u64 = (flatbuffers.Builder.PrependUint64, 8)
    u8 = (flatbuffers.Builder.PrependUint8, 1)

    blob_name = b.CreateString("task-0-desc")
    blob_data = _vector(b, u8, list(descriptor))
    blob = _table(b, [("offset", 0, blob_name), ("u64", 1, len(descriptor)),
                      ("u32", 2, INTERFACE_DLA1), ("offset", 5, blob_data),
                      ("version", 4, (0, 12, 0))])
    tensors = []
    for tid, name in enumerate(("data", "out")):
        tname = b.CreateString(name)
        tensors.append(_table(b, [
            ("offset", 0, tname), ("u16", 1, tid), ("u16", 2, tid + 1),
            ("u64", 3, tensor_bytes), ("u8", 6, TYPE_INT8), ("u8", 8, PIXEL_FEATURE),
            ("i32", 10, 1), ("i32", 11, channels), ("i32", 12, 1), ("i32", 13, width),
            ("u32", 15, width * channels), ("u32", 16, width * channels)]))
    contents = _offsets(b, [b.CreateString("task-0-desc")])
    offsets = _vector(b, u64, [0])
    memories = [
        _table(b, [("u16", 0, 0), ("u16", 2, FLAG_ALLOC | FLAG_SET),
                   ("u64", 3, len(descriptor)), ("u32", 4, 4096), ("offset", 5, contents),
                   ("offset", 6, offsets)]),
        _table(b, [("u16", 0, 1), ("u16", 2, FLAG_ALLOC | FLAG_INPUT), ("u64", 3, tensor_bytes),
                   ("u32", 4, 4096), ("u16", 7, 0), ("u16", 8, 0)]),
        _table(b, [("u16", 0, 2), ("u16", 2, FLAG_ALLOC | FLAG_OUTPUT),
                   ("u64", 3, tensor_bytes), ("u32", 4, 4096), ("u16", 7, 0), ("u16", 8, 1)]),
    ]
    addresses = [_table(b, [("u16", 0, i), ("u16", 1, i), ("u64", 3, size)])
                 for i, size in enumerate((len(descriptor), tensor_bytes, tensor_bytes))]
    address_list = _vector(b, u16, [0, 1, 2])
    task = _table(b, [("u16", 0, 0), ("u32", 1, INTERFACE_DLA1), ("i16", 2, 0),
                      ("offset", 3, address_list)])
    submit = _table(b, [("u16", 0, 0), ("offset", 1, _vector(b, u16, [0]))])
    lists = {slot: _offsets(b, items) for slot, items in
             ((1, [task]), (2, memories), (3, addresses), (5, [blob]), (6, tensors),
              (8, [submit]))}
    root = _table(b, [("version", 0, (0, 7, 0)),
                      *(("offset", slot, off) for slot, off in lists.items())])
    b.Finish(root)
    return bytes(b.Output())
