"""Vector compression for numba kernels: the indices of the flagged lanes, in order.

A loop that gathers a few flagged lanes out of thousands mispredicts a branch on nearly
every flag it finds; the processors' compression (``vpcompressd``, through LLVM's
``llvm.experimental.vector.compress``) packs the indices of 16 lanes' flagged ones in a
register at once, with no branch, and one store writes the whole vector (the lanes past
the flagged ones 0: the next call's store overwrites them).  LLVM lowers both
to scalar code where the processor lacks them.
:func:`compress_flagged` takes byte flags; :func:`compress_nonzero` words that are their
own flags, copied with their indices.
"""

from __future__ import annotations

from sim.jit import intrinsic, njit
from sim.num.specials import FP16_INF

#: Lanes :func:`compress_flagged` looks at a call.
COMPRESS_LANES = 16


def _lane_indices(builder, start_v):
    """The i32 vector ``start, start + 1, ..., start + COMPRESS_LANES - 1``."""
    from llvmlite import ir

    i32, lanes = ir.IntType(32), COMPRESS_LANES
    words_t = ir.VectorType(i32, lanes)
    first = builder.insert_element(ir.Constant(words_t, ir.Undefined),
                                   builder.trunc(start_v, i32), ir.Constant(i32, 0))
    splat = builder.shuffle_vector(first, ir.Constant(words_t, ir.Undefined),
                                   ir.Constant(words_t, [0] * lanes))
    return builder.add(splat, ir.Constant(words_t, list(range(lanes))))


def _compress_store(builder, values, pointer, mask) -> None:
    """The i32 vector ``values``' lanes in ``mask`` stored in order at ``pointer``, then 0s
    up to ``COMPRESS_LANES`` words: packed in a register
    (``llvm.experimental.vector.compress``), then stored whole.  LLVM's compressing store
    to memory (``vpcompressd`` with a memory operand) took 2 to 25 times as long on the
    AMD EPYC (Zen 5) this was measured on, the longer the more lanes it stored, and a
    store masked to the packed lanes a third longer than a whole one (the FC layers'
    pass over 2048 lanes' words: 0.112 -> 0.084 ns a lane)."""
    from llvmlite import ir
    from numba.core import cgutils

    i32, lanes = ir.IntType(32), COMPRESS_LANES
    words_t, mask_t = ir.VectorType(i32, lanes), ir.VectorType(ir.IntType(1), lanes)
    compress = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(words_t, [words_t, mask_t, words_t]),
        f"llvm.experimental.vector.compress.v{lanes}i32")
    packed = builder.call(compress, [values, mask, ir.Constant(words_t, [0] * lanes)])
    builder.store(packed, builder.bitcast(pointer, words_t.as_pointer()), align=4)


def _count_after(builder, count_v, mask):
    """``count`` plus the lanes set in ``mask`` (int64)."""
    from llvmlite import ir

    found = builder.ctpop(builder.bitcast(mask, ir.IntType(COMPRESS_LANES)))
    return builder.add(count_v, builder.zext(found, ir.IntType(64)))


@intrinsic
def compress_flagged(typingctx, flags, start, out, count):
    """Of the ``COMPRESS_LANES`` lanes ``start`` on, the indices (int32) of those whose flag
    (``flags``, uint8, readable up to ``start + COMPRESS_LANES``) is not 0, stored in
    order at ``out[count:]``, 0s after them up to ``out[count + COMPRESS_LANES]`` (room
    needed); returns the new count (int64)."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        flags_ary = context.make_array(sig.args[0])(context, builder, args[0])
        out_ary = context.make_array(sig.args[2])(context, builder, args[2])
        start_v = context.cast(builder, args[1], sig.args[1], types.int64)
        count_v = context.cast(builder, args[3], sig.args[3], types.int64)
        bytes_t = ir.VectorType(ir.IntType(8), COMPRESS_LANES)
        flag_ptr = builder.bitcast(builder.gep(flags_ary.data, [start_v]), bytes_t.as_pointer())
        mask = builder.icmp_unsigned("!=", builder.load(flag_ptr, align=1),
                                     ir.Constant(bytes_t, [0] * COMPRESS_LANES))
        _compress_store(builder, _lane_indices(builder, start_v),
                        builder.gep(out_ary.data, [count_v]), mask)
        return _count_after(builder, count_v, mask)

    if not (isinstance(flags, types.Array) and flags.dtype == types.uint8
            and isinstance(out, types.Array) and out.dtype == types.int32):
        return None
    return types.int64(flags, start, out, count), codegen


@intrinsic
def compress_nonzero(typingctx, words, start, out_words, out_indices, count):
    """Of the ``COMPRESS_LANES`` words ``start`` on (``words``, uint32, readable up to
    ``start + COMPRESS_LANES``), those that are not 0 stored in order at
    ``out_words[count:]`` and their indices (int32) at ``out_indices[count:]``, 0s after
    them up to ``COMPRESS_LANES`` words in both (room needed); returns the new count
    (int64).  A word that is its own flag saves a flags array, and its copy a gather of
    it by index."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        words_ary = context.make_array(sig.args[0])(context, builder, args[0])
        out_w = context.make_array(sig.args[2])(context, builder, args[2])
        out_i = context.make_array(sig.args[3])(context, builder, args[3])
        start_v = context.cast(builder, args[1], sig.args[1], types.int64)
        count_v = context.cast(builder, args[4], sig.args[4], types.int64)
        i32 = ir.IntType(32)
        words_t = ir.VectorType(i32, COMPRESS_LANES)
        word_ptr = builder.bitcast(builder.gep(words_ary.data, [start_v]), words_t.as_pointer())
        values = builder.load(word_ptr, align=4)
        mask = builder.icmp_unsigned("!=", values, ir.Constant(words_t, [0] * COMPRESS_LANES))
        _compress_store(builder, values, builder.bitcast(
            builder.gep(out_w.data, [count_v]), i32.as_pointer()), mask)
        _compress_store(builder, _lane_indices(builder, start_v),
                        builder.gep(out_i.data, [count_v]), mask)
        return _count_after(builder, count_v, mask)

    if not (isinstance(words, types.Array) and words.dtype == types.uint32
            and isinstance(out_words, types.Array) and out_words.dtype == types.uint32
            and isinstance(out_indices, types.Array) and out_indices.dtype == types.int32):
        return None
    return types.int64(words, start, out_words, out_indices, count), codegen


#: Words :func:`compress_words` reads a call: a 512-bit vector of 16-bit words.
WORD_LANES = 32


@intrinsic
def compress_words(typingctx, words, start, mask, out, at):
    """The ``WORD_LANES`` uint16 words ``words[start:start + WORD_LANES]``' lanes set in
    ``mask`` (a uint32, bit ``j`` lane ``j``) stored in order at ``out[at:]``, 0s after
    them up to ``out[at + WORD_LANES]`` (room needed): the live lanes of a run of weights
    in one register compression and one whole store (the 0s are the padding the next
    store overwrites).  Returns the NaNs and Infs among all ``WORD_LANES`` words, fp16
    patterns (the lanes left out too): ``nans + (infs << 32)`` (int64)."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        words_ary = context.make_array(sig.args[0])(context, builder, args[0])
        out_ary = context.make_array(sig.args[3])(context, builder, args[3])
        start_v = context.cast(builder, args[1], sig.args[1], types.int64)
        at_v = context.cast(builder, args[4], sig.args[4], types.int64)
        i16, i32, lanes = ir.IntType(16), ir.IntType(32), WORD_LANES
        words_t, mask_t = ir.VectorType(i16, lanes), ir.VectorType(ir.IntType(1), lanes)
        values = builder.load(builder.bitcast(builder.gep(words_ary.data, [start_v]),
                                              words_t.as_pointer()), align=2)
        keep = builder.bitcast(builder.trunc(context.cast(builder, args[2], sig.args[2],
                                                          types.uint32), i32), mask_t)
        compress = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(words_t, [words_t, mask_t, words_t]),
            f"llvm.experimental.vector.compress.v{lanes}i16")
        packed = builder.call(compress, [values, keep, ir.Constant(words_t, [0] * lanes)])
        builder.store(packed, builder.bitcast(builder.gep(out_ary.data, [at_v]),
                                              words_t.as_pointer()), align=2)
        magnitude = builder.and_(values, ir.Constant(words_t, [0x7FFF] * lanes))
        inf = ir.Constant(words_t, [FP16_INF] * lanes)
        i64 = ir.IntType(64)

        def count(flags):
            return builder.zext(builder.ctpop(builder.bitcast(flags, i32)), i64)

        nans = count(builder.icmp_unsigned(">", magnitude, inf))
        infs = count(builder.icmp_unsigned("==", magnitude, inf))
        return builder.add(nans, builder.shl(infs, ir.Constant(i64, 32)))

    if not (isinstance(words, types.Array) and words.dtype == types.uint16
            and isinstance(out, types.Array) and out.dtype == types.uint16):
        return None
    return types.int64(words, start, mask, out, at), codegen


@njit(inline="always")
def nans_and_infs(counts):
    """(NaNs, Infs) of :func:`compress_words`' packed counts (summed over calls: each part
    stays below 2**32)."""
    return counts & 0xFFFFFFFF, counts >> 32
