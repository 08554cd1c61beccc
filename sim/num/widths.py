"""The widths (exponent bits, fraction bits) of NVDLA's floating-point formats, and the
ranges of its signed integer types.

The format-generic algorithms of :mod:`sim.num.fpcore` and
:mod:`sim.num.vector_fp` take them as arguments; kernels pass these names
(module-level ints: numba reads them as compile-time constants).
"""

FP16_EXP, FP16_FRAC = 5, 10
FP17_EXP, FP17_FRAC = 6, 10  # NVDLA's internal fp17: fp16 with one more exponent bit
FP32_EXP, FP32_FRAC = 8, 23

# two's complement ranges: what an int16 element or operand, or an int32 sum, holds
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
