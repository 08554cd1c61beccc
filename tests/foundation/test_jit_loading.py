"""Cached kernels load without parsing their link bitcode nor importing numba's modules
their environments name nor looking for numba extensions, numba's runtime loads from the
cache, and all compute as numba's own would.

Each check runs fresh interpreters with a cache folder of their own: one compiles and
caches small kernels, the next loads them the simulator's way (:mod:`sim.jit`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.jit_symbols import defined_symbols

REPO = Path(__file__).resolve().parents[2]

# kernels (cached, as sim.jit's are) with a callee, a constant table (data symbols) and an
# array argument
KERNELS = """
import numpy as np

from sim.jit import njit

TABLE = np.array([5, 3, 11, 7, 2, 13, 17, 19], dtype=np.int64)

@njit
def inner(x):
    return x * TABLE[x % 8] + 1

@njit
def table_sum(a):  # np.zeros and .sum are numba's array implementations
    out = np.zeros(a.size, dtype=np.int64)
    for i in range(a.size):
        out[i] = inner(a[i])
    return out.sum()
"""

CACHE_THEM = """
import numpy as np
import toy
toy.table_sum(np.arange(20, dtype=np.int64))
"""

USER = """
from sim.jit import njit
import toy


@njit
def user(x):  # compiled in the second process, linking inner's bitcode; loaded in the third
    return toy.inner(x) - 1
"""

LOAD_THEM = """
import importlib.metadata
import sys


def scan(*args, **kwargs):
    raise AssertionError("scanned the installed packages for numba extensions")


importlib.metadata.entry_points = scan  # kernels use no extension: never looked for

import numpy as np
import sim.jit_symbols as symbols
from sim import jit

from llvmlite import binding as llvm
from numba.core.runtime.nrtdynmod import create_nrt_module

from numba.core.runtime import nrtdynmod


def refuse(ctx):
    raise AssertionError("numba's runtime compiled again: not loaded from the cache")


nrtdynmod.create_nrt_module = refuse
jit._load_target()  # makes ready the simulator's loading
nrtdynmod.create_nrt_module = create_nrt_module
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys

assert type(rtsys.library).__name__ == "LinkBitcodeParsedWhenLinked"

codegen = cpu_target.target_context.codegen()
loads, lazy_load = [], codegen.unserialize_library


def checked_load(state):
    name, kind, (obj, bitcode) = state
    module = llvm.parse_bitcode(bitcode)
    llvms = {g.name for group in (module.functions, module.global_variables)
             for g in group if not g.is_declaration}
    assert symbols.defined_symbols(obj) == llvms, name  # what numba's own load lists
    loads.append(name)
    return lazy_load(state)


codegen.unserialize_library = checked_load

import toy

TABLE = [5, 3, 11, 7, 2, 13, 17, 19]
a = np.arange(20, dtype=np.int64)
assert toy.table_sum(a) == sum(v * TABLE[v % 8] + 1 for v in range(20))
assert sum(toy.table_sum.stats.cache_hits.values()) == 1, "not loaded from the cache"
assert len(loads) == 1
library = toy.table_sum.overloads[toy.table_sum.signatures[0]].library
assert type(library).__name__ == "LinkBitcodeParsedWhenLinked"
assert library._shared_module is None  # not parsed: nothing linked it yet
# the array iteration's environment stands in for numba's array module, not imported
assert "numba.np.arrayobj" in jit._UNIMPORTED_GLOBALS
assert "numba.np.arrayobj" not in sys.modules
stand_in = jit._UNIMPORTED_GLOBALS["numba.np.arrayobj"]
assert toy.inner(9) == 9 * 3 + 1 and len(loads) == 2
inner = toy.inner.overloads[toy.inner.signatures[0]].library
assert inner._shared_module is None

import toy_user

assert toy_user.user(12) == 12 * 2 and toy_user.user(5) == 5 * 13  # compiled and cached
assert inner._shared_module is not None  # parsed when the compilation linked it
assert rtsys.library._shared_module is not None  # the runtime's too
assert not jit._UNIMPORTED_GLOBALS  # numba readied to compile: the stand-in filled
assert stand_in["make_array"] is sys.modules["numba.np.arrayobj"].make_array
"""

LOAD_THE_USER = """
import toy_user

assert toy_user.user(12) == 12 * 2
assert sum(toy_user.user.stats.cache_hits.values()) == 1, "not loaded from the cache"
"""


LOADED_RUNTIME = """
from numba.core.runtime import rtsys
assert type(rtsys.library).__name__ == "LinkBitcodeParsedWhenLinked"
"""


def _run(code: str, cache: Path, path: Path, **env_vars: str) -> str:
    """Run ``code`` in a fresh interpreter; returns what it printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(path), str(REPO)]), **env_vars}
    return subprocess.run([sys.executable, "-c", code], check=True, cwd=path, env=env,
                          capture_output=True, text=True).stdout


def test_cached_kernels_and_runtime_load_lazily_and_compile_and_cache_callers(tmp_path):
    (tmp_path / "toy.py").write_text(KERNELS)
    (tmp_path / "toy_user.py").write_text(USER)
    cache = tmp_path / "cache"
    _run(CACHE_THEM, cache, tmp_path)
    _run(LOAD_THEM, cache, tmp_path)
    _run(LOAD_THE_USER, cache, tmp_path)
    (runtime,) = cache.glob("numba-*/runtime-*.pickle")
    runtime.write_bytes(runtime.read_bytes()[:100])  # cut short: compiled again, rewritten
    _run(LOAD_THE_USER, cache, tmp_path)
    _run(LOAD_THE_USER + LOADED_RUNTIME, cache, tmp_path)


def test_a_runtime_made_for_reference_count_debugging_is_kept_apart(tmp_path):
    """numba's NRT debugging switches change the runtime's functions (printing, an extra
    argument): a runtime cached under them must never serve a run without them, nor
    kernels cached without them a run with them (their calls lack the argument: the run
    crashed, or printed garbage, as the processor's code happened to leave a register)."""
    (tmp_path / "toy.py").write_text(KERNELS)
    cache = tmp_path / "cache"
    _run(CACHE_THEM, cache, tmp_path)
    debugging = _run(CACHE_THEM, cache, tmp_path, NUMBA_DEBUG_NRT="1",
                     NUMBA_DEBUG_NRT_STACK_LIMIT="5")
    assert "NRT" in debugging  # the switch took effect
    assert "(null)" not in debugging  # each printed its reason: a kernel made for it
    assert len(list(cache.glob("numba-*/runtime-*.pickle"))) == 2
    assert len(list(cache.glob("numba-*/*/toy.table_sum-*.nbi"))) == 2  # kernels apart too
    assert "NRT" not in _run(CACHE_THEM, cache, tmp_path)


def _elf64(symbols: list[tuple[str, int, int]]) -> bytes:
    """A minimal ELF64 object: a symbol table of (name, info, section index) and its
    string table."""
    import struct

    strings = b"\0" + b"".join(name.encode() + b"\0" for name, _, _ in symbols)
    offsets, at = [], 1
    for name, _, _ in symbols:
        offsets.append(at)
        at += len(name) + 1
    table = bytes(24) + b"".join(struct.pack("<IBBHQQ", off, info, 0, where, 0, 0)
                                 for off, (_, info, where) in zip(offsets, symbols, strict=True))
    head = 64
    sections_at = head + len(strings) + len(table)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, sections_at)
    struct.pack_into("<HH", header, 0x3A, 64, 3)
    null = bytes(64)
    strtab = struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, head, len(strings), 0, 0, 1, 0)
    symtab = struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, head + len(strings), len(table), 1, 0,
                         8, 24)
    return bytes(header) + strings + table + null + strtab + symtab


@pytest.mark.parametrize("symbols, defined", [
    ([("f", 0x12, 1), ("g", 0x11, 2)], {"f", "g"}),  # a function, data
    ([("f", 0x12, 1), ("undefined", 0x10, 0)], {"f"}),  # one only referred to
    ([("f", 0x22, 1), ("local", 0x02, 1)], {"f", "local"}),  # weak, local
    ([("text", 0x03, 1), ("a.c", 0x04, 0xFFF1), ("f", 0x12, 1)], {"f"}),  # section, file
])
def test_defined_symbols_reads_the_symbol_table(symbols, defined):
    assert defined_symbols(_elf64(symbols)) == defined


@pytest.mark.parametrize("data", [b"", b"BC\xc0\xde" + bytes(80), b"\x7fELF\x01\x01" + bytes(80),
                                  b"\x7fELF\x02\x02" + bytes(80),
                                  _elf64([("undefined", 0x10, 0)])])  # defines nothing
def test_defined_symbols_declines_what_is_not_a_64_bit_little_endian_elf(data):
    assert defined_symbols(data) is None
