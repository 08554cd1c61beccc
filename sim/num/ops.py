"""The primitive operations, SoftFloat style: one function per operation.

Each public function takes raw bit patterns (numpy arrays or scalars of any
integer type; fp16 in uint16, fp17 in the low 17 bits of uint32, fp32 in
uint32) and returns the result patterns with the same broadcast shape: an
array for array input, a numpy scalar for scalar input.

The element kernels (``int64`` in and out) that other kernels call directly
are ``sim.num.fpcore``'s functions and the ``*_bits`` conversions here; the
array loops dispatch on a small operation code so that numba compiles and
caches each loop once.
"""

import numpy as np
from numba import literally

from sim.jit import njit
from sim.num.arrays import as_bits, flat, shaped
from sim.num.fpcore import (
    add_is_ordinary,
    fp_add_ordinary,
    fp_add_window,
    fp_max,
    fp_mul,
    fp_narrow,
    fp_widen,
    fraction_to_float,
    int_to_float,
)

# (exponent, mantissa) widths
FP16 = (5, 10)
FP17 = (6, 10)
FP32 = (8, 23)


# --- element kernels -----------------------------------------------------
# Binary operations are ``fpcore.fp_add/fp_sub/fp_mul/fp_max`` with the widths
# above, e.g. ``fp_add(a, b, 6, 10)`` for fp17; conversions have their own names.
@njit
def fp16_to_fp17_bits(a):
    """Exact; fp16 subnormals are renormalised."""
    return fp_widen(a, 5, 10, 6, 10, True)


@njit
def fp16_to_fp32_bits(a):
    """Exact; fp16 subnormals are renormalised."""
    return fp_widen(a, 5, 10, 8, 23, True)


@njit
def fp17_to_fp32_bits(a):
    """Exact; an exponent-0 fp17 pattern is read as ``1.m * 2**-31``."""
    return fp_widen(a, 6, 10, 8, 23, False)


@njit
def fp17_to_fp16_bits(a):
    """Round to nearest even with IEEE fp16 subnormal outputs."""
    return fp_narrow(a, 6, 10, 5, 10, True)


@njit
def fp32_to_fp16_bits(a):
    """Round to nearest even with IEEE fp16 subnormal outputs."""
    return fp_narrow(a, 8, 23, 5, 10, True)


@njit
def fp32_to_fp17_bits(a):
    """Round to nearest even; fp17 subnormal results flush to zero."""
    return fp_narrow(a, 8, 23, 6, 10, False)


@njit
def uint16_to_fp17_bits(a):
    """The unsigned 16-bit *fraction* ``a / 65536`` as fp17."""
    return fraction_to_float(a & 0xFFFF, 16, 6, 10)


@njit
def int17_to_fp16_bits(v):
    """A signed 17-bit integer value to fp16 (nearest even, saturating)."""
    return int_to_float(v, 5, 10)


# --- array loops -----------------------------------------------------------
BINARY_OPS = (
    "fp16_add", "fp16_sub", "fp16_mul", "fp16_max", "fp16_min",
    "fp17_add", "fp17_sub", "fp17_mul", "fp17_max", "fp17_min",
    "fp32_add", "fp32_sub", "fp32_mul", "fp32_max", "fp32_min",
)  # fmt: skip
UNARY_OPS = (
    "fp16_to_fp17", "fp16_to_fp32", "fp17_to_fp16", "fp17_to_fp32",
    "fp32_to_fp16", "fp32_to_fp17", "uint16_to_fp17",
)  # fmt: skip


# Each operation has its own loop with constant format widths, so that LLVM
# folds the widths into the kernel and vectorises the loop.  Additions run in
# blocks: a vectorised pass of ``fp_add_ordinary`` over the block, then, only
# if the block has any, a pass that recomputes the elements with an Inf operand.
BLOCK = 2048


@njit(inline="always")
def _add_loop(a, b, out, negate_b, E, M):
    flip = 1 << (E + M) if negate_b else 0  # a - b is a + (b with its sign flipped)
    for start in range(0, out.size, BLOCK):
        stop = min(start + BLOCK, out.size)
        rare = 0
        for i in range(start, stop):
            x, y = np.int64(a[i]), np.int64(b[i]) ^ flip
            out[i] = fp_add_ordinary(x, y, E, M)
            rare |= np.int64(not add_is_ordinary(x, y, E, M))
        if rare:
            for i in range(start, stop):
                x, y = np.int64(a[i]), np.int64(b[i]) ^ flip
                if not add_is_ordinary(x, y, E, M):
                    out[i] = fp_add_window(x, y, E, M)


@njit(inline="always")
def _mul_loop(a, b, out, E, M):
    for i in range(out.size):
        out[i] = fp_mul(np.int64(a[i]), np.int64(b[i]), E, M)


@njit(inline="always")
def _max_loop(a, b, out, want_max, E, M):
    for i in range(out.size):
        out[i] = fp_max(np.int64(a[i]), np.int64(b[i]), want_max, E, M)


@njit(inline="always")
def _binary_format(kind, a, b, out, E, M):
    if kind == 0:
        _add_loop(a, b, out, False, E, M)
    elif kind == 1:
        _add_loop(a, b, out, True, E, M)
    elif kind == 2:
        _mul_loop(a, b, out, E, M)
    else:
        _max_loop(a, b, out, kind == 3, E, M)


@njit
def binary_loop(op, a, b, out):
    """``out[i] = BINARY_OPS[op](a[i], b[i])`` over flat arrays."""
    fmt, kind = divmod(op, 5)
    if fmt == 0:
        _binary_format(kind, a, b, out, 5, 10)
    elif fmt == 1:
        _binary_format(kind, a, b, out, 6, 10)
    else:
        _binary_format(kind, a, b, out, 8, 23)


@njit
def _unary(op, a):
    if op == 0:
        return fp16_to_fp17_bits(a)
    if op == 1:
        return fp16_to_fp32_bits(a)
    if op == 2:
        return fp17_to_fp16_bits(a)
    if op == 3:
        return fp17_to_fp32_bits(a)
    if op == 4:
        return fp32_to_fp16_bits(a)
    if op == 5:
        return fp32_to_fp17_bits(a)
    return uint16_to_fp17_bits(a)


@njit
def unary_loop(op, a, out):
    """``out[i] = UNARY_OPS[op](a[i])`` over flat arrays.

    Compiled once per operation (``op`` is a literal), so that the dispatch
    folds away and the loop vectorises.
    """
    literally(op)
    for i in range(out.size):
        out[i] = _unary(op, np.int64(a[i]))


# --- public functions ------------------------------------------------------
def _storage(fmt: str):
    return np.uint16 if fmt in ("fp16", "uint16") else np.uint32


def _make_binary(name: str):
    fmt, verb = name.split("_")
    dtype = _storage(fmt)
    op = BINARY_OPS.index(name)

    def function(a, b):
        a, b = np.broadcast_arrays(as_bits(a, dtype), as_bits(b, dtype))
        out = np.empty(a.shape, dtype)
        binary_loop(op, flat(a), flat(b), out.reshape(-1))
        return shaped(out)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{fmt} {verb}(a, b) on raw bit patterns, NVDLA rules (see sim.num.rules)."
    return function


def _make_unary(name: str):
    src, dst = name.split("_to_")
    op = UNARY_OPS.index(name)
    in_dtype, out_dtype = _storage(src), _storage(dst)

    def function(a):
        a = as_bits(a, in_dtype)
        out = np.empty(a.shape, out_dtype)
        unary_loop(op, flat(a), out.reshape(-1))
        return shaped(out)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Convert raw {src} patterns to {dst}. " + (
        globals()[name + "_bits"].py_func.__doc__ or ""
    )
    return function


fp16_add = _make_binary("fp16_add")
fp16_sub = _make_binary("fp16_sub")
fp16_mul = _make_binary("fp16_mul")
fp16_max = _make_binary("fp16_max")
fp16_min = _make_binary("fp16_min")
fp17_add = _make_binary("fp17_add")
fp17_sub = _make_binary("fp17_sub")
fp17_mul = _make_binary("fp17_mul")
fp17_max = _make_binary("fp17_max")
fp17_min = _make_binary("fp17_min")
fp32_add = _make_binary("fp32_add")
fp32_sub = _make_binary("fp32_sub")
fp32_mul = _make_binary("fp32_mul")
fp32_max = _make_binary("fp32_max")
fp32_min = _make_binary("fp32_min")

fp16_to_fp17 = _make_unary("fp16_to_fp17")
fp16_to_fp32 = _make_unary("fp16_to_fp32")
fp17_to_fp16 = _make_unary("fp17_to_fp16")
fp17_to_fp32 = _make_unary("fp17_to_fp32")
fp32_to_fp16 = _make_unary("fp32_to_fp16")
fp32_to_fp17 = _make_unary("fp32_to_fp17")
uint16_to_fp17 = _make_unary("uint16_to_fp17")
