"""8- and 16-bit machine words for numba kernels (wrap-around, as in C).

As :mod:`sim.num.word32`: numba widens every integer operation to 64 bits, so these
intrinsics keep each operation at 8 or 16 bits (operands of any integer type truncated,
the result a ``uint8`` or ``uint16``) and a loop over them vectorises at 64 or 32 words a
512-bit vector.  The Booth trees of the sum word's low bits run on them
(:func:`sim.num.booth.booth_sum_low16`, the fully connected layers' flagged lanes;
:func:`sim.num.booth.booth_sum_low8`, the low byte's plain form, which the tests hold to
the 16-bit tree).

Shift counts must stay below the word's width.
"""

from __future__ import annotations

from sim.num.word32 import word_cast, word_op

xor8 = word_op("xor", 8, "a ^ b")
and8 = word_op("and_", 8, "a & b")
or8 = word_op("or_", 8, "a | b")
sub8 = word_op("sub", 8, "a - b modulo 2**8")
shl8 = word_op("shl", 8, "a << b modulo 2**8 (b < 8)")
shr8 = word_op("lshr", 8, "a >> b, logical (b < 8)")
word8 = word_cast(8, "The low 8 bits of an integer (or 0/1 of a bool) as a uint8.")

xor16 = word_op("xor", 16, "a ^ b")
and16 = word_op("and_", 16, "a & b")
or16 = word_op("or_", 16, "a | b")
add16 = word_op("add", 16, "a + b modulo 2**16")
sub16 = word_op("sub", 16, "a - b modulo 2**16")
mul16 = word_op("mul", 16, "a * b modulo 2**16")
shl16 = word_op("shl", 16, "a << b modulo 2**16 (b < 16)")
shr16 = word_op("lshr", 16, "a >> b, logical (b < 16)")
sar16 = word_op("ashr", 16, "a >> b, arithmetic: a read as int16 (b < 16)")
word16 = word_cast(16, "The low 16 bits of an integer (or 0/1 of a bool) as a uint16.")
