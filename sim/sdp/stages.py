"""The SDP datapath stages on a block of the cube, in numpy.

The arithmetic of every stage is NVDLA's, from :mod:`sim.num.sdp` (verified
against the golden vectors); this module strings the enabled stages
together for one layer.  Values travel as int64 holding the 32-bit datapath
word (signed int32 values on the integer path, fp32 bit patterns on the fp16
path).  An operand is one value (a register, or per element of a 1x1 cube),
one value per channel or one per element, shaped to broadcast against the
``(N, C, H*W)`` cube.
"""

from __future__ import annotations

import numpy as np

from ..num import vector_fp as fp
from ..num.sdp import (
    c_int_block,
    c_stage,
    x_int_block,
    x_int_operands,
    x_stage,
    y_core_stage,
    y_cvt_stage,
    y_idx_stage,
    y_inp_stage,
)
from ..num.sdp_add import INTEGER_OUTPUTS, add_convert_block, folded_addend
from ..num.specials import flush_nans, inf_mask, nan_mask
from ..num.vector_int import array_bounds, dtype_bounds, owned_sign_extend, sign_extend
from ..num.widths import INT32_MIN
from ..records import record
from ..regs.enums import FP16, AluAlgo
from . import fast_fp, fused_fp, lut_int

# operand modes
OP_REGISTER, OP_CHANNEL, OP_ELEMENT = 0, 1, 2
COUNTERS = ("saturation", "nan_out", "nan_in", "inf_in", "unequal", "lut_uflow", "lut_oflow",
            "lut_hybrid", "lut_le_hit", "lut_lo_hit")


def shaped_operand(values: np.ndarray, mode: int, cp: int, h: int, w: int,
                   dtype=np.int64) -> np.ndarray:
    """An operand stream as an array that broadcasts against an (N, Cp, H*W) cube: int64,
    or (``dtype`` None) memory operands in their int8/int16 dtype."""
    if mode == OP_REGISTER:
        return np.asarray(values[0], np.int64)
    if mode == OP_CHANNEL:
        return np.asarray(values[:cp], dtype).reshape(1, cp, 1)
    return np.asarray(values[: cp * h * w], dtype).reshape(1, cp, h * w)


@record(frozen=False)
class Datapath:
    """One layer's settings, resolved once: which stages run and their operands."""

    layer: object
    precision: int  # precision code of the processing path
    out_precision: int
    fp16_in: bool  # fp16 memory input: counted and widened to fp32
    nan_to_zero: bool
    operands: dict  # "x1"/"x2"/"y" -> (alu, mul), each 0-d, (1, Cp, 1) or (1, Cp, H*W)
    le_bias: int  # LE exponent mode: 2**offset, the underflow extrapolation base
    tables: tuple  # the LUT's (LE, LO) entries
    int_operands: dict | None = None  # integer layer path (int_path_applies): "x1"/"x2" ->
    # (alu, mul) of x_int_operands
    add_convert: AddConvert | None = None  # its adding-stage form (add_convert_plan)
    float32: bool | None = None  # whether fast_fp applies (fast_fp.applies), once known

    def _float32(self) -> bool:
        if self.float32 is None:
            self.float32 = fast_fp.applies(self.layer, self.precision, self.out_precision)
        return self.float32

    def run_into(self, v: np.ndarray, channels: slice, pixels: slice, dest: np.ndarray,
                 deferred: list | None = None) -> np.ndarray:
        """:meth:`run`, the output stored in ``dest`` (the block's place in the output cube,
        whose dtype keeps the low bits); returns the counters.

        ``deferred``: a list that takes the block's suspects where the compiled float32
        pass leaves some (:class:`Suspects`): their words, and the counters of those
        words, are then :meth:`redo_suspects`'s, once for every block of the layer."""
        if self.add_convert is not None and self._add_converted(v, channels, pixels, dest):
            return np.zeros(len(COUNTERS), np.int64)  # integer output, nothing saturated
        out, counts = self.run(v, channels, pixels, deferred, dest)
        if out is not dest:  # (the compiled float32 pass writes the block's place itself)
            dest[...] = out
        return counts

    def _add_converted(self, v: np.ndarray, channels: slice, pixels: slice,
                       dest: np.ndarray) -> bool:
        """The block through :func:`sim.num.sdp_add.add_convert_block`, if its bounds allow."""
        if v.dtype not in (np.int8, np.int16, np.int32) or not v.size:
            return False
        _, bounds, _ = _int_input(v)
        plan = self.add_convert
        addend = plan.addend
        if isinstance(addend, np.ndarray):
            addend = self._operand(addend, channels, pixels)
        return add_convert_block(v, bounds, addend, plan.bounds, plan.low, plan.offset,
                                 plan.scale, plan.shift, plan.code, dest)

    def run(self, v: np.ndarray, channels: slice, pixels: slice, deferred: list | None = None,
            dest: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The output and counters (COUNTERS order) of ``v``, the block ``[:, channels,
        pixels]`` of the (N, Cp, H*W) cube, in the cube's dtype (fp16 input as uint16
        patterns).  The output is 16-bit words, or (the integer layer path) the signed
        int8/int16 elements: the same low bits."""
        layer, counts = self.layer, np.zeros(len(COUNTERS), np.int64)
        if self.fp16_in:
            bits = v if v.dtype == np.uint16 else v & 0xFFFF
            counts[2] = np.count_nonzero(nan_mask(bits))
            counts[3] = np.count_nonzero(inf_mask(bits))

        def block_operand(op):
            return self._operand(op, channels, pixels)

        if self._float32():  # an fp16 output
            return self._float32_pass(v, block_operand, counts,
                                      None if deferred is None else (deferred, channels, pixels,
                                                                     dest), dest)
        if self.int_operands is not None:
            out, counts[0] = self._int_values(v, channels, pixels)
        else:
            out, sat = self._values(v.astype(np.int64), block_operand, counts)
            counts[0] = np.count_nonzero(sat)
        if self.out_precision == 2:
            counts[:2] = _fp16_counts(out)
        counts[4] = bool(layer.eql and np.any(out & 0xFFFF))
        return out, counts

    def _float32_pass(self, v: np.ndarray, block_operand, counts: np.ndarray,
                      defer: tuple | None = None, dest: np.ndarray | None = None) -> tuple:
        """:meth:`run` of a block :mod:`sim.sdp.fast_fp` applies to: float32, then the rules
        for what float32 may get wrong.  The compiled pass counts the words it keeps.
        ``defer``: (list, channels, pixels, dest), where the compiled pass's suspects go
        (:meth:`run_into`); ``dest``: the block's place in the output, where the compiled
        pass puts its words when it can (one array and one copy fewer a block)."""
        tally = None
        if fused_fp.worth_it(v):
            if dest is not None and not (dest.dtype == np.uint16 and dest.shape == v.shape
                                         and dest.flags.c_contiguous):
                dest = None
            out, redo, tally = fused_fp.run_tallied(self, v, block_operand, dest)
            redone = tally[0] > 0
            if redone and defer is not None:
                deferred, channels, pixels, dest = defer
                deferred.append(Suspects(v, redo, channels, pixels, dest))
                counts[:2] = tally[1:3]  # the kept words' counts; the rules' words' later
                return out, counts
        else:
            out, redo = fast_fp.run(self, v, block_operand)
            redone = redo.any()
        if redone:
            def redo_operand(op):
                return _at_suspects(block_operand(op), v.shape, redo)

            out[redo] = self._values(v[redo].astype(np.int64), redo_operand, counts)[0]
        if tally is None:
            counts[:2] = _fp16_counts(out)
        else:  # the kept words' counts, and the rules' words'
            counts[:2] = tally[1:3] + (_fp16_counts(out[redo]) if redone else 0)
        return out, counts

    def redo_suspects(self, deferred: list) -> np.ndarray:
        """The rules' words of every :class:`Suspects` of the layer's blocks stored in their
        blocks' places, in one pass of the rules (a pass costs about the same for a few
        elements as for one: most of it is per call); returns their counters."""
        counts = np.zeros(len(COUNTERS), np.int64)
        v = np.concatenate([s.v[s.redo] for s in deferred]).astype(np.int64)

        def operand(op):
            if not op.ndim:
                return op
            return np.concatenate([_at_suspects(self._operand(op, s.channels, s.pixels),
                                                s.v.shape, s.redo) for s in deferred])

        # the words as the block's output holds them (uint16), as the counters see them
        words = self._values(v, operand, counts)[0].astype(np.uint16)
        start = 0
        for s in deferred:
            stop = start + s.count
            s.dest[s.redo] = words[start:stop]
            start = stop
        counts[:2] += _fp16_counts(words)
        return counts

    def _values(self, v: np.ndarray, operand, counts: np.ndarray) -> tuple:
        """(output words, saturation flags) of the elements ``v`` by NVDLA's rules.

        ``operand(op)`` shapes an operand for ``v``; LUT counters go to ``counts``.
        """
        layer = self.layer
        v = fp.fp16_to_fp32(v & 0xFFFF) if self.fp16_in else v & 0xFFFFFFFF
        if self.nan_to_zero:
            v = flush_nans(v, fp.FP32)
        for name in ("x1", "x2"):
            stage = getattr(layer, name)
            if not stage.bypass:
                alu, mul = (operand(op) for op in self.operands[name])
                v = x_stage(v, alu, mul, stage.alu_bypass, stage.alu_algo, stage.alu_shift,
                            stage.mul_bypass, stage.mul_prelu, stage.mul_shift,
                            stage.relu_bypass, self.nan_to_zero, self.precision)
        if not layer.y.bypass:
            alu, mul = (operand(op) for op in self.operands["y"])
            y = layer.y
            v = y_core_stage(v, alu, mul, y.alu_bypass, y.alu_algo, y.mul_bypass, y.truncate,
                             y.mul_prelu, self.precision)
            if not y.lut_bypass:
                v = self._lut(v, counts)
        out, sat = c_stage(v, layer.cvt_offset & 0xFFFFFFFF, layer.cvt_scale & 0xFFFF,
                           layer.cvt_shift, self.precision, self.out_precision, layer.eql,
                           layer.rtl_saturation_flag)
        return np.array(np.broadcast_to(out, v.shape)), sat

    def _int_values(self, v: np.ndarray, channels: slice, pixels: slice) -> tuple:
        """(output values, saturation count) of an integer layer without Y
        (:func:`int_path_applies`): the X stages and the convertor of
        :mod:`sim.num.sdp` on signed values with bounds, the first making its own copy."""
        layer = self.layer
        x, bounds, owned = _int_input(v)
        for name in ("x1", "x2"):
            stage = getattr(layer, name)
            if stage.bypass:
                continue
            alu, mul = ((self._operand(values, channels, pixels), bounds_)
                        for values, bounds_ in self.int_operands[name])
            x, bounds = x_int_block(x, bounds, alu, mul, stage.alu_bypass, stage.alu_algo,
                                    stage.mul_bypass, stage.mul_shift, stage.relu_bypass, owned)
            owned = True
        out, saturated = c_int_block(x, bounds, layer.cvt_offset, layer.cvt_scale,
                                     layer.cvt_shift, self.out_precision, owned,
                                     layer.rtl_saturation_flag)
        if np.shape(out) != v.shape:  # a stage left one value (per operand element at most)
            saturated *= v.size // max(np.size(out), 1)  # each stands for as many elements
            out = np.broadcast_to(out, v.shape)
        return out, saturated

    @staticmethod
    def _operand(operand: np.ndarray, channels: slice, pixels: slice) -> np.ndarray:
        if not operand.ndim:
            return operand
        return operand[:, channels, pixels] if operand.shape[2] > 1 else operand[:, channels]

    def _lut(self, v: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """LUT index, RAM read and interpolation/extrapolation."""
        lut, le, lo = self.layer.lut, self.tables[0], self.tables[1]
        if self.precision != 2 and v.size >= lut_int.KERNEL_MIN:  # a large integer block
            out, found = lut_int.lookup(v, lut, self.le_bias, le, lo)
            counts[5:10] += found
            return out
        fraction, oflow, uflow, use_lo, addr, le_hit, lo_hit = y_idx_stage(
            v, lut.le_start, lut.lo_start, lut.le_index_offset & 0xFF,
            lut.le_index_select & 0xFF, lut.lo_index_select & 0xFF, lut.le_function_linear,
            lut.uflow_priority_lo, lut.oflow_priority_lo, lut.hybrid_priority_lo, self.precision)
        flow = oflow | uflow
        table = np.concatenate([le, lo]) & 0xFFFF  # LE entries, then LO
        base = np.where(use_lo, le.size, 0)

        def entry(index):
            return table[base + np.minimum(index, np.where(use_lo, lo.size, le.size) - 1)]

        side = base // le.size * 2 + oflow  # LE underflow, LE overflow, LO under-, LO overflow

        def slope(*settings):  # the setting of the table and side a value left by
            return np.where(flow, np.array(settings, np.int64)[side], 0)

        y0, y1 = entry(addr), np.where(flow, 0, entry(addr + 1))
        scale = slope(lut.le_uflow_scale, lut.le_oflow_scale, lut.lo_uflow_scale,
                      lut.lo_oflow_scale)
        shift = slope(lut.le_uflow_shift, lut.le_oflow_shift, lut.lo_uflow_shift,
                      lut.lo_oflow_shift)
        offset = slope(lut.le_start, lut.le_end, lut.lo_start, lut.lo_end)
        bias = 0 if lut.le_function_linear else np.where(flow & ~use_lo & ~oflow,
                                                         self.le_bias, 0)
        counts[5:10] = [np.count_nonzero(uflow), np.count_nonzero(oflow),
                        np.count_nonzero(~flow), np.count_nonzero(le_hit),
                        np.count_nonzero(lo_hit)]
        return y_inp_stage(v, fraction, y0, y1, scale, shift, offset, bias, flow, self.precision)


class Suspects:
    """A block's elements the compiled float32 pass could not vouch for, left for
    :meth:`Datapath.redo_suspects`: the block's input ``v``, the mask ``redo``, the block's
    place (``channels``, ``pixels``) and ``dest``, its part of the output cube."""

    __slots__ = ("v", "redo", "channels", "pixels", "dest", "count")

    def __init__(self, v, redo, channels, pixels, dest):
        self.v, self.redo, self.channels, self.pixels, self.dest = v, redo, channels, pixels, dest
        self.count = int(np.count_nonzero(redo))


def _at_suspects(op: np.ndarray, shape: tuple, redo: np.ndarray) -> np.ndarray:
    """A block's operand at its suspects (``redo``): an array (per element or channel)
    spread over the block's ``shape`` and picked out; a register's value as it is."""
    return np.broadcast_to(op, shape)[redo] if op.ndim else op


def _fp16_counts(words: np.ndarray) -> np.ndarray:
    """(saturated, NaN) fp16 words: saturated is the largest finite magnitude."""
    return np.array([np.count_nonzero(words & 0x7FFF == fp.saturated(0, *fp.FP16)),
                     np.count_nonzero(nan_mask(words))], np.int64)


def int_path_applies(layer, precision: int) -> bool:
    """Whether a layer takes the integer layer path: integer processing, Y off (so no
    LUT or EQL), no PReLU."""
    return precision != FP16.code and layer.y.bypass and not any(
        not s.bypass and not s.mul_bypass and s.mul_prelu for s in (layer.x1, layer.x2))


def int_operands(layer, operands: dict) -> dict:
    """The X stages' operands (shaped) as the integer layer path applies them: those of
    the stages and units in use (the others are zeros, never applied)."""
    out = {}
    for name in ("x1", "x2"):
        stage, (alu, mul) = getattr(layer, name), operands[name]
        if not stage.bypass:
            out[name] = x_int_operands(alu if stage.alu_used else np.int64(0),
                                       mul if stage.mul_used else np.int64(0), stage.alu_shift)
    return out


def _int_input(v: np.ndarray) -> tuple:
    """(values, bounds, owned) of a block of the input: int8/int16 memory input and
    CACC's int32 are signed 32-bit values as they are (int32 bounds are looked up: cheap,
    and they spare the saturation tests); other dtypes hold 32-bit words."""
    if v.dtype in (np.int8, np.int16):
        return v, dtype_bounds(v), False
    if v.dtype == np.int32:
        return v, (array_bounds(v) if v.size else (0, 0)), False
    x = owned_sign_extend(v, 32)
    return x, (array_bounds(x) if x.size else (0, 0)), True


def convert_y_operands(layer, operands: tuple, precision: int, nan_to_zero: bool) -> tuple:
    """The Y operands with the Y operand convertor applied to those read from memory."""
    y, (alu, mul) = layer.y, operands
    if y.alu_src_mem:
        alu = y_cvt_stage(alu, y.alu_cvt_bypass, y.alu_cvt_offset & 0xFFFFFFFF,
                          y.alu_cvt_scale & 0xFFFF, y.alu_cvt_truncate, nan_to_zero, precision)
    if y.mul_src_mem:
        mul = y_cvt_stage(mul, y.mul_cvt_bypass, y.mul_cvt_offset & 0xFFFFFFFF,
                          y.mul_cvt_scale & 0xFFFF, y.mul_cvt_truncate, nan_to_zero, precision)
    return alu, mul


def le_exponent_bias(offset: int, fp16: bool) -> int:
    """The start of the LE table in exponent mode, 2**offset (underflow extrapolation base)."""
    if fp16:
        return int(np.array(2.0 ** offset, dtype=np.float32).view(np.uint32))
    return (1 << (offset & 31)) & 0xFFFFFFFF if offset > 0 else 0


class AddConvert:
    """A layer whose only X stage adds, its convertor's settings resolved
    (:func:`add_convert_plan`, :func:`sim.num.sdp_add.add_convert_block`)."""

    __slots__ = ("addend", "bounds", "low", "offset", "scale", "shift", "code")

    def __init__(self, addend, bounds, low, offset, scale, shift, code):
        self.addend, self.bounds, self.low = addend, bounds, low
        self.offset, self.scale, self.shift, self.code = offset, scale, shift, code


def _adding_stage(stage) -> bool:
    """An X stage that only adds: ALU sum (or EQL, which X sums) or none, no multiplier, no
    shift; ReLU or not."""
    return stage.mul_bypass and not stage.mul_shift and (
        stage.alu_bypass or stage.alu_algo in (AluAlgo.SUM, AluAlgo.EQL))


def add_convert_plan(layer, int_operands: dict, out_precision: int) -> AddConvert | None:
    """The :class:`AddConvert` of an integer-path layer (:func:`int_path_applies`) with at
    most one X stage, one that only adds, and an integer output; else None."""
    active = [name for name in ("x1", "x2") if not getattr(layer, name).bypass]
    if layer.eql or out_precision not in INTEGER_OUTPUTS or len(active) > 1 \
            or not all(_adding_stage(getattr(layer, name)) for name in active):
        return None
    addend, bounds, low = np.int64(0), (0, 0), INT32_MIN
    if active:
        stage = getattr(layer, active[0])
        if not stage.alu_bypass:
            addend, bounds = int_operands[active[0]][0]
        low = INT32_MIN if stage.relu_bypass else 0
    offset = sign_extend(int(layer.cvt_offset), 32)
    folded = folded_addend(addend if np.ndim(addend) else int(addend), bounds, offset)
    if folded is None:
        return None
    return AddConvert(*folded, low, offset, sign_extend(int(layer.cvt_scale), 16),
                      int(layer.cvt_shift) & 63, out_precision)
