"""Read a loadable: the flatbuffer NVIDIA's compiler writes for its runtime.

A small reader of its tables (the flatbuffers format, read with
:mod:`struct`); field slots follow the order of the tables of NVIDIA's
loadable schema (version 0.7): memories, blobs, tensor descriptors, the
address list, tasks, submits, events and relocations.  Every offset is
checked against the buffer, so a damaged file gives one clear error instead
of a crash.
"""

from __future__ import annotations

import struct
from dataclasses import field
from pathlib import Path

from ..errors import LoadableError
from ..records import record

INTERFACE_DLA1, INTERFACE_EMU1 = 1, 2
DOMAIN_SYSTEM, DOMAIN_SRAM = 0, 1
FLAG_ALLOC, FLAG_SET, FLAG_INPUT, FLAG_OUTPUT = 1, 2, 4, 8
MAX_FILE = 1 << 30
# the flatbuffer's numbers (little-endian): offsets to a table's vtable, in it, to a
# table, vector or string; and the fields' scalar types
SOFFSET, VOFFSET, UOFFSET = (struct.Struct(f"<{c}") for c in "iHI")
U8, U16, U32, U64, I16, I32 = (struct.Struct(f"<{c}") for c in "BHIQhi")


@record
class Blob:
    name: str
    size: int
    interface: int
    sub_interface: int
    data: memoryview  # of the loadable's bytes
    version: tuple[int, int, int] | None = None


@record
class Memory:
    id: int
    domain: int
    flags: int
    size: int
    alignment: int
    contents: tuple[str, ...]
    offsets: tuple[int, ...]
    bind_id: int
    tensor_desc_id: int

    @property
    def is_input(self) -> bool:
        return bool(self.flags & FLAG_INPUT)

    @property
    def is_output(self) -> bool:
        return bool(self.flags & FLAG_OUTPUT) and not self.is_input


@record
class Address:
    id: int
    mem_id: int
    offset: int
    size: int


@record
class Task:
    id: int
    interface: int
    instance: int
    address_list: tuple[int, ...]
    pre_actions: tuple[int, ...]
    post_actions: tuple[int, ...]


@record
class Event:
    """An event a task waits for or signals (the runtime submits in order and ignores them)."""

    id: int
    type: int
    target: int
    value: int
    op: int  # 0 wait, 1 signal


@record
class Reloc:
    """A place in a descriptor blob that names a bindable tensor's stride.

    The runtime rewrites it only when an application binds a tensor with
    strides other than the loadable's descriptor (``setInputTensorDesc``).
    """

    address_id: int  # the bindable tensor's address entry
    write_id: int  # the memory holding the descriptor to rewrite
    offset: int  # byte offset of the 32-bit field in that memory (the runtime indexes words)
    interface: int
    sub_interface: int
    reloc_type: int  # 1 line stride, 2 surface stride


@record
class TensorDesc:
    name: str
    id: int
    mem_id: int
    size: int
    offset: int
    data_format: int
    data_type: int
    data_category: int
    pixel_format: int
    pixel_mapping: int
    dims: tuple[int, int, int, int]  # n, c, h, w
    strides: tuple[int, ...]  # stride_0 .. stride_7 (1: line, 2: surface)


@record(frozen=False)
class Loadable:
    version: tuple[int, int, int]
    tasks: list[Task] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    addresses: list[Address] = field(default_factory=list)
    blobs: dict[str, Blob] = field(default_factory=dict)
    tensors: list[TensorDesc] = field(default_factory=list)
    submits: list[tuple[int, ...]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    relocs: list[Reloc] = field(default_factory=list)


class _Table:
    """One flatbuffer table with bounds-checked field access by slot number.

    Read with :mod:`struct` directly: the ``flatbuffers`` package's table API checked
    and converted every number again, most of the time it took to read a network."""

    def __init__(self, buf: bytes, pos: int, where: str):
        self.buf, self.pos, self.where = buf, pos, where
        _check(buf, pos, 4, where)
        vtable = pos - SOFFSET.unpack_from(buf, pos)[0]
        _check(buf, vtable, 4, where)
        self.vtable_size = VOFFSET.unpack_from(buf, vtable)[0]
        _check(buf, vtable, self.vtable_size, where)
        self.vtable = vtable

    def _offset(self, slot: int) -> int:
        voffset = 4 + 2 * slot
        if voffset >= self.vtable_size:
            return 0
        return VOFFSET.unpack_from(self.buf, self.vtable + voffset)[0]

    def scalar(self, slot: int, kind: struct.Struct, default=0):
        o = self._offset(slot)
        if not o:
            return default
        _check(self.buf, self.pos + o, kind.size, self.where)
        return kind.unpack_from(self.buf, self.pos + o)[0]

    def string(self, slot: int) -> str:
        o = self._offset(slot)
        if not o:
            return ""
        return self._string_at(self.pos + o)

    def _string_at(self, pos: int) -> str:
        _check(self.buf, pos, 4, self.where)
        start = pos + UOFFSET.unpack_from(self.buf, pos)[0]
        _check(self.buf, start, 4, self.where)
        n = UOFFSET.unpack_from(self.buf, start)[0]
        _check(self.buf, start + 4, n, self.where)
        return bytes(self.buf[start + 4 : start + 4 + n]).decode("utf-8", "replace")

    def _vector(self, slot: int) -> tuple[int, int]:
        """(start of the elements, count) of a vector field; (0, 0) when absent."""
        o = self._offset(slot)
        if not o:
            return 0, 0
        pos = self.pos + o
        _check(self.buf, pos, 4, self.where)
        start = pos + UOFFSET.unpack_from(self.buf, pos)[0]
        _check(self.buf, start, 4, self.where)
        return start + 4, UOFFSET.unpack_from(self.buf, start)[0]

    def scalars(self, slot: int, kind: struct.Struct) -> tuple:
        start, n = self._vector(slot)
        _check(self.buf, start, n * kind.size, self.where)
        return struct.unpack_from(f"<{n}{kind.format[-1]}", self.buf, start)

    def bytes(self, slot: int) -> memoryview:
        """A byte vector, as a view of the loadable's buffer (blobs are most of a
        loadable's size: a network's weights)."""
        start, n = self._vector(slot)
        _check(self.buf, start, n, self.where)
        return memoryview(self.buf)[start : start + n]

    def strings(self, slot: int) -> tuple[str, ...]:
        start, n = self._vector(slot)
        _check(self.buf, start, 4 * n, self.where)
        return tuple(self._string_at(start + 4 * i) for i in range(n))

    def tables(self, slot: int, what: str) -> list[_Table]:
        start, n = self._vector(slot)
        _check(self.buf, start, 4 * n, self.where)
        out = []
        for i in range(n):
            pos = start + 4 * i
            out.append(_Table(self.buf, pos + UOFFSET.unpack_from(self.buf, pos)[0],
                              f"{self.where}: {what}[{i}]"))
        return out

    def struct_bytes(self, slot: int, size: int) -> bytes | None:
        o = self._offset(slot)
        if not o:
            return None
        _check(self.buf, self.pos + o, size, self.where)
        return bytes(self.buf[self.pos + o : self.pos + o + size])


def _check(buf: bytes, pos: int, size: int, where: str) -> None:
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise LoadableError(f"{where}: truncated or corrupt (offset {pos:#x}+{size} is past the "
                            f"end of the {len(buf)}-byte file)")


def _memory(t: _Table) -> Memory:
    return Memory(id=t.scalar(0, U16), domain=t.scalar(1, U8),
                  flags=t.scalar(2, U16), size=t.scalar(3, U64),
                  alignment=t.scalar(4, U32), contents=t.strings(5),
                  offsets=t.scalars(6, U64), bind_id=t.scalar(7, U16),
                  tensor_desc_id=t.scalar(8, U16))


def _task(t: _Table) -> Task:
    return Task(id=t.scalar(0, U16), interface=t.scalar(1, U32),
                instance=t.scalar(2, I16), address_list=t.scalars(3, U16),
                pre_actions=t.scalars(4, U16), post_actions=t.scalars(5, U16))


def _tensor(t: _Table) -> TensorDesc:
    return TensorDesc(
        name=t.string(0), id=t.scalar(1, U16), mem_id=t.scalar(2, U16),
        size=t.scalar(3, U64), offset=t.scalar(4, U64),
        data_format=t.scalar(5, U8), data_type=t.scalar(6, U8),
        data_category=t.scalar(7, U8), pixel_format=t.scalar(8, U8),
        pixel_mapping=t.scalar(9, U8),
        dims=tuple(t.scalar(s, I32) for s in (10, 11, 12, 13)),
        strides=tuple(t.scalar(s, U32) for s in range(14, 22)))


def parse_loadable(data: bytes, where: str = "loadable") -> Loadable:
    """Decode a loadable's bytes (``where`` names it in errors)."""
    if len(data) < 8:
        raise LoadableError(f"{where}: not a loadable ({len(data)} bytes)")
    root = _Table(data, int.from_bytes(data[:4], "little"), where)
    version = root.struct_bytes(0, 3)
    if version is None:
        raise LoadableError(f"{where}: not a loadable (no version)")
    out = Loadable(version=tuple(version))
    out.tasks = [_task(t) for t in root.tables(1, "task_list")]
    out.memories = [_memory(t) for t in root.tables(2, "memory_list")]
    out.addresses = [Address(t.scalar(0, U16), t.scalar(1, U16),
                             t.scalar(2, U64), t.scalar(3, U64))
                     for t in root.tables(3, "address_list")]
    for t in root.tables(5, "blobs"):
        version = t.struct_bytes(4, 3)
        blob = Blob(t.string(0), t.scalar(1, U64), t.scalar(2, U32),
                    t.scalar(3, U32), t.bytes(5), tuple(version) if version else None)
        out.blobs[blob.name] = blob
    out.tensors = [_tensor(t) for t in root.tables(6, "tensor_desc_list")]
    out.events = [Event(t.scalar(0, U16), t.scalar(1, U8),
                        t.scalar(2, U16), t.scalar(3, U32),
                        t.scalar(4, U8)) for t in root.tables(4, "event_list")]
    out.relocs = [Reloc(t.scalar(0, U16), t.scalar(1, U16),
                        t.scalar(2, U64), t.scalar(3, U32),
                        t.scalar(4, U32), t.scalar(5, U8))
                  for t in root.tables(7, "reloc_list")]
    out.submits = [t.scalars(1, U16) for t in root.tables(8, "submit_list")]
    if not out.tasks or not out.memories or not out.submits:
        raise LoadableError(f"{where}: not a loadable (needs at least one task, memory and "
                            f"submit)")
    return out


def read_loadable(path: str | Path) -> Loadable:
    """The loadable at ``path``.  The file is mapped, not read: its blobs (the weights,
    most of its bytes) are views of it, copied once, into the simulated memory; so the
    file must not be rewritten while the returned Loadable's blobs are still to be read."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE:
            raise LoadableError(f"{path}: {size} bytes is too large for a loadable")
        data = _mapped(path) if size >= 8 else None
        if data is None:
            data = path.read_bytes()
    except OSError as exc:
        raise LoadableError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return parse_loadable(data, str(path))
    except LoadableError:
        raise
    except Exception as exc:  # what a damaged file may trip that the checks miss
        raise LoadableError(f"{path}: corrupt loadable ({type(exc).__name__}: {exc})") from None


def _mapped(path: Path):
    """The file mapped read-only, or None where it cannot be (then it is read)."""
    import mmap

    try:
        with path.open("rb") as f:
            populate = getattr(mmap, "MAP_POPULATE", 0)  # Linux
            if populate:  # its pages mapped in one go: the blobs' copy meets no page faults
                return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | populate,
                                 prot=mmap.PROT_READ)
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # a pipe, a special file, a file system without mmap
        return None
