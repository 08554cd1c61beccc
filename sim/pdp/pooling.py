"""The PDP pooling datapath: pure functions on numpy cubes.

NVDLA's PDP pools in two passes, and the rounding of fp16 average pooling
depends on their order, so the kernels below follow it:

1. *Width pass* (line operation): for one input row, the real elements of a
   kernel window are combined left to right (max, min or sum).  For average
   pooling the padded elements are not summed one by one: when a window
   overlaps the left or right padding, ``D_POOLING_PADDING_VALUE_<n>_CFG``
   (the value software programmed for *n* padded elements) is added once, at
   the window's last real element, *n* counting the padded positions on both
   sides (:func:`_pad_counts`).
2. *Height pass*: the row results of the real rows of a window are combined
   top to bottom; a window overlapping the top/bottom padding adds
   ``PADDING_VALUE_<n> * kernel_width`` once (n padded rows of kernel_width
   elements each).
3. *Average*: the sum is scaled by ``D_RECIP_KERNEL_WIDTH`` then by
   ``D_RECIP_KERNEL_HEIGHT``.

Integer arithmetic, int16 (C-model ``cmod/pdp``): sums wrap in 32 bits; each
reciprocal product is ``round_half_away(x * r / 2**16)`` and the result is cut
to 16 bits (two's complement, no saturation).

Integer arithmetic, int8 (NVIDIA's RTL, ``NV_NVDLA_PDP_CORE_cal1d/cal2d``; the
C-model differs once a value leaves int8 range): see :func:`_int8_average`
and :func:`pdp_reciprocal_stage`.  Max/min ignore padding.

fp16 (``cmod/hls_wrapper/pdp_hls_wrapper``): max/min compare fp16 patterns
(an Inf stays Inf); average converts inputs to fp17 (Inf becomes the largest
finite fp17), adds in fp17 (two additions per step: the element, then the
left/right or top/bottom pad value, each possibly zero), multiplies the
padding value by ``kernel_width`` as fp17 (0 for width 8, see
:data:`KERNEL_WIDTH_FP17`), multiplies the sum by the fp17
reciprocal registers and rounds to fp16.

Cubes are (C, H, W) int64 arrays: integer values, or fp16 bit patterns.  The
public entry point is :func:`pool_split` (one split of the width).
"""

from __future__ import annotations

import numpy as np

from ..dma.align import window_count
from ..dma.elements import element_dtype
from ..errors import ConfigurationError
from ..jit import njit
from ..num.fpcore import fp_add, fp_max, fp_mul
from ..num.ops import fp16_to_fp17_bits, fp17_to_fp16_bits
from ..num.rounding import shift_right_round, x86_int32
from ..num.rounding import sign_extend as signed_field  # the scalar kernel, for numba code
from ..num.vector_int import pdp_reciprocal_stage, sign_extend
from ..num.vector_int import shift_right_round as shift_right_round_array
from ..num.vector_int import x86_int32 as x86_int32_array
from ..num.widths import FP16_EXP, FP16_FRAC, FP17_EXP, FP17_FRAC
from ..records import record
from ..regs.enums import FP16, INT8, INT16, Precision

AVERAGE, MAX, MIN = 0, 1, 2
METHODS = {AVERAGE: "average", MAX: "max", MIN: "min"}

#: Accumulator width in bits: the C-model's line buffers (int16 for int8 data,
#: int32 for int16 data).
ACC_BITS = {INT8: 16, INT16: 32}
#: Bit index of the sign of PADDING_VALUE_1..7 for int8/int16 data: the pad
#: value for n elements is an (8 + bit length of n)-bit number for int8.
PAD_SIGN_BIT = {INT8: (7, 8, 9, 9, 10, 10, 10), INT16: (15, 16, 17, 17, 18, 18, 18)}

#: ``kernel_width`` as fp17 for the height-pass padding product, indexed by
#: kernel width 1..8 (fp17: 6-bit exponent with bias 31, 10-bit mantissa).
#: The C-model's table holds 0.0..7.0 only: for kernel width 8 it reads the
#: word after the table, which in every build of it we examined holds zero
#: bytes (two empty static objects and padding), so the padded rows of an
#: fp16 average window of width 8 add 0 instead of 8 * PADDING_VALUE_n.
KERNEL_WIDTH_FP17 = np.array([0x0000, 0x7C00, 0x8000, 0x8200, 0x8400, 0x8500, 0x8600, 0x8700,
                              0x0000], dtype=np.int64)

FP17_MASK = 0x1FFFF


@record
class PoolConfig:
    """Everything the pooling datapath needs, decoded from PDP registers."""

    precision: Precision
    method: int  # AVERAGE / MAX / MIN
    kernel_width: int  # 1..8
    kernel_height: int  # 1..8
    stride_width: int  # 1..16
    stride_height: int  # 1..16
    pad_top: int
    pad_bottom: int
    pad_values: tuple = (0,) * 7  # raw PADDING_VALUE_1..7 register fields
    recip_width: int = 0x10000  # raw RECIP_KERNEL_WIDTH field
    recip_height: int = 0x10000  # raw RECIP_KERNEL_HEIGHT field

    def pad_array(self) -> np.ndarray:
        """Pad values as the datapath holds them (sign-extended ints, or fp17 bits)."""
        if self.precision == FP16:
            return np.array([v & FP17_MASK for v in self.pad_values], dtype=np.int64)
        bits = ACC_BITS[self.precision]
        out = []
        for v, sign in zip(self.pad_values, PAD_SIGN_BIT[self.precision], strict=True):
            if (v >> sign) & 1:
                v |= ~((1 << (sign + 1)) - 1)  # upper bits copy the sign
            out.append(sign_extend(v, bits))
        return np.array(out, dtype=np.int64)


def output_extent(in_size: int, pad_lo: int, pad_hi: int, kernel: int, stride: int) -> int:
    """Number of windows that fit in the padded extent (0 if none)."""
    return max(0, window_count(in_size, pad_lo, pad_hi, kernel, stride))


def check_windows(what: str, register: str, want: int, in_size: int, pad_lo: int, pad_hi: int,
                  kernel: int, stride: int) -> None:
    """Raise unless ``want`` output windows fit and each holds a real element."""
    have = output_extent(in_size, pad_lo, pad_hi, kernel, stride)
    if want > have:
        raise ConfigurationError(
            f"{register}: {want} output {what}s but only {have} kernel windows fit in "
            f"{in_size} input {what}s with padding {pad_lo}+{pad_hi}")
    if want and pad_lo >= kernel:
        raise ConfigurationError(
            f"{register}: padding {pad_lo} >= kernel {kernel} leaves a window without input")
    last_start = (want - 1) * stride - pad_lo
    if want and last_start > in_size - 1:
        raise ConfigurationError(f"{register}: the last {what} window holds only padding")


def window_span(out: int, kernel: int, stride: int) -> int:
    """Input elements (padding included) from the first window's start to the last one's end."""
    return (out - 1) * stride + kernel


def check_tiling(register: str, extent: str, sizes: tuple[int, int, int], out: int, what: str,
                 kernel: int, stride: int, pad_hi_name: str) -> None:
    """Raise unless ``out`` windows end on the last padded element of
    ``sizes`` = (low padding, input elements, high padding).

    NVIDIA's RTL (nv_small, checked under Verilator) counts the windows still open
    when the last line of a surface (the last column of a line) has come in from
    the bottom (right) padding register and the stride alone, and completes them
    while the next surface (line) comes in; programmed so that the last window
    ends elsewhere (on padding no window needs, or before the last input line or
    column), it hangs without its interrupt or writes other data, depending on the
    alignment and even on the cube's width.  NVIDIA's documents program it only so:
    the programming guide's PDP limits (``(PL+W+PR-Kernel_W)%stride_x == 0``,
    ``CUBE_IN_WIDTH + PL == (CUBE_OUT_WIDTH-1)*stride_x + kernel_width``, the same for
    each split; for convolution ``(Output_height - 1) * stride_y + R == PT +
    Input_Height + PB``) and its compiler (``PDPNode::adjustBRPadding`` sets the right
    and bottom padding so).  ``extent`` describes ``sizes`` ("PAD_TOP 2 + 6 input
    lines + PAD_BOTTOM 4"); ``pad_hi_name`` names the high padding in the hint.
    """
    pad_lo, in_size, pad_hi = sizes
    span, total = window_span(out, kernel, stride), pad_lo + in_size + pad_hi
    if span == total:
        return
    needed = span - pad_lo - in_size
    hint = (f"{pad_hi_name} {needed} would end them there" if needed >= 0 else
            f"the last input {what} is in no window" if needed == -1 else
            f"the last {-needed} input {what}s are in no window")
    outs = f"{out} output {what}" + ("s" if out != 1 else "")
    raise ConfigurationError(
        f"{register}: {extent} = {total} {what}s, but {outs} of kernel {kernel}, stride "
        f"{stride} span {span} ({hint}): the pooling windows must end on the last padded "
        f"{what} (NVIDIA's RTL hangs or writes other data otherwise)")


@njit
def _pad_counts(i, ki, k, n):
    """(n_lo, n_hi): the padded positions whose ``PADDING_VALUE_<n>`` joins the average
    at input element ``i``, position ``ki`` of a window of ``k`` over ``n`` input elements.

    The rule: a window starting at ``s = i - ki`` covers ``max(0, -s)`` positions
    of the low (left/top) padding and ``max(0, s + k - n)`` of the high
    (right/bottom) padding.  Padded positions are not added one by one: the value
    for their total count is added once, at the window's last real element
    (index ``min(s + k, n) - 1``), on the low side when the window starts in the
    low padding, on the high side otherwise.  Every other element adds nothing.
    """
    s = i - ki
    if i != min(s + k, n) - 1:
        return 0, 0
    padded = max(0, -s) + max(0, s + k - n)
    return (padded, 0) if s < 0 else (0, padded)


@njit
def _pick(values, count, zero):
    """``values[count - 1]``, or ``zero`` when count is 0."""
    return values[count - 1] if count > 0 else zero


@njit(inline="always")
def _add(acc, v, first, pad_lo, pad_hi, fp, acc_bits, v_first):
    """One average step: ``acc + v`` (or ``v`` first), plus the pad values it brings in.

    Integers wrap to ``acc_bits``; fp16 data adds in fp17 (``v_first`` puts
    the new value first in the fp17 sum, which decides a NaN's payload).
    """
    if not fp:
        acc = v if first else acc + v
        return signed_field(acc + pad_lo + pad_hi, acc_bits)
    if not first:
        v = fp_add(v, acc, FP17_EXP, FP17_FRAC) if v_first else fp_add(acc, v, FP17_EXP, FP17_FRAC)
    return fp_add(fp_add(v, pad_lo, FP17_EXP, FP17_FRAC), pad_hi, FP17_EXP, FP17_FRAC)


@njit(inline="always")
def _extreme(a, b, method, fp):
    """Max (method 1) or min of two values: integers, or fp16 patterns (``a`` first)."""
    if fp:
        return fp_max(a, b, method == 1, FP16_EXP, FP16_FRAC)
    return max(a, b) if method == 1 else min(a, b)


@njit(inline="always")
def _window_row(x, c, h, ws, kw, W, method, pv, fp, acc_bits):
    """Width pass of one window on row ``h`` (C-model line operation): integer sum
    or max/min, fp17 sum or fp16 max/min."""
    row = np.int64(0)
    for w in range(max(ws, 0), min(ws + kw, W)):
        kwi = w - ws
        v = x[c, h, w]
        first = w == 0 or kwi == 0
        if method == 0:
            nl, nr = _pad_counts(w, kwi, kw, W)
            if fp:
                v = fp16_to_fp17_bits(v)
            row = _add(row, v, first, _pick(pv, nl, 0), _pick(pv, nr, 0), fp, acc_bits, False)
        elif first:
            row = v
        else:
            row = _extreme(row, v, method, fp)
    return row


@njit(inline="always")
def _average(acc, fp, rw, rh):
    """Scale a window sum by the reciprocals of the kernel width and height."""
    if fp:
        scaled = fp_mul(fp_mul(acc, rw, FP17_EXP, FP17_FRAC), rh, FP17_EXP, FP17_FRAC)
        return fp17_to_fp16_bits(scaled)
    acc = x86_int32(shift_right_round(acc * rw, 16))
    return x86_int32(shift_right_round(acc * rh, 16))


@njit(inline="always")
def _pool(x, out, col0, kw, kh, sw, sh, pad_l, pad_t, method, pv, pv_rows, zero_row, fp,
          acc_bits, rw, rh, out_bits):
    """Pooling of one split: ``out[:, :, col0 + ow]`` for every window; see the module doc.

    ``pv_rows[n - 1]`` is the pad value n padded rows add to a column sum
    (``zero_row`` for none); ``out_bits`` is the integer output width (fp16:
    16-bit patterns).
    """
    C, H, W = x.shape
    Hout = out.shape[1]
    n_out = out.shape[2] - col0
    rows = np.empty((H, n_out), dtype=np.int64)
    for c in range(C):
        for h in range(H):
            for ow in range(n_out):
                rows[h, ow] = _window_row(x, c, h, ow * sw - pad_l, kw, W, method, pv, fp,
                                          acc_bits)
        for oh in range(Hout):
            hs = oh * sh - pad_t
            for ow in range(n_out):
                acc = np.int64(0)
                for h in range(max(hs, 0), min(hs + kh, H)):
                    khi = h - hs
                    row = rows[h, ow]
                    first = h == 0 or khi == 0
                    if method == 0:
                        nt, nb = _pad_counts(h, khi, kh, H)
                        acc = _add(acc, row, first, _pick(pv_rows, nt, zero_row),
                                   _pick(pv_rows, nb, zero_row), fp, acc_bits, True)
                    elif first:
                        acc = row
                    else:
                        acc = _extreme(row, acc, method, fp)
                if method == 0:
                    acc = _average(acc, fp, rw, rh)
                out[c, oh, col0 + ow] = acc & 0xFFFF if fp else signed_field(acc, out_bits)


@njit
def _pool_fp16(x, out, col0, kw, kh, sw, sh, pad_l, pad_t, method, pv, kw_fp17, rw, rh):
    """fp16 pooling; the pad values of whole rows (PADDING_VALUE_n * kw, in fp17) are made
    here: fp_mul called from Python would load a kernel of its own (~5 ms a process)."""
    pv_rows = np.empty(pv.size, np.int64)
    for i in range(pv.size):
        pv_rows[i] = fp_mul(pv[i], kw_fp17, FP17_EXP, FP17_FRAC)
    _pool(x, out, col0, kw, kh, sw, sh, pad_l, pad_t, method, pv, pv_rows,
          fp_mul(0, kw_fp17, FP17_EXP, FP17_FRAC), True, 32, rw, rh, 16)


# --- integer pooling in numpy (whole planes at a time) ---------------------------
def _pad_counts_array(i, ki, k, n):
    """:func:`_pad_counts` for an array of positions ``i`` (one kernel offset ``ki``);
    positions outside the input add nothing."""
    s = i - ki
    last_real = (i == np.minimum(s + k, n) - 1) & (i >= 0) & (i < n)
    padded = np.where(last_real, np.maximum(0, -s) + np.maximum(0, s + k - n), 0)
    return np.where(s < 0, padded, 0), np.where(s < 0, 0, padded)


def _pass_int(x, axis, n_out, k, stride, pad_lo, method, pads):
    """One pass (width: axis 2, height: axis 1) of integer pooling over every window.

    Sums are exact here and wrapped by the caller (modular arithmetic); the
    pad values of ``pads`` (index n: n padded elements, 0: none) join at the
    positions the hardware adds them.  Max/min ignore padding.
    """
    n = x.shape[axis]
    starts = np.arange(n_out) * stride - pad_lo
    acc = None
    for ki in range(k):
        i = starts + ki
        valid = (i >= 0) & (i < n)
        shape = [1, 1, 1]
        shape[axis] = n_out
        values = np.take(x, np.clip(i, 0, n - 1), axis=axis)
        mask = valid.reshape(shape)
        if method == AVERAGE:
            nl, nr = _pad_counts_array(i, ki, k, n)
            term = np.where(mask, values + (pads[nl] + pads[nr]).reshape(shape), 0)
            acc = term if acc is None else acc + term
        else:
            fill = np.iinfo(np.int64).min if method == MAX else np.iinfo(np.int64).max
            term = np.where(mask, values, fill)
            pick = np.maximum if method == MAX else np.minimum
            acc = term if acc is None else pick(acc, term)
    return acc


#: int8 average in NVIDIA's RTL: bits of the row sums (width pass, padding
#: included), of the column sums before the padded rows join, and of the
#: column sum with them (one more bit: two 14-bit terms added exactly).
INT8_ROW_BITS, INT8_COL_BITS, INT8_SUM_BITS = 11, 14, 15
#: Width of the product kept by each reciprocal stage (sum bits + 16; the top
#: bit of a full signed product is dropped) and width of its result.
INT8_STAGE_W = (31, 11)
INT8_STAGE_H = (28, 8)


def _int8_average(x, cfg: PoolConfig, pad_left: int, n_out: int, h_out: int):
    """int8 average pooling of a split as NVIDIA's RTL computes it.

    Width pass: element sums plus ``PADDING_VALUE_n`` (its low 11 bits, signed)
    wrap to 11 bits.  Height pass: row sums wrap to 14 bits; a window with n
    padded rows then adds ``PADDING_VALUE_n * kernel_width`` (the 19-bit
    signed field times the width, low 14 bits, signed) without wrapping
    (15-bit result).  Then :func:`pdp_reciprocal_stage` with the width and the
    height reciprocals.  For sums and pad values that stay in range this is
    the C-model's result; past int8 range the two differ.
    """
    kw, kh = cfg.kernel_width, cfg.kernel_height
    regs = [int(v) for v in cfg.pad_values]
    row_pads = np.array([0] + [sign_extend(v, INT8_ROW_BITS) for v in regs], dtype=np.int64)
    rows = _pass_int(x, 2, n_out, kw, cfg.stride_width, pad_left, AVERAGE, row_pads)
    rows = sign_extend(rows, INT8_ROW_BITS)
    cols = _pass_int(rows, 1, h_out, kh, cfg.stride_height, cfg.pad_top, AVERAGE,
                     np.zeros(8, dtype=np.int64))
    cols = sign_extend(cols, INT8_COL_BITS)
    col_pads = np.array([0] + [sign_extend(sign_extend(v, 19) * kw, INT8_COL_BITS) for v in regs],
                        dtype=np.int64)
    starts = np.arange(h_out) * cfg.stride_height - cfg.pad_top
    real = np.minimum(starts + kh, x.shape[1]) - np.maximum(starts, 0)
    total = cols + col_pads[np.clip(kh - real, 0, 7)].reshape(1, h_out, 1)
    acc = pdp_reciprocal_stage(total, cfg.recip_width, *INT8_STAGE_W)
    return pdp_reciprocal_stage(acc, cfg.recip_height, *INT8_STAGE_H)


def _pool_int_array(x, cfg: PoolConfig, pad_left: int, n_out: int, h_out: int, pv, pv_rows,
                    acc_bits):
    """Integer pooling of a split (C, H, W) -> (C, h_out, n_out): NVDLA wrapping, rounding."""
    kw, kh, method = cfg.kernel_width, cfg.kernel_height, cfg.method
    if method == AVERAGE and cfg.precision == INT8:
        return _int8_average(x, cfg, pad_left, n_out, h_out)
    rows = _pass_int(x, 2, n_out, kw, cfg.stride_width, pad_left, method,
                     np.concatenate([[0], pv]))
    if method == AVERAGE:
        rows = sign_extend(rows, acc_bits)
    acc = _pass_int(rows, 1, h_out, kh, cfg.stride_height, cfg.pad_top, method,
                    np.concatenate([[0], pv_rows]))
    if method == AVERAGE:
        acc = sign_extend(acc, acc_bits)
        acc = x86_int32_array(shift_right_round_array(acc * cfg.recip_width, 16))
        acc = x86_int32_array(shift_right_round_array(acc * cfg.recip_height, 16))
    return acc


def _extreme_pass(x: np.ndarray, axis: int, n_out: int, k: int, stride: int, pad_lo: int,
                  method: int) -> np.ndarray | None:
    """:func:`_pass_int` of max/min pooling in ``x``'s own integer dtype (no int64 copies):
    the padding, which max and min ignore, is the dtype's minimum (max) or maximum (min),
    which no window can pick over a real element.  None when some window holds only
    padding (its int64 fill would differ): the caller takes :func:`_pass_int`."""
    n = x.shape[axis]
    if n_out < 1 or pad_lo >= k or (n_out - 1) * stride - pad_lo > n - 1:
        return None
    info = np.iinfo(x.dtype)
    span = (n_out - 1) * stride + k
    shape = list(x.shape)
    shape[axis] = max(span, pad_lo + n)
    framed = np.full(shape, info.min if method == MAX else info.max, x.dtype)
    inside = [slice(None)] * 3
    inside[axis] = slice(pad_lo, pad_lo + n)
    framed[tuple(inside)] = x
    pick = np.maximum if method == MAX else np.minimum
    acc = None
    for ki in range(k):
        window = [slice(None)] * 3
        window[axis] = slice(ki, ki + (n_out - 1) * stride + 1, stride)
        term = framed[tuple(window)]
        acc = term.copy() if acc is None else pick(acc, term, out=acc)
    return acc


def _extreme_int(x: np.ndarray, cfg: PoolConfig, pad_left: int, n_out: int, h_out: int):
    """Integer max/min pooling of a split in its element dtype (int8/int16 values), or
    None (see :func:`_extreme_pass`)."""
    rows = _extreme_pass(x, 2, n_out, cfg.kernel_width, cfg.stride_width, pad_left,
                         cfg.method)
    if rows is None:
        return None
    return _extreme_pass(rows, 1, h_out, cfg.kernel_height, cfg.stride_height, cfg.pad_top,
                         cfg.method)


def pool_split(x: np.ndarray, out: np.ndarray, col0: int, n_out: int, cfg: PoolConfig,
               pad_left: int) -> None:
    """Pool one split ``x`` (C, H, W) into ``out[:, :, col0:col0+n_out]`` (int64 arrays).

    ``pad_left`` is the split's own left padding (the layer's for the first
    split, 0 for the others); the right padding only decides which windows
    exist, which the caller checks with :func:`check_windows`.  Integer max/min
    pooling of int8/int16 elements (``x`` in that dtype) stays in that dtype.
    """
    view = out[:, :, : col0 + n_out]
    if cfg.method != AVERAGE and cfg.precision != FP16 \
            and x.dtype == element_dtype(cfg.precision):
        acc = _extreme_int(x, cfg, pad_left, n_out, view.shape[1])
        if acc is not None:
            view[:, :, col0:col0 + n_out] = acc
            return
    x = np.ascontiguousarray(x, dtype=np.int64)
    pv = cfg.pad_array()
    kw = cfg.kernel_width
    geometry = (kw, cfg.kernel_height, cfg.stride_width, cfg.stride_height, pad_left,
                cfg.pad_top, cfg.method)
    if cfg.precision == FP16:
        _pool_fp16(x, view, col0, *geometry, pv, int(KERNEL_WIDTH_FP17[kw]),
                   cfg.recip_width & FP17_MASK, cfg.recip_height & FP17_MASK)
    else:
        acc_bits = ACC_BITS[cfg.precision]
        pv_rows = np.array([sign_extend(v * kw, acc_bits) for v in pv], dtype=np.int64)
        acc = _pool_int_array(x, cfg, pad_left, n_out, view.shape[1], pv, pv_rows, acc_bits)
        view[:, :, col0:col0 + n_out] = sign_extend(acc, 8 * cfg.precision.bytes)


__all__ = [
    "AVERAGE", "MAX", "MIN", "INT8", "INT16", "FP16", "PoolConfig", "check_windows",
    "output_extent", "pool_split",
]
