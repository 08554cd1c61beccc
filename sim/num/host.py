"""The host CPU's float arithmetic, as NVIDIA's runtime does it on the CPU.

NVIDIA's runtime computes its emulated ("EMU") layers in C++ float32 with
the C library's ``expf``/``powf`` and stores halves through the ``half``
library it ships (round to nearest, ties away from zero).  To give the bytes
that runtime gives, the transcendental functions are the host C library's
own (through ctypes), and the conversions are written out here.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

FP16_MAX_ROUNDED = 65520.0  # halfway to the next binade: ties away overflow to inf
GLIBC_LIBM = "libm.so.6"
STABLE_QUIRK_VALUE = np.float16(32768.0).view(np.uint16)  # 0x7800, see stable_half_bits


@cache
def _libm():
    lib = _open_libm()
    for fn, nargs in (("expf", 1), ("powf", 2)):
        f = getattr(lib, fn)
        f.restype = ctypes.c_float
        f.argtypes = [ctypes.c_float] * nargs
    return lib


def _open_libm() -> ctypes.CDLL:
    """The C math library: glibc's by its soname, else wherever ``find_library`` says
    (on glibc it says that soname, through ``ctypes.util``: ~4 ms of imports and a
    ``ldconfig`` process)."""
    try:
        return ctypes.CDLL(GLIBC_LIBM)
    except OSError:
        from ctypes.util import find_library
        return ctypes.CDLL(find_library("m") or GLIBC_LIBM)


def expf(x: np.ndarray) -> np.ndarray:
    """The C library's ``expf`` of every element (float32)."""
    f = _libm().expf
    x = np.asarray(x, np.float32)
    return np.array([f(float(v)) for v in x.reshape(-1)], np.float32).reshape(x.shape)


def powf(x: np.ndarray, y: float) -> np.ndarray:
    """The C library's ``powf(x, y)`` of every element (float32)."""
    f = _libm().powf
    x = np.asarray(x, np.float32)
    return np.array([f(float(v), float(y)) for v in x.reshape(-1)], np.float32).reshape(x.shape)


def half_from_float32(x: np.ndarray) -> np.ndarray:
    """float32 -> fp16 bits, round to nearest with ties away from zero (the ``half`` library).

    Overflow (|x| >= 65520) gives infinity; NaN stays NaN (quiet, sign kept).
    """
    x = np.asarray(x, np.float32).astype(np.float64)
    mag = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    quantum = np.exp2(np.maximum(exponent, -14.0) - 10.0)  # fp16 spacing, denormals below 2^-14
    rounded = np.floor(mag / quantum + 0.5) * quantum  # exact in float64
    rounded = np.where(rounded >= FP16_MAX_ROUNDED, np.inf, rounded)
    out = np.where(np.isnan(x), x, np.copysign(rounded, x))
    return out.astype(np.float16).view(np.uint16)


def float32_bits(value: float) -> int:
    """The fp32 bit pattern of ``value`` rounded to float32 (nearest, ties to even): what
    a register holding an fp32 (a LUT start, 1/k before its fp17) is programmed with."""
    return int(np.array([value], np.float32).view(np.uint32)[0])


def float32_from_half(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, np.uint16).view(np.float16).astype(np.float32)


def saturate_int8(x: np.ndarray) -> np.ndarray:
    """Clamp to [-128, 127], then truncate toward zero (C++ ``static_cast`` of the clamp)."""
    x = np.asarray(x, np.float32)
    clamped = np.minimum(np.maximum(np.nan_to_num(x, nan=0.0), -128.0), 127.0)
    return np.trunc(clamped).astype(np.int8)


def stable_half_bits(bits: np.ndarray) -> np.ndarray:
    """fp16 elements as NVIDIA's runtime packs them for a stable hash.

    Its packing meant to fold -0 to +0 and every NaN to one pattern, but it
    compares and assigns *values*: an element equal to 32768.0 becomes 0 and a
    NaN becomes ``half(31744.0)``.  Those are the bytes its files hold.
    """
    bits = np.asarray(bits, np.uint16).copy()
    values = bits.view(np.float16)
    quirk = bits == STABLE_QUIRK_VALUE
    nan = np.isnan(values)
    bits[quirk] = 0
    bits[nan] = half_from_float32(np.float32(31744.0))
    return bits
