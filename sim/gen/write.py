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

from ..dram import format_hex_dat, format_memory_file, format_record_dat, memory_file_name

GLB_STATUS = "NVDLA_GLB.S_INTR_STATUS_0"


def _csb(m, reg) -> int:
    return 0xFFFF0000 | (m.regfile.address_of(reg) >> 2)


def _hex_lines(data: bytes) -> str:
    return "\n".join(" ".join(f"0x{b:02x}" for b in data[i : i + 32])
                     for i in range(0, len(data), 32)) + "\n"


def _walk(m):
    """The recorded ops with the layer index each belongs to and file names for loads."""
    layer, loads = -1, 0
    for op in m.ops:
        if op[0] == "comment":
            layer, loads = layer + 1, 0
        if op[0] == "load":
            loads += 1
            yield layer, op, f"layer{layer}_in{loads}"
        else:
            yield layer, op, None


def cfg_text(m, header: list[str], prefix: str = "") -> tuple[str, dict]:
    """(the .cfg text, {file name: content}) of the recorded trace."""
    lines = [f"// {h}" for h in header]
    files = {}
    checked: set[int] = set()  # sync ids given their one check (check_crc or check_nothing)
    sync = -1  # one sync id per interrupt, as NVIDIA's traces number them; a check waits
    for _layer, op, stem in _walk(m):  # on its layer's last one
        kind = op[0]
        if kind == "comment":
            lines.append(f"// {op[1]}")
        elif kind == "load":
            _, memory, addr, data = op
            name = f"{prefix}{stem}.dat"
            files[name] = format_record_dat(data, record=32)
            lines.append(f"mem_init({memory}, {addr:#x}, {len(data):#x}, ALL_ZERO);")
            lines.append(f'mem_load({memory}, {addr:#x}, "{name}");')
        elif kind == "init":  # the output region and what is set aside after it
            out = op[1]
            lines.append(f"mem_init({out.memory}, {out.addr:#x}, "
                         f"{max(out.reserved, out.size):#x}, ALL_ZERO);")
        elif kind == "reg":
            lines.append(f"reg_write({op[1].full_name}, {op[2]:#x});")
        elif kind == "intr":
            _, source, group, _lsb = op
            if sync >= 0 and sync not in checked:
                lines.append(f"check_nothing(sync_id_{sync});")
                checked.add(sync)
            sync += 1
            lines.append(f"intr_notify({source}_{group}, sync_id_{sync});")
        elif kind == "check":
            rec = op[1]
            out = rec.output
            mem = "1" if out.memory == "pri_mem" else out.memory
            lines.append(f"check_crc(sync_id_{sync}, {mem}, {out.addr:#x}, {out.size:#x}, "
                         f"{zlib.crc32(rec.expected) & 0xFFFFFFFF:#010x});")
            checked.add(sync)
            for name, value in rec.counters:
                lines.append(f"poll_reg_equal({name}, {value:#x});")
    if sync >= 0 and sync not in checked:
        lines.append(f"check_nothing(sync_id_{sync});")
    return "\n".join(lines) + "\n", files


def txn_text(m, header: list[str], prefix: str = "") -> tuple[str, dict]:
    """(the input.txn text, {file name: content}) of the recorded trace."""
    lines = [f"# {h}" for h in header]
    files = {}
    status = m.regfile.register(GLB_STATUS)
    for layer, op, stem in _walk(m):
        kind = op[0]
        if kind == "comment":
            lines.append(f"# {op[1]}")
        elif kind == "load":
            _, _memory, addr, data = op
            name = f"{prefix}{stem}.dat"
            files[name] = _hex_lines(data)
            lines.append(f"load_mem {addr:#x} {len(data):#x} {name}")
        elif kind == "init" and op[1].slack:  # zero what a consumer may read past it
            out = op[1]
            name = f"{prefix}layer{layer}_slack.dat"
            files[name] = _hex_lines(bytes(out.slack))
            lines.append(f"load_mem {out.addr + out.size:#x} {out.slack:#x} {name}")
        elif kind == "reg":
            lines.append(f"write_reg {_csb(m, op[1]):#010x} {op[2]:#x} # {op[1].full_name}")
        elif kind == "intr":
            _, source, group, lsb = op
            bit = 1 << lsb
            lines.append("wait")
            lines.append(f"read_reg {_csb(m, status):#010x} {bit:#010x} {bit:#010x} "
                         f"# {source}_DONE_STATUS{group}")
            lines.append(f"write_reg {_csb(m, status):#010x} {bit:#x} # clear the interrupt")
        elif kind == "check":
            rec = op[1]
            out = rec.output
            for name, value in rec.counters:
                reg = m.regfile.register(name)
                lines.append(f"read_reg {_csb(m, reg):#010x} 0xffffffff {value:#010x} # {name}")
            name = f"layer{layer}_out.dat"  # no prefix: the cfg has no output files
            files[name] = format_hex_dat(out.addr, rec.expected,
                                         "dram" if out.memory == "pri_mem" else "cvsram")
            lines.append(f"dump_mem {out.addr:#x} {out.size:#x} {name}")
    return "\n".join(lines) + "\n", files


def memory_dumps(m, records, fmt: str, word_bytes: int) -> dict:
    """Every input and expected output region as RTL memory files (``gen --dump-format``):
    {file name: content}, named ``layer<N>_in<M>`` and ``layer<N>_out``."""
    files = {}
    for _layer, op, stem in _walk(m):
        if op[0] == "load":
            _, memory, addr, data = op
            files[memory_file_name(f"{stem}.dat", fmt)] = format_memory_file(
                addr, data, fmt, word_bytes, memory)
    for i, rec in enumerate(records):
        out = rec.output
        files[memory_file_name(f"layer{i}_out.dat", fmt)] = format_memory_file(
            out.addr, rec.expected, fmt, word_bytes, out.memory)
    return files
