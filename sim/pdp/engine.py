"""PDP engine: pooling layers, from memory (PDP_RDMA) or on the fly from the SDP.

A layer is cut into 1..256 *splits* of the input width (``SPLIT_NUM`` + 1):
the first, ``n - 2`` middle and the last one, with widths from
``D_PARTIAL_WIDTH_IN/OUT``.  Every split after the first re-reads the last
``kernel_width - stride_width`` input columns of the previous one (the
overlap), and is pooled as a cube of its own: the layer's left padding
applies to the first split only and its right padding to the last one.  The
PDP_RDMA reads each split's columns with its own registers; the PDP writes
each split's output columns at ``dst + first_out_column * atom``.  The last
window must end on the last padded line of a surface and on the last padded
column of a line (of the last split): :func:`check_tiles`.

Counters: ``D_NAN_INPUT_NUM``/``D_INF_INPUT_NUM`` count fp16 NaN/Inf in every
atom PDP_RDMA reads (overlap columns twice, padding lanes of the last surface
included, before the NaN flush); ``D_NAN_OUTPUT_NUM`` counts NaN in every
atom written.  On-the-fly input is never flushed or counted at the input, as
in the C-model.

:func:`pool_from_sdp` is the entry point for SDP -> PDP on the fly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..chains import PDP, PDP_RDMA, pdp_input_on_the_fly
from ..dma.align import align_up
from ..dma.elements import element_dtype, elements_per_atom
from ..dma.feature import read_feature, write_feature
from ..dma.precision import check_precision
from ..dram import ORDERED, STREAMED
from ..engine import Engine, armed_groups
from ..errors import ConfigurationError
from ..num import flush_nans, inf_mask, nan_mask
from ..records import record
from ..regs.enums import FP16, Precision

# the pooling datapath (.pooling) loads with the first PDP layer: every machine builds this
# engine, and most traces pool nothing
if TYPE_CHECKING:
    from .pooling import PoolConfig

ON_FLYING = 0


@record
class Split:
    """One split of the layer's width, in PDP core terms."""

    in_width: int  # input columns the core consumes (overlap included)
    out_width: int
    out_start: int  # first output column of the layer this split writes
    pad_left: int
    pad_right: int


def input_precision(block, unit: str, config) -> Precision:
    """INPUT_DATA of the PDP or PDP_RDMA block, which ``config`` must support."""
    prec = block.precision("input_data")
    config.require_precision(prec, f"{unit}.D_DATA_FORMAT_0")
    return prec


def pool_config(pdp, config) -> PoolConfig:
    """The datapath configuration of the PDP block ``pdp`` (a decoded snapshot)."""
    from .pooling import METHODS, PoolConfig

    method = pdp.pooling_method
    if method not in METHODS:
        raise ConfigurationError(f"NVDLA_PDP.D_OPERATION_MODE_CFG_0: POOLING_METHOD {method} "
                                 "is reserved")
    return PoolConfig(
        precision=input_precision(pdp, PDP, config),
        method=method,
        kernel_width=pdp.kernel_width + 1,
        kernel_height=pdp.kernel_height + 1,
        stride_width=pdp.kernel_stride_width + 1,
        stride_height=pdp.kernel_stride_height + 1,
        pad_top=pdp.pad_top,
        pad_bottom=pdp.pad_bottom,
        pad_values=tuple(getattr(pdp, f"pad_value_{n}x") for n in range(1, 8)),
        recip_width=pdp.recip_kernel_width,
        recip_height=pdp.recip_kernel_height,
    )


def pdp_splits(pdp, cfg: PoolConfig) -> list[Split]:
    """The splits the PDP core pools (one when SPLIT_NUM is 0)."""
    if pdp.split_num == 0:
        return [Split(pdp.cube_in_width + 1, pdp.cube_out_width + 1, 0, pdp.pad_left,
                      pdp.pad_right)]
    n = pdp.split_num + 1
    overlap = cfg.kernel_width - cfg.stride_width
    first_out, mid_out = pdp.partial_width_out_first + 1, pdp.partial_width_out_mid + 1
    splits = [Split(pdp.partial_width_in_first + 1, first_out, 0, pdp.pad_left, 0)]
    for i in range(1, n):
        last = i == n - 1
        width = (pdp.partial_width_in_last if last else pdp.partial_width_in_mid) + 1 + overlap
        out = (pdp.partial_width_out_last if last else pdp.partial_width_out_mid) + 1
        if width < 1:
            raise ConfigurationError("NVDLA_PDP.D_PARTIAL_WIDTH_IN_0: split width "
                                     f"{width - overlap} with kernel-stride overlap {overlap} "
                                     "is empty")
        splits.append(Split(width, out, first_out + (i - 1) * mid_out, 0,
                            pdp.pad_right if last else 0))
    return splits


def rdma_columns(rdma) -> list[tuple[int, int]]:
    """(first input column, width) of every split PDP_RDMA reads."""
    if rdma.split_num == 0:
        return [(0, rdma.cube_in_width + 1)]
    n = rdma.split_num + 1
    overlap = (rdma.kernel_width + 1) - (rdma.kernel_stride_width + 1)
    first, mid = rdma.partial_width_in_first + 1, rdma.partial_width_in_mid + 1
    cols = [(0, first)]
    for i in range(1, n):
        width = (rdma.partial_width_in_last + 1 if i == n - 1 else mid) + overlap
        cols.append((first + (i - 1) * mid - overlap, width))
    return cols


def check_geometry(pdp, cfg: PoolConfig, splits: list[Split]) -> None:
    from .pooling import check_windows

    check_windows("line", "NVDLA_PDP.D_DATA_CUBE_OUT_HEIGHT_0", pdp.cube_out_height + 1,
                  pdp.cube_in_height + 1, cfg.pad_top, cfg.pad_bottom, cfg.kernel_height,
                  cfg.stride_height)
    register = ("NVDLA_PDP.D_DATA_CUBE_OUT_WIDTH_0" if len(splits) == 1
                else "NVDLA_PDP.D_PARTIAL_WIDTH_OUT_0")
    for s in splits:
        check_windows("column", register, s.out_width, s.in_width, s.pad_left, s.pad_right,
                      cfg.kernel_width, cfg.stride_width)
    check_tiles(pdp, cfg, splits)


PADDING = "NVDLA_PDP.D_POOLING_PADDING_CFG_0"


def check_tiles(pdp, cfg: PoolConfig, splits: list[Split]) -> None:
    """The pooling windows end on the last padded line of a surface and the last padded
    column of a line (:func:`.pooling.check_tiling`): in split mode, of the last split.

    The programming guide asks the same of the first and middle splits and that the
    splits add up to the cube; NVIDIA's RTL pools such splits as modelled here (a
    middle split's unused columns, splits short of the cube), so they are not refused.
    """
    from .pooling import check_tiling

    height = pdp.cube_in_height + 1
    check_tiling(PADDING, f"PAD_TOP {cfg.pad_top} + {height} input lines + PAD_BOTTOM "
                 f"{cfg.pad_bottom}", (cfg.pad_top, height, cfg.pad_bottom),
                 pdp.cube_out_height + 1, "line", cfg.kernel_height, cfg.stride_height,
                 "PAD_BOTTOM")
    k, stride, last = cfg.kernel_width, cfg.stride_width, splits[-1]
    if len(splits) == 1:
        register, extent = PADDING, f"PAD_LEFT {last.pad_left} + {last.in_width} input columns"
    else:
        register = "NVDLA_PDP.D_PARTIAL_WIDTH_IN_0"
        extent = (f"the last of {len(splits)} splits' {last.in_width} input columns (overlap "
                  f"{k - stride} included)")
    check_tiling(register, f"{extent} + PAD_RIGHT {last.pad_right}",
                 (last.pad_left, last.in_width, last.pad_right), last.out_width, "column", k,
                 stride, "PAD_RIGHT")


def padded_channels(channels: int, precision: Precision, atom_bytes: int) -> int:
    group = elements_per_atom(precision, atom_bytes)
    return align_up(channels, group)


def read_splits(ctx, pdp, cfg: PoolConfig, splits: list[Split]) -> list[np.ndarray]:
    """PDP_RDMA: each split's input sub-cube (C padded to whole atoms, H, W)."""
    rdma = ctx.regs(PDP_RDMA)
    check_precision("pdp", input_precision(rdma, PDP_RDMA, ctx.config),
                    cfg.precision, "NVDLA_PDP_RDMA.D_DATA_FORMAT_0.INPUT_DATA "
                    "(input) vs NVDLA_PDP.D_DATA_FORMAT_0.INPUT_DATA (output): INPUT_DATA differs")
    for field in ("cube_in_width", "cube_in_height", "cube_in_channel", "split_num"):
        if getattr(rdma, field) != getattr(pdp, field):
            raise ConfigurationError(f"NVDLA_PDP_RDMA {field.upper()} {getattr(rdma, field)} "
                                     f"differs from NVDLA_PDP's {getattr(pdp, field)}")
    cols = rdma_columns(rdma)
    for i, ((_, width), split) in enumerate(zip(cols, splits, strict=True)):
        if width != split.in_width:
            raise ConfigurationError(f"NVDLA_PDP_RDMA.D_PARTIAL_WIDTH_IN_0: split {i} reads "
                                     f"{width} columns but NVDLA_PDP pools {split.in_width}")
    atom = ctx.config.atom_bytes
    prec = cfg.precision
    channels = padded_channels(rdma.cube_in_channel + 1, cfg.precision, atom)
    mem = ctx.memory(rdma.src_ram_type, "NVDLA_PDP_RDMA.D_SRC_RAM_CFG_0.SRC_RAM_TYPE")
    base = rdma.address("src_base_addr")
    in_order = len(cols) == 1 and writes_follow_reads(rdma, pdp, cfg, channels, atom)
    mode = ORDERED if in_order else STREAMED
    cubes = []
    for start, width in cols:
        cubes.append(read_feature(mem, base + start * atom, (channels, rdma.cube_in_height + 1,
                                                             width),
                                  prec, atom, rdma.src_line_stride, rdma.src_surface_stride,
                                  what="NVDLA_PDP_RDMA", mode=mode))
    return cubes


def writes_follow_reads(rdma, pdp, cfg: PoolConfig, channels: int, atom: int) -> bool:
    """Whether a one-split layer writes each output line only onto input bytes already read.

    PDP_RDMA reads each input byte once, surface after surface and line after line, and the
    PDP writes output line ``j`` of a surface once the last line of its window
    (``j * stride - pad_top + kernel - 1``) is in.  NVIDIA's compiler places pooling
    over its own input (a concat's output pooled in place); when every output line ends
    below the first input byte still unread, the result cannot depend on DMA timing.
    """
    width, height = rdma.cube_in_width + 1, rdma.cube_in_height + 1
    s_line, s_surf = rdma.src_line_stride, rdma.src_surface_stride
    if s_line < width * atom or s_surf < height * s_line:
        return False  # lines or surfaces interleave: "unread" is not one address range
    dst = pdp.address("dst_base_addr") - rdma.address("src_base_addr")  # offsets from the input
    if abs(dst) >= 1 << 48:
        return dst < 0  # far below the input, or far past it
    surfaces = channels // elements_per_atom(cfg.precision, atom)
    s = np.arange(surfaces, dtype=np.int64)[:, None]
    j = np.arange(pdp.cube_out_height + 1, dtype=np.int64)[None, :]
    lines_in = np.minimum(j * cfg.stride_height - cfg.pad_top + cfg.kernel_height, height)
    first_unread = s * s_surf + np.where(lines_in < height, lines_in * s_line, s_surf)
    all_read = (s == surfaces - 1) & (lines_in >= height)
    out_end = (dst + s * pdp.dst_surface_stride + j * pdp.dst_line_stride
               + (pdp.cube_out_width + 1) * atom)
    return bool(np.all(all_read | (out_end <= first_unread)))


def pool_and_write(ctx, pdp, cfg: PoolConfig, splits: list[Split], cubes: list[np.ndarray],
                   counters: dict) -> None:
    """The PDP core and its write DMA; stores the layer's counters."""
    from .pooling import pool_split

    atom = ctx.config.atom_bytes
    prec = cfg.precision
    dtype = element_dtype(prec)
    mem = ctx.memory(pdp.dst_ram_type, "NVDLA_PDP.D_DST_RAM_CFG_0.DST_RAM_TYPE")
    base = pdp.address("dst_base_addr")
    height = pdp.cube_out_height + 1
    nan_out = 0
    for split, cube in zip(splits, cubes, strict=True):
        if cfg.precision == FP16:
            raw = cube.astype(np.int64) & 0xFFFF
        else:  # int8/int16 elements as they are: max/min pooling needs no wider copy
            raw = cube if cube.dtype == dtype else cube.astype(np.int64)
        out = np.zeros((cube.shape[0], height, split.out_width), dtype=np.int64)
        pool_split(raw, out, 0, split.out_width, cfg, split.pad_left)
        if cfg.precision == FP16:
            nan_out += int(np.count_nonzero(nan_mask(out)))
        write_feature(mem, base + split.out_start * atom, out.astype(dtype), prec, atom,
                      pdp.dst_line_stride, pdp.dst_surface_stride, what="NVDLA_PDP")
    counters["D_NAN_OUTPUT_NUM_0"] = nan_out
    for name, value in counters.items():
        ctx.set_counter(PDP, name, value)


def run_layer(ctx, cube: np.ndarray | None = None) -> None:
    """Run the PDP layer of ``ctx``: from memory, or from ``cube`` on the fly."""
    pdp = ctx.regs(PDP)
    pdp.fields()  # every field at once: the decoders read most of them
    cfg = pool_config(pdp, ctx.config)
    splits = pdp_splits(pdp, cfg)
    counters = {"D_NAN_INPUT_NUM_0": 0, "D_INF_INPUT_NUM_0": 0}
    if cube is not None:
        cubes = [sdp_cube(ctx, pdp, cfg, splits, cube)]
    check_geometry(pdp, cfg, splits)
    if cube is None:
        cubes = read_splits(ctx, pdp, cfg, splits)
        if cfg.precision == FP16:
            nan = inf = 0
            for i, c in enumerate(cubes):
                nan += int(np.count_nonzero(nan_mask(c)))
                inf += int(np.count_nonzero(inf_mask(c)))
                if pdp.nan_to_zero:
                    cubes[i] = flush_nans(c.astype(np.int64))
            counters = {"D_NAN_INPUT_NUM_0": nan, "D_INF_INPUT_NUM_0": inf}
    pool_and_write(ctx, pdp, cfg, splits, cubes, counters)


def sdp_cube(ctx, pdp, cfg: PoolConfig, splits: list[Split], cube: np.ndarray) -> np.ndarray:
    if pdp.flying_mode != ON_FLYING:
        raise ConfigurationError("NVDLA_PDP.D_OPERATION_MODE_CFG_0: FLYING_MODE is OFF_FLYING "
                                 "but the SDP sends its output to the PDP")
    if len(splits) > 1:  # NVIDIA's firmware requires one split; the C-model hangs on more
        raise ConfigurationError("NVDLA_PDP.D_OPERATION_MODE_CFG_0: SPLIT_NUM "
                                 f"{pdp.split_num} with on-the-fly input from the SDP: the PDP "
                                 "takes an on-the-fly cube in one split (SPLIT_NUM 0)")
    cube = np.asarray(cube)
    if cube.ndim == 4:
        if cube.shape[0] != 1:  # NVIDIA's constraints fix the batch to 1 (the C-model aborts)
            raise ConfigurationError(f"NVDLA_SDP.D_DATA_CUBE: {cube.shape[0]} batches sent to "
                                     "the PDP on the fly: convolution -> SDP -> PDP takes one "
                                     "batch")
        cube = cube[0]
    want = (pdp.cube_in_channel + 1, pdp.cube_in_height + 1, pdp.cube_in_width + 1)
    channels = padded_channels(want[0], cfg.precision, ctx.config.atom_bytes)
    if cube.ndim != 3 or cube.shape[1:] != want[1:] or not want[0] <= cube.shape[0] <= channels:
        raise ConfigurationError(f"NVDLA_PDP.D_DATA_CUBE_IN_*: the SDP cube {cube.shape} does not "
                                 f"match the PDP input cube {want}")
    if cube.dtype == np.float16:
        cube = cube.view(np.uint16)
    full = np.zeros((channels,) + want[1:], dtype=np.int64)
    full[: cube.shape[0]] = cube
    return full


def pool_from_sdp(ctx, cube: np.ndarray) -> None:
    """SDP -> PDP on the fly: pool the SDP's output ``cube`` and write the PDP's result.

    ``cube`` is the SDP's output in the PDP's input precision (the PDP's
    D_DATA_FORMAT): a (C, H, W) array of int8 / int16 values, or fp16 as
    uint16 bit patterns (float16 is accepted); a (1, C, H, W) batch of one is
    accepted too.  H, W and C must equal the
    PDP's D_DATA_CUBE_IN_HEIGHT/WIDTH/CHANNEL + 1.  C may include the padding
    lanes of the last atom (up to a whole number of atoms); missing lanes are
    zero.  ``ctx`` is the layer context of a chain whose groups include
    NVDLA_PDP (sim.chains puts it there when the SDP's OUTPUT_DST is PDP).
    The PDP's output goes to memory through its write DMA and its counters
    are stored in ``ctx``; the caller raises the PDP done interrupt.
    """
    run_layer(ctx, cube)


class PdpEngine(Engine):
    name = "PDP"
    units = (PDP, PDP_RDMA)

    def ready(self, machine):
        if not machine.regfile.is_armed(PDP) or pdp_input_on_the_fly(machine):
            return None
        return armed_groups(machine, (PDP, PDP_RDMA))

    def run(self, ctx):
        run_layer(ctx)

    def interrupts(self, ctx):
        return [("PDP", PDP)]
