"""Floating-point fields and NVDLA's departures from IEEE-754, in one place.

A format is described by its exponent width ``E`` and mantissa width ``M``:
fp16 is (5, 10), fp17 is (6, 10) and fp32 is (8, 23).  Values travel as raw
bit patterns in ``int64``; ``unpack``/``pack`` split and join the fields.

Every NVDLA rule that an IEEE-754 implementation would not follow is one
function below, named for what it does and commented with the rule number of
``shared/golden/fp/README.md``.  The algorithms in ``fpcore`` call these
instead of spelling the rules out again.
"""

import numpy as np

from sim.jit import njit


@njit
def unpack(x, E, M):
    """(sign, exponent field, mantissa field) of the pattern ``x``."""
    return (x >> (E + M)) & 1, (x >> M) & ((1 << E) - 1), x & ((1 << M) - 1)


@njit
def pack(sign, expo, mant, E, M):
    """The bit pattern with the given fields (each already in range)."""
    return (sign << (E + M)) | (expo << M) | mant


@njit
def is_nan(expo, mant, E):
    """All-ones exponent with a non-zero mantissa."""
    return (expo == (1 << E) - 1) & (mant != 0)


@njit
def significand(expo, mant, M):
    """The (M+1)-bit significand ``1.m`` that arithmetic uses, or 0 for +-0.

    Rule 1: an exponent-0 pattern with a non-zero mantissa is *not* an IEEE
    subnormal; it has the implied 1 like a normal, with exponent field 0.
    Rule 4: an all-ones exponent (Inf) is likewise an ordinary finite number,
    ``1.m * 2**(emax_field - bias)``, so ``0 * Inf = 0`` and ``Inf - Inf = 0``.
    """
    if expo == 0 and mant == 0:
        return 0
    return mant | (1 << M)


@njit
def arithmetic_value(x, E, M):
    """The value arithmetic reads from the pattern ``x``, as an exact double.

    The double form of ``significand``: ``+-1.m * 2**(expo - bias)`` for every
    exponent field, 0 (rule 1) and all-ones (rule 4, NaN patterns too)
    included, and a signed zero for +-0.  Any fp16/fp17/fp32 value fits.
    """
    sign, expo, mant = unpack(x, E, M)
    bits = (sign << 63) | ((expo + 1024 - (1 << (E - 1))) << 52) | (mant << (52 - M))
    bits = sign << 63 if (expo == 0) & (mant == 0) else bits
    return np.int64(bits).view(np.float64)


@njit
def saturated(sign, E, M):
    """Rule 3: overflow gives the largest finite value of that sign, never Inf.

    Conversions use the same value for an Inf input.
    """
    return pack(sign, (1 << E) - 2, (1 << M) - 1, E, M)


@njit
def flushed(sign, E, M):
    """Rule 2: a result whose exponent field would be <= 0 is a signed zero.

    Arithmetic never produces subnormals, and a value just below the smallest
    normal is not rounded up to it.
    """
    return sign << (E + M)


@njit
def nan_or(a, b, E, M, result):
    """Rule 5: a NaN operand is returned bit for bit (no quieting), a first.

    ``a`` and ``b`` are the operands as the operation saw them (a subtraction
    has already flipped the sign of ``b``).
    """
    sa, ea, ma = unpack(a, E, M)
    sb, eb, mb = unpack(b, E, M)
    result = b if is_nan(eb, mb, E) else result  # selects, no branches: loops vectorise
    return a if is_nan(ea, ma, E) else result


@njit
def first_is_larger(a, b, E, M):
    """Rule 6: the operand with the larger (exponent, mantissa) field leads.

    Its sign is the sign of the sum, including an exact-zero sum; on a tie
    ``a`` leads.  Max/min use the strict comparison ``a > b`` instead.
    """
    magnitude = (1 << (E + M)) - 1
    return (a & magnitude) >= (b & magnitude)


@njit
def widened_nan(sign, mant, oE, oM):
    """A NaN widened to a larger format keeps its payload *right-aligned*.

    fp16 0x7e00 -> fp32 0x7f800200 (IEEE would shift the payload to the top).
    """
    return pack(sign, (1 << oE) - 1, mant, oE, oM)


@njit
def narrowed_nan(sign, mant, oE, oM):
    """A NaN narrowed to a smaller format keeps only its low ``oM`` mantissa bits.

    A NaN whose low bits are zero therefore becomes the Inf pattern:
    fp32 0x7fc00000 -> fp16 0x7c00.
    """
    return pack(sign, (1 << oE) - 1, mant & ((1 << oM) - 1), oE, oM)
