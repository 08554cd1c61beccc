"""Per-unit treatment of fp16 Inf and NaN inputs, as data the units use.

NVDLA never outputs Inf: each datapath turns an fp16 Inf input into a large
finite number (``nvdla/doc`` ``hw/format.rst``, "FP16 Supporting").  The
value follows from the first primitive the data meets:

* convolution (direct/image): fp16 arithmetic reads Inf as ``2**16``
  (``rules.significand``), so the pattern stays 0x7c00 and means 65536;
* Winograd: the CSC transform goes through fp17 and back to fp16, which
  saturates: 65504 (0x7bff);
* SDP: ``fp16_to_fp32`` saturates to fp32's largest finite value;
* CDP and PDP averaging: ``fp16_to_fp17`` saturates to fp17's largest finite
  value, 4292870144;
* PDP max/min pooling compares patterns and keeps Inf.

NaNs propagate (payload bits kept) unless the unit's NaN-to-zero field is set;
CDMA, SDP, PDP and CDP count NaN (and Inf) inputs, SDP/PDP/CDP NaN outputs.
Register names are as traces write them (``NVDLA_SDP.D_..._0``), field names
after the dot.
"""


import numpy as np

from sim.jit import njit
from sim.num.narrow import and16, word16
from sim.num.vector_fp import FP16, is_inf_pattern, is_nan_pattern

from ..records import record


@record
class InfConversion:
    """What an fp16 +Inf input becomes in one datapath (-Inf: the negative)."""

    path: str
    value: float | None  # the finite magnitude it stands for; None: Inf is kept
    fmt: str  # format of ``pattern``
    pattern: int  # the +Inf input's bit pattern inside the datapath


INF_CONVERSION = {
    "conv_direct": InfConversion("convolution, direct and image", 65536.0, "fp16", 0x7C00),
    "conv_winograd": InfConversion("convolution, Winograd", 65504.0, "fp16", 0x7BFF),
    "sdp": InfConversion("SDP", 3.4028234663852886e38, "fp32", 0x7F7FFFFF),
    "cdp": InfConversion("CDP", 4292870144.0, "fp17", 0x0FBFF),
    "pdp_average": InfConversion("PDP average pooling", 4292870144.0, "fp17", 0x0FBFF),
    "pdp_maxmin": InfConversion("PDP max/min pooling", None, "fp16", 0x7C00),
}


@record
class NanHandling:
    """A unit's NaN-to-zero switch and its NaN/Inf status counters."""

    unit: str
    flush: str  # "REGISTER.FIELD" that flushes input NaNs to +0
    input_nan: tuple[str, ...]  # counters of NaN inputs (data, then weights)
    input_inf: tuple[str, ...]
    output_nan: str | None


NAN_HANDLING = {
    "cdma": NanHandling(
        "NVDLA_CDMA",
        "NVDLA_CDMA.D_NAN_FLUSH_TO_ZERO_0.NAN_TO_ZERO",
        ("NVDLA_CDMA.D_NAN_INPUT_DATA_NUM_0", "NVDLA_CDMA.D_NAN_INPUT_WEIGHT_NUM_0"),
        ("NVDLA_CDMA.D_INF_INPUT_DATA_NUM_0", "NVDLA_CDMA.D_INF_INPUT_WEIGHT_NUM_0"),
        None,
    ),
    "sdp": NanHandling(
        "NVDLA_SDP",
        "NVDLA_SDP.D_FEATURE_MODE_CFG_0.NAN_TO_ZERO",
        ("NVDLA_SDP.D_STATUS_NAN_INPUT_NUM_0",),
        ("NVDLA_SDP.D_STATUS_INF_INPUT_NUM_0",),
        "NVDLA_SDP.D_STATUS_NAN_OUTPUT_NUM_0",
    ),
    "pdp": NanHandling(
        "NVDLA_PDP",
        "NVDLA_PDP.D_NAN_FLUSH_TO_ZERO_0.NAN_TO_ZERO",
        ("NVDLA_PDP.D_NAN_INPUT_NUM_0",),
        ("NVDLA_PDP.D_INF_INPUT_NUM_0",),
        "NVDLA_PDP.D_NAN_OUTPUT_NUM_0",
    ),
    "cdp": NanHandling(
        "NVDLA_CDP",
        "NVDLA_CDP.D_NAN_FLUSH_TO_ZERO_0.NAN_TO_ZERO",
        ("NVDLA_CDP.D_NAN_INPUT_NUM_0",),
        ("NVDLA_CDP.D_INF_INPUT_NUM_0",),
        "NVDLA_CDP.D_NAN_OUTPUT_NUM_0",
    ),
}


def nan_mask(bits, fmt=FP16) -> np.ndarray:
    """True where a pattern (default fp16) is a NaN."""
    return is_nan_pattern(np.asarray(bits), *fmt)


def inf_mask(bits, fmt=FP16) -> np.ndarray:
    """True where a pattern (default fp16) is +-Inf."""
    return is_inf_pattern(np.asarray(bits), *fmt)


#: Patterns counted per piece: a piece's temporaries stay in the processor's caches, where a
#: whole weight set's (tens of millions of patterns) went to memory twice per test.
COUNT_PIECE = 1 << 16


def count_nans_and_infs(bits, fmt=FP16) -> tuple[int, int]:
    """How many patterns (default fp16) of ``bits`` are NaN, and how many +-Inf: what the
    units' NaN and Inf input counters count, by the pattern rules of :mod:`sim.num.vector_fp`
    applied a cache-sized piece at a time."""
    flat = np.asarray(bits).reshape(-1)
    nans = infs = 0
    for start in range(0, flat.size, COUNT_PIECE):
        piece = flat[start:start + COUNT_PIECE]
        nans += int(np.count_nonzero(is_nan_pattern(piece, *fmt)))
        infs += int(np.count_nonzero(is_inf_pattern(piece, *fmt)))
    return nans, infs


#: fp16's Inf pattern: the least magnitude of an Inf or a NaN
FP16_INF = ((1 << FP16[0]) - 1) << FP16[1]
#: is_nan_pattern / is_inf_pattern of one pattern inside a compiled kernel
is_nan_scalar = njit(is_nan_pattern)
is_inf_scalar = njit(is_inf_pattern)


@njit(inline="always")
def fp16_nans_and_infs(words):
    """:func:`count_nans_and_infs` of fp16 patterns (a 1-D array) inside a compiled kernel:
    (NaNs, Infs).  The words' largest magnitude is found first, in one vectorised loop
    (a layer's rows of weights hold neither, nearly always), and they are tested one by
    one only where it reaches Inf's."""
    n = np.uint64(words.size)
    top = word16(0)
    for i in range(n):
        top = max(top, and16(words[i], 0x7FFF))
    nans = infs = 0
    if top >= FP16_INF:
        for i in range(n):
            nans += is_nan_scalar(words[i], *FP16)
            infs += is_inf_scalar(words[i], *FP16)
    return nans, infs


def flush_nans(bits, fmt=FP16) -> np.ndarray:
    """NaN-to-zero: NaN patterns become +0, everything else is unchanged."""
    bits = np.asarray(bits)
    return np.where(nan_mask(bits, fmt), np.zeros_like(bits), bits)
