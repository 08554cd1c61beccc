"""CDMA for direct convolution: fetch the feature cube and the weights.

Feature data is read whole atoms at a time through :mod:`sim.dma.feature`
(line/surface/batch strides, MC or CV-SRAM).  For fp16 the CDMA counts NaN
and Inf elements of every atom it reads -- lanes past the last channel
included, raw values before any flush -- and, when D_NAN_FLUSH_TO_ZERO is set,
replaces data NaNs by +0 (weights are never flushed).  For int8/int16 the
optional data convertor (D_CVT_*) applies ``saturate(round((x - offset) *
scale >> truncate))`` (:func:`sim.num.blocks.cdma_cvt`).

Weights are read from D_WEIGHT_ADDR (uncompressed, D_WEIGHT_BYTES) or as the
three surfaces of sparse compression (data, WMB bit mask, WGS group sizes),
and unpacked to (K, C, R, S) by :mod:`sim.dma.weights` -- or, for fp16 products
that read each weight once, handed over as the stream itself
(:class:`sim.dma.weights.DcStream`).  fp16 weight NaN/Inf counters cover every
weight byte the CDMA fetches.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8
from ..dma.align import align_up
from ..dma.feature import read_feature
from ..dma.weights import (
    SPLIT_UNPACK_ELEMENTS,
    CompressedWeights,
    DcStream,
    dc_stream,
    decompress_weights,
    group_bytes,
    unpack_weight_dc,
    weight_group_size,
)
from ..dram import HELD
from ..errors import ConfigurationError, SimError
from ..jit import run_split
from ..num import flush_nans
from ..num.blocks import cdma_cvt, cdma_cvt_is_identity
from ..num.specials import fp16_nans_and_infs
from .layer import CDMA, ConvLayer


class Cbuf:
    """What the CBUF still holds after a layer, for the next layer's DATA_REUSE/WEIGHT_REUSE.

    A layer with SKIP_DATA_RLS (SKIP_WEIGHT_RLS) leaves its input data
    (weights) in the CBUF.  The next layer reuses all of it -- and fetches
    nothing -- when it sets DATA_REUSE (WEIGHT_REUSE) with the same banks; a
    WEIGHT_REUSE after a layer that released its weights is invalid.  Data
    and weights are kept as the CSC reads them (after NaN flush/convertor).
    A reusing layer fetches nothing, so its CDMA NaN/Inf counters keep the
    values of the layer that fetched (as the C-model's per-layer counts do).
    """

    def __init__(self):
        self.data = None  # (banks, cube, counters) left by the previous layer, or None
        self.weights = None  # (banks, weights, counters)
        # what the products made of the kept weights (sim.conv.mac_int.WeightPrep: their
        # float32 matrix...), which a layer reusing them reuses too
        self.weight_prep = None

    def reused_data(self, layer: ConvLayer):
        if layer.data_reuse and self.data is not None and self.data[0] == layer.banks:
            return self.data[1:]
        return None

    def reused_weights(self, layer: ConvLayer):
        if not layer.weight_reuse:
            return None
        if self.weights is None:
            raise ConfigurationError(f"{CDMA}.D_MISC_CFG_0: WEIGHT_REUSE but the previous layer "
                                     "released its weights (SKIP_WEIGHT_RLS off)")
        if self.weights[0] != layer.banks:
            raise ConfigurationError(f"{CDMA}.D_BANK_0: WEIGHT_REUSE needs the previous "
                                     "layer's bank settings")
        return self.weights[1:]

    def keep(self, layer: ConvLayer, data, weights, weight_prep=None) -> None:
        """Record what the layer leaves: ``data``/``weights`` are (array, counters);
        ``weight_prep`` what the products made of the weights."""
        self.data = (layer.banks, *data) if layer.skip_data_release else None
        self.weights = (layer.banks, *weights) if layer.skip_weight_release else None
        self.weight_prep = weight_prep if layer.skip_weight_release else None

    def kept_prep(self, weights: np.ndarray):
        """The kept weights' preparation when ``weights`` are those weights, else None."""
        prep = self.weight_prep
        return prep if prep is not None and prep.weights is weights else None


def _raw_atoms(mem, layer: ConvLayer, atom: int) -> np.ndarray:
    """Every fp16 lane of every atom the CDMA reads (padding lanes included)."""
    group = atom // 2
    padded = align_up(layer.channels, group)
    cube = read_feature(mem, layer.in_addr, (padded, layer.in_height, layer.in_width), FP16,
                        atom, layer.line_stride, layer.surf_stride, layer.batch_stride,
                        layer.batches, what=f"{CDMA}.D_DAIN_ADDR", mode=HELD)
    return cube


def fetch_feature(ctx, layer: ConvLayer) -> tuple[np.ndarray, dict]:
    """The input cube (N, C, H, W) as the CSC sees it, and the CDMA data counters."""
    atom = ctx.config.atom_bytes
    mem = ctx.memory(layer.in_ram, "NVDLA_CDMA.D_DAIN_RAM_TYPE_0.DATAIN_RAM_TYPE")
    counters = {}
    if layer.precision == FP16:
        raw = _raw_atoms(mem, layer, atom)
        if layer.batches == 1:
            raw = raw[None]
        nans, infs = _nans_and_infs(raw)
        counters["D_NAN_INPUT_DATA_NUM_0"] = nans
        counters["D_INF_INPUT_DATA_NUM_0"] = infs
        cube = raw[:, : layer.channels]
        if layer.nan_to_zero:
            cube = flush_nans(cube)
        return np.ascontiguousarray(cube), counters
    cube = read_feature(mem, layer.in_addr, (layer.channels, layer.in_height, layer.in_width),
                        layer.precision, atom, layer.line_stride, layer.surf_stride,
                        layer.batch_stride, layer.batches, what=f"{CDMA}.D_DAIN_ADDR", mode=HELD)
    if layer.batches == 1:
        cube = cube[None]
    if layer.cvt_enable and not cdma_cvt_is_identity(layer.cvt_offset, layer.cvt_scale,
                                                     layer.cvt_truncate):
        code = layer.precision.code
        out = cdma_cvt(data_in=cube.astype(np.int64), alu_in=layer.cvt_offset,
                       mul_in=layer.cvt_scale, in_precision=code, out_precision=code,
                       truncate=layer.cvt_truncate)["out"]
        cube = out.view(np.int16)
        if layer.precision == INT8:
            cube = cube.astype(np.int8)
    return cube, counters


def _nans_and_infs(bits: np.ndarray) -> tuple[int, int]:
    """:func:`sim.num.specials.count_nans_and_infs` of fp16 patterns ``bits`` (any shape), by
    the compiled count (:func:`sim.num.specials.fp16_nans_and_infs`: one vectorised
    screen of the largest magnitude, then the patterns only where it reaches Inf's): a
    fully connected layer's input 5.7 us against numpy's passes (34 against 7 with the
    caches cold), a 56 x 56 x 64 cube 44 us against 2."""
    return fp16_nans_and_infs(np.ascontiguousarray(bits).reshape(-1))


def _count_split(words: np.ndarray) -> tuple[int, int]:
    """:func:`count_nans_and_infs` of ``words``, a stream of ``SPLIT_UNPACK_ELEMENTS`` or
    more in slices over the cores (the counts are per element: slices add up)."""
    if words.size < SPLIT_UNPACK_ELEMENTS:  # one slice (a stream's few bytes past its weights)
        return _nans_and_infs(words)
    counts = []  # a slice's (NaNs, Infs) each, in any order
    run_split(lambda start, stop: counts.append(_nans_and_infs(words[start:stop])),
              words.size, min_chunk=SPLIT_UNPACK_ELEMENTS // 2)
    return sum(n for n, _ in counts), sum(i for _, i in counts)


def fetch_weights(ctx, layer: ConvLayer, *, as_stream: bool = False
                  ) -> tuple[np.ndarray | DcStream, dict]:
    """Weights (K, C, R, S) in element dtype, and the CDMA weight counters.

    ``as_stream``: uncompressed fp16 weights of whole runs of MAC atomic C channels are
    returned as their DC stream itself (:class:`sim.dma.weights.DcStream`, a view of the
    memory where it can be), not unpacked: for products that read each weight once.
    The counters then count the fetched bytes past the stream's weights only: the
    stream's NaNs and Infs are counted as it is read (add ``DcStream.specials``).
    """
    cfg = ctx.config
    mem = ctx.memory(layer.weight_ram, "NVDLA_CDMA.D_WEIGHT_RAM_TYPE_0.WEIGHT_RAM_TYPE")
    shape = (layer.kernels, layer.channels, layer.kernel_height, layer.kernel_width)
    kernel_bytes = layer.byte_per_kernel
    # a view of the memory where it can be: the weights are unpacked (copied) below, or
    # handed on as this view (as_stream), before this layer writes anything
    fetched = mem.read_view(layer.weight_addr, layer.weight_bytes, f"{CDMA}.D_WEIGHT_ADDR",
                            mode=HELD)
    if layer.compressed:
        group = weight_group_size(layer.precision, cfg)
        groups = group_bytes(layer.kernels, kernel_bytes, group)
        wgs = mem.read_array(layer.wgs_addr, 4 * len(groups), f"{CDMA}.D_WGS_ADDR", mode=HELD)
        wmb = mem.read_array(layer.wmb_addr, layer.wmb_bytes, f"{CDMA}.D_WMB_ADDR", mode=HELD)
        try:
            stream = decompress_weights(CompressedWeights(fetched, wmb, wgs), layer.precision,
                                        groups)
        except SimError as exc:
            raise exc.locate(f"{CDMA} compressed weights") from None
    else:
        stream = fetched
        if as_stream and layer.precision == FP16 and layer.channels % cfg.mac_atomic_c == 0:
            # read by the products before this layer writes anything, and its NaNs and
            # Infs counted as they read it (DcStream.specials): here only the bytes past it
            weights = dc_stream(fetched, shape, layer.precision, cfg)
            return weights, _fp16_counters(fetched[weights.elements.nbytes:])
    # integer weights stored channels last (the products take them in either order; the
    # fp16 MACs keep the plain layout)
    weights = unpack_weight_dc(stream, shape, layer.precision, cfg,
                               channels_last=layer.precision != FP16)
    return weights, _fp16_counters(fetched) if layer.precision == FP16 else {}


def _fp16_counters(fetched: np.ndarray) -> dict:
    """The fp16 weight counters: NaNs and Infs among every weight the CDMA fetched."""
    nans, infs = _count_split(fetched[: fetched.size & ~1].view("<u2"))
    return {"D_NAN_INPUT_WEIGHT_NUM_0": nans, "D_INF_INPUT_WEIGHT_NUM_0": infs}
