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


def word_op(name: str, bits: int, doc: str):
    """An intrinsic ``f(a, b) -> uint<bits>`` applying the LLVM instruction ``name`` to words
    of ``bits`` bits (operands of any integer type truncated to them): 32 here, 8 and 16 in
    :mod:`sim.num.narrow`."""

    def typer(typingctx, a, b):
        from numba.core import types

        word = {8: types.uint8, 16: types.uint16, 32: types.uint32}[bits]

        def codegen(context, builder, sig, args):
            x = context.cast(builder, args[0], sig.args[0], word)
            y = context.cast(builder, args[1], sig.args[1], word)
            return getattr(builder, name)(x, y)

        return word(a, b), codegen

    typer.__name__ = typer.__qualname__ = f"{name.rstrip('_')}{bits}"
    typer.__doc__ = doc
    return intrinsic(typer)


xor32 = word_op("xor", 32, "a ^ b")
and32 = word_op("and_", 32, "a & b")
or32 = word_op("or_", 32, "a | b")
add32 = word_op("add", 32, "a + b modulo 2**32")
sub32 = word_op("sub", 32, "a - b modulo 2**32")
shl32 = word_op("shl", 32, "a << b (b < 32)")
shr32 = word_op("lshr", 32, "a >> b, logical (b < 32)")
sar32 = word_op("ashr", 32, "a >> b, arithmetic: a read as int32 (b < 32)")
mul32 = word_op("mul", 32, "a * b modulo 2**32 (numba would multiply in 64 bits)")


def word_cast(bits: int, doc: str):
    """An intrinsic ``f(a) -> uint<bits>``: the low ``bits`` bits of an integer (0/1 of a
    bool): 32 here, 8 and 16 in :mod:`sim.num.narrow`."""

    def typer(typingctx, a):
        from numba.core import types

        word = {8: types.uint8, 16: types.uint16, 32: types.uint32}[bits]

        def codegen(context, builder, sig, args):
            return context.cast(builder, args[0], sig.args[0], word)

        return word(a), codegen

    typer.__name__ = typer.__qualname__ = f"word{bits}"
    typer.__doc__ = doc
    return intrinsic(typer)


word32 = word_cast(32, "The low 32 bits of an integer (or 0/1 of a bool) as a uint32.")


@intrinsic
def leading_zeros64(typingctx, a):
    """The number of leading zero bits of a 64-bit integer (64 for 0), as an int64."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        x = context.cast(builder, args[0], sig.args[0], types.uint64)
        return builder.ctlz(x, ir.Constant(ir.IntType(1), 0))

    return types.int64(a), codegen
