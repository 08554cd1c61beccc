"""The SDP datapath: X1 -> X2 -> Y -> C on a whole (N, C, H, W) cube.

``run_pipeline`` takes the input as SDP_RDMA delivers it (int8/int16 values,
or raw fp16 patterns when ``from_memory``) or as CACC does (int32 values, or
fp32 patterns) and returns the output elements in the output precision's
dtype (fp16 as uint16 patterns) together with the layer's statistics.

Order of operations, as in the C-model's SDP wrapper: fp16 memory input is
counted (NaN/Inf, raw) and widened to fp32; with NAN_TO_ZERO an fp32 NaN
input becomes +0 (fp16 processing only); then X1, X2, Y and the output
convertor.  The NaN output counter counts fp16 NaN patterns of the output.

The cube goes through in blocks of whole channels small enough to stay in
the processor's cache; large cubes spread their blocks over the cores
(numpy releases the GIL).
"""

from __future__ import annotations

import numpy as np

from .. import jit
from ..configs import FP16
from ..dma.elements import element_dtype
from ..dma.feature import scratch_bytes
from ..jit import run_split
from . import stages

BLOCK = 1 << 17  # elements per block: per-call overheads fall, temporaries stay in L2/L3
#: A cube of at least this many elements is cut into at least SHARES blocks (of at least
#: PARALLEL_MIN // SHARES elements each), which the cores take as they finish the last:
#: most of ResNet-50's cubes are one or two uneven BLOCKs, which kept a core idle.  (Four
#: shares cost more in per-block work than they gained in balance.)
PARALLEL_MIN = 1 << 16
SHARES = 2


def _blocks(n: int, cp: int, hw: int, size: int = BLOCK) -> list[tuple[slice, slice]]:
    """(channels, pixels) blocks of about ``size`` elements: whole channels, or parts of one."""
    if n * hw <= size:
        per = size // (n * hw or 1)
        return [(slice(c, min(c + per, cp)), slice(None)) for c in range(0, cp, per)]
    per = max(1, size // n)
    return [(slice(c, c + 1), slice(p, min(p + per, hw)))
            for c in range(cp) for p in range(0, hw, per)]


def datapath(layer, operands: dict, lut, from_memory: bool, cp: int, h: int, w: int):
    """The layer's :class:`stages.Datapath` with its operands shaped for the cube."""
    prec = layer.proc_precision.code
    fp = layer.proc_precision == FP16
    nan_to_zero = bool(layer.nan_to_zero and fp)
    int_path = stages.int_path_applies(layer, prec)
    # the integer layer path takes the X operands as read (int8/int16): no int64 copy of
    # an operand per element
    shaped = {name: tuple(stages.shaped_operand(values, mode, cp, h, w,
                                                None if int_path and name != "y" else np.int64)
                          for values, mode in operands[name]) for name in ("x1", "x2", "y")}
    shaped["y"] = stages.convert_y_operands(layer, shaped["y"], prec, nan_to_zero)
    int_operands = stages.int_operands(layer, shaped) if int_path else None
    return stages.Datapath(
        layer=layer, precision=prec, out_precision=layer.out_precision.code,
        fp16_in=bool(fp and from_memory), nan_to_zero=nan_to_zero, operands=shaped,
        le_bias=stages.le_exponent_bias(layer.lut.le_index_offset, fp),
        tables=(np.asarray(lut.le, np.int64), np.asarray(lut.lo, np.int64)),
        int_operands=int_operands,
        add_convert=stages.add_convert_plan(layer, int_operands, layer.out_precision.code)
        if int_path else None)


def run_pipeline(layer, data: np.ndarray, operands: dict, lut, from_memory: bool = True,
                 scratch: bool = False, path=None):
    """``scratch``: the output may be this thread's scratch memory
    (:func:`sim.dma.feature.scratch_bytes`), valid until the next such call: for a caller
    that is done with it before (the engine, writing it to memory).  ``path``: what
    :func:`datapath` made of these arguments already (the engine makes it while the
    convolution fetches its weights)."""
    n, cp, h, w = data.shape
    if path is None:
        path = datapath(layer, operands, lut, from_memory, cp, h, w)
    cube = np.ascontiguousarray(data).reshape(n, cp, h * w)  # widened where a block needs it
    dtype = element_dtype(layer.out_precision)
    if scratch:
        out = scratch_bytes(cube.size * dtype.itemsize, "sdp output").view(dtype)
        out = out.reshape(cube.shape)
    else:
        out = np.empty(cube.shape, dtype)

    suspects = []  # the blocks' elements for the rules, redone together once they are done

    def run(block: tuple[slice, slice]) -> np.ndarray:
        # the low 8 or 16 bits of the words: the element
        return path.run_into(cube[:, block[0], block[1]], *block, out[:, block[0], block[1]],
                             suspects)

    parallel = cube.size >= PARALLEL_MIN and jit.cores() > 1  # one core: fewer, larger blocks
    blocks = _blocks(n, cp, h * w, min(BLOCK, cube.size // SHARES) if parallel else BLOCK)
    if len(blocks) == 1:  # a small cube: one block, in this thread
        counts = run(blocks[0])
    else:
        parts = [None] * len(blocks)

        def run_blocks(start: int, stop: int) -> None:
            for i in range(start, stop):
                parts[i] = run(blocks[i])

        if parallel:
            run_split(run_blocks, len(blocks), pieces=len(blocks))
        else:
            run_blocks(0, len(blocks))
        counts = np.sum(parts, axis=0)
    if suspects:
        counts = counts + path.redo_suspects(suspects)
    stats = {name: int(c) for name, c in zip(stages.COUNTERS, counts.tolist(), strict=True)}
    stats["unequal"] = bool(stats["unequal"])
    return out.reshape(n, cp, h, w), stats
