"""The primitive operations, SoftFloat style: one function per operation.

Each public function takes raw bit patterns (numpy arrays or scalars of any
integer type; fp16 in uint16, fp17 in the low 17 bits of uint32, fp32 in
uint32) and returns the result patterns with the same broadcast shape: an
array for array input, a numpy scalar for scalar input.  They run in numpy
(:mod:`sim.num.vector_fp`), so nothing compiles.

The element kernels (``int64`` in and out) that numba kernels call directly
are ``sim.num.fpcore``'s functions and the ``*_bits`` conversions here.
"""

import numpy as np

from sim.jit import njit
from sim.num import vector_fp
from sim.num.arrays import as_bits, shaped
from sim.num.fpcore import fp_narrow, fp_widen, fraction_to_float
from sim.num.vector_fp import FP16, FP17, FP32  # noqa: F401  (the widths, re-exported)
from sim.num.widths import FP16_EXP, FP16_FRAC, FP17_EXP, FP17_FRAC, FP32_EXP, FP32_FRAC


# --- element kernels -----------------------------------------------------
# Binary operations are ``fpcore.fp_add/fp_sub/fp_mul/fp_max`` with the widths
# above, e.g. ``fp_add(a, b, FP17_EXP, FP17_FRAC)`` for fp17; conversions have their own names.
@njit
def fp16_to_fp17_bits(a):
    """The element kernel of :func:`fp16_to_fp17`."""
    return fp_widen(a, FP16_EXP, FP16_FRAC, FP17_EXP, FP17_FRAC, True)


@njit
def fp16_to_fp32_bits(a):
    """The element kernel of :func:`fp16_to_fp32`."""
    return fp_widen(a, FP16_EXP, FP16_FRAC, FP32_EXP, FP32_FRAC, True)


@njit
def fp17_to_fp16_bits(a):
    """The element kernel of :func:`fp17_to_fp16`."""
    return fp_narrow(a, FP17_EXP, FP17_FRAC, FP16_EXP, FP16_FRAC, True)


@njit
def fp32_to_fp17_bits(a):
    """The element kernel of :func:`fp32_to_fp17`."""
    return fp_narrow(a, FP32_EXP, FP32_FRAC, FP17_EXP, FP17_FRAC, False)


@njit
def uint16_to_fp17_bits(a):
    """The element kernel of :func:`uint16_to_fp17`."""
    return fraction_to_float(a & 0xFFFF, 16, FP17_EXP, FP17_FRAC)


# --- public array functions ------------------------------------------------
BINARY_OPS = (
    "fp16_add", "fp16_sub", "fp16_mul", "fp16_max", "fp16_min",
    "fp17_add", "fp17_sub", "fp17_mul", "fp17_max", "fp17_min",
    "fp32_add", "fp32_sub", "fp32_mul", "fp32_max", "fp32_min",
)  # fmt: skip
UNARY_OPS = (
    "fp16_to_fp17", "fp16_to_fp32", "fp17_to_fp16", "fp17_to_fp32",
    "fp32_to_fp16", "fp32_to_fp17", "uint16_to_fp17",
)  # fmt: skip
# What each conversion does: the documentation of its public function.
_UNARY_NOTES = {
    "fp16_to_fp17": "Exact; fp16 subnormals are renormalised.",
    "fp16_to_fp32": "Exact; fp16 subnormals are renormalised.",
    "fp17_to_fp16": "Round to nearest even with IEEE fp16 subnormal outputs.",
    "fp17_to_fp32": "Exact; an exponent-0 fp17 pattern is read as ``1.m * 2**-31``.",
    "fp32_to_fp16": "Round to nearest even with IEEE fp16 subnormal outputs.",
    "fp32_to_fp17": "Round to nearest even; fp17 subnormal results flush to zero.",
    "uint16_to_fp17": "The unsigned 16-bit *fraction* ``a / 65536`` as fp17.",
}
_WIDTHS = {"fp16": FP16, "fp17": FP17, "fp32": FP32}
_VERBS = {
    "add": vector_fp.fp_add,
    "sub": vector_fp.fp_sub,
    "mul": vector_fp.fp_mul,
    "max": lambda a, b, E, M: vector_fp.fp_max(a, b, True, E, M),
    "min": lambda a, b, E, M: vector_fp.fp_max(a, b, False, E, M),
}


# --- public functions ------------------------------------------------------
def _storage(fmt: str):
    return np.uint16 if fmt in ("fp16", "uint16") else np.uint32


def _make_binary(name: str):
    fmt, verb = name.split("_")
    dtype = _storage(fmt)
    operation, widths = _VERBS[verb], _WIDTHS[fmt]

    def function(a, b):
        a, b = np.broadcast_arrays(as_bits(a, dtype), as_bits(b, dtype))
        return shaped(np.asarray(operation(a, b, *widths)).astype(dtype))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{fmt} {verb}(a, b) on raw bit patterns, NVDLA rules (see sim.num.rules)."
    return function


def _make_unary(name: str):
    src, dst = name.split("_to_")
    convert = getattr(vector_fp, name)
    in_dtype, out_dtype = _storage(src), _storage(dst)

    def function(a):
        return shaped(np.asarray(convert(as_bits(a, in_dtype))).astype(out_dtype))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Convert raw {src} patterns to {dst}. {_UNARY_NOTES[name]}"
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
