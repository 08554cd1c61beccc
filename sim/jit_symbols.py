"""The symbols a compiled kernel's machine code defines, read from its ELF object file.

numba caches a kernel as its machine code (an ELF relocatable object on Linux) and its
LLVM bitcode; loading it parses the bitcode only to list the symbols it defines (the
engine must know them to hand out the kernel's address) and to keep it for linking into
kernels compiled later.  The object's own symbol table names the same symbols without
parsing: :mod:`sim.jit` reads them here and parses the bitcode only if a kernel is
compiled that links it.
"""

from __future__ import annotations

import struct

_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STT_SECTION, _STT_FILE = 3, 4  # names of sections and source files, not of code or data


def defined_symbols(obj: bytes) -> set[str] | None:
    """Names of the functions and data ``obj`` defines; None when ``obj`` is not a
    64-bit little-endian ELF file or lists none (the caller then asks LLVM)."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    (table,) = struct.unpack_from("<Q", obj, 0x28)
    entry, count = struct.unpack_from("<HH", obj, 0x3A)
    if entry != _SECTION.size or table + count * entry > len(obj):
        return None
    sections = [_SECTION.unpack_from(obj, table + i * entry) for i in range(count)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, step in sections:
        if kind != _SHT_SYMTAB:
            continue
        if step != _SYMBOL.size or link >= count or offset + size > len(obj):
            return None
        strings = sections[link][4]
        for at in range(offset, offset + size, step):
            name, info, _, where, _, _ = _SYMBOL.unpack_from(obj, at)
            if where == _SHN_UNDEF or info & 15 in (_STT_SECTION, _STT_FILE):
                continue
            start = strings + name
            names.add(obj[start:obj.index(b"\0", start)].decode())
    return names or None  # no symbol table: LLVM's list instead (a kernel defines some)
