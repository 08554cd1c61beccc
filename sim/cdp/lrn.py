"""Local response normalization (the CDP datapath) on (channels, pixels) arrays.

For every pixel and every channel ``c`` of the (atom-padded) cube::

    a[c]   = input_convertor(x[c])                       sim.num.cdp_icvt
    s[c]   = sum(a[c+j]**2 for j in -n..n)               exact squares, window sum
    l[c]   = LUT(s[c])                                   sim.num.lut
    y[c]   = output_convertor(l[c] * a[c])               sim.num.cdp_ocvt

with a window of 2n+1 = 3, 5, 7 or 9 channels (``D_LRN_CFG``);
``SQSUM_BYPASS`` looks up ``a[c]`` itself and ``MUL_BYPASS`` outputs ``l[c]``.
Channels outside the cube (below 0, at or beyond the real channel count,
including the padding of the last atom) enter as the raw value
``D_DATIN_OFFSET`` (its low byte for int8, +0.0 for fp16), so after the input
convertor they are 0.  Outputs are produced for every channel of every atom,
padding included: the hardware writes whole atoms and counts them.

fp16 data works in fp17/fp32 as NVDLA does: fp16 -> fp17 -> fp32, squares and
sums in fp32 (summed from the centre outwards in symmetric pairs), the LUT in
fp32/fp17, the product in fp17, then fp17 -> fp16.  The fp16 input and output
convertors ignore their offset/scale/shifter registers.  fp16 layers take one fused
kernel per pixel range (:func:`_lrn_fp_pixels`); integer layers a fused kernel when
large or once numba is loaded; :func:`_normalize_plain` (whole-array numpy steps) is the
reference both are tested against.
"""

from __future__ import annotations

import numpy as np

import sim.num as num
from sim.jit import njit, numba_loaded, run_split
from sim.num.arrays import sign_extend_array
from sim.num.blocks import CDP_INT_WIDTHS
from sim.num.fp32_fast import fp32_add, fp32_mul
from sim.num.fpcore import fp_mul, fp_widen
from sim.num.lut import COUNTER_NAMES, lookup_int
from sim.num.lut_cdp import (
    UNKNOWN_VALUE,
    entry_fp,
    flat_value,
    flat_values_fp,
    lookup_fp,
    lookup_int_one,
    place_fp,
    prepare_fp,
    value_fp,
    zero_centre_product,
    zero_signs_fp,
)
from sim.num.ops import fp16_to_fp17_bits, fp17_to_fp16_bits
from sim.num.rounding import convert, convert_flag, sign_extend
from sim.num.specials import is_inf_scalar, is_nan_scalar

from ..configs import FP16, INT8, Precision
from ..num.widths import FP16_EXP, FP16_FRAC, FP17_EXP, FP17_FRAC, FP32_EXP, FP32_FRAC
from ..records import record

HALO = 4  # the widest window (9) reaches 4 channels either side


@record
class LrnSettings:
    """What the datapath needs besides the data (see :class:`sim.cdp.config.CdpConfig`)."""

    precision: str
    window: int = 3
    sqsum_bypass: bool = False
    mul_bypass: bool = False
    nan_to_zero: bool = False
    datin: tuple = (0, 1, 0)  # (offset, scale, shifter) raw register values
    datout: tuple = (0, 1, 0)


KERNEL_MIN = 1 << 16  # integer layers from this many elements take the fused kernel (_fused)
MEMO_SHARE = 2  # look every possible square sum up once when there are at most 1/2 as many
MEMO_MAX = 1 << 22  # ... and at most this many


@njit
def _lrn_int_input(x, widths, datin, a, rows):
    """The input convertor of rows ``rows[0]:rows[1]`` into ``a`` (rows + 2*HALO, pixels),
    row ``c`` at ``c + HALO``; rows outside the cube stay 0, as their pad value converts.
    Returns the least and greatest converted value (0 when there are none)."""
    in_bits, a_bits = widths[0], widths[1]  # CdpIntWidths: data, converted
    alu, mul, shift = sign_extend(datin[0], in_bits), sign_extend(datin[1], 16), datin[2] & 31
    least = greatest = np.int64(0)
    for c in range(rows[0], rows[1]):
        for px in range(x.shape[1]):
            v = convert((sign_extend(x[c, px], in_bits) - alu) * mul, shift, a_bits)
            a[c + HALO, px] = v
            least = min(least, v)
            greatest = max(greatest, v)
    return least, greatest


@njit
def _lookup_each(sums, base, le, lo, p, values, outcomes, span):
    """LUT value and outcome of every square sum ``sums[i] + base``, ``i`` in
    ``span[0]:span[1]`` (the one place the kernels look up)."""
    for i in range(span[0], span[1]):
        values[i], outcomes[i] = lookup_int_one(sums[i] + base, le, lo, p)


OUTCOME_FIELD = 12  # bits per outcome tally packed in one int64 (5 outcomes)
OUTCOME_RUN = (1 << OUTCOME_FIELD) - 1  # elements tallied before the packed word is spilled


@njit
def _lrn_int_rows(a, half, sqsum_bypass, mul_bypass, widths, datout, le, lo, p, memo_base,
                  memo_values, memo_outcomes, scratch, y, counts, rows):
    """Window sums, lookups, products and the output convertor of rows ``rows[0]:rows[1]``.

    ``a`` is from :func:`_lrn_int_input`; ``widths`` the precision's
    :class:`sim.num.blocks.CdpIntWidths`, ``datout`` the output convertor's
    (offset, scale, shifter).  When ``memo_values`` is not empty it holds
    :func:`_lookup_each`'s results from ``memo_base`` on, covering every sum.
    ``scratch`` is a row of workspace.  ``y`` (rows, pixels) receives the
    outputs; ``counts`` gains each lookup outcome (by counter index) and, last,
    the saturations.  The arithmetic is :func:`normalize`'s numpy path, element
    by element, in three passes per row so the sums and the convertor vectorise.
    """
    word_bits, offset_bits, out_bits = widths[2], widths[3], widths[4]
    alu, mul, shift = sign_extend(datout[0], offset_bits), sign_extend(datout[1], 16), \
        datout[2] & 63
    memo = memo_values.size > 0
    pixels = a.shape[1]
    sums, which = scratch[0], scratch[1]  # a row of square sums (then LUT values), outcomes
    saturations = 0
    for c in range(rows[0], rows[1]):
        k = c + HALO
        for px in range(pixels):
            sums[px] = a[k, px] if sqsum_bypass else 0
        if not sqsum_bypass:
            for j in range(k - half, k + half + 1):  # row by row, so the sums vectorise
                for px in range(pixels):
                    sums[px] += a[j, px] * a[j, px]
        if memo:
            for px in range(pixels):
                i = sums[px] - memo_base
                sums[px], which[px] = memo_values[i], memo_outcomes[i]
        else:
            _lookup_each(sums, 0, le, lo, p, sums, which, (0, pixels))
        for first in range(0, pixels, OUTCOME_RUN):  # tallies packed in a word
            packed = 0
            for px in range(first, min(first + OUTCOME_RUN, pixels)):
                packed += np.int64(1) << (which[px] * OUTCOME_FIELD)
            for outcome in range(len(COUNTER_NAMES)):
                counts[outcome] += (packed >> (outcome * OUTCOME_FIELD)) & OUTCOME_RUN
        for px in range(pixels):
            product = sums[px] if mul_bypass else sums[px] * a[k, px]
            y[c, px], saturated = convert_flag(
                (sign_extend(product, word_bits) - alu) * mul, shift, out_bits)
            saturations += saturated
    counts[-1] += saturations


def _memo(least: int, greatest: int, s: LrnSettings, elements: int, le, lo, lut):
    """(base, values, outcomes) of every square sum the layer can reach, when that range is
    small beside the layer; empty arrays otherwise."""
    if s.sqsum_bypass:
        base, top = least, greatest
    else:
        base, top = 0, s.window * max(least * least, greatest * greatest)
    span = top - base + 1
    if span > MEMO_MAX or span * MEMO_SHARE > elements:
        return 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    sums = np.arange(span, dtype=np.int64)
    values = np.empty(span, np.int64)
    outcomes = np.empty(span, np.int64)
    run_split(lambda start, stop: _lookup_each(sums, base, le, lo, lut, values, outcomes,
                                               (start, stop)), span, 1 << 12)
    return base, values, outcomes


def _normalize_int_fused(x, channels, s: LrnSettings, le, lo, lut):
    """(output values, saturation count, counter values) of an integer layer, fused kernels."""
    rows, pixels = x.shape
    x = np.asarray(x, np.int16)  # int8 and int16 data alike: one compiled kernel
    widths = np.array(CDP_INT_WIDTHS[Precision(s.precision).code], np.int64)
    le, lo, lut = (np.asarray(t, np.int64) for t in (le, lo, lut))
    a = np.zeros((rows + 2 * HALO, pixels), np.int32)  # converted values have 9 or 17 bits
    chunk = max(1, (1 << 14) // max(pixels, 1))  # rows a thread is worth
    ranges = []
    run_split(lambda start, stop: ranges.append(_lrn_int_input(
        x, widths, np.array(s.datin, np.int64), a, (start, stop))), channels, chunk)
    least, greatest = min(r[0] for r in ranges), max(r[1] for r in ranges)
    memo_base, memo_values, memo_outcomes = _memo(least, greatest, s, x.size, le, lo, lut)
    y = np.empty((rows, pixels), np.int16)
    parts = []

    def body(start: int, stop: int) -> None:
        counts = np.zeros(len(COUNTER_NAMES) + 1, np.int64)
        _lrn_int_rows(a, (s.window - 1) // 2, s.sqsum_bypass, s.mul_bypass, widths,
                      np.array(s.datout, np.int64), le, lo, lut, memo_base, memo_values,
                      memo_outcomes, np.empty((2, pixels), np.int64), y, counts, (start, stop))
        parts.append(counts)

    run_split(body, rows, chunk)
    counts = np.sum(parts, axis=0)
    return y, int(counts[-1]), counts[:-1]


def _window_int(a, half, sqsum_bypass, mul_bypass, le, lo, p):
    """Window sums of squares, lookups and products for the centre rows of ``a``.

    Returns (y, lookup outcomes).  The squares of the 17-bit convertor
    outputs are exact (sim.num.cdp_sq's integer case).
    """
    rows = a.shape[0] - 2 * HALO
    centre = a[HALO:HALO + rows]
    if sqsum_bypass:
        s = centre
    else:
        s = sum(a[HALO + j:HALO + j + rows] ** 2 for j in range(-half, half + 1))
    value, outcomes = lookup_int(s, le, lo, p)
    return (value if mul_bypass else value * centre), outcomes


@njit(inline="always")
def _window_sum_fp32(sq, k, px, half):
    """The fp32 sum of the squares ``sq`` of rows ``k - half`` to ``k + half`` at column
    ``px``, in NVDLA's order: the nearest pair plus the centre, then each further pair
    (each pair summed first), every step rounded (``fp32_fast.fp32_add``)."""
    s = fp32_add(fp32_add(sq[k - 1, px], sq[k + 1, px]), sq[k, px])
    for j in range(2, half + 1):
        s = fp32_add(s, fp32_add(sq[k - j, px], sq[k + j, px]))
    return s


@njit
def _window_fp(x17, x32, sq, half, sqsum_bypass, mul_bypass, le, lo, p, y, outcomes, pixels):
    """fp32 window sum, LUT and fp17 product of pixels ``pixels[0]:pixels[1]``.

    ``y`` receives fp17 patterns.  Row by row (the arrays' order); the sums in the
    processor's fp32 where that is NVDLA's (``fp32_fast.fp32_add``): AlexNet's took a
    third of the kernel in the rules' branches.
    """
    rows = y.shape[0]
    for c in range(rows):
        k = c + HALO
        for px in range(pixels[0], pixels[1]):
            s = x32[k, px] if sqsum_bypass else _window_sum_fp32(sq, k, px, half)
            value, which = lookup_fp(s, le, lo, p)
            outcomes[c, px] = which
            if mul_bypass:
                y[c, px] = x17[k, px] if is_nan_scalar(x32[k, px], FP32_EXP, FP32_FRAC) else value
            else:
                y[c, px] = fp_mul(x17[k, px], value, FP17_EXP, FP17_FRAC)


FP_BLOCK = 64  # pixels the fused fp16 kernel converts at a time (its buffers stay in cache)
FP_CHUNK = 256  # pixels a thread is worth
FP_COUNTS = len(COUNTER_NAMES) + 3  # the LUT outcomes, then NaN in, Inf in, NaN out




@njit
def _lrn_fp_pixels(x, channels, half, sqsum_bypass, mul_bypass, nan_to_zero, lut, y, counts,
                   pixels):
    """The whole fp16 LRN of pixels ``pixels[0]:pixels[1]``, FP_BLOCK pixels at a time:
    :func:`_normalize_plain`'s fp16 steps element by element (NaN/Inf counts, fp16 ->
    fp17 -> fp32, squares, fp32 window sums, lookup, fp17 product, fp17 -> fp16), so
    nothing goes through memory as whole-layer int64 arrays.  ``x`` and ``y`` are
    (rows, pixels) fp16 patterns, ``lut`` the tables and registers as
    :func:`sim.num.lut_cdp.prepare_fp` gives them, plus :func:`~sim.num.lut_cdp.zero_signs_fp`
    and :func:`~sim.num.lut_cdp.flat_values_fp`: a +-0 centre whose value's sign is known
    and a sum off a table with a zero slope skip the value step (AlexNet: half its
    elements, and a quarter more); ``counts`` (FP_COUNTS) gains this range's
    counters."""
    rows = x.shape[0]
    consts, bases, steps, zero_signs, flat = lut
    x17 = np.zeros((rows + 2 * HALO, FP_BLOCK), np.int64)  # rows outside the cube: +0,
    x32 = np.zeros((rows + 2 * HALO, FP_BLOCK), np.int64)  # which converts and squares
    sq = np.zeros((rows + 2 * HALO, FP_BLOCK), np.int64)   # to +0 in every format
    tally = np.zeros(len(COUNTER_NAMES), np.int64)
    nans_in = infs_in = nans_out = 0
    for first in range(pixels[0], pixels[1], FP_BLOCK):
        width = min(FP_BLOCK, pixels[1] - first)
        for c in range(rows):
            k = c + HALO
            for i in range(width):
                h = np.int64(x[c, first + i])
                nan = is_nan_scalar(h, FP16_EXP, FP16_FRAC)
                nans_in += nan
                infs_in += is_inf_scalar(h, FP16_EXP, FP16_FRAC)
                if c >= channels or (nan_to_zero and nan):
                    h = 0
                a17 = fp16_to_fp17_bits(h)
                a32 = fp_widen(a17, FP17_EXP, FP17_FRAC, FP32_EXP, FP32_FRAC, False)
                x17[k, i] = a17
                x32[k, i] = a32
                sq[k, i] = a32 if sqsum_bypass else fp32_mul(a32, a32)
        for c in range(rows):
            k = c + HALO
            for i in range(width):
                s = x32[k, i] if sqsum_bypass else _window_sum_fp32(sq, k, i, half)
                use_lo, which, kind, index, frac, d = place_fp(s, consts)
                at = entry_fp(use_lo, kind, index)
                tally[which] += 1
                centre = x17[k, i]
                # a +-0 centre whose value's sign is known: the signed zero, no value step
                product = UNKNOWN_VALUE if mul_bypass else zero_centre_product(
                    centre, s, kind, use_lo, at, zero_signs)
                if product == UNKNOWN_VALUE:
                    value = flat_value(s, kind, use_lo, flat)
                    if value == UNKNOWN_VALUE:
                        value = value_fp(kind, frac, d, s, bases[use_lo, at], steps[use_lo, at],
                                         use_lo, consts)
                    if mul_bypass:
                        product = centre if is_nan_scalar(x32[k, i], FP32_EXP, FP32_FRAC) else value
                    else:
                        product = fp_mul(centre, value, FP17_EXP, FP17_FRAC)
                out = fp17_to_fp16_bits(product & 0x1FFFF)
                nans_out += is_nan_scalar(out, FP16_EXP, FP16_FRAC)
                y[c, first + i] = out
    for outcome in range(len(COUNTER_NAMES)):
        counts[outcome] += tally[outcome]
    counts[len(COUNTER_NAMES)] += nans_in
    counts[len(COUNTER_NAMES) + 1] += infs_in
    counts[len(COUNTER_NAMES) + 2] += nans_out


def _normalize_fp_fused(x, channels, s: LrnSettings, le, lo, lut):
    """(fp16 output patterns, counters by name) of an fp16 layer, by :func:`_lrn_fp_pixels`
    on pixel ranges, one thread each."""
    x = np.asarray(x)
    if x.dtype != np.uint16:
        x = (x & 0xFFFF).astype(np.uint16)
    x = np.ascontiguousarray(x)
    rows, pixels = x.shape
    prepared = prepare_fp(le, lo, lut)
    prepared = (*prepared, zero_signs_fp(prepared), flat_values_fp(prepared))
    y = np.empty((rows, pixels), np.uint16)
    parts = []

    def body(start: int, stop: int) -> None:
        counts = np.zeros(FP_COUNTS, np.int64)
        _lrn_fp_pixels(x, channels, (s.window - 1) // 2, s.sqsum_bypass, s.mul_bypass,
                       s.nan_to_zero, prepared, y, counts, (start, stop))
        parts.append(counts)

    run_split(body, pixels, FP_CHUNK)
    counts = np.sum(parts, axis=0)
    found = {"D_NAN_INPUT_NUM_0": int(counts[-3]), "D_INF_INPUT_NUM_0": int(counts[-2]),
             "D_NAN_OUTPUT_NUM_0": int(counts[-1]), "D_OUT_SATURATION_0": 0}
    found.update({name: int(counts[i]) for i, name in enumerate(COUNTER_NAMES)})
    return y, found


def _extend(x: np.ndarray, channels: int, pad: int) -> np.ndarray:
    """``x`` with rows at or beyond ``channels`` and HALO rows either side set to ``pad``."""
    rows, pixels = x.shape
    ext = np.full((rows + 2 * HALO, pixels), pad, np.int64)
    ext[HALO:HALO + channels] = x[:channels]
    return ext


def _pairs(values: np.ndarray, bits: int):
    """Pack a flat even-length array into (high << bits | low) lane pairs."""
    v = values.reshape(-1, 2) & ((1 << bits) - 1)
    return (v[:, 1] << bits) | v[:, 0]


def _fused(x: np.ndarray) -> bool:
    """Does an integer layer of ``x`` take the fused kernel?  A large one does; a small one
    too once numba is loaded (by another kernel: importing it costs half a second, more
    than a small trace's whole run), as the kernel's set-up (~0.3 ms) is a third of the
    numpy path's (~1 ms, dozens of calls on small arrays)."""
    return x.size >= KERNEL_MIN or numba_loaded()


def normalize(x: np.ndarray, channels: int, s: LrnSettings, le: np.ndarray, lo: np.ndarray,
              lut: np.ndarray) -> tuple[np.ndarray, dict]:
    """LRN of ``x`` (raw elements, shape (channels padded to whole atoms, pixels)).

    ``le``/``lo`` are the LUT tables, ``lut`` the parameter vector of
    :func:`sim.cdp.config.lut_params`.  Returns the output elements (same shape,
    raw values: int8/int16 values or fp16 bit patterns) and the counters by
    register name.
    """
    if s.precision == FP16:
        return _normalize_fp_fused(x, channels, s, le, lo, lut)
    rows, pixels = x.shape
    found = {}
    if _fused(x):
        out, saturated, counters = _normalize_int_fused(x, channels, s, le, lo, lut)
        found.update({"D_NAN_INPUT_NUM_0": 0, "D_INF_INPUT_NUM_0": 0, "D_NAN_OUTPUT_NUM_0": 0,
                      "D_OUT_SATURATION_0": saturated})
        found.update({name: int(counters[i]) for i, name in enumerate(COUNTER_NAMES)})
        return out, found
    return _normalize_plain(x, channels, s, le, lo, lut)


def _normalize_plain(x, channels, s: LrnSettings, le, lo, lut):
    """:func:`normalize` by whole-array numpy steps and the window kernels: the reference
    the fused kernels are tested against (small integer layers take it too)."""
    rows, pixels = x.shape
    found = {}
    x = np.asarray(x, np.int64)
    code = Precision(s.precision).code
    half = (s.window - 1) // 2
    y = np.zeros((rows, pixels), np.int64)
    outcomes = np.zeros((rows, pixels), np.int8)
    if s.precision == FP16:
        bits = x & 0xFFFF
        found["D_NAN_INPUT_NUM_0"] = int(np.count_nonzero(num.nan_mask(bits)))
        found["D_INF_INPUT_NUM_0"] = int(np.count_nonzero(num.inf_mask(bits)))
        ext = _extend(bits, channels, 0)
        if s.nan_to_zero:
            ext = num.flush_nans(ext)
        x17 = num.fp16_to_fp17(ext.astype(np.uint16)).astype(np.int64)
        x32 = num.fp17_to_fp32(x17.astype(np.uint32)).astype(np.int64)
        sq = x32 if s.sqsum_bypass else num.fp32_mul(x32, x32).astype(np.int64)
        run_split(lambda a, b: _window_fp(x17, x32, sq, half, s.sqsum_bypass, s.mul_bypass, le,
                                          lo, lut, y, outcomes, (a, b)), pixels, 256)
        out = num.cdp_ocvt(data_in=y.astype(np.uint64), alu_in=0, mul_in=0, truncate=0,
                           precision=code)["out"].astype(np.int64)
        found["D_NAN_OUTPUT_NUM_0"] = int(np.count_nonzero(num.nan_mask(out)))
        found["D_OUT_SATURATION_0"] = 0
    else:
        int8 = s.precision == INT8
        offset, scale, shifter = s.datin
        pad = int(sign_extend_array(offset, 8 if int8 else 16))
        ext = _extend(x, channels, pad)
        if int8:
            raw = _pairs(ext.reshape(-1), 8)
        else:
            raw = ext.reshape(-1) & 0xFFFF
        icvt = num.cdp_icvt(data_in=raw.astype(np.uint16), alu_in=offset, mul_in=scale,
                            truncate=shifter, precision=code)["out"].astype(np.int64)
        a = np.empty(ext.shape, np.int64)
        if int8:
            lanes = a.reshape(-1, 2)
            lanes[:, 0] = sign_extend_array(icvt, 9)
            lanes[:, 1] = sign_extend_array(icvt >> 9, 9)
        else:
            a.reshape(-1)[:] = sign_extend_array(icvt, 18)
        y, outcomes = _window_int(a, half, s.sqsum_bypass, s.mul_bypass, le, lo, lut)
        offset, scale, shifter = s.datout
        data = _pairs(y.reshape(-1), 25) if int8 else y.reshape(-1) & ((1 << 33) - 1)
        res = num.cdp_ocvt(data_in=data.astype(np.uint64), alu_in=offset, mul_in=scale,
                           truncate=shifter, precision=code)
        o = res["out"].astype(np.int64)
        sat = res["sat"].astype(np.int64)
        if int8:
            out = np.empty((rows, pixels), np.int64)
            out.reshape(-1, 2)[:, 0] = sign_extend_array(o, 8)
            out.reshape(-1, 2)[:, 1] = sign_extend_array(o >> 8, 8)
            saturated = int(np.count_nonzero(sat & 1) + np.count_nonzero(sat & 2))
        else:
            out = sign_extend_array(o, 16).reshape(rows, pixels)
            saturated = int(np.count_nonzero(sat))
        found["D_NAN_INPUT_NUM_0"] = found["D_INF_INPUT_NUM_0"] = 0
        found["D_NAN_OUTPUT_NUM_0"] = 0
        found["D_OUT_SATURATION_0"] = saturated
    counters = np.bincount(outcomes.ravel(), minlength=len(COUNTER_NAMES))
    found.update({name: int(counters[i]) for i, name in enumerate(COUNTER_NAMES)})
    return out, found
