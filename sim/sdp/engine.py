"""SDP engine: standalone SDP layers, and the on-the-fly entry point for CACC.

A standalone layer (FLYING_MODE=OFF) reads its input cube through SDP_RDMA;
a fused layer receives it from the convolution pipeline through
:func:`process_sdp`.  Either way the operands come from registers or through
BRDMA/NRDMA/ERDMA, the stages of :mod:`sim.sdp.pipeline` compute, and the
result goes to memory (write DMA) or to the PDP on the fly
(OUTPUT_DST=PDP, through :func:`sim.pdp.engine.pool_from_sdp`).

The operand streams are what SDP_RDMA read when its layer started, at its
D_OP_ENABLE (:mod:`sim.sdp.fetch`), which for a fused layer can be well
before the convolution feeds the SDP.

Channels are processed in whole atoms, as the hardware does: the lanes that
pad the last surface are read from memory, computed, counted and written
like the others.
"""

from __future__ import annotations

import numpy as np

from ..chains import PDP, SDP, SDP_RDMA, sdp_chain, sdp_input_on_the_fly
from ..configs import FP16
from ..dma.align import align_up
from ..dma.elements import elements_per_atom
from ..dma.feature import (
    read_feature,
    read_feature_atoms,
    write_feature,
    write_feature_atoms,
)
from ..dram import ELEMENTWISE
from ..engine import Engine, armed_groups
from ..errors import ConfigurationError
from ..lazy import loaded
from ..num.lut import ACCESS_DATA, LUT_PORTS, LutRam

# The SDP's decoder, RDMA and pipeline (sim.sdp.config, .fetch, .rdma, .pipeline) load with
# the first SDP layer: a machine builds every engine, and most traces run no SDP.


def padded_channels(layer, atom_bytes: int) -> int:
    """Channels the datapath processes: whole atoms of every precision involved."""
    group = max(elements_per_atom(p, atom_bytes)
                for p in (layer.in_precision, layer.proc_precision, layer.out_precision))
    return align_up(layer.channels, group)


def effective_strides(height: int, width: int, surfaces: int, atom: int, line: int,
                      surface: int) -> tuple[int, int]:
    """The (line, surface) strides the DMA uses: those of a dimension of one are unused.

    A 1x1 cube is read and written as one contiguous run of atoms (the
    hardware's 1x1 transfer); a single line or a single surface never
    applies its stride, whatever the register holds.
    """
    if height == 1 and width == 1:
        return atom, atom
    if height == 1:
        line = width * atom
    if surfaces == 1:
        surface = height * line
    return line, surface


def layer_of(ctx):
    config = loaded("sim.sdp.config")
    rdma = ctx.regs(SDP_RDMA) if SDP_RDMA in ctx.groups else None
    return config.decode(ctx.regs(SDP), rdma, ctx.config)


def _read_input(ctx, layer, cp: int, in_atoms: bool = False) -> np.ndarray:
    """The input cube (1, Cp, H, W) in its element dtype (the datapath widens it block by
    block); ``in_atoms``: its elements in the order of its atoms (:func:`in_atom_order`)."""
    mem = ctx.memory(layer.src_ram_type, "NVDLA_SDP_RDMA.D_SRC_DMA_CFG_0.SRC_RAM_TYPE")
    atom = ctx.config.atom_bytes
    line, surface = effective_strides(layer.height, layer.width,
                                      cp // elements_per_atom(layer.in_precision, atom), atom,
                                      layer.src_line_stride, layer.src_surface_stride)
    shape = (cp, layer.height, layer.width)
    what = f"{SDP_RDMA}.D_SRC_BASE_ADDR"
    if in_atoms:
        return read_feature_atoms(mem, layer.src_address, shape, layer.in_precision, atom,
                                  line, surface, what, mode=ELEMENTWISE).reshape(1, *shape)
    cube = read_feature(mem, layer.src_address, shape, layer.in_precision, atom, line, surface,
                        what=what, mode=ELEMENTWISE)
    return cube[None]


def in_atom_order(layer, cp: int, atom_bytes: int) -> bool:
    """Whether a standalone layer computes on its elements in the order of their atoms
    (:func:`sim.dma.feature.read_feature_atoms`), sparing the transposes to (C, H, W) and
    back: its input, its per-element operands and its output group as many elements in an
    atom, no stage takes an operand per channel, and one cube goes to memory.  Every
    element then meets its own operands and computes as in (C, H, W) order, and the
    counters add up the same elements."""
    from .config import USE_BOTH  # loaded with the layer's decoding

    group = elements_per_atom(layer.in_precision, atom_bytes)
    if layer.flying or not layer.writes_memory or layer.batch != 1 or cp % group or any(
            elements_per_atom(p, atom_bytes) != group
            for p in (layer.proc_precision, layer.out_precision)):
        return False
    return all(not (stage.needs_alu_mem or stage.needs_mul_mem)
               or (dma.enabled and dma.per_element and dma.use != USE_BOTH)
               for stage, dma in zip((layer.x1, layer.x2, layer.y), layer.dmas, strict=True))


def _from_cacc(layer, cube, cp: int) -> np.ndarray:
    cube = np.asarray(cube)
    if cube.dtype == np.float32:
        cube = cube.view(np.uint32)
    elif cube.dtype.kind == "f":
        raise ConfigurationError(f"{SDP}: the CACC cube must hold int32 values or fp32 bit "
                                 f"patterns (float32), not {cube.dtype}")
    if cube.ndim == 3:
        cube = cube[None]
    n, c, h, w = cube.shape
    if (n, h, w) != (layer.batch, layer.height, layer.width) or not layer.channels <= c <= cp:
        raise ConfigurationError(
            f"{SDP}.D_DATA_CUBE_*: the CACC cube {tuple(cube.shape)} does not match the SDP "
            f"cube N={layer.batch} C={layer.channels} H={layer.height} W={layer.width}")
    if layer.proc_precision == FP16:
        return _fp32_words(cube, cp)
    # the integer datapath reads the low 32 bits of each value as signed: int32 holds them
    if c == cp and cube.dtype == np.int32:
        return cube  # read, never written
    full = np.zeros((n, cp, h, w), dtype=np.int32)
    full[:, :c] = cube  # an integer cast keeps the low 32 bits
    return full


def _fp32_words(cube: np.ndarray, cp: int) -> np.ndarray:
    """CACC's fp32 patterns as uint32 words (the low 32 bits of each value), zero lanes up
    to ``cp`` channels: CACC's own uint32 cube when it needs neither (read, never written;
    an int64 copy wrote 8 bytes an element in fresh memory, 40 MB and some 50 ms of CPU
    over ResNet-50)."""
    n, c, h, w = cube.shape
    if c == cp and cube.dtype == np.uint32:
        return cube
    full = np.zeros((n, cp, h, w), dtype=np.uint32)
    full[:, :c] = cube  # an integer cast keeps the low 32 bits
    return full


def run_sdp(ctx, lut: LutRam, cube=None, fetch=None, prepared: SdpPrepared | None = None
            ) -> None:
    """Run the SDP layer of ``ctx`` (input from memory, or ``cube`` from CACC).

    ``fetch`` follows SDP_RDMA's layers: the operands are the bytes its layer
    read when it started (:mod:`sim.sdp.fetch`, an ``RdmaFetch``); without it, memory as
    it is now.  ``prepared``: what :func:`prepare_sdp` made of the layer already.
    """
    group = ctx.groups.get(SDP_RDMA)
    if prepared is None:
        prepared = _prepare(ctx, fetch, cube is not None, lut)
    _compute(ctx, lut, cube, prepared)
    if fetch is not None and group is not None:
        fetch.layer_ran(ctx, group)


class SdpPrepared:
    """A layer decoded and its operands read before its input is there (:func:`prepare_sdp`).

    An error of either is kept and raised where the layer would have met it: the
    decoder's before the input is taken, the operand streams' after it.
    """

    __slots__ = ("fetched", "layer", "cp", "operands", "error", "operand_error", "path")

    def __init__(self, fetched):
        self.fetched = fetched  # what SDP_RDMA's layer read when it started, or None
        self.layer = self.cp = self.operands = self.error = self.operand_error = None
        self.path = None  # the datapath (sim.sdp.pipeline.datapath) of the CACC cube


def _prepare(ctx, fetch, on_the_fly: bool, lut: LutRam) -> SdpPrepared:
    pipeline, rdma = loaded("sim.sdp.pipeline"), loaded("sim.sdp.rdma")
    group = ctx.groups.get(SDP_RDMA)
    fetched = fetch.fetched(group) if fetch is not None and group is not None else None
    prepared = SdpPrepared(fetched)
    try:
        layer = prepared.layer = layer_of(ctx)
        prepared.cp = padded_channels(layer, ctx.config.atom_bytes)
        if on_the_fly and not layer.flying:
            raise ConfigurationError(f"{SDP}.D_FEATURE_MODE_CFG_0: FLYING_MODE=OFF but the "
                                     "convolution pipeline sends its output to the SDP")
        if not on_the_fly and layer.flying:
            raise ConfigurationError(f"{SDP}.D_FEATURE_MODE_CFG_0: FLYING_MODE=ON but no "
                                     "convolution feeds the SDP")
    except Exception as exc:  # noqa: BLE001 - raised where the layer meets it (_compute)
        prepared.error = exc
        return prepared
    if not on_the_fly:
        return prepared  # the input is read first: the operands after it, as ever
    try:
        prepared.operands = rdma.read_operands(ctx, layer, prepared.cp, fetched)
    except Exception as exc:  # noqa: BLE001 - raised after the input is taken (_compute)
        prepared.operand_error = exc
        return prepared
    try:  # the operands shaped and the stages resolved: off the path after the convolution
        prepared.path = pipeline.datapath(layer, prepared.operands, lut, False, prepared.cp,
                                          layer.height, layer.width)
    except Exception:  # noqa: BLE001 - made again, and raised, where the layer computes
        prepared.path = None
    return prepared


def prepare_sdp(ctx) -> SdpPrepared:
    """Decode the on-the-fly SDP layer of ``ctx`` and read its operands, before the
    convolution feeding it has computed: :func:`process_sdp` then takes it.  Nothing
    here depends on the convolution's output, so the convolution engine does it while
    another thread fetches the weights.  Errors wait for :func:`process_sdp`."""
    state: SdpState = ctx.state(SDP)
    return _prepare(ctx, state.fetch, True, state.lut)


def _compute(ctx, lut: LutRam, cube, prepared: SdpPrepared) -> None:
    pipeline, rdma = loaded("sim.sdp.pipeline"), loaded("sim.sdp.rdma")
    if prepared.error is not None:
        raise prepared.error
    layer, cp = prepared.layer, prepared.cp
    atom = ctx.config.atom_bytes
    in_atoms = cube is None and in_atom_order(layer, cp, atom)
    if cube is None:
        data = _read_input(ctx, layer, cp, in_atoms)
        operands = rdma.read_operands(ctx, layer, cp, prepared.fetched, in_atoms)
    else:
        data = _from_cacc(layer, cube, cp)
        if prepared.operand_error is not None:
            raise prepared.operand_error
        operands = prepared.operands
    # an output only written to memory (copied there) may be scratch memory
    out, stats = pipeline.run_pipeline(layer, data, operands, lut, from_memory=cube is None,
                                       scratch=layer.writes_memory,
                                       path=prepared.path if cube is not None else None)
    _store_counters(ctx, layer, stats)
    if layer.eql:
        return
    if layer.output_to_pdp:
        from ..pdp.engine import pool_from_sdp

        # the PDP receives whole atoms of the output precision
        group = elements_per_atom(layer.out_precision, atom)
        pool_from_sdp(ctx, out[0, : align_up(layer.channels, group)])
        return
    if not layer.writes_memory:
        return
    mem = ctx.memory(layer.dst_ram_type, "NVDLA_SDP.D_DST_DMA_CFG_0.DST_RAM_TYPE")
    line, surface = effective_strides(layer.height, layer.width,
                                      cp // elements_per_atom(layer.out_precision, atom), atom,
                                      layer.dst_line_stride, layer.dst_surface_stride)
    what = f"{SDP}.D_DST_BASE_ADDR"
    if in_atoms:
        write_feature_atoms(mem, layer.dst_address, out, out.shape[1:], layer.out_precision,
                            atom, line, surface, layer.dst_batch_stride, what)
        return
    write_feature(mem, layer.dst_address, out if layer.batch > 1 else out[0],
                  layer.out_precision, atom, line, surface, layer.dst_batch_stride, what=what)


def _store_counters(ctx, layer, stats: dict) -> None:
    if layer.perf_sat:
        ctx.set_counter(SDP, "D_PERF_OUT_SATURATION_0", stats["saturation"])
    if layer.perf_lut and layer.y.lut_used:
        for name in ("UFLOW", "OFLOW", "HYBRID", "LE_HIT", "LO_HIT"):
            ctx.set_counter(SDP, f"D_PERF_LUT_{name}_0", stats[f"lut_{name.lower()}"])
    if layer.perf_nan_out and layer.out_precision == FP16:
        ctx.set_counter(SDP, "D_STATUS_NAN_OUTPUT_NUM_0", stats["nan_out"])
    if layer.perf_nan_in and layer.in_precision == FP16 and SDP_RDMA in ctx.groups \
            and not layer.flying:
        ctx.set_counter(SDP_RDMA, "D_STATUS_NAN_INPUT_NUM_0", stats["nan_in"])
        ctx.set_counter(SDP_RDMA, "D_STATUS_INF_INPUT_NUM_0", stats["inf_in"])
    if layer.eql:
        ctx.set_counter(SDP, "D_STATUS_0", int(stats["unequal"]))


def process_sdp(ctx, cube, prepared: SdpPrepared | None = None) -> None:
    """On-the-fly input from CACC: run the SDP layer of ``ctx`` on ``cube``.

    The convolution engine calls this once per layer, after it has computed
    the accumulator output, with ``ctx`` the LayerContext of the fused chain
    (its groups include NVDLA_SDP, and NVDLA_SDP_RDMA / NVDLA_PDP when
    :func:`sim.chains.sdp_chain` says so).

    ``cube`` is what CACC delivers to the SDP, shape (C, H, W) or (N, C, H, W)
    for batches, with H, W, C = the SDP's D_DATA_CUBE_HEIGHT/WIDTH/CHANNEL + 1
    (C may include the padding lanes of the last atom, up to a whole number of
    atoms; missing lanes are zero):

    * int8/int16 processing: the signed int32 accumulator values (any integer
      dtype);
    * fp16 processing: fp32 values as bit patterns (uint32/int32) or as float32.

    Winograd output mode needs nothing special here: CACC hands over the
    layer's output cube in (C, H, W) order.  The SDP writes its result to
    memory, or passes it to the PDP on the fly; counters are stored in
    ``ctx``.  The caller raises the SDP (and PDP) done interrupts.
    ``prepared``: the layer as :func:`prepare_sdp` left it (else it is prepared now).
    """
    state: SdpState = ctx.state(SDP)
    run_sdp(ctx, state.lut, cube, state.fetch, prepared)


class SdpState:
    """What the SDP keeps between layers, whichever engine runs its layer (``ctx.state(SDP)``):
    ``lut``, the LUT RAM the CSB writes fill, and ``fetch``, SDP_RDMA's layers (they read
    memory as they start): those of the :class:`SdpEngine` it is made from."""

    __slots__ = ("_engine",)

    def __init__(self, engine: SdpEngine):
        self._engine = engine

    @property
    def lut(self) -> LutRam:
        return self._engine.lut

    @property
    def fetch(self):
        return self._engine.fetch


class SdpEngine(Engine):
    name = "SDP"
    units = (SDP, SDP_RDMA, PDP)

    def __init__(self):
        self.lut = LutRam(cfg_readback="word", past_end="clamp")
        self._fetch = None

    @property
    def fetch(self):
        """SDP_RDMA's layers: they read memory as they start (a :class:`sim.sdp.fetch.RdmaFetch`,
        made when first used)."""
        if self._fetch is None:
            from .fetch import RdmaFetch

            self._fetch = RdmaFetch()
        return self._fetch

    def unit_state(self):
        return {SDP: SdpState(self)}

    def ready(self, machine):
        rf = machine.regfile
        if not rf.is_armed(SDP) or sdp_input_on_the_fly(machine):
            return None
        return armed_groups(machine, sdp_chain(machine))

    def run(self, ctx):
        run_sdp(ctx, self.lut, fetch=self.fetch)

    def interrupts(self, ctx):
        out = [("SDP", SDP)]
        if PDP in ctx.groups:
            out.append(("PDP", PDP))
        return out

    def on_write(self, machine, reg, value: int) -> bool:
        if reg.unit == SDP_RDMA and reg.name == "D_OP_ENABLE_0" and value & 1 \
                and SDP_RDMA in machine.regfile.producer:
            # the RDMA layer may start now, before the write arms the group
            self.fetch.enabling(machine.context(), machine.regfile.producer[SDP_RDMA])
            return False
        return reg.unit == SDP and self.lut.on_write(reg.name, value)

    def write_hooks(self) -> frozenset:
        return frozenset({f"{SDP_RDMA}.D_OP_ENABLE_0", *(f"{SDP}.{port}" for port in LUT_PORTS)})

    def on_read(self, machine, reg):
        return self.lut.on_read(reg.name) if reg.unit == SDP else None

    def computed_reads(self) -> frozenset:
        return frozenset(f"{SDP}.{port}" for port in LUT_PORTS)

    def data_ports(self) -> dict:
        """Register -> what consumes its every write, as :meth:`on_write` would (the
        machine calls it directly: a LUT upload is thousands of writes)."""
        return {f"{SDP}.{ACCESS_DATA}": self.lut.write}


__all__ = ["SdpEngine", "SdpPrepared", "SdpState", "prepare_sdp", "process_sdp", "run_sdp"]
