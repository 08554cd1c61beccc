"""Machine-word arithmetic for numba kernels: 32-bit words (wrap-around, as in C), bit counts.

numba widens every integer operation to 64 bits (``uint32 ^ uint32`` is a
``uint64``), so a loop over 32-bit words vectorises at half the width the
processor offers.  These intrinsics keep each operation at 32 bits: operands
of any integer type are truncated to 32 bits, the result is a ``uint32``.
The fp16 MAC's Booth multiplier (:mod:`sim.num.mac`) runs on them, about
twice as fast as in 64-bit arithmetic.

Shift counts must stay below 32: LLVM leaves larger counts undefined.
"""

from __future__ import annotations

from sim.jit import intrinsic


def _word_op(name: str, doc: str):
    """An intrinsic ``f(a, b) -> uint32`` applying the LLVM instruction ``name`` to 32-bit words."""

    def typer(typingctx, a, b):
        from numba.core import types

        word = types.uint32

        def codegen(context, builder, sig, args):
            x = context.cast(builder, args[0], sig.args[0], word)
            y = context.cast(builder, args[1], sig.args[1], word)
            return getattr(builder, name)(x, y)

        return word(a, b), codegen

    typer.__name__ = typer.__qualname__ = f"{name.rstrip('_')}32"
    typer.__doc__ = doc
    return intrinsic(typer)


xor32 = _word_op("xor", "a ^ b")
and32 = _word_op("and_", "a & b")
or32 = _word_op("or_", "a | b")
add32 = _word_op("add", "a + b modulo 2**32")
sub32 = _word_op("sub", "a - b modulo 2**32")
shl32 = _word_op("shl", "a << b (b < 32)")
shr32 = _word_op("lshr", "a >> b, logical (b < 32)")
sar32 = _word_op("ashr", "a >> b, arithmetic: a read as int32 (b < 32)")


@intrinsic
def word32(typingctx, a):
    """The low 32 bits of an integer (or 0/1 of a bool) as a uint32."""
    from numba.core import types

    def codegen(context, builder, sig, args):
        return context.cast(builder, args[0], sig.args[0], types.uint32)

    return types.uint32(a), codegen


@intrinsic
def leading_zeros64(typingctx, a):
    """The number of leading zero bits of a 64-bit integer (64 for 0), as an int64."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        x = context.cast(builder, args[0], sig.args[0], types.uint64)
        return builder.ctlz(x, ir.Constant(ir.IntType(1), 0))

    return types.int64(a), codegen
