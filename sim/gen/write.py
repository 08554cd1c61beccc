"""Write a built trace in NVIDIA's two trace syntaxes.

* ``.cfg`` (the nv_small test bench): ``mem_load`` of record ``.dat`` files,
  ``reg_write`` by register name, ``intr_notify`` per interrupt, then
  ``check_crc`` of each layer's output region and ``poll_reg_equal`` of the
  counters the layer set; every other interrupt gets ``check_nothing`` (NVIDIA's
  bench wants exactly one check per sync id).
* ``input.txn`` (the nv_full trace player): ``load_mem`` of hex ``.dat``
  files, ``write_reg`` by CSB address (``0xffff0000 | byte_offset >> 2`` on
  the configuration's address map), ``wait`` + ``read_reg`` of the interrupt
  status + a write-one-to-clear per interrupt, ``read_reg`` of the counters
  and ``dump_mem`` of each output region with its golden ``.dat``.
"""

from __future__ import annotations

import zlib

from ..memfiles import format_hex_dat, format_memory_file, format_record_dat, memory_file_name
from ..trace import cfg, txn
from ..trace.ops import (
    ALL_BITS,
    CheckCrc,
    CheckNothing,
    Comment,
    DumpMem,
    IntrNotify,
    LoadMem,
    MemInit,
    MemLoad,
    Op,
    PollReg,
    RegWrite,
    Wait,
)
from .events import (
    InterruptRaised,
    LayerBegins,
    LayerChecked,
    Loaded,
    OutputReserved,
    RegisterWritten,
)

GLB_STATUS = "NVDLA_GLB.S_INTR_STATUS_0"
ZERO = "ALL_ZERO"  # mem_init's fill pattern


def _hex_lines(data: bytes) -> str:
    return "\n".join(" ".join(f"0x{b:02x}" for b in data[i : i + 32])
                     for i in range(0, len(data), 32)) + "\n"


def _walk(m):
    """The recorded events with the layer index each belongs to and file names for loads."""
    layer, loads = -1, 0
    for event in m.ops:
        if isinstance(event, LayerBegins):
            layer, loads = layer + 1, 0
        if isinstance(event, Loaded):
            loads += 1
            yield layer, event, f"layer{layer}_in{loads}"
        else:
            yield layer, event, None


def cfg_ops(m, header: list[str], prefix: str = "") -> tuple[list[Op], dict]:
    """(the .cfg trace's ops, {file name: content}) of the recorded trace."""
    ops: list[Op] = [Comment(h) for h in header]
    files = {}
    checked: set[int] = set()  # sync ids given their one check (check_crc or check_nothing)
    sync = -1  # one sync id per interrupt, as NVIDIA's traces number them; a check waits
    for _layer, event, stem in _walk(m):  # on its layer's last one
        match event:
            case LayerBegins(text):
                ops.append(Comment(text))
            case Loaded(memory, addr, data):
                name = f"{prefix}{stem}.dat"
                files[name] = format_record_dat(data, record=32)
                ops.append(MemInit(memory, addr, len(data), ZERO))
                ops.append(MemLoad(memory, addr, name))
            case OutputReserved(out):  # the output region and what is set aside after it
                ops.append(MemInit(out.memory, out.addr, max(out.reserved, out.size), ZERO))
            case RegisterWritten(register, value):
                ops.append(RegWrite(register.full_name, value))
            case InterruptRaised(source, group, _lsb):
                if sync >= 0 and sync not in checked:
                    ops.append(CheckNothing(f"sync_id_{sync}"))
                    checked.add(sync)
                sync += 1
                ops.append(IntrNotify(f"{source}_{group}", f"sync_id_{sync}"))
            case LayerChecked(rec):
                out = rec.output
                ops.append(CheckCrc(f"sync_id_{sync}", out.memory, out.addr, out.size,
                                    zlib.crc32(rec.expected) & 0xFFFFFFFF))
                checked.add(sync)
                for name, value in rec.counters:
                    ops.append(PollReg(name, ALL_BITS, value))
    if sync >= 0 and sync not in checked:
        ops.append(CheckNothing(f"sync_id_{sync}"))
    return ops, files


def cfg_text(m, header: list[str], prefix: str = "") -> tuple[str, dict]:
    """(the .cfg text, {file name: content}) of the recorded trace."""
    ops, files = cfg_ops(m, header, prefix)
    return cfg.format(ops), files


def txn_ops(m, header: list[str], prefix: str = "") -> tuple[list[Op], dict]:
    """(the input.txn trace's ops, {file name: content}) of the recorded trace."""
    ops: list[Op] = [Comment(h) for h in header]
    files = {}
    address = m.regfile.address_of
    status = address(m.regfile.register(GLB_STATUS))
    for layer, event, stem in _walk(m):
        match event:
            case LayerBegins(text):
                ops.append(Comment(text))
            case Loaded(_memory, addr, data):
                name = f"{prefix}{stem}.dat"
                files[name] = _hex_lines(data)
                ops.append(LoadMem(addr, len(data), name))
            case OutputReserved(out) if out.slack:  # zero what a consumer may read past it
                name = f"{prefix}layer{layer}_slack.dat"
                files[name] = _hex_lines(bytes(out.slack))
                ops.append(LoadMem(out.addr + out.size, out.slack, name))
            case RegisterWritten(register, value):
                ops.append(RegWrite(address(register), value, note=register.full_name))
            case InterruptRaised(source, group, lsb):
                bit = 1 << lsb
                ops.append(Wait())
                ops.append(PollReg(status, bit, bit, note=f"{source}_DONE_STATUS{group}"))
                ops.append(RegWrite(status, bit, note="clear the interrupt"))
            case LayerChecked(rec):
                out = rec.output
                for name, value in rec.counters:
                    ops.append(PollReg(address(m.regfile.register(name)), ALL_BITS, value,
                                       note=name))
                name = f"layer{layer}_out.dat"  # no prefix: the cfg has no output files
                files[name] = format_hex_dat(out.addr, rec.expected,
                                             "dram" if out.memory == "pri_mem" else "cvsram")
                ops.append(DumpMem(out.addr, out.size, name))
    return ops, files


def txn_text(m, header: list[str], prefix: str = "") -> tuple[str, dict]:
    """(the input.txn text, {file name: content}) of the recorded trace."""
    ops, files = txn_ops(m, header, prefix)
    return txn.format(ops), files


def memory_dumps(m, records, fmt: str, word_bytes: int) -> dict:
    """Every input and expected output region as RTL memory files (``gen --dump-format``):
    {file name: content}, named ``layer<N>_in<M>`` and ``layer<N>_out``."""
    files = {}
    for _layer, event, stem in _walk(m):
        if isinstance(event, Loaded):
            files[memory_file_name(f"{stem}.dat", fmt)] = format_memory_file(
                event.addr, event.data, fmt, word_bytes, event.memory)
    for i, rec in enumerate(records):
        out = rec.output
        files[memory_file_name(f"layer{i}_out.dat", fmt)] = format_memory_file(
            out.addr, rec.expected, fmt, word_bytes, out.memory)
    return files
