"""A fully connected fp16 layer's blocks with a weight group's 16 kernels across the vector.

:mod:`sim.num.fc_live` keeps a kernel's lanes along the vector: every block pays a
horizontal maximum and sum, a selection of live lanes per kernel, and flags about 12% of
its lanes for the tree.  Here, inside a weight group (16 kernels whose block ``b`` is one
contiguous 16 x 64 tile of the DC stream, kernel-major: :func:`sim.dma.weights.dc_kernel_runs`),
each tile is transposed in registers (:func:`_tile_half`) so that one 16-lane vector
holds the 16 kernels' weights of one lane; a live lane (its data value not zero, known
once a layer) is a column, its data value a scalar for the whole vector.  Then, per
block, for the 16 kernels at once (the same numbers as :mod:`sim.num.mac_fc`'s, the
block of ``tests/num/mac_reference.py``):

* the block exponents are a vertical running maximum of the lane exponents (a zero
  weight's left out), in a pass over the block's pairs of columns that keeps each pair's
  weights and lane exponents for the products' pass (which then reads two lines a pair,
  not two tile columns and four data values);
* the shifted products ``P >> s`` are :mod:`sim.num.fc_float`'s exact float32 route
  (``floor(w * x * 2**(25 - E))``), 0 beyond shift 16, summed vertically;
* the carries (``(P >> s) - c``): none at shifts 0 and 4 (:mod:`sim.num.fc_carries`); at
  8 looked up exactly in the data value's row of
  :func:`sim.num.fc_carry_tables.carry8_rows` (one 512-bit register, indexed by the
  weight's sign and low significand byte); at 12 possible only where the product's
  fraction ``v - floor(v)`` (exact: its low 12 bits over ``2**12``) is below the data
  value's bound (:func:`sim.num.fc_carry_tables.carry_bounds`), and those few lanes are
  flagged, with every lane shifted by 16 (rare: its carry from the tree) and by 20 to 28
  (its product from the whole tree); each pair's flags are stored as the loop goes, the
  flagged pairs' flagged lanes' packed words (:func:`sim.num.mac_fc._unpack`) compressed
  in registers after it, and fixed after the group by
  :func:`sim.num.mac_fc.halves_needs` and :func:`sim.num.mac_fc.send_change`, as the
  other paths fix theirs.

A group with a weight of exponent field 31 (Inf or NaN: no float the integer path
agrees with) is recognised from the tile's largest magnitude, which
:func:`columns_group` returns; its caller then takes the group by the other path (which
also counts the NaNs and Infs: a group without them has none to count).

The lookup at 8 is a two-table word permutation (x86's ``vpermi2w``, AVX-512BW), which
generic LLVM IR has no form for: a processor without it reads the 32 words one by one
(same result, slower), and :func:`word_permutes` tells callers whether the fast form is
there.
"""

from __future__ import annotations

import functools

import numpy as np

from sim.jit import intrinsic, njit, prefer_wide_vectors
from sim.num.fc_carry_tables import carry8_rows, carry_bounds
from sim.num.fc_float import (
    _filled,
    _splat,
    _vector_at,
    _weight_significands,
    _weights_as_float,
    significand_shift,
)
from sim.num.fc_pieces import prefetch
from sim.num.mac import MAC_BITS, cacc_accumulate_finite, fp16_mac_operands
from sim.num.mac_fc import EXP_BIAS, NEAR_SHIFT, flagged_word, halves_needs, send_change
from sim.num.rounding import sign_extend

#: Kernels of a weight group: the lanes of a column vector (16-bit words, two columns in
#: a 512-bit register).
KERNELS = 16
#: Lanes of a block (nv_full's MAC atomic C): a tile is KERNELS x BLOCK fp16 weights.
BLOCK = 64
TILE = KERNELS * BLOCK
#: Words of a row of the carry table at 8 (512 bits: a data value's, all it needs).
ROW_WORDS = 2 * KERNELS
#: A pair's lookup index adds this for the second column's lanes: the permutation reads
#: the second of its two tables (rows) there.
SECOND_ROW = (0,) * KERNELS + (2 * KERNELS,) * KERNELS
#: A zero weight's lane exponent as the products' loop reads it (below every other as a
#: signed word; the block's exponent less it is above every shift the loop tests).
ZERO_LANE = 0x8000
#: The word permutation's index spreading a pair's two data words over its columns' lanes.
SPREAD_PAIR = (0,) * KERNELS + (1,) * KERNELS
#: Bytes of a cache line (the tile and the kept pairs' rows start on one).
LINE = 64
#: Columns a transposing pass takes (32 16-bit words: one register a kernel's row).
HALF = 32
#: Weights ahead of a tile its prefetch asks the caches for, a line (``PREFETCH_LINE``
#: weights) at a time (the stream is read once, in order): on AlexNet's fc6 and fc7 (one
#: thread, weights from memory) 3072 took 5-15% less time than 1024, 6144 or 12288, and
#: than asking the second-level cache only or a non-temporal hint.
AHEAD = 3072
PREFETCH_LINE = 32
#: Columns a block's products are summed over in int32 before they go to the int64
#: sums: two columns a step, each ``|P >> s| < 2**28``, four steps stay below 2**31.
STEPS_A_SUM = 4
#: The float32 field of ``2**(25 - E)`` is this less the block's biased exponent.
_SCALE_FIELD = 127 + 25 + EXP_BIAS


def _tile_stage_masks(stage):
    """The two shuffle masks of transposing stage ``stage`` (pairs of rows ``2**stage``
    apart): each exchanges ``2**stage``-word pieces of a pair of registers."""
    g = 1 << stage
    first = [p if not p & g else HALF + (p & ~g) for p in range(HALF)]
    second = [(p | g) if not p & g else HALF + p for p in range(HALF)]
    return first, second


def column_offsets(columns):
    """Where column ``c`` of a tile (0-63: its lane in the block) starts in
    :func:`_tile_half`'s transposed tile (in words): the four stages leave column ``c``
    of half ``c >> 5`` in register ``c & 15``'s words ``16 * ((c >> 4) & 1)`` on, and
    half ``h``'s register ``j`` is stored at word ``32 * (h + 2 * j)``."""
    return _column_offset.py_func(np.asarray(columns, np.int64))


@njit(inline="always")
def _column_offset(c):
    """:func:`column_offsets` of one column (or an array of them)."""
    return ((c >> 5) & 1 | (c & 15) << 1) * HALF + ((c >> 4) & 1) * KERNELS


@intrinsic
def _tile_half(typingctx, elements, at, tile, half):
    """Columns ``32 * half`` to ``32 * half + 31`` of the tile at ``elements[at:]`` (16
    rows of 64 words, kernel-major) transposed into ``tile`` (1024 words; a column's 16
    kernels at :func:`column_offsets`): 16 loads, four stages of two-register shuffles,
    16 stores.  Returns the largest magnitude (bits & 0x7FFF) of those words."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        i16, i32, i64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
        row_t = ir.VectorType(i16, HALF)
        half_v = context.cast(builder, args[3], sig.args[3], types.int64)
        start = builder.add(context.cast(builder, args[1], sig.args[1], types.int64),
                            builder.mul(half_v, ir.Constant(i64, HALF)))
        rows, largest = [], None
        for r in range(KERNELS):
            pointer = _vector_at(context, builder, sig.args[0], args[0],
                                 builder.add(start, ir.Constant(i64, r * BLOCK)), HALF, i16)
            row = builder.load(pointer, align=2)
            rows.append(row)
            magnitude = builder.and_(row, _filled(row_t, 0x7FFF))
            largest = magnitude if largest is None else builder.select(
                builder.icmp_unsigned(">", magnitude, largest), magnitude, largest)
        for stage in range(4):
            g = 1 << stage
            first, second = (ir.Constant(ir.VectorType(i32, HALF), m)
                             for m in _tile_stage_masks(stage))
            moved = list(rows)
            for a in range(KERNELS):
                if not a & g:
                    moved[a] = builder.shuffle_vector(rows[a], rows[a | g], first)
                    moved[a | g] = builder.shuffle_vector(rows[a], rows[a | g], second)
            rows = moved
        for j in range(KERNELS):
            at_words = builder.mul(builder.add(half_v, ir.Constant(i64, 2 * j)),
                                   ir.Constant(i64, HALF))
            builder.store(rows[j], _vector_at(context, builder, sig.args[2], args[2],
                                              at_words, HALF, i16), align=2)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i16, [row_t]), f"llvm.vector.reduce.umax.v{HALF}i16")
        return builder.call(reduce, [largest])

    return types.uint16(elements, at, tile, half), codegen


@functools.cache
def significand_shifts() -> tuple:
    """How far the CMAC shifts a weight's mantissa, by exponent field (0-31): the trailing
    zeros of the CMAC significand (:func:`sim.num.mac.fp16_mac_operands`) of the mantissa
    1 with that field."""
    sig = fp16_mac_operands((np.arange(32, dtype=np.uint16) << 10) | 1)[1]
    return tuple((int(s) & -int(s)).bit_length() - 1 for s in sig)


def _has_features(context, *names) -> bool:
    """Whether the code is compiled for a processor with all of the x86 ``names``."""
    features = (getattr(context.codegen(), "_tm_features", "") or "").split(",")
    return all(f"+{name}" in features for name in names)


def _has_word_permutes(context) -> bool:
    """Whether the code is compiled for a processor with AVX-512BW's word permutations."""
    return _has_features(context, "avx512bw")


@intrinsic
def _word_permutes(typingctx):
    from numba.core import types

    def codegen(context, builder, sig, args):
        from llvmlite import ir

        return ir.Constant(ir.IntType(1), int(_has_word_permutes(context)))

    return types.boolean(), codegen


@njit
def word_permutes():
    """Whether :func:`columns_group` looks its carries up a register at a time here (else
    it runs, exactly, at a fraction of the speed: callers keep their other path)."""
    return _word_permutes()


def _carry8_words(context, builder, table, starts, index, portable=False, second=None):
    """The 32 words of the carry table's rows that start at words ``starts`` (two i64:
    words 0-15 read the first row, 16-31 the second) at word ``index`` (i16 lanes, 0-31):
    by a word permutation where the processor has one, else (or ``portable``) one at a
    time.  ``second``: 32 in lanes 16-31, 0 in the others, if the caller keeps it."""
    from llvmlite import ir
    from numba.core import cgutils

    i16, i32, i64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
    pair_t = ir.VectorType(i16, 2 * KERNELS)
    if _has_word_permutes(context) and not portable:
        loaded = [builder.load(builder.bitcast(builder.gep(table, [s]), pair_t.as_pointer()),
                               align=2) for s in starts]
        permute = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(pair_t, [pair_t] * 3),
            "llvm.x86.avx512.vpermi2var.hi.512")
        if second is None:
            second = ir.Constant(pair_t, SECOND_ROW)
        return builder.call(permute, [loaded[0], builder.or_(index, second), loaded[1]])
    words = ir.Constant(pair_t, ir.Undefined)
    for lane in range(2 * KERNELS):
        at = builder.zext(builder.extract_element(index, ir.Constant(i32, lane)), i64)
        word = builder.load(builder.gep(table, [builder.add(starts[lane // KERNELS], at)]))
        words = builder.insert_element(words, word, ir.Constant(i32, lane))
    return words


def _table_words(portable):
    """An intrinsic ``(table, row0, row1, index, out)``: :func:`_carry8_words` of the
    carry rows ``table``, rows ``row0`` and ``row1``, word indices ``index`` (32 uint16)
    into ``out`` (32 uint16), the host's form or the ``portable`` one (for tests: both
    must agree)."""

    @intrinsic
    def table_words(typingctx, table, row0, row1, index, out):
        from llvmlite import ir
        from numba.core import types

        def codegen(context, builder, sig, args):
            pair_t = ir.VectorType(ir.IntType(16), 2 * KERNELS)
            table_p = context.make_array(sig.args[0])(context, builder, args[0]).data
            rows = [context.cast(builder, args[k], sig.args[k], types.int64) for k in (1, 2)]
            index_p, out_p = (context.make_array(sig.args[k])(context, builder, args[k]).data
                              for k in (3, 4))
            index_v = builder.load(builder.bitcast(index_p, pair_t.as_pointer()), align=2)
            starts = [builder.mul(r, ir.Constant(r.type, ROW_WORDS)) for r in rows]
            words = _carry8_words(context, builder, table_p, starts, index_v, portable)
            builder.store(words, builder.bitcast(out_p, pair_t.as_pointer()), align=2)
            return context.get_dummy_value()

        return types.none(table, row0, row1, index, out), codegen

    return table_words


#: :func:`_table_words` in the host's form and in the portable one.
table_words_host, table_words_portable = _table_words(False), _table_words(True)


def _line_aligned(builder, pointer):
    """``pointer`` moved up to the next 64-byte boundary (a cache line: a 512-bit load or
    store from there touches one line)."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    address = builder.add(builder.ptrtoint(pointer, i64), ir.Constant(i64, LINE - 1))
    return builder.inttoptr(builder.and_(address, ir.Constant(i64, -LINE)), pointer.type)


class _BlockCode:
    """What the code of one block (:func:`_column_block`) is written with: its operands'
    pointers, its columns' loads, its constant vectors (32 16-bit lanes: a pair of
    columns)."""

    def __init__(self, context, builder, sig, args):
        from llvmlite import ir
        from numba.core import cgutils, types

        self.context, self.builder, self.sig = context, builder, sig
        self.n = KERNELS
        i16, i32 = ir.IntType(16), ir.IntType(32)
        self.half_t, self.pair_t = ir.VectorType(i16, self.n), ir.VectorType(i16, 2 * self.n)
        self.joined = ir.Constant(ir.VectorType(i32, 2 * self.n), list(range(2 * self.n)))
        self.halves = (ir.Constant(ir.VectorType(i32, self.n), list(range(self.n))),
                       ir.Constant(ir.VectorType(i32, self.n), list(range(self.n, 2 * self.n))))

        def data(tuple_arg, k):
            member = cgutils.unpack_tuple(builder, args[tuple_arg])[k]
            return context.make_array(sig.args[tuple_arg][k])(context, builder, member).data

        (self.starts, self.offsets, self.d_exp, self.d_float, self.d_row, self.d_sig,
         self.d_sign, self.below12, self.table) = (data(3, k) for k in range(9))
        self.lows, self.highs, self.targets, self.pair_flags = (data(6, k) for k in range(4))
        # the block's pairs as the exponent pass leaves them for the products' loop: their
        # weights and lane exponents, a 64-byte line each (the scratch has a line to spare;
        # aligned here, not sliced so in columns_group as the tile is: the kernel took 3%
        # longer so)
        self.pair_w, self.pair_lane = (_line_aligned(builder, data(6, k)) for k in (4, 5))
        self.tile, self.exps, self.sums = (
            context.make_array(sig.args[k])(context, builder, args[k]).data for k in (0, 4, 5))
        self.first, self.stop = (context.cast(builder, v, t, types.int64) for v, t in zip(
            cgutils.unpack_tuple(builder, args[1]), sig.args[1], strict=True))
        self.block = context.cast(builder, args[2], sig.args[2], types.int64)
        self.count0 = context.cast(builder, args[7], sig.args[7], types.int64)
        # The loop's constant vectors are made from a 0 LLVM cannot see through (the
        # first block's first column, always 0): as constants, LLVM read each one from
        # memory in the loop through an address loaded first (numba's large code
        # model), a dozen instructions of the loop's 75; so made, they stay in registers.
        self._zero = _splat(builder, builder.trunc(builder.load(self.starts), i16), 2 * self.n)
        self._kept = {}
        self.permutes = _has_word_permutes(context)
        self._home = builder.block  # where kept constants are made: before every loop

    def const(self, value):
        """``value`` in every lane, or a tuple of the lanes' values (a constant: for shift
        counts, and outside loops)."""
        from llvmlite import ir

        if isinstance(value, tuple):
            return ir.Constant(self.pair_t, list(value))
        return _filled(self.pair_t, value)

    def kept(self, value):
        """``value`` in every lane, kept in a register (made once, before the loops)."""
        if value not in self._kept:
            with self.builder.goto_block(self._home):
                self._kept[value] = self.builder.or_(self.const(value), self._zero)
        return self._kept[value]

    def scalar(self, pointer, i):
        return self.builder.load(self.builder.gep(pointer, [i]))

    def pair(self, j):
        """Columns ``2j`` and ``2j + 1`` of the block: (their indices, their 32 weights)."""
        from llvmlite import ir
        from numba.core import types

        b = self.builder
        i0 = b.add(self.first, b.mul(j, ir.Constant(ir.IntType(64), 2)))
        i1 = b.add(i0, ir.Constant(ir.IntType(64), 1))

        def column(i):
            offset = self.context.cast(b, self.scalar(self.offsets, i),
                                       self.sig.args[3][1].dtype, types.int64)
            return b.load(b.bitcast(b.gep(self.tile, [offset]), self.half_t.as_pointer()),
                          align=2)

        return i0, i1, b.shuffle_vector(column(i0), column(i1), self.joined)

    def keep_pair(self, j, w, lane):
        """Pair ``j``'s weights and lane exponents, kept for :meth:`kept_pair`."""
        for row, value in ((self.pair_w, w), (self.pair_lane, lane)):
            self.builder.store(value, self._pair_row(row, j), align=LINE)

    def kept_pair(self, j):
        """Pair ``j`` of the block as :func:`_block_tops` kept it: (its columns' indices, its
        32 weights, their lane exponents, 0x8000 for a zero weight)."""
        from llvmlite import ir

        b = self.builder
        i0 = b.add(self.first, b.mul(j, ir.Constant(ir.IntType(64), 2)))
        i1 = b.add(i0, ir.Constant(ir.IntType(64), 1))
        w, lane = (b.load(self._pair_row(row, j), align=LINE)
                   for row in (self.pair_w, self.pair_lane))
        return i0, i1, w, lane

    def _pair_row(self, row, j):
        from llvmlite import ir

        at = self.builder.mul(j, ir.Constant(ir.IntType(64), 2 * self.n))
        return self.builder.bitcast(self.builder.gep(row, [at]), self.pair_t.as_pointer())

    def adjacent(self, pointer, i0, widen=None):
        """The scalars of ``pointer`` at columns ``i0`` and ``i0 + 1`` (widened to
        ``widen``), each in its column's 16 lanes: one load of the two (fewer operations
        than two broadcasts and a join)."""
        from llvmlite import ir

        b = self.builder
        element = pointer.type.pointee
        pair_t = ir.VectorType(element, 2)
        if widen is None and element.width == 16 and self.permutes:
            # both words as one 32-bit scalar broadcast, then spread by a kept index: the
            # shuffle's constant index was loaded from memory each pair (two instructions)
            i32 = ir.IntType(32)
            both = b.load(b.bitcast(b.gep(pointer, [i0]), i32.as_pointer()), align=2)
            spread = b.bitcast(_splat(b, both, self.n), self.pair_t)
            return self.permute(spread, self.kept(SPREAD_PAIR))
        both = b.load(b.bitcast(b.gep(pointer, [i0]), pair_t.as_pointer()),
                      align=element.width // 8)
        if widen is not None:
            pair_t = ir.VectorType(widen, 2)
            both = b.zext(both, pair_t)
        spread = ir.Constant(ir.VectorType(ir.IntType(32), 2 * self.n),
                             [0] * self.n + [1] * self.n)
        return b.shuffle_vector(both, ir.Constant(pair_t, ir.Undefined), spread)

    def lane_exponents(self, w, i0):
        """The lane exponents of the pair's weights ``w`` (columns ``i0``, ``i0 + 1``): the
        weight's exponent field less its low two bits (they went into its CMAC
        significand) plus the data's biased exponent."""
        b = self.builder
        return b.add(b.and_(b.lshr(w, self.const(10)), self.kept(0x1C)),
                     self.adjacent(self.d_exp, i0))

    def permute(self, table, index):
        """The words of ``table`` (32 words) at ``index`` (each lane's low five bits; the
        rest ignored): one word permutation (AVX-512BW; callers check :attr:`permutes`)."""
        from llvmlite import ir
        from numba.core import cgutils

        permute = cgutils.get_or_insert_function(
            self.builder.module, ir.FunctionType(self.pair_t, [self.pair_t] * 2),
            "llvm.x86.avx512.permvar.hi.512")
        return self.builder.call(permute, [table, index])

    def significand_shift(self, w):
        """How far each weight's CMAC significand is its mantissa shifted left: its
        exponent field's low two bits, 1 for a subnormal (field 0).  Where the processor
        permutes words, a table of the 32 fields read by ``w >> 10`` (the sign bit above
        the field is past the five index bits a permutation reads): two operations, not
        four."""
        b = self.builder
        field_and_sign = b.lshr(w, self.const(10))
        if self.permutes:
            return self.permute(self.kept(significand_shifts()), field_and_sign)
        return significand_shift(b, b.and_(field_and_sign, self.const(31)))

    def half(self, vector, h):
        """Lanes 0-15 (``h`` 0) or 16-31 of ``vector``."""
        return self.builder.shuffle_vector(vector, vector, self.halves[h])


def _block_tops(code, pairs):
    """The block's biased exponents (16 i16 lanes, one a kernel): the largest lane
    exponent of its columns, a zero weight's left out (the bias itself where every weight
    is zero).  Each pair's weights and lane exponents are kept for the products' loop
    (:meth:`_BlockCode.kept_pair`), a zero weight's lane exponent as 0x8000: the shift it
    gives there (the block's exponent less 0x8000, unsigned) is beyond every test, so that
    loop needs no zero-weight mask."""
    from numba.core import cgutils

    b, const = code.builder, code.const
    top = cgutils.alloca_once_value(b, const(EXP_BIAS))
    with cgutils.for_range(b, pairs) as loop:
        i0, i1, w = code.pair(loop.index)
        lane = b.select(b.icmp_unsigned("!=", b.and_(w, const(0x7FFF)), const(0)),
                        code.lane_exponents(w, i0), code.kept(ZERO_LANE))
        code.keep_pair(loop.index, w, lane)
        t = b.load(top)
        b.store(b.select(b.icmp_signed(">", lane, t), lane, t), top)
    tops = b.load(top)
    low, high = code.half(tops, 0), code.half(tops, 1)
    return b.select(b.icmp_signed(">", low, high), low, high)


def _floor_parts(context, builder, value):
    """``floor(value)`` (int32 lanes) and ``value - floor(value)`` (float32) of 16 float32
    lanes: where AVX-512 DQ is there, one conversion rounding down and one ``vreduceps``
    (one instruction fewer than rounding, subtracting and converting); else by
    ``llvm.floor``.  (``vreduceps`` gives a whole number's fraction as -0.0 where it is
    negative, and a tiny negative value's as 1 - 2**-24 instead of 1.0: neither at shift
    12, the only shift whose fraction is read, where the fraction is exact.)"""
    from llvmlite import ir
    from numba.core import cgutils

    float_t, word_t = value.type, ir.VectorType(ir.IntType(32), value.type.count)
    i16, i32 = ir.IntType(16), ir.IntType(32)
    if _has_features(context, "avx512f", "avx512dq"):  # value: <16 x float>
        down = ir.Constant(i32, 9)  # round toward -inf, exceptions suppressed
        every = ir.Constant(i16, 0xFFFF)
        convert = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(word_t, [float_t, word_t, i16, i32]),
            "llvm.x86.avx512.mask.cvtps2dq.512")
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(float_t, [float_t, i32, float_t, i16, i32]),
            "llvm.x86.avx512.mask.reduce.ps.512")
        whole = builder.call(convert, [value, ir.Constant(word_t, None), every, down])
        fraction = builder.call(reduce, [value, ir.Constant(i32, 1), ir.Constant(float_t, None),
                                         every, ir.Constant(i32, 4)])
        return whole, fraction
    floor = cgutils.get_or_insert_function(builder.module, ir.FunctionType(float_t, [float_t]),
                                           f"llvm.floor.v{value.type.count}f32")
    rounded = builder.call(floor, [value])
    return builder.fptosi(rounded, word_t), builder.fsub(value, rounded)


def _pair_products(code, w, i0, i1, scale):
    """The two columns' ``P >> s`` (two vectors of 16 int32 lanes, every shift) and their
    fractions ``v - floor(v)`` (float32; at shift 12 exactly the low 12 bits over
    ``2**12``), fc_float's route."""
    b = code.builder
    wholes, fractions = [], []
    for h, i in ((0, i0), (1, i1)):
        weights = _weights_as_float(code.context, b, code.half(w, h))
        value = b.fmul(b.fmul(weights, _splat(b, code.scalar(code.d_float, i), code.n)), scale)
        whole, fraction = _floor_parts(code.context, b, value)
        wholes.append(whole)
        fractions.append(fraction)
    return wholes, fractions


def _carries8(code, w, shift, i0, i1):
    """Where the lanes shifted by 8 carry (an i1 mask of 32 lanes): the bit (weight sign,
    low byte of its CMAC significand) of the data value's row of the carry table."""
    from numba.core import types

    b, kept = code.builder, code.kept
    up = code.significand_shift(w)
    bit = b.or_(b.and_(b.shl(w, up), kept(0xFF)), b.and_(b.lshr(w, code.const(7)), kept(0x100)))
    rows = [code.context.cast(b, code.scalar(code.d_row, i), code.sig.args[3][4].dtype,
                              types.int64) for i in (i0, i1)]
    words = _carry8_words(code.context, b, code.table, rows, b.lshr(bit, code.const(4)),
                          second=code.kept(SECOND_ROW))
    carry = b.icmp_unsigned("!=", b.and_(b.lshr(words, b.and_(bit, kept(15))), kept(1)),
                            code.const(0))
    return b.and_(b.icmp_unsigned("==", shift, kept(8)), carry)


def _flags(code, shift, fractions, i0, i1):
    """The lanes of non-zero weights whose carry or product the tree gives (an i1 mask of
    32 lanes): shift 12 with the fraction below the data value's bound, 16 to 28 always.
    (A bound at 16 exists too, but shift 16 is rare, 0.25% of AlexNet fc6's live lanes:
    flagging all of it costs less than a second compare on every lane.)"""
    b, kept = code.builder, code.kept
    far = b.icmp_unsigned("<=", b.sub(shift, kept(16)), kept(12))
    is12 = b.icmp_unsigned("==", shift, kept(12))
    below = [b.fcmp_ordered("<", fractions[h], _splat(b, code.scalar(code.below12, i), code.n))
             for h, i in ((0, i0), (1, i1))]
    under = b.and_(is12, b.shuffle_vector(below[0], below[1], code.joined))
    return b.or_(far, under)


@intrinsic
def _column_block(typingctx, tile, columns, block, ops, exps, sums, flagged, count):
    """Block ``block`` of a group from its transposed ``tile``: the block exponents
    (less the bias) to ``exps[16 * block:]``, the sums of ``(P >> s) - c`` (the carries
    at 8 subtracted, 0 beyond shift 16; the flagged lanes' changes still to come) to
    ``sums[16 * block:]``, the flagged lanes' packed words' halves and their places
    (``16 * block + kernel``) to ``flagged``'s first three arrays (lows, highs, targets)
    from ``count`` on; its last three are scratch (:func:`column_work`): each pair's
    flags (a bit a lane), and the pairs' weights and lane exponents
    (:func:`_block_tops` keeps them for the products' loop and the flagged pairs).
    ``columns`` (first, stop) are the block's columns in ``ops`` (:func:`column_operands`,
    an even count).  Returns the new count."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        code = _BlockCode(context, builder, sig, args)
        b, n, const, kept = builder, code.n, code.const, code.kept
        i1, i16, i32, i64 = (ir.IntType(k) for k in (1, 16, 32, 64))
        word_t, long_t = ir.VectorType(i32, n), ir.VectorType(i64, n)
        float_t = ir.VectorType(ir.FloatType(), n)
        pairs = b.lshr(b.sub(code.stop, code.first), ir.Constant(i64, 1))
        top = _block_tops(code, pairs)
        top2 = b.shuffle_vector(top, top, code.joined)
        at16 = b.mul(code.block, ir.Constant(i64, KERNELS))
        b.store(b.sub(b.zext(top, word_t), _filled(word_t, EXP_BIAS)),
                b.bitcast(b.gep(code.exps, [at16]), word_t.as_pointer()), align=4)
        scale = b.bitcast(b.shl(b.sub(_filled(word_t, _SCALE_FIELD), b.zext(top, word_t)),
                                _filled(word_t, 23)), float_t)
        compress = cgutils.get_or_insert_function(
            b.module, ir.FunctionType(code.pair_t, [code.pair_t, ir.VectorType(i1, 2 * n),
                                                    code.pair_t]),
            f"llvm.experimental.vector.compress.v{2 * n}i16")
        zero_w = ir.Constant(word_t, [0] * n)
        total = cgutils.alloca_once_value(b, ir.Constant(long_t, [0] * n))
        carries = cgutils.alloca_once_value(b, const(0))
        count = cgutils.alloca_once_value(b, code.count0)
        acc = cgutils.alloca_once_value(b, zero_w)
        steps = ir.Constant(i64, STEPS_A_SUM)
        chunks = b.udiv(b.add(pairs, ir.Constant(i64, STEPS_A_SUM - 1)), steps)
        with cgutils.for_range(b, chunks) as outer:
            j0 = b.mul(outer.index, steps)
            j1 = b.add(j0, steps)
            j1 = b.select(b.icmp_signed(">", j1, pairs), pairs, j1)
            b.store(zero_w, acc)
            with cgutils.for_range(b, b.sub(j1, j0)) as loop:
                j = b.add(j0, loop.index)
                i0, i1_, w, lane = code.kept_pair(j)
                wholes, fractions = _pair_products(code, w, i0, i1_, scale)
                shift = b.sub(top2, lane)
                near = b.icmp_unsigned("<=", shift, kept(NEAR_SHIFT))
                a = b.load(acc)
                for h in (0, 1):
                    a = b.add(a, b.select(code.half(near, h), wholes[h], zero_w))
                b.store(a, acc)
                carry8 = _carries8(code, w, shift, i0, i1_)
                b.store(b.add(b.load(carries), b.select(carry8, kept(1), const(0))), carries)
                # a pair's flags are stored, not acted on here: the branch it would take
                # (about one pair in six on AlexNet's fc6) is unpredictable, and each miss
                # threw away the loop's work in flight (fc6 on one thread took 9.3 ms with
                # that branch, 6.6 ms with the flags computed but not acted on)
                b.store(b.bitcast(_flags(code, shift, fractions, i0, i1_), i32),
                        b.gep(code.pair_flags, [j]))
            b.store(b.add(b.load(total), b.sext(b.load(acc), long_t)), total)
        # the pairs with a flagged lane, a bit each, taken lowest first
        flags_t = ir.VectorType(i32, 2 * n)
        stored = b.load(b.bitcast(code.pair_flags, flags_t.as_pointer()), align=4)
        flagged_pairs = b.bitcast(b.icmp_unsigned("!=", stored, ir.Constant(flags_t, None)), i32)
        these = b.sub(b.shl(ir.Constant(i64, 1), pairs), ir.Constant(i64, 1))  # pairs < 64
        left = cgutils.alloca_once_value(b, b.and_(flagged_pairs, b.trunc(these, i32)))
        with cgutils.for_range(b, b.zext(b.ctpop(b.load(left)), i64)):
            m = b.load(left)
            j = b.zext(b.cttz(m, ir.Constant(ir.IntType(1), 1)), i64)
            b.store(b.and_(m, b.sub(m, ir.Constant(i32, 1))), left)
            i0, i1_, w, lane = code.kept_pair(j)
            _store_flagged(b, compress, w, b.sub(top2, lane),
                           code.adjacent(code.d_sign, i0, widen=i16),
                           code.adjacent(code.d_sig, i0), b.trunc(at16, i16),
                           b.load(b.gep(code.pair_flags, [j])), count,
                           (code.lows, code.highs, code.targets))
        c = b.load(carries)
        per_kernel = b.add(code.half(c, 0), code.half(c, 1))
        b.store(b.sub(b.load(total), b.zext(per_kernel, long_t)),
                b.bitcast(b.gep(code.sums, [at16]), long_t.as_pointer()), align=8)
        return b.load(count)

    return types.int64(tile, columns, block, ops, exps, sums, flagged, count), codegen


def _store_flagged(builder, compress, w, shift, d_sign, d_sig, at16, flag_bits, count,
                   pointers):
    """The packed words' halves (:func:`sim.num.mac_fc._unpack`: the low half the
    weight's significand and the shift's low two bits of ``shift / 4``, the high half the
    rest, the data's significand and the sign) and places of the lanes ``flag_bits`` (an
    i32, a bit a lane) flags, compressed in registers and stored at ``count`` (which grows
    by the flagged lanes)."""
    from llvmlite import ir

    pair_t = w.type
    n = pair_t.count
    flag = builder.bitcast(flag_bits, ir.VectorType(ir.IntType(1), n))

    def P(v):
        return _filled(pair_t, v)

    code = builder.lshr(shift, P(2))
    significand = _weight_significands(builder, w)[1]
    negative = builder.xor(builder.lshr(w, P(15)), d_sign)
    low = builder.or_(significand, builder.shl(builder.and_(code, P(3)), P(14)))
    high = builder.or_(builder.or_(builder.lshr(code, P(2)), builder.shl(d_sig, P(1))),
                       builder.shl(negative, P(15)))
    targets = builder.add(_splat(builder, at16, n), ir.Constant(pair_t, list(range(n // 2)) * 2))
    c = builder.load(count)
    for pointer, values in zip(pointers, (low, high, targets), strict=True):
        packed = builder.call(compress, [values, flag, P(0)])
        builder.store(packed, builder.bitcast(builder.gep(pointer, [c]), pair_t.as_pointer()),
                      align=2)
    found = builder.zext(builder.ctpop(flag_bits), ir.IntType(64))
    builder.store(builder.add(c, found), count)


@njit  # not distinct_arrays: see the comment on the check below
def columns_group(elements, first, stride, n_blocks, ops, work, exps, sums, chain, chained):
    """A weight group's 16 kernels' blocks (block ``b``'s tile at ``first + b * stride``
    in the stream ``elements``): the block exponents (less the bias) and sums by block,
    ``exps``/``sums`` (n_blocks, 16) int32/int64 (CACC's order).  ``ops``:
    :func:`column_operands`; ``work``: :func:`column_work`.  Returns the largest weight
    magnitude (bits & 0x7FFF): at ``0x7C00`` or more the group has an Inf or NaN weight
    and its results are not the CMAC's.

    Where ``chained`` (the number of blocks, else 0), CACC accumulates an earlier group's
    blocks meanwhile (:func:`cacc_block` of ``chain``, a block each block of this group):
    its chain of dependent steps then runs in the shadow of this group's independent
    work, not after it (AlexNet's FC layers on one thread: 9% of their time)."""
    prefer_wide_vectors()
    starts = ops[0]
    # The block code makes its kept constants from this 0 (_BlockCode): LLVM must not
    # know its value there.  With every array argument noalias, this check told it (the
    # tile's stores could no longer change it), and the loop read its constants from
    # memory again (9 loads in the products loop): without noalias, AlexNet's FC layers'
    # kernel in-network took 17.9 -> 14.3 ms on one thread, 9.5 -> 7.8 ms on two.
    if starts[0] != 0:
        raise ValueError("columns_group: column operands not from column_operands")
    tile_room, lows, highs, targets, needs, need_at, pair_flags, pair_w, pair_lane = work
    # the tile on a line: its 64-byte stores and loads touch one line each
    tile = tile_room[(-(tile_room.ctypes.data >> 1)) & (LINE // 2 - 1):]
    flat_exps, flat_sums = exps.reshape(-1), sums.reshape(-1)
    largest = np.uint16(0)
    n = 0
    for b in range(n_blocks):
        at = first + b * stride
        largest = max(largest, _tile_half(elements, at, tile, 0), _tile_half(elements, at, tile, 1))
        # the tile AHEAD asked for in two halves, around the block's work: asked all at
        # once before the transposition's loads, one change that made the block code
        # faster made AlexNet's fc6 40% slower (weights from memory)
        for line in range(0, TILE // 2, PREFETCH_LINE):
            prefetch(elements, at + AHEAD + line)
        n = _column_block(tile, (starts[b], starts[b + 1]), b, ops, flat_exps, flat_sums,
                          (lows, highs, targets, pair_flags, pair_w, pair_lane), n)
        for line in range(TILE // 2, TILE, PREFETCH_LINE):
            prefetch(elements, at + AHEAD + line)
        if b < chained:
            cacc_block(chain, b)
    for b in range(n_blocks, chained):
        cacc_block(chain, b)
    for t in range(halves_needs(n, lows, highs, needs, need_at)):
        at = need_at[t]
        send_change(needs[at], flagged_word(lows, highs, at), flat_sums, targets[at])
    return largest


@njit(inline="always")
def cacc_block(chain, b):
    """CACC of block ``b`` of 16 kernels' blocks (``chain``: their exponents and sums
    (blocks, 16), as :func:`columns_group` leaves them, and the 16 accumulators'
    exponents and mantissas, all finite) onto their accumulators."""
    _cacc_block(*chain, b)


@njit(distinct_arrays=True)  # a call of its own: the kernels' steps vectorise (no aliases)
def _cacc_block(exps, sums, acc_e, acc_m, b):
    for j in range(KERNELS):
        acc_e[j], acc_m[j] = cacc_accumulate_finite(acc_e[j], acc_m[j], exps[b, j],
                                                    sign_extend(sums[b, j], MAC_BITS))


def column_operands(data, lanes, n_blocks):
    """What :func:`columns_group` needs of a layer's one pixel of ``data``
    (:func:`sim.num.mac_fc.fc_data` arrays over the live lanes ``lanes``:
    :func:`sim.num.fc_live.live_layout`'s, each live lane's place among all, -1 a padding
    lane): (each block's first column and the end; per column (a block's padded to an
    even count with a dead column: exponent 0, value 0, never above a block's exponent,
    never flagged): its place in the transposed tile, biased exponent, value (float32),
    first word of its carry row (row sign * 256 + low byte of the significand, a row
    ``ROW_WORDS`` words), significand, sign, and the bound at 12 over 2**12 (float32: the
    fractions at shift 12 below it may carry; 0 for a zero); the carry rows
    (:func:`sim.num.fc_carry_tables.carry8_rows`))."""
    rows = tuple(np.ascontiguousarray(a).reshape(1, -1) for a in data)  # one pixel
    return with_carry_rows(placed_columns(rows, np.ascontiguousarray(lanes), n_blocks,
                                          carry_bounds(), True))


def with_carry_rows(placed: tuple) -> tuple:
    """:func:`column_operands` of :func:`placed_columns`' columns: with the carry rows."""
    return placed + (carry8_rows(),)


@njit
def placed_columns(data, lanes, n_blocks, bounds, take):
    """:func:`column_operands` but the carry rows, from compiled code (a layer's data
    function: a call fewer, and no arrays boxed, a layer): of ``data``'s first pixel over
    ``lanes`` where ``take``, else with no column (an empty first array: the layer's
    groups go the other way).  ``bounds``: :func:`sim.num.fc_carry_tables.carry_bounds`."""
    count = lanes.size if take else 0
    placed = _placed_columns(data[0][0], data[1][0], data[2][0], data[3][0], lanes[:count],
                             n_blocks if take else 0, bounds)
    starts = placed[0] if take else np.zeros(0, np.int64)
    return (starts,) + placed[1:]


@njit
def _placed_columns(d_exp, d_sign, d_sig, d_float, lanes, n_blocks, bounds):
    """:func:`column_operands` but the carry rows (in numpy: 0.2-0.4 ms a layer, a tenth of
    AlexNet's fc8)."""
    starts = np.zeros(n_blocks + 1, np.int64)
    for i in range(lanes.size):
        if lanes[i] >= 0:
            starts[lanes[i] // BLOCK + 1] += 1
    for b in range(n_blocks):
        # the block loop's scratch has room for a block's 32 pairs, no more (unchecked there)
        if starts[b + 1] > BLOCK:
            raise ValueError("column_operands: a block of more than 64 columns (a lane twice?)")
        starts[b + 1] = starts[b] + starts[b + 1] + (starts[b + 1] & 1)
    columns = starts[-1]
    offsets, rows = np.zeros(columns, np.int64), np.zeros(columns, np.int64)
    exps, sigs = np.zeros(columns, np.uint16), np.zeros(columns, np.uint16)
    values, signs = np.zeros(columns, np.float32), np.zeros(columns, np.uint8)
    below12 = np.zeros(columns, np.float32)
    at = starts[:-1].copy()
    for i in range(lanes.size):
        if lanes[i] < 0:
            continue
        b, lane = lanes[i] // BLOCK, lanes[i] % BLOCK
        c = at[b]
        at[b] += 1
        offsets[c] = _column_offset(lane)
        exps[c], sigs[c], values[c], signs[c] = d_exp[i], d_sig[i], d_float[i], d_sign[i]
        rows[c] = (np.int64(d_sign[i]) * 256 + (np.int64(d_sig[i]) & 0xFF)) * ROW_WORDS
        if d_float[i] != 0:
            below12[c] = bounds[d_sig[i]] / 4096.0
    return starts, offsets, exps, values, rows, sigs, signs, below12


@functools.cache
def no_column_operands():
    """:func:`column_operands`' types with no column: for callers that take none (the
    same empty arrays every call)."""
    empty = column_operands((np.zeros(0, np.uint16), np.zeros(0, np.uint8),
                             np.zeros(0, np.uint16), np.zeros(0, np.float32)),
                            np.zeros(0, np.int64), 0)
    return (np.zeros(0, np.int64),) + empty[1:]


@njit
def column_work(columns):
    """Scratch of :func:`columns_group` for ``columns`` columns a group: the transposed
    tile (and a line to spare for its start on one); the flagged lanes' halves, places,
    needs and the places of those with one (room for every column's 16 kernels and two
    vectors more: the compressing stores and :func:`sim.num.mac_fc.halves_needs` write
    whole vectors); :func:`_column_block`'s flags of a block's pairs, and its pairs'
    weights and lane exponents, a line each and one to spare.  The flagged lanes' arrays
    are not zeroed (every word read is written first: by the compressing stores, zeros
    past their lanes, and by halves_needs): 1 MB for AlexNet's fc6, made by each thread
    each layer, of which a group flags a few KB, took 0.3 ms to zero."""
    room = columns * KERNELS + 2 * HALF
    tile = np.zeros(TILE + HALF, np.uint16)
    pairs = BLOCK // 2
    return (tile, np.empty(room, np.uint16), np.empty(room, np.uint16), np.empty(room, np.uint16),
            np.empty(room, np.uint8), np.empty(room, np.int32), np.zeros(pairs, np.uint32),
            np.zeros((pairs + 1) * HALF, np.uint16), np.zeros((pairs + 1) * HALF, np.uint16))
