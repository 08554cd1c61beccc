"""The fp16 SDP float32 pass (:mod:`sim.sdp.fast_fp`) as one compiled pass over a block.

:func:`run` gives :func:`sim.sdp.fast_fp.run`'s suspect mask and, wherever that
is clear, its words bit for bit, from the scalar twins of its steps
(:mod:`sim.num.fp32_fast`; a suspect's word, which the rules replace, can differ
where two NaNs meet: which passes is the compiler's choice).  numpy runs each
step over the whole block with temporaries (20-30 passes through memory); here
the kernel takes the block a row piece at a time (:data:`PIECE` elements, which
stay in the L1 cache) through every enabled step, each a short loop that
vectorises.

The layer becomes a plan of steps (one row each: what, which operand, whether
that operand is fp16) and its operands 2-D int64 arrays, one row per channel or
one row for all, one column per pixel or one for all: so one compiled kernel
serves every layer (one signature per input dtype: fp16 words from memory, fp32
words from CACC).  Compiling costs more than a small block takes: the datapath
uses this pass only once numba is loaded anyway, on large blocks
(:func:`worth_it`).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit, numba_loaded, prefer_wide_vectors
from ..num import fp32_fast
from ..num.fp32_fast import INF16, MAGNITUDE16, SATURATED16
from ..regs.enums import AluAlgo
from . import fast_fp

#: Smaller blocks take numpy: the per-call set-up would dominate.  (Measured in a network,
#: where a layer's numpy calls meet caches a large layer has just gone through, the
#: compiled pass pays from a few hundred elements: AlexNet's fc8, 1008, took 0.1 ms less
#: than with numpy's dozen passes, 0.8 ms of the layer outside its products.)
MIN_ELEMENTS = 256
PIECE = 1024  # elements of a row the kernel carries through all steps at once
#: Blocks of rows shorter than this run as one row (:func:`_one_row`): the kernel's
#: set-up per row and step cost 250 ns a row, 1 ms for a fully connected layer's 4096
#: one-pixel channels.  Spreading per-channel operands over longer rows cost more than
#: it saved (2048 rows, 3 such operands: 24 pixels 0.19 ms against 0.74 row by row, 32
#: pixels 0.57 against 0.72, 49 pixels 0.89 against 0.76).
SHORT_ROW = 32
OPERAND_SLOTS = 6  # (alu, mul) of X1, X2 and Y: the kernel always takes this many
SIGN = 0x80000000
#: what :func:`run_tallied` counts: suspects, then among the other words the saturated
#: (the largest finite magnitude) and the NaNs, the SDP's counters without a pass of numpy
TALLIES = 3

# plan step codes: the ALU's own (MAX, MIN, SUM), then the multiplier and ReLU
STEP_MAX, STEP_MIN, STEP_SUM = int(AluAlgo.MAX), int(AluAlgo.MIN), int(AluAlgo.SUM)
STEP_MUL, STEP_PRELU, STEP_RELU = 4, 5, 6
_NO_OPERAND = np.zeros((1, 1), np.int64)


def worth_it(v: np.ndarray) -> bool:
    """Whether the compiled pass pays for the block ``v``: numba is loaded (by another
    kernel: this one never brings it in) and the block is large."""
    return numba_loaded() and v.size >= MIN_ELEMENTS


# --- the kernel -----------------------------------------------------------------
# Each step is its own compiled loop (LLVM inlines them into the kernel): the loops
# take only the piece buffers, so both input signatures share them, compiled once.  Each
# asks for 512-bit vectors (prefer_wide_vectors): ResNet-50's SDP blocks took a tenth less.
@njit
def _load_input(src, fp16, u, bad, k):
    """The input words as fp32 patterns; those IEEE reads apart mark ``bad``."""
    prefer_wide_vectors()
    if fp16:
        for i in range(k):
            word, agrees = fp32_fast.ieee_fp16_to_fp32(src[i])
            u[i] = word
            bad[i] = not agrees
    else:
        for i in range(k):
            word = src[i] & 0xFFFFFFFF
            u[i] = word
            bad[i] = not fp32_fast.reads_as_ieee32(word)


@njit(inline="always")
def _operand_word(x, fp16):
    """(an operand's fp32 pattern, whether IEEE reads it as NVDLA does)."""
    if fp16:
        return fp32_fast.ieee_fp16_to_fp32(x)
    word = x & 0xFFFFFFFF
    return word, fp32_fast.reads_as_ieee32(word)


@njit
def _load_operand(op, row, start, k, fp16, w, bad):
    """The operand's fp32 patterns for the piece into ``w``; unreadable ones mark ``bad``."""
    prefer_wide_vectors()
    op_row = op[row % op.shape[0]]
    if op.shape[1] == 1:  # one value for the whole row: converted once
        word, agrees = _operand_word(op_row[0], fp16)
        w[:k] = word
        if not agrees:
            bad[:k] = True
        return
    for i in range(k):
        word, agrees = _operand_word(op_row[start + i], fp16)
        w[i] = word
        bad[i] = bad[i] | (not agrees)


@njit(inline="always")
def _alu_word(x, y, code):
    if code == STEP_SUM:
        return fp32_fast.ieee_fp32_add(x, y, True)
    return fp32_fast.ieee_fp32_max(x, y, code == STEP_MAX)


@njit
def _alu(u, w, bad, k, code):
    """The ALU (SUM, MAX or MIN: a run-time code, so one compiled loop) on the piece."""
    prefer_wide_vectors()
    for i in range(k):
        r, agrees = _alu_word(u[i], w[i], code)
        u[i] = r
        bad[i] = bad[i] | (not agrees)


@njit
def _mul(u, w, bad, k, prelu):
    """The multiplier, or PReLU, on the piece."""
    prefer_wide_vectors()
    for i in range(k):
        x = u[i]
        r, agrees = fp32_fast.ieee_fp32_mul(x, w[i], True)
        keep = prelu and x < SIGN  # PReLU: a clear sign bit passes unmultiplied
        u[i] = x if keep else r
        bad[i] = bad[i] | (not (keep or agrees))


@njit
def _relu(u, k):
    prefer_wide_vectors()
    for i in range(k):
        u[i] = fp32_fast.ieee_fp32_relu(u[i])


@njit
def _store(u, bad, k, h, suspect, tally):
    """The piece narrowed to fp16 words; suspects: ``bad`` and the narrowings IEEE gets
    wrong.  ``tally`` gains the suspects and, of the other words, the saturated and NaN
    ones (:data:`TALLIES`)."""
    prefer_wide_vectors()
    suspects = saturated = nans = 0
    for i in range(k):
        word, agrees = fp32_fast.ieee_fp32_to_fp16(u[i])
        h[i] = word
        redo = bad[i] | (not agrees)
        suspect[i] = redo
        magnitude = word & MAGNITUDE16
        suspects += redo
        saturated += (not redo) & (magnitude == SATURATED16)
        nans += (not redo) & (magnitude > INF16)
    tally[0] += suspects
    tally[1] += saturated
    tally[2] += nans


@njit
def _apply(code, op, fp16, row, start, k, u, w, bad):
    """One plan step on the piece ``u`` (fp32 patterns) of row ``row``."""
    if code == STEP_RELU:
        _relu(u, k)
        return
    _load_operand(op, row, start, k, fp16, w, bad)
    if code == STEP_MUL or code == STEP_PRELU:
        _mul(u, w, bad, k, code == STEP_PRELU)
    else:
        _alu(u, w, bad, k, code)


@njit
def _fused_block(v, fp16_in, plan, operands, h, suspect, tally):
    """``h``/``suspect`` (rows, pixels) of the input rows ``v``: fast_fp.run's steps;
    ``tally`` as :func:`_store`."""
    rows, pixels = v.shape
    u = np.empty(PIECE, np.uint32)
    w = np.empty(PIECE, np.uint32)
    bad = np.empty(PIECE, np.bool_)
    for row in range(rows):
        for start in range(0, pixels, PIECE):
            k = min(PIECE, pixels - start)
            _load_input(v[row, start:], fp16_in, u, bad, k)
            for s in range(plan.shape[0]):
                _apply(plan[s, 0], operands[plan[s, 1]], plan[s, 2] != 0, row, start, k,
                       u, w, bad)
            _store(u, bad, k, h[row, start:], suspect[row, start:], tally)


# --- the layer as a plan ----------------------------------------------------------
def _alu_step(algo: int) -> int:
    """fast_fp's ALU: SUM adds, MAX takes the larger, every other algorithm the smaller."""
    return STEP_SUM if algo == AluAlgo.SUM else STEP_MAX if algo == AluAlgo.MAX else STEP_MIN


def _operand_rows(op, shape: tuple) -> np.ndarray:
    """An operand broadcastable to the (N, C, P) block as a writable C-contiguous int64
    array of one row (all rows alike) or one per channel (or per image and channel), and
    one column (all pixels alike) or one per pixel."""
    op = np.asarray(op, np.int64)
    op = op.reshape((1,) * (3 - op.ndim) + op.shape)
    if op.shape[0] != 1:  # it varies over images: one row per (image, channel)
        op = np.broadcast_to(op, shape[:2] + op.shape[2:])
    op = np.ascontiguousarray(op.reshape(-1, op.shape[2]))
    return op if op.flags.writeable else op.copy()  # read-only arrays type apart in numba


def _plan(path, operand, shape: tuple) -> tuple[np.ndarray, tuple]:
    """(plan steps (code, operand slot, fp16 operand), operands) of ``path``'s layer,
    in fast_fp.run's order: X1, X2 (ALU, multiplier, ReLU), then Y (multiplier, ALU)."""
    steps, operands = [], []
    for kind, detail, op, fp16 in fast_fp.steps(path):
        if kind == fast_fp.RELU:
            steps.append((STEP_RELU, 0, 0))
            continue
        operands.append(_operand_rows(operand(op), shape))
        code = _alu_step(detail) if kind == fast_fp.ALU else STEP_PRELU if detail else STEP_MUL
        steps.append((code, len(operands) - 1, int(fp16)))
    operands += [_NO_OPERAND] * (OPERAND_SLOTS - len(operands))
    return np.array(steps, np.int64).reshape(-1, 3), tuple(operands)


def _input_rows(v: np.ndarray, fp16_in: bool) -> np.ndarray:
    """The block as (N*C, P) rows of fp16 words (uint16) or fp32 words (CACC's uint32 as
    they are, other dtypes as int64)."""
    words = v if not fp16_in or v.dtype == np.uint16 else (v & 0xFFFF).astype(np.uint16)
    if not fp16_in and words.dtype not in (np.uint32, np.int64):
        words = words.astype(np.int64)
    words = np.ascontiguousarray(words)
    if not words.flags.writeable:
        words = words.copy()
    return words.reshape(-1, v.shape[-1])


def run(path, v: np.ndarray, operand) -> tuple[np.ndarray, np.ndarray]:
    """(fp16 output words as uint16, elements the rules must recompute) of the block ``v``
    (N, C, P), as :func:`sim.sdp.fast_fp.run` gives them, in one compiled pass."""
    return run_tallied(path, v, operand)[:2]


def run_tallied(path, v: np.ndarray, operand, h: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`run`'s words and suspects, and their :data:`TALLIES` (int64).  ``h``: where
    the words go (a C-ordered uint16 array of ``v``'s shape), else a new array."""
    if h is None:
        h = np.empty(v.shape, np.uint16)
    suspect = np.empty(v.shape, np.bool_)
    tally = np.zeros(TALLIES, np.int64)
    if v.size == 0:
        return h, suspect, tally
    plan, operands = _plan(path, operand, v.shape)
    rows = _input_rows(v, path.fp16_in)
    if rows.shape[1] < SHORT_ROW and rows.shape[0] > 1:
        rows, operands = _one_row(rows, operands)
    _fused_block(rows, path.fp16_in, plan, operands, h.reshape(rows.shape),
                 suspect.reshape(rows.shape), tally)
    return h, suspect, tally


def _one_row(rows: np.ndarray, operands: tuple) -> tuple[np.ndarray, tuple]:
    """The block ``rows`` (rows, pixels) as one row of all its elements (in memory
    order), and each operand (:func:`_operand_rows`) as its value at each element (a
    single value stays one): the kernel's ``op[row % its rows]``, made once."""
    n_rows, pixels = rows.shape
    flat = []
    for op in operands:
        if op.shape == (1, 1):
            flat.append(op)
            continue
        repeats = n_rows // op.shape[0]  # its rows over the block's, in turn
        if repeats == 1 and (pixels == 1 or op.shape[1] != 1):
            flat.append(op.reshape(1, -1))  # already the value at each element, in order
        elif op.shape[1] == 1:  # one value a row: each value over the row's pixels
            column = op[:, 0] if repeats == 1 else np.tile(op[:, 0], repeats)
            flat.append(np.repeat(column, pixels).reshape(1, -1))
        else:  # one value a pixel (arrays numba takes: C-ordered and writeable, as op)
            flat.append(np.tile(op, (repeats, 1)).reshape(1, -1))
    return rows.reshape(1, -1), tuple(flat)
