"""The processor's IEEE float32 steps of :mod:`sim.num.vector_fp`, one element at a time.

Scalar twins for numba kernels of ``ieee_fp16_to_fp32``, ``ieee_fp32_add``/
``mul``/``max``/``relu``, ``ieee_fp32_to_fp16``, ``reads_as_ieee32`` and
``normal_result32``: each returns the same value and the same agreement flag
(where IEEE's result is NVDLA's) as its array twin, element for element
(``tests/sdp/test_fused_fp.py`` holds them together, and the SDP's fused pass to
:mod:`sim.sdp.fast_fp`).  One exception, never where they agree with NVDLA: which of
two NaN operands a sum or product passes on is the compiler's choice of operand
order, and LLVM's may differ from numpy's.

Patterns travel as int64 (numba widens integers to 64 bits anyway); float32
arithmetic runs on the processor's float32, nearest even, as numpy's does, and
is never mixed with a Python float, which numba would promote to float64.  The
fp16 conversions give numpy's bits (denormals exact or nearest even, NaN payloads
kept, a NaN never narrowed to Inf).  Every function is straight-line (selects, no
early returns) and inlined, so the loops that call them vectorise.
"""

import numpy as np

from sim.jit import njit
from sim.num import fpcore
from sim.num.widths import FP32_EXP, FP32_FRAC

SIGN32 = 0x80000000
MAGNITUDE32 = 0x7FFFFFFF
INF32 = 0x7F800000
INF16 = 0x7C00
MAGNITUDE16 = 0x7FFF
SATURATED16 = INF16 - 1  # the largest finite fp16
FP16_TINY = np.float32(2.0 ** -24)  # the fp16 denormal step
HALF = np.float32(0.5)


@njit(inline="always")
def as_float32(u):
    """The float32 whose pattern is the low 32 bits of ``u``."""
    return np.uint32(u & 0xFFFFFFFF).view(np.float32)


@njit(inline="always")
def pattern32(f):
    """The pattern (int64) of the float32 ``f``."""
    return np.int64(np.float32(f).view(np.uint32))


@njit(inline="always")
def normal_result32(u):
    """Exponent field 2..254: normal, finite and clear of the underflow boundary."""
    m = u & MAGNITUDE32
    return (m >= 0x01000000) & (m < INF32)


@njit(inline="always")
def reads_as_ieee32(u):
    """Normal or zero: NVDLA and IEEE read the same number."""
    m = u & MAGNITUDE32
    return ((m >= 0x00800000) & (m < INF32)) | (m == 0)


@njit(inline="always")
def _zero32(u):
    return (u & MAGNITUDE32) == 0


@njit(inline="always")
def ieee_fp32_add(ua, ub, alike):
    """(IEEE sum, whether it is NVDLA's): a normal sum, or a zero one carrying ``a``'s sign."""
    ur = pattern32(as_float32(ua) + as_float32(ub))
    agrees = normal_result32(ur) | (_zero32(ur) & (((ur ^ ua) & SIGN32) == 0))
    return ur, agrees if alike else agrees & reads_as_ieee32(ua) & reads_as_ieee32(ub)


@njit(inline="always")
def fp32_add(ua, ub):
    """NVDLA's fp32 sum, ``fpcore.fp_add``'s bits: the processor's where that is NVDLA's
    (:func:`ieee_fp32_add`), else the rules' (as ``vector_fp.fp_add`` on arrays).  A loop of
    them vectorises when its sums are ordinary, which the rules' branches never do."""
    ur, agrees = ieee_fp32_add(ua, ub, False)
    return ur if agrees else fpcore.fp_add(ua, ub, FP32_EXP, FP32_FRAC)


@njit(inline="always")
def ieee_fp32_mul(ua, ub, alike):
    """(IEEE product, whether it is NVDLA's): a normal product, or a zero operand."""
    ur = pattern32(as_float32(ua) * as_float32(ub))
    agrees = normal_result32(ur) | _zero32(ua) | _zero32(ub)
    return ur, agrees if alike else agrees & reads_as_ieee32(ua) & reads_as_ieee32(ub)


@njit(inline="always")
def fp32_mul(ua, ub):
    """NVDLA's fp32 product, ``fpcore.fp_mul``'s bits: the processor's where that is
    NVDLA's (:func:`ieee_fp32_mul`), else the rules'."""
    ur, agrees = ieee_fp32_mul(ua, ub, False)
    return ur if agrees else fpcore.fp_mul(ua, ub, FP32_EXP, FP32_FRAC)


@njit(inline="always")
def ieee_fp32_max(ua, ub, want_max):
    """(the larger (``want_max``) or smaller as IEEE compares, whether it is NVDLA's): all but
    two zeros, which IEEE finds equal and NVDLA orders.  A NaN compares false: ``b``."""
    a, b = as_float32(ua), as_float32(ub)
    take_a = (a > b) if want_max else (a < b)
    return (ua if take_a else ub), not ((a == b) & (a == 0))


@njit(inline="always")
def ieee_fp32_relu(u):
    """A set sign bit (-0 too) gives +0."""
    return 0 if u >= SIGN32 else u


@njit(inline="always")
def ieee_fp16_to_fp32(h):
    """(exact widening of the fp16 pattern ``h``, whether it is NVDLA's: not Inf or NaN)."""
    h = np.int64(h) & 0xFFFF
    sign = (h & 0x8000) << 16
    expo = (h >> 10) & 0x1F
    denormal = pattern32(np.float32(h & 0x3FF) * FP16_TINY)  # exact, 0 for a zero
    # rebias the exponent; all ones stays all ones (Inf, NaN with its payload)
    finite = ((h & 0x7FFF) << 13) + (0x70000000 if expo == 0x1F else 0x38000000)
    return sign | (denormal if expo == 0 else finite), expo != 0x1F


@njit(inline="always")
def _narrow_nearest_even(m):
    """The fp16 magnitude nearest (ties to even) to the finite fp32 magnitude ``m``."""
    # normal results: drop 13 bits, rounding up above half and at half to even
    normal = (m + 0xFFF + ((m >> 13) & 1) - 0x38000000) >> 13
    # denormal results: adding 0.5, whose unit in the last place is fp16's denormal step
    # 2**-24, rounds to a multiple of that step, nearest even, in the float32 adder
    low = pattern32(as_float32(m) + HALF) - 0x3F000000
    out = normal if m >= 0x38800000 else low  # 2**-14, the smallest normal
    return INF16 if m >= 0x477FF000 else out  # from 65520 up: Inf


@njit(inline="always")
def ieee_fp32_to_fp16(u):
    """(IEEE narrowing, nearest even, whether it is NVDLA's): finite inputs whose result is
    zero from a zero, or normal and off the underflow boundary."""
    m = u & MAGNITUDE32
    nan = INF16 | max((m & 0x7FFFFF) >> 13, 1)  # the payload's top bits, never Inf
    h = ((u >> 16) & 0x8000) | (nan if m > INF32 else _narrow_nearest_even(m))
    expo = (h >> 10) & 0x1F
    return h, (m < INF32) & ((m == 0) | ((expo >= 2) & (expo != 0x1F)))
