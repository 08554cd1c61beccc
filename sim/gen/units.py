"""Per-unit layer builders for ``gen``: validate a layer's options, write its memory and
registers on a :class:`~sim.gen.build.GenMachine`, and say which blocks to enable.

Each ``build_<unit>(m, layer, alloc, rng, outputs)`` returns (the layer's
:class:`~sim.gen.memory.Output`, the blocks whose D_OP_ENABLE starts it, in the
order firmware writes them: consumers first).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..chains import CONV_UNITS
from ..conv.layer import MAX_CLIP_TRUNCATE
from ..dma.align import LayoutError, align_up, ceil_div, window_count
from ..dma.elements import float_to_fp16_bits
from ..dma.feature import feature_layout
from ..dma.operands import pack_operand
from ..dma.weights import winograd_weights
from ..program.bdma import program_bdma_copy
from ..program.cdp import linear_lut, program_cdp
from ..program.pdp import Pooling, WidthSplit, program_pdp, program_pdp_rdma
from ..program.sdp import program_sdp_core, program_sdp_input
from ..regs.enums import Precision
from ..rules import ConvFacts, PdpFacts, SdpFacts
from .data import random_cube
from .legality import cbuf_plan, obey, program_cbuf
from .memory import Output, input_cube, output_region, padded, reserve_extent, sdp_written
from .spec import (
    ALU_ALGOS,
    CONV_MODES,
    FLY_PDP_KEYS,
    FLY_SDP_KEYS,
    POOLING,
    STAGE_KEYS,
    check_keys,
    choice,
    dims,
    integer,
)

SDP, SDP_RDMA = "NVDLA_SDP", "NVDLA_SDP_RDMA"
PDP, PDP_RDMA = "NVDLA_PDP", "NVDLA_PDP_RDMA"
CDP, CDP_RDMA = "NVDLA_CDP", "NVDLA_CDP_RDMA"
CONV_ENABLE = tuple(reversed(CONV_UNITS))  # consumers first: CACC .. CDMA
STAGES = {"x1": "bs", "x2": "bn", "y": "ew"}  # spec name -> register prefix
# the spec keys deciding the SDP rules for a convolution's SDP on the fly
FLY_SDP_RULE_KEYS = {name: "sdp.out_precision" for name in (
    "sdp.int16_to_int8", "sdp.pdp_same_precision", "sdp.int8_widen_single")}
FLY_SDP_RULE_KEYS.update({"sdp.batch_to_memory": "pdp", "sdp.winograd_to_memory": "pdp"})


def _operand_value(layer, key: str, value, proc: str, bits: int = 16) -> int:
    """A register operand: an integer for int8/int16 processing, a number for fp16."""
    if proc == "fp16":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise layer.fail(key, f"expected a number, got {value!r}")
        return int(float_to_fp16_bits(float(value)))
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return integer(layer, key, value, lo, hi) & ((1 << bits) - 1)


def _cvt(layer, key: str, value, default=(0, 1, 0)) -> tuple[int, int, int]:
    """(offset, scale, shift) of an output convertor."""
    if value is None:
        return default
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise layer.fail(key, f"expected [offset, scale, shift], got {value!r}")
    offset = integer(layer, f"{key}[0]", value[0], -(1 << 31), (1 << 31) - 1)
    scale = integer(layer, f"{key}[1]", value[1], -(1 << 15), (1 << 15) - 1)
    shift = integer(layer, f"{key}[2]", value[2], 0, 63)
    return offset, scale, shift


# -- SDP ------------------------------------------------------------------------------------

def _out_precision(layer, cfg, value, proc: str, key: str = "out_precision") -> str:
    from ..dma.precision import TABLE_NAMES, pipeline_precision

    out = value or proc
    choice(layer, key, out, ("int8", "int16", "fp16"))
    if pipeline_precision("sdp", proc, out) is None:
        raise layer.fail(key, f"the SDP cannot convert {proc} to {out} "
                         f"({TABLE_NAMES['sdp']})")
    if not cfg.supports(out):
        raise layer.fail(key, f"{cfg.name} does not support {out}")
    return out


def _stage(m, layer, alloc, rng, key: str, table, proc: str, channels: int) -> None:
    """Program one of X1 (BS), X2 (BN), Y (EW), operands from registers or memory."""
    from ..program.sdp import operand_spec_format, program_operand, program_x, program_y

    p = STAGES[key]
    table = check_keys(layer, key, table, STAGE_KEYS)
    if key == "y" and table and not m.config.sdp_ew:
        raise layer.fail("y", f"{m.config.name} has no SDP Y (EW) stage")
    alu, mul = table.get("alu"), table.get("mul")
    if alu is not None:
        choice(layer, f"{key}.alu", alu, tuple(ALU_ALGOS))
    alu_src = table.get("alu_operand", 0) == "memory" and alu is not None
    mul_src = mul == "memory"
    relu, prelu = (bool(table.get(k, False)) for k in ("relu", "prelu"))
    lut_value = table.get("lut", False)
    if not isinstance(lut_value, (bool, dict)):
        raise layer.fail(f"{key}.lut", f"expected true, false or a table, got {lut_value!r}")
    lut = lut_value is not False
    if prelu and mul is None:
        raise layer.fail(f"{key}.prelu", "PReLU needs a multiplier (mul)")
    fields = dict(bypass=int(not table), alu_bypass=int(alu is None),
                  alu_algo=ALU_ALGOS.get(alu, 0), alu_src=int(alu_src), mul_bypass=int(mul is None),
                  mul_src=int(mul_src), prelu=int(prelu))
    wide = 32 if key == "y" else 16  # operand register width
    if alu is not None and not alu_src:
        fields["alu_operand"] = _operand_value(layer, f"{key}.alu_operand",
                                               table.get("alu_operand", 0), proc, wide)
    if mul is not None and not mul_src:
        fields["mul_operand"] = _operand_value(layer, f"{key}.mul", mul, proc, wide)
    shift = integer(layer, f"{key}.mul_shift", table.get("mul_shift", 0), 0, 255)
    if key == "y":
        if relu:
            raise layer.fail("y.relu", "the Y stage has no ReLU (use x1 or x2)")
        if lut:
            _lut(m, layer, proc, rng, lut_value)
        program_y(m, {**fields, "lut_bypass": int(not lut), "truncate": shift})
    else:
        if lut:
            raise layer.fail(f"{key}.lut", "only the Y stage has the LUT")
        program_x(m, p, {**fields, "relu_bypass": int(not relu), "mul_shift": shift,
                         "alu_shift": integer(layer, f"{key}.alu_shift",
                                              table.get("alu_shift", 0), 0, 63)})
    memory = [u for u, on in (("alu", alu_src), ("mul", mul_src)) if on]
    if not memory:
        if key != "y" or m.config.sdp_ew:
            program_operand(m, p, None, proc)
        return
    use = "both" if len(memory) == 2 else memory[0]
    spec = {"use": use, "size": Precision(proc).bytes}
    shape = (2, channels) if use == "both" else (channels,)
    if proc == "fp16":
        spec["array"] = rng.uniform(-2, 2, shape).astype(np.float16).view(np.uint16)
    else:
        limit = 32 if proc == "int8" else 100
        spec["array"] = rng.integers(-limit, limit + 1, shape).astype(
            np.int8 if proc == "int8" else np.int16)
    _, lay = pack_operand(spec["array"], operand_spec_format(spec, proc), m.config)
    spec["addr"] = alloc.take(lay.extent)
    program_operand(m, p, spec, proc)


def _lut(m, layer, proc: str, rng, value) -> None:
    """The Y stage's LUT (:mod:`sim.gen.lut`): ``true`` for gen's default, a table to
    choose modes, ranges, tables, slopes and priorities."""
    from ..program.sdp import program_lut
    from .lut import lut_plan

    layer.require(m.config, "sdp_lut", "y.lut")
    plan = lut_plan(layer, "y.lut", value, "sdp", proc, rng)
    program_lut(m, plan.fields, plan.le, plan.lo)


def build_sdp(m, layer, alloc, rng, outputs):
    proc = layer.precision
    out_prec = _out_precision(layer, m.config, layer.get("out_precision"), proc)
    prelu_alu = tuple(key for key in STAGES
                      if isinstance(layer.get(key), dict) and layer.get(key).get("prelu")
                      and layer.get(key).get("alu") is not None)
    obey(layer, SdpFacts(proc, out_prec, prelu_alu=prelu_alu),
         keys={"sdp.prelu_alu_bypass": f"{prelu_alu[0]}.prelu" if prelu_alu else ""})
    m.select_group([SDP, SDP_RDMA])
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    c, h, w = cube.shape
    _load_random_input(m, layer, cube, src)
    out = output_region(m, alloc, (c, h, w), out_prec,
                        written=sdp_written(c, (proc, out_prec), m.config.atom_bytes))
    program_sdp_input(m, (c, h, w), (src, lay), proc, out_prec)
    channels = padded(c, proc, m.config.atom_bytes)
    for key in ("x1", "x2", "y"):
        _stage(m, layer, alloc, rng, key, layer.get(key), proc, channels)
    program_sdp_core(m, (c, h, w), proc, out_prec, dst=(out.addr, out.layout),
                     cvt=_cvt(layer, "cvt", layer.get("cvt")),
                     nan_to_zero=bool(layer.get("nan_to_zero", False)))
    return out, (SDP, SDP_RDMA)


def _load_random_input(m, layer, cube, src: int) -> None:
    """A layer's own (not chained) input cube goes to memory packed, zeros after it up to
    its reservation (an SDP reads whole atoms past the cube)."""
    if isinstance(layer.input, tuple):
        from ..dma.feature import pack_feature

        data = pack_feature(cube, m.config, precision=layer.precision)[0]
        full = reserve_extent(cube.shape, layer.precision, m.config.atom_bytes)
        m.load(src, np.concatenate([data, np.zeros(full - data.size, np.uint8)]))


# -- PDP ------------------------------------------------------------------------------------

def _pooling(layer, table, shape, flying: bool = False, columns: int = 0
             ) -> tuple[Pooling, tuple, WidthSplit | None]:
    """Validated pooling options, the output cube (C, H', W') and the column splits
    asked for (``split``); ``columns``: the configuration's PDP line buffer
    (HardwareConfig.pdp_line_buffer_columns)."""
    c, h, w = shape
    method = choice(layer, "method", table.get("method", "max"), tuple(POOLING))
    kh, kw = dims(layer, "kernel", table.get("kernel", [2, 2]), 2, 1, 8)
    sh, sw = dims(layer, "stride", table.get("stride", [kh, kw]), 2, 1, 16)
    left, right, top, bottom = dims(layer, "pad", table.get("pad", 0), 4, 0, 7)
    out_w = window_count(w, left, right, kw, sw)
    split = None
    if table.get("split") is not None and out_w > 0:
        shape_only = Pooling(method, (kh, kw), (sh, sw), (left, right, top, bottom), 0)
        split = _width_split(layer, table["split"], shape_only, w, out_w, columns)
    widths = (out_w,) if split is None else split.outs[:1] + split.outs[-1:] + split.outs[1:-1][:1]
    obey(layer, PdpFacts(kw, kh, left, right, top, bottom, flying=flying, width=w, height=h,
                         split_num=1 if split is None else len(split.outs),
                         stride_x=sw, stride_y=sh, out_widths=widths if out_w > 0 else (),
                         buffer_columns=columns),
         keys={"pdp.line_buffer_width": "split"} if split is not None else None)
    pad_value = table.get("pad_value", 0)
    if layer.precision == "fp16" and pad_value != 0:
        raise layer.fail("pad_value", "gen supports padding values for int8/int16 only")
    pad_value = integer(layer, "pad_value", pad_value, -(1 << 15), (1 << 15) - 1)
    if w + left + right < kw or h + top + bottom < kh:
        raise layer.fail("kernel", f"a {kh}x{kw} kernel does not fit the padded {h}x{w} input")
    pool = Pooling(method, (kh, kw), (sh, sw), (left, right, top, bottom), pad_value)
    return pool, (c, *pool.out_size(h, w)), split


@cache
def _count_limit(register: str, field: str) -> int:
    """The most a PDP field holding a count less one can say: 2^(its width in the map)."""
    from .. import regs as regtable

    return 1 << regtable.load().by_name(f"NVDLA_PDP.{register}_0").field(field).width


def partial_width_max() -> int:
    """Columns a split can have (D_PARTIAL_WIDTH_IN/OUT: 1024)."""
    return min(_count_limit(f"D_PARTIAL_WIDTH_{k}", f"PARTIAL_WIDTH_{k}_FIRST")
               for k in ("IN", "OUT"))


def split_max() -> int:
    """Splits a layer can have (D_OPERATION_MODE_CFG.SPLIT_NUM: 256)."""
    return _count_limit("D_OPERATION_MODE_CFG", "SPLIT_NUM")


def _width_split(layer, value, pool: Pooling, width: int, out_w: int, columns: int
                 ) -> WidthSplit | None:
    """``split``: "auto" (no split unless the line buffer needs one, else the fewest
    splits whose plan passes), a number of splits (output columns shared as evenly as
    first/middle/last allow) or the output columns [first, last] / [first, mid, last];
    None for one split."""
    from ..rules import pdp_max_out_width

    kh, kw = pool.kernel
    sh, sw = pool.stride
    cap = partial_width_max()
    if columns:
        cap = min(cap, pdp_max_out_width(PdpFacts(kw, kh, stride_x=sw, stride_y=sh,
                                                  buffer_columns=columns)))
    if isinstance(value, list):
        plan = WidthSplit.plan(pool, width, _explicit_outs(layer, value, out_w))
        problem = _split_problem(plan, pool)  # the line buffer: obey()'s rule, named
        if problem:
            raise layer.fail("split", problem)
        return plan
    if value == "auto":
        return _auto_split(layer, pool, width, out_w, cap)
    if isinstance(value, bool) or not isinstance(value, int):
        raise layer.fail("split", f"expected \"auto\", a number of splits or the output "
                         f"columns [first, last] / [first, mid, last], got {value!r}")
    count = integer(layer, "split", value, 1, split_max())
    if count > out_w:
        raise layer.fail("split", f"{count} splits of {out_w} output columns: each split "
                         "needs one")
    if count == 1:
        return None
    plan, problem = _plan_of(pool, width, out_w, count, cap)
    if problem:
        raise layer.fail("split", problem)
    return plan


AUTO_TRIES = 16  # split counts "auto" tries past the fewest the widths allow


def _auto_split(layer, pool: Pooling, width: int, out_w: int, cap: int
                ) -> WidthSplit | None:
    """No split when the output fits the line buffer, else the fewest splits with a plan
    that passes (more splits than the line buffer needs when PARTIAL_WIDTH's input columns
    want them: a wide stride)."""
    if out_w <= cap:
        return None
    fewest = ceil_div(out_w, cap)
    if fewest > split_max():
        raise layer.fail("split", f"{out_w} output columns need {fewest} splits of the line "
                         f"buffer's {cap}: more than SPLIT_NUM's {split_max()}")
    best = None  # the fewest splits' most even plan: what a refusal names
    for count in range(fewest, min(fewest + AUTO_TRIES, out_w, split_max()) + 1):
        plan, problem = _plan_of(pool, width, out_w, count, cap)
        if problem is None:
            return plan
        best = best or (count, problem)
    raise layer.fail("split", f"no split passes; the best, {best[0]} splits: {best[1]}")


def _plan_of(pool: Pooling, width: int, out_w: int, count: int, cap: int
             ) -> tuple[WidthSplit | None, str | None]:
    """The first plan of ``count`` splits that passes (middle splits as even as they go,
    then first and last), or the most even plan's problem."""
    first_problem = None
    even = ceil_div(out_w, count)
    for mid in range(even, max(even - 64, 0), -1) if count > 2 else (0,):
        rest = out_w - (count - 2) * mid  # the first's and the last's
        # first and last as even as they go, then further apart (a wide kernel's overlap
        # wants a wide first split, right padding a wide last one)
        for first in sorted(range(1, rest), key=lambda f: abs(2 * f - rest))[:128]:
            plan = WidthSplit.plan(pool, width, (first, *[mid] * (count - 2), rest - first))
            problem = _split_problem(plan, pool, cap)
            if problem is None:
                return plan, None
            first_problem = first_problem or problem
    return None, first_problem or f"no {count} splits share {out_w} output columns"


def _explicit_outs(layer, value: list, out_w: int) -> tuple[int, ...]:
    if len(value) not in (2, 3):
        raise layer.fail("split", f"expected the output columns [first, last] or [first, "
                         f"mid, last], got {value!r}")
    outs = dims(layer, "split", value, len(value), 1, partial_width_max())
    first, last = outs[0], outs[-1]
    if len(outs) == 2:
        if first + last != out_w:
            raise layer.fail("split", f"{first} + {last} output columns are not the layer's "
                             f"{out_w}")
        return (first, last)
    rest = out_w - first - last
    if rest < outs[1] or rest % outs[1]:
        raise layer.fail("split", f"{out_w} output columns less {first} + {last} leave "
                         f"{rest}: not a whole number of middle splits of {outs[1]}")
    return (first, *[outs[1]] * (rest // outs[1]), last)


def _split_problem(plan: WidthSplit, pool: Pooling, cap: int | None = None) -> str | None:
    """Why the splits cannot be programmed (a split past its register or, for ``cap``
    output columns, the line buffer; or with no input of its own), or None."""
    overlap = pool.kernel[1] - pool.stride[1]
    first, last = plan.ins[0], plan.ins[-1]
    if first < max(1, overlap):
        return (f"the first split's {first} input column(s) do not hold the {overlap}-column "
                "kernel-stride overlap the next split re-reads")
    if last < 1 or last + overlap < 1:
        return f"the last split ({plan.outs[-1]} output columns) has no input column of its own"
    widest = max(max(plan.ins), max(plan.outs))
    if widest > partial_width_max():
        return (f"a split of {widest} columns exceeds PARTIAL_WIDTH's {partial_width_max()} "
                "(use more splits)")
    if cap is not None and max(plan.outs) > cap:
        return f"{max(plan.outs)} output columns in a split exceed the line buffer's {cap}"
    return None


def build_pdp(m, layer, alloc, rng, outputs):
    m.select_group([PDP, PDP_RDMA])
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    shape = cube.shape
    pool, out_shape, split = _pooling(layer, layer.options, shape,
                                      columns=m.config.pdp_line_buffer_columns)
    _load_random_input(m, layer, cube, src)
    out = output_region(m, alloc, out_shape, layer.precision)
    program_pdp_rdma(m, shape, layer.precision, pool, (src, lay), split)
    program_pdp(m, shape, layer.precision, pool, (out.addr, out.layout), src=(src, lay),
                nan_to_zero=bool(layer.get("nan_to_zero", False)), split=split)
    return out, (PDP, PDP_RDMA)


# -- CDP ------------------------------------------------------------------------------------

def build_cdp(m, layer, alloc, rng, outputs):
    from .lut import lut_plan

    proc = layer.precision
    m.select_group([CDP, CDP_RDMA])
    window = choice(layer, "window", layer.get("window", 5), (3, 5, 7, 9))
    if proc == "fp16":  # fp16 data pass the convertors unchanged
        for key in ("datin", "datout"):
            if layer.get(key) is not None:
                raise layer.fail(key, "the convertors are for int8/int16 data (fp16 LRN "
                                 "scales through its LUT)")
        datin, datout = (0, 1, 0), (0, 1, 0)
    else:
        datin = _cvt(layer, "datin", layer.get("datin"), (0, 1, 0))
        datout = _cvt(layer, "datout", layer.get("datout"), (0, 1, 16))
    nan_to_zero = bool(layer.get("nan_to_zero", False))
    if nan_to_zero and proc != "fp16":
        raise layer.fail("nan_to_zero", "NaN flushing needs precision fp16")
    cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
    _load_random_input(m, layer, cube, src)
    out = output_region(m, alloc, cube.shape, proc)
    value = layer.get("lut")
    if value is None and proc != "fp16":
        lut = linear_lut(proc, window)  # gen's historical programming, register for register
    else:
        if not isinstance(value, (dict, type(None))) and value is not True:
            raise layer.fail("lut", f"expected true or a table, got {value!r}")
        plan = lut_plan(layer, "lut", True if value is None else value, "cdp", proc, rng,
                        window)
        lut = {"fields": plan.fields, "le": plan.le, "lo": plan.lo}
    program_cdp(m, cube.shape, proc, (src, lay), (out.addr, out.layout),
                window=window, datin=datin, datout=datout, lut=lut,
                sqsum_bypass=bool(layer.get("sqsum_bypass", False)),
                mul_bypass=bool(layer.get("mul_bypass", False)), nan_to_zero=nan_to_zero)
    return out, (CDP, CDP_RDMA)


# -- BDMA -----------------------------------------------------------------------------------

def build_bdma(m, layer, alloc, rng, outputs):
    cfg = m.config
    if not cfg.bdma:
        raise layer.fail("unit", f"{cfg.name} has no BDMA")
    line = integer(layer, "line_bytes", layer.get("line_bytes", 64), 32, 8192)
    if line % 32:
        raise layer.fail("line_bytes", f"{line} is not a multiple of 32 (BDMA moves 32-byte "
                         "atoms)")
    lines = integer(layer, "lines", layer.get("lines", 4), 1, 8192)
    surfaces = integer(layer, "surfaces", layer.get("surfaces", 1), 1, 8192)
    mems = _src_dst_memories(layer, cfg)
    size = line * lines * surfaces
    src = alloc.take(size, mems["src"])
    m.load(src, rng.integers(0, 256, size, dtype=np.uint8), mems["src"])
    out = Output(mems["dst"], alloc.take(size, mems["dst"]), size)
    program_bdma_copy(m, src, out.addr, line_bytes=line, lines=lines, surfaces=surfaces,
                      src_mem=mems["src"], dst_mem=mems["dst"])
    return out, ("NVDLA_BDMA",)


def _src_dst_memories(layer, cfg) -> dict[str, str]:
    """The memories of the ``src`` and ``dst`` keys ("mc" or "cv", default "mc")."""
    mems = {}
    for key in ("src", "dst"):
        ram = choice(layer, key, layer.get(key, "mc"), ("mc", "cv"))
        if ram == "cv" and not cfg.secondary_memory:
            raise layer.fail(key, f"{cfg.name} has no CV-SRAM")
        mems[key] = "sec_mem" if ram == "cv" else "pri_mem"
    return mems


# -- Rubik ----------------------------------------------------------------------------------

def build_rubik(m, layer, alloc, rng, outputs):
    """contract: input [C, H, W] gives C output channels from stride_x*stride_y phases;
    split: a feature cube into planes; merge: planes (random) into a feature cube."""
    from ..dma.feature import pack_feature
    from ..program.rubik import RubikSide, program_rubik

    cfg = m.config
    if not cfg.rubik:
        raise layer.fail("unit", f"{cfg.name} has no Rubik")
    mode = choice(layer, "mode", layer.get("mode", "contract"), ("contract", "split", "merge"))
    mems = _src_dst_memories(layer, cfg)
    atom = cfg.atom_bytes
    ebs = Precision(layer.precision).bytes
    epa = atom // ebs
    m.select_group(["NVDLA_RBK"])
    if mode == "split":
        cube, src, lay = input_cube(m, layer, alloc, rng, outputs)
        _load_random_input(m, layer, cube, src)
        c, h, w = cube.shape
        line = align_up(w * ebs, atom)
        size = c * h * line
        out = Output(mems["dst"], alloc.take(size, mems["dst"]), size)
        program_rubik(m, mode, layer.precision, cube.shape,
                      RubikSide(src, lay.line_stride, lay.surface_stride),
                      RubikSide(out.addr, line, 0, line * h, mems["dst"]))
        return out, ("NVDLA_RBK",)
    if isinstance(layer.input, str):
        raise layer.fail("input", f"{mode} reads planes or stride phases: give [C, H, W]")
    c, h, w = layer.input
    if mode == "merge":
        cube = random_cube(rng, (c, h, w), layer.precision, layer.get("data"), "feature")
        line = align_up(w * ebs, atom)
        planes = np.zeros((c, h, line), np.uint8)
        planes[:, :, : w * ebs] = np.ascontiguousarray(cube).view(np.uint8).reshape(c, h, -1)
        src = alloc.take(planes.size, mems["src"])
        m.load(src, planes.reshape(-1), mems["src"])
        out = output_region(m, alloc, (c, h, w), layer.precision, mems["dst"])
        program_rubik(m, mode, layer.precision, (c, h, w),
                      RubikSide(src, line, 0, line * h, mems["src"]),
                      RubikSide(out.addr, out.layout.line_stride, out.layout.surface_stride, 0,
                                mems["dst"]))
        return out, ("NVDLA_RBK",)
    sx, sy = dims(layer, "stride", layer.get("stride", [2, 2]), 2, 1, 32)
    surfaces = ceil_div(c, epa)
    dtype = {"int8": np.int8, "int16": np.int16, "fp16": np.uint16}[layer.precision]
    phases = np.zeros((sx * sy * surfaces * epa, h, w), dtype)
    for p in range(sx * sy):
        phases[p * surfaces * epa: p * surfaces * epa + c] = random_cube(
            rng, (c, h, w), layer.precision, layer.get("data"), "feature")
    data, lay = pack_feature(phases, cfg, precision=layer.precision)
    src = alloc.take(data.size, mems["src"])
    m.load(src, data, mems["src"])
    out = output_region(m, alloc, (c, h * sy, w * sx), layer.precision, mems["dst"])
    out_line = out.layout.line_stride
    program_rubik(m, mode, layer.precision, phases.shape,
                  RubikSide(src, lay.line_stride, lay.surface_stride, 0, mems["src"]),
                  RubikSide(out.addr, out_line, out.layout.surface_stride, 0, mems["dst"]),
                  out_channels=c, stride=(sx, sy), super_line=out_line * sy)
    return out, ("NVDLA_RBK",)


# -- convolution ----------------------------------------------------------------------------

def _truncate(layer, c, r, s, dmax, wmax) -> int:
    """CACC truncation that keeps the accumulator's typical values in the output range."""
    if layer.precision == "fp16":
        return 0
    bits = 8 if layer.precision == "int8" else 16
    typical = int(np.sqrt(c * r * s)) * int(dmax) * int(wmax)
    return min(max(0, typical.bit_length() - (bits - 1) + 1), MAX_CLIP_TRUNCATE)


def build_conv(m, layer, alloc, rng, outputs):
    from ..program.conv import program
    from ..program.conv_modes import program_image, program_winograd

    cfg = m.config
    mode = choice(layer, "mode", layer.get("mode", "direct"), CONV_MODES)
    if mode == "winograd":
        layer.require(cfg, "winograd", "mode")
    batch = integer(layer, "batch", layer.get("batch", 1), 1, 32)
    if batch > 1:
        layer.require(cfg, "batch", "batch")
        if batch > cfg.max_batch:
            raise layer.fail("batch", f"{batch} batches exceed {cfg.name}'s {cfg.max_batch}")
        if mode != "direct" or not isinstance(layer.input, tuple):
            raise layer.fail("batch", "batches need a direct convolution of a random input")
    proc = layer.precision
    # enabled consumers first, as NVIDIA's firmware and traces do: the SDP (and the PDP it
    # feeds) must be running before the convolution pipeline sends it data; enabled last,
    # NVIDIA's RTL writes the output but never raises the SDP's interrupt
    units = [SDP, *CONV_ENABLE]
    fly_sdp = check_keys(layer, "sdp", layer.get("sdp"), FLY_SDP_KEYS)
    fly_pdp = layer.get("pdp")
    if fly_pdp is not None:
        fly_pdp = check_keys(layer, "pdp", fly_pdp, FLY_PDP_KEYS)
        units.insert(0, PDP)
    m.select_group(units + [SDP_RDMA])
    k = integer(layer, "kernels", layer.get("kernels", 8), 1, 8192)
    r, s = dims(layer, "kernel", layer.get("kernel", [3, 3]), 2, 1, 32)
    sy, sx = dims(layer, "stride", layer.get("stride", [1, 1]), 2, 1, 8)
    dy, dx = dims(layer, "dilation", layer.get("dilation", [1, 1]), 2, 1, 32)
    pad = tuple(dims(layer, "pad", layer.get("pad", 0), 4, 0, 31))
    left, right, top, bottom = pad
    if proc == "fp16":  # a number, programmed as its fp16 bit pattern
        pad_value = _operand_value(layer, "pad_value", layer.get("pad_value", 0), proc)
    else:
        pad_value = integer(layer, "pad_value", layer.get("pad_value", 0), -(1 << 15),
                            (1 << 15) - 1)
    if mode != "image":
        from .image import IMAGE_KEYS

        for key in IMAGE_KEYS:
            if layer.get(key) is not None:
                raise layer.fail(key, "an image-input setting: needs mode = \"image\"")
    if mode == "image":
        if isinstance(layer.input, str):
            raise layer.fail("input", "image input reads pixels from memory, not a chained "
                             "feature cube")
        from .image import image_setting, random_pixels

        c, h, w = layer.input
        pixels = image_setting(layer, proc, c, cfg)
        fmt = pixels.fmt
        image = random_pixels(rng, fmt, (c, h, w), layer.get("data"))
        cube = None
    elif batch > 1:
        c, h, w = layer.input
        cube = random_cube(rng, (batch, c, h, w), proc, layer.get("data"), "conv")
        lay = feature_layout((c, h, w), proc, cfg.atom_bytes)
        src = alloc.take(lay.extent * batch)
    else:
        cube, src, lay = input_cube(m, layer, alloc, rng, outputs, "conv")
        c, h, w = cube.shape
    if mode == "winograd" and ((r, s) != (3, 3) or (sy, sx) != (1, 1)):
        raise layer.fail("kernel", "gen builds Winograd layers with 3x3 kernels and stride 1")
    if mode == "winograd":  # CACC.D_DATAOUT_SIZE: the extended input less 4 (programming guide)
        if layer.get("pad") is None:  # 1 a side, more right/bottom up to a legal padded size
            pad = left, right, top, bottom = (1, _winograd_pad(w), 1, _winograd_pad(h))
        out_w, out_h = w + left + right - 4, h + top + bottom - 4
    else:
        ext_w = (s - 1) * dx + 1
        ext_h = (r - 1) * dy + 1
        if w + left + right < ext_w or h + top + bottom < ext_h:
            raise layer.fail("kernel", f"a {r}x{s} kernel (dilated {ext_h}x{ext_w}) does not "
                             f"fit the padded {h}x{w} input")
        out_w = window_count(w, left, right, s, sx, dx)
        out_h = window_count(h, top, bottom, r, sy, dy)
    facts = _conv_facts(cfg, mode, proc, (c, h, w), (out_w, out_h), batch, k, (r, s),
                        (sx, sy), (dx, dy), pad, fmt.channels if mode == "image" else c)
    obey(layer, facts)
    out_prec = _out_precision(layer, cfg, fly_sdp.get("out_precision"), proc,
                              "sdp.out_precision")
    obey(layer, SdpFacts(proc, out_prec, flying=True, to_pdp=fly_pdp is not None,
                         winograd=mode == "winograd", batches=batch), keys=FLY_SDP_RULE_KEYS)
    wt = random_cube(rng, (k, c, r, s), proc, layer.get("weights"), "weight")
    lo, hi = _ranges(layer, proc)
    truncate = layer.get("truncate")
    if truncate is None:
        truncate = _truncate(layer, c, r, s, max(abs(lo), abs(hi)),
                             max(abs(v) for v in _ranges(layer, proc, "weights")))
    # CACC delivers 32 of its 48 accumulator bits: nv_full's takes at most 16 truncated,
    # the master RTL's (nv_small & co) up to 31, rounding as it does (fp16 ignores it)
    truncate = integer(layer, "truncate", truncate, 0,
                       31 if proc == "fp16" else cfg.cacc_truncate_max)
    if mode == "winograd":
        try:  # integer weights transform exactly at x4, but must still fit the precision
            w4 = winograd_weights(wt, proc, scale=1.0 if proc == "fp16" else 4.0)
        except LayoutError:
            raise layer.fail("weights", f"the Winograd transform (4 G W G^T) of these "
                             f"weights leaves {proc}: narrow weights.low/high") from None
        wt_addr = alloc.take(w4.size * 2 + 4096)
        program_winograd(m, cube, w4, precision=proc, pad=pad, pad_value=pad_value,
                         out_size=(out_w, out_h), truncate=truncate, in_addr=src,
                         wt_addr=wt_addr)
    elif mode == "image":
        from .image import image_extent

        atom = cfg.atom_bytes
        in_addr = alloc.take(max(h * w * 4 * 2 + 4096,
                                 image_extent(fmt, 0, h, w, pixels.x_offset, atom)))
        extra = {}
        if fmt.planes == 2:  # the chroma plane
            extra["uv_addr"] = alloc.take(image_extent(fmt, 1, h, w, pixels.x_offset, atom))
        if pixels.mean is not None:
            extra["mean"] = pixels.mean
        wt_addr = alloc.take(wt.size * 8 + 4096)
        out_w, out_h = program_image(m, image, wt, fmt=fmt.name, precision=proc,
                                     cvt=pixels.cvt, x_offset=pixels.x_offset,
                                     sign_override=pixels.sign_override, stride=(sx, sy),
                                     pad=pad, pad_value=pad_value, truncate=truncate,
                                     in_addr=in_addr, wt_addr=wt_addr, **extra)
    else:
        wt_addr = alloc.take(align_up(wt.size * Precision(proc).bytes, 128) + 128)
        program(m, cube if batch == 1 else cube[0], wt, precision=proc, stride=(sx, sy),
                dilation=(dx, dy), pad=pad, pad_value=pad_value, truncate=truncate,
                nan_to_zero=bool(layer.get("nan_to_zero", False)), in_addr=src,
                wt_addr=wt_addr)
        if batch > 1:
            _batches(m, cube, src, lay, proc)
    program_cbuf(m, facts)
    shape = (k, out_h, out_w)
    bias = fly_sdp.get("bias")
    mul = fly_sdp.get("mul")
    x1 = {}
    if bias is not None:
        x1.update(alu="sum", alu_operand=bias)
    if mul is not None:
        x1.update(mul=mul, mul_shift=fly_sdp.get("mul_shift", 0))
    if fly_sdp.get("relu"):
        x1["relu"] = True
    for key, table in (("x1", x1), ("x2", {}), ("y", {})):
        if key == "y" and not cfg.sdp_ew:
            m.set(SDP, "D_DP_EW_CFG_0", ew_bypass=1, ew_alu_bypass=1, ew_mul_bypass=1,
                  ew_lut_bypass=1)
            continue
        _stage(m, layer, alloc, rng, key, table, proc, padded(k, proc, cfg.atom_bytes))
    cvt = _cvt(layer, "sdp.cvt", fly_sdp.get("cvt"))
    winograd = mode == "winograd"
    if fly_pdp is None:
        if batch > 1 and shape[1:] == (1, 1) and cfg.atom_bytes % 64:
            # sdp.batch_dst_64 wants a 64-byte surface stride, sdp.one_by_one_packed one atom
            raise layer.fail("batch", f"a batch of 1x1 output cubes cannot be written: "
                             f"several batches need 64-byte aligned strides "
                             f"(sdp.batch_dst_64), a 1x1 cube a surface stride of one "
                             f"{cfg.atom_bytes}-byte atom (sdp.one_by_one_packed)")
        out = output_region(m, alloc, (batch, *shape) if batch > 1 else shape, out_prec,
                            written=sdp_written(k, (proc, out_prec), cfg.atom_bytes),
                            stride_align=64 if batch > 1 else None)  # sdp.batch_dst_64
        program_sdp_core(m, shape, proc, out_prec, dst=(out.addr, out.layout), cvt=cvt,
                         flying=True, winograd=winograd)
        return out, tuple(units)
    pdp_layer = _PoolView(layer, out_prec)
    pool, out_shape, _ = _pooling(pdp_layer, fly_pdp, shape, flying=True,
                                  columns=cfg.pdp_line_buffer_columns)
    out = output_region(m, alloc, out_shape, out_prec)
    program_sdp_core(m, shape, proc, out_prec, cvt=cvt, flying=True, to_pdp=True,
                     winograd=winograd)
    program_pdp(m, shape, out_prec, pool, (out.addr, out.layout))
    return out, tuple(units)  # the PDP first: it is the last consumer


def _winograd_pad(size: int) -> int:
    """Right/bottom padding of a Winograd input padded by 1 before: at least 1, the padded
    size a multiple of 4 (winograd.padded_input) and 12 or more (an output of 8 or more,
    winograd.min_output)."""
    total = max(12, align_up((size + 2), 4))
    return total - 1 - size


def _batches(m, cube, src: int, lay, proc: str) -> None:
    """Batches 1.. of a direct convolution's input, and the batch registers."""
    from ..dma.feature import pack_feature

    for n in range(1, cube.shape[0]):
        data, _ = pack_feature(cube[n], m.config, precision=proc)
        m.load(src + n * lay.extent, data)
    batches = cube.shape[0] - 1
    m.set("NVDLA_CDMA", "D_BATCH_NUMBER_0", batches=batches)
    m.write_reg("NVDLA_CDMA.D_BATCH_STRIDE_0", lay.extent)
    m.set("NVDLA_CSC", "D_BATCH_NUMBER_0", batches=batches)
    m.set("NVDLA_CACC", "D_BATCH_NUMBER_0", batches=batches)


class _PoolView:
    """A conv layer seen as the PDP it feeds: its keys are under ``pdp.``."""

    def __init__(self, layer, precision: str):
        self._layer = layer
        self.precision = precision
        self.options = layer.get("pdp")

    def fail(self, key, rule):
        return self._layer.fail(self._key(key), rule)

    def where(self, key):
        return self._layer.where(self._key(key))

    @staticmethod
    def _key(key: str) -> str:
        """The spec key of a pooling key: the pooled cube is the convolution's output, so
        its size is decided by the layer's own ``input``."""
        return key if key == "input" else f"pdp.{key}"

    def get(self, key, default=None):
        return self.options.get(key, default)


def _ranges(layer, proc, key: str = "data"):
    """The (low, high) a convolution draws its input (``data``) or ``weights`` from."""
    from .data import RANGES

    data = layer.get(key) or {}
    lo, hi = RANGES[proc]["conv" if key == "data" else "weight"]
    return (data.get("low") if data.get("low") is not None else lo,
            data.get("high") if data.get("high") is not None else hi)


def _conv_facts(cfg, mode, proc, cube, out, batch, kernels, kernel, stride, dilation, pad,
                pixel_elements) -> ConvFacts:
    """The rules' facts of a convolution layer gen is about to program, with the CBUF
    programming gen gives it (:func:`sim.gen.legality.cbuf_plan`)."""
    c, h, w = cube
    r, s = kernel
    bpe = Precision(proc).bytes
    if mode == "winograd":
        atom_channels = cfg.atom_bytes // bpe
        kernel_bytes = 16 * align_up(c, atom_channels) * bpe
    else:
        kernel_bytes = r * s * c * bpe
    left, right, top, bottom = pad
    facts = ConvFacts(cfg, mode, proc, w, h, c, out[0], out[1], entries=1, data_banks=1,
                      batches=batch, kernel_width=s, kernel_height=r, stride_x=stride[0],
                      stride_y=stride[1], dilation_x=dilation[0], dilation_y=dilation[1],
                      pad_left=left, pad_right=right, pad_top=top, pad_bottom=bottom,
                      pixel_elements=pixel_elements, kernels=kernels, kernel_bytes=kernel_bytes)
    return cbuf_plan(facts)
