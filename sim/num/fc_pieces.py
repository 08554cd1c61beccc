"""Whole vectors of 16-bit words for numba kernels: the maximum of 32 words, 32 words set,
the maximum of a run of 16-word vectors, the exact sum and the or of 16 32-bit words; and
a hint to fetch a cache line ahead of its use.

A fully connected layer's block (one kernel position) is a run of 64 lanes; LLVM's loop
over a run of unknown length takes four vectors side by side, and a run shorter than
that (128 words) fell through to its loop of 128-bit pieces.  These take one 512-bit
vector (``PIECE`` words) at a time, as generic LLVM vector operations (lowered to a few
instructions of any processor's vectors).
"""

from __future__ import annotations

from sim.jit import intrinsic

#: Words a call reads or writes: a 512-bit vector of 16-bit words.
PIECE = 32


def _element_address(context, builder, sig, args):
    """The address of ``array[start]`` (arguments 0 and 1)."""
    from numba.core import types

    array = context.make_array(sig.args[0])(context, builder, args[0])
    start = context.cast(builder, args[1], sig.args[1], types.int64)
    return builder.gep(array.data, [start])


def _piece_pointer(context, builder, sig, args, ir, words=PIECE):
    """The address of ``array[start]`` (arguments 0 and 1) as a pointer to a piece of
    ``words`` words."""
    piece_t = ir.VectorType(ir.IntType(16), words)
    return builder.bitcast(_element_address(context, builder, sig, args),
                           piece_t.as_pointer()), piece_t


@intrinsic
def piece_max(typingctx, array, start):
    """The largest of the ``PIECE`` words ``array[start:start + PIECE]`` (uint16)."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        ptr, piece_t = _piece_pointer(context, builder, sig, args, ir)
        words = builder.load(ptr, align=2)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(16), [piece_t]),
            f"llvm.vector.reduce.umax.v{PIECE}i16")
        return builder.call(reduce, [words])

    if not (isinstance(array, types.Array) and array.dtype == types.uint16):
        return None
    return types.uint16(array, start), codegen


#: Words a vector of :func:`vectors_max`, :func:`half_piece_wide_sum` and
#: :func:`half_piece_or`: the fully connected
#: layers' live lanes come in runs of whole 16-lane vectors (:mod:`sim.num.fc_live`).
HALF_PIECE = PIECE // 2


@intrinsic
def vectors_max(typingctx, array, first, last, floor):
    """The largest of ``floor`` and the uint16 words ``array[first * HALF_PIECE:last *
    HALF_PIECE]`` (whole vectors of ``HALF_PIECE`` words): a vector maximum a vector, one
    reduction at the end (in numba, the loop over a vector's words ran word by word, and
    a reduction a vector took twice as long)."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        i16, lanes = ir.IntType(16), HALF_PIECE
        vector_t = ir.VectorType(i16, lanes)
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        start = context.cast(builder, args[1], sig.args[1], types.int64)
        stop = context.cast(builder, args[2], sig.args[2], types.int64)
        low = context.cast(builder, args[3], sig.args[3], types.uint16)
        umax = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector_t, [vector_t, vector_t]),
            f"llvm.umax.v{lanes}i16")
        top = cgutils.alloca_once_value(builder, builder.shuffle_vector(
            builder.insert_element(ir.Constant(vector_t, ir.Undefined), low,
                                   ir.Constant(ir.IntType(32), 0)),
            ir.Constant(vector_t, ir.Undefined),
            ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)))
        with cgutils.for_range_slice(builder, start, stop, ir.Constant(ir.IntType(64), 1)) \
                as (v, _):
            at = builder.mul(v, ir.Constant(ir.IntType(64), lanes))
            words = builder.load(builder.bitcast(builder.gep(data, [at]),
                                                 vector_t.as_pointer()), align=2)
            builder.store(builder.call(umax, [builder.load(top), words]), top)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i16, [vector_t]),
            f"llvm.vector.reduce.umax.v{lanes}i16")
        return builder.call(reduce, [builder.load(top)])

    if not (isinstance(array, types.Array) and array.dtype == types.uint16):
        return None
    return types.uint16(array, first, last, floor), codegen


def _half_piece_reduction(reduction: str, widen: bool):
    """A codegen reducing the ``HALF_PIECE`` 32-bit words ``array[start:start +
    HALF_PIECE]`` with LLVM's ``llvm.vector.reduce.<reduction>``, in one vector operation;
    ``widen``: the words sign-extended to 64 bits first (an exact sum)."""
    from llvmlite import ir
    from numba.core import cgutils

    def codegen(context, builder, sig, args):
        words_t = ir.VectorType(ir.IntType(32), HALF_PIECE)
        bits = 64 if widen else 32
        vector_t = ir.VectorType(ir.IntType(bits), HALF_PIECE)
        ptr = builder.bitcast(_element_address(context, builder, sig, args),
                              words_t.as_pointer())
        words = builder.load(ptr, align=4)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(bits), [vector_t]),
            f"llvm.vector.reduce.{reduction}.v{HALF_PIECE}i{bits}")
        return builder.call(reduce, [builder.sext(words, vector_t) if widen else words])

    return codegen


@intrinsic
def half_piece_wide_sum(typingctx, array, start):
    """The exact sum (int64) of the ``HALF_PIECE`` int32 words ``array[start:start +
    HALF_PIECE]``: widened and added in one vector reduction."""
    from numba.core import types

    if not (isinstance(array, types.Array) and array.dtype == types.int32):
        return None
    return types.int64(array, start), _half_piece_reduction("add", widen=True)


@intrinsic
def half_piece_or(typingctx, array, start):
    """The or of the ``HALF_PIECE`` uint32 words ``array[start:start + HALF_PIECE]``, in one
    vector reduction."""
    from numba.core import types

    if not (isinstance(array, types.Array) and array.dtype == types.uint32):
        return None
    return types.uint32(array, start), _half_piece_reduction("or", widen=False)


@intrinsic
def piece_fill(typingctx, array, start, value):
    """``array[start:start + PIECE] = value`` (uint16 words) in one store."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        ptr, piece_t = _piece_pointer(context, builder, sig, args, ir)
        word = context.cast(builder, args[2], sig.args[2], types.uint16)
        first = builder.insert_element(ir.Constant(piece_t, ir.Undefined), word,
                                       ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(first, ir.Constant(piece_t, ir.Undefined),
                                       ir.Constant(ir.VectorType(ir.IntType(32), PIECE),
                                                   [0] * PIECE))
        builder.store(splat, ptr, align=2)
        return context.get_dummy_value()

    if not (isinstance(array, types.Array) and array.dtype == types.uint16):
        return None
    return types.none(array, start, value), codegen


@intrinsic
def prefetch(typingctx, array, start):
    """A hint (LLVM's ``llvm.prefetch``: read, kept in every cache level) that the cache
    line of ``array[start]`` will be read soon; it never faults, nor changes a result."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        byte_p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_p, i32, i32, i32]),
            "llvm.prefetch.p0")
        address = builder.bitcast(_element_address(context, builder, sig, args), byte_p)
        builder.call(hint, [address, ir.Constant(i32, 0), ir.Constant(i32, 3),
                            ir.Constant(i32, 1)])
        return context.get_dummy_value()

    if not isinstance(array, types.Array):
        return None
    return types.none(array, start), codegen
