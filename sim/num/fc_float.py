"""The shifted products of a fully connected fp16 layer's blocks in float32 arithmetic.

A lane's shifted product ``P >> s`` (:mod:`sim.num.mac_fc`: ``P`` the exact signed
product of the CMAC's operands, ``s`` the lane's shift, the block exponent less the lane
exponent) is ``floor(w * x * 2**(25 - E))``: ``w`` the fp16 weight converted to float32
(one conversion instruction for 16 lanes), ``x`` the data value :func:`float_data` builds
from the CMAC's decoded data operand (so the data's decode stays the integer one's), ``E``
the block's exponent times four.  Every step is exact:

* the weight's value is its CMAC significand (the implicit bit set, shifted by the low two
  exponent bits; a subnormal's mantissa shifted by 1 at exponent 0) times
  ``2**(4 * (e >> 2) - 25)``, exactly what the conversion gives;
* ``|P|`` has at most 22 significant bits (two 11-bit significands), so ``w * x`` is exact
  in float32's 24, and a power of two keeps it exact while it stays normal: ``w * x`` is at
  least ``2**-25`` and ``P * 2**-s`` (``s`` at most 56 for a data value that is not zero)
  at least ``2**-56``, far above float32's smallest normal;
* ``floor`` of a value of at most 22 significant bits is exact, and below ``2**28``.

Weights whose exponent field is 31 (Inf and NaN) are no float the integer path agrees with
(it takes 31 as a finite exponent): their chunks take the integer loop, which stays the
reference.  The lanes that may carry (:mod:`sim.num.fc_carries`) are flagged from the
shift alone (12 to 28) or, at 8, from the product's low byte, which is the fraction
``v - floor(v)`` (exact) times 256.  Their packed words (:func:`sim.num.mac_fc._unpack`)
are made in the same loop, as the two 16-bit halves the 16-bit tree's pass reads, two
vectors (32 lanes) at a time, and only theirs kept (compressed in registers): a 7-10% of
lanes flagged in AlexNet's layers are in two thirds of its vectors, so a pass rebuilding
the flagged vectors' words afterwards cost more than the float loop saved.
"""

from __future__ import annotations

import numpy as np

from sim.jit import intrinsic, njit
from sim.num.fc_carries import CARRY8_LOW_MAX

#: Lanes of a vector: 16 float32 words, a 512-bit register.
FLOAT_LANES = 16
#: Lane exponents' bias (:data:`sim.num.mac_fc.EXP_BIAS`, repeated: that module imports
#: this one) and the float32 exponent field of 2**0.
_EXP_BIAS, _FLOAT_ONE = 512, 127
#: ``w * x`` is ``P * 2**(lane exponent - 25)`` (the weight's float carries ``2**-25``).
_WEIGHT_SCALE = 25
#: The largest shift whose product is kept (:data:`sim.num.mac_fc.NEAR_SHIFT`), and the
#: shifts that always flag a lane: 12 to 28 (``s - 12`` at most 16, unsigned).
_NEAR, _FLAG_FROM, _FLAG_SPAN = 16, 12, 16


def float_data(sign, sig, exp4):
    """The data values as float32 (:func:`data_value`) of the CMAC's decoded data operands
    (any shape)."""
    sign, sig, exp4 = (np.asarray(a, np.int64) for a in np.broadcast_arrays(sign, sig, exp4))
    return _data_values(sign.reshape(-1), sig.reshape(-1), exp4.reshape(-1)).reshape(sig.shape)


@njit(inline="always")
def data_value(sign, sig, exp4):
    """A data operand's value as float32: ``(-1)**sign * sig * 2**exp4``, exact (``sig``
    below 2**14, ``exp4`` 0 to 28; a zero's ``sig`` is 0, whatever its ``exp4``).  A
    product of powers of two, not ``ldexp`` (a library call a value: in a kernel's loop,
    three times the loop's time)."""
    shift = np.int64(exp4) if sig != 0 else np.int64(0)
    value = np.float64(sig) * np.float64(np.int64(1) << shift)
    return np.float32(-value if sign != 0 else value)


@njit
def _data_values(sign, sig, exp4):
    """:func:`data_value` of each of the flat arrays' elements."""
    out = np.empty(sig.size, np.float32)
    for i in range(sig.size):
        out[i] = data_value(sign[i], sig[i], exp4[i])
    return out


def _vector_at(context, builder, array_type, array, index, lanes, element):
    """A pointer to the vector of ``lanes`` ``element`` words at ``array[index]``."""
    from llvmlite import ir

    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), ir.VectorType(element, lanes).as_pointer())


def _splat(builder, value, lanes):
    """``value`` in every one of ``lanes`` lanes."""
    from llvmlite import ir

    vector_t = ir.VectorType(value.type, lanes)
    first = builder.insert_element(ir.Constant(vector_t, ir.Undefined), value,
                                   ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(first, ir.Constant(vector_t, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))


def _scale_of(builder, top):
    """The float32 ``2**(_WEIGHT_SCALE - E)`` of a block's biased exponent ``top`` (i16,
    ``E = top - _EXP_BIAS``, 0 to 56): its bits made directly."""
    from llvmlite import ir

    i32 = ir.IntType(32)
    field = builder.sub(ir.Constant(i32, _FLOAT_ONE + _WEIGHT_SCALE + _EXP_BIAS),
                        builder.zext(top, i32))
    return builder.bitcast(builder.shl(field, ir.Constant(i32, 23)), ir.FloatType())


def _converts_halves(context) -> bool:
    """Whether the processor code is compiled for converts fp16 to float32 in one
    instruction (x86's F16C).  Elsewhere LLVM may lower the conversion to a call of
    ``__extendhfsf2``, a library function numba's linker does not find (the process
    aborts), so those targets build the float from the bits (:func:`_weights_as_float`)."""
    features = getattr(context.codegen(), "_tm_features", "") or ""
    return "+f16c" in features.split(",")


def _filled(vector_t, value):
    """The constant vector of type ``vector_t`` with ``value`` in every lane."""
    from llvmlite import ir

    return ir.Constant(vector_t, [value] * vector_t.count)


def _weight_significands(builder, bits):
    """(exponent fields, CMAC significands) of fp16 weights ``bits`` (an i16 vector), in
    i16 lanes: :func:`sim.num.mac.fp16_weight_operand`'s significand (the implicit bit
    set, shifted by the exponent's low two bits; a subnormal's mantissa shifted by 1)."""
    def const(v):
        return _filled(bits.type, v)

    field = builder.and_(builder.lshr(bits, const(10)), const(31))
    subnormal = builder.icmp_unsigned("==", field, const(0))
    significand = builder.shl(
        builder.or_(builder.and_(bits, const(0x3FF)),
                    builder.select(subnormal, const(0), const(0x400))),
        significand_shift(builder, field))
    return field, significand


def significand_shift(builder, field):
    """How far the CMAC shifts the mantissas of fp16 weights whose exponent fields are
    ``field`` (an i16 vector): the field's low two bits, 1 for a subnormal (field 0)."""
    def const(v):
        return _filled(field.type, v)

    subnormal = builder.icmp_unsigned("==", field, const(0))
    return builder.select(subnormal, const(1), builder.and_(field, const(3)))


def _weights_as_float(context, builder, bits):
    """The fp16 weights ``bits`` (an i16 vector) as float32 values, exactly: by the
    conversion instruction where there is one, else as the CMAC significand (the implicit
    bit set, shifted by the exponent's low two bits; a subnormal's mantissa shifted by 1)
    converted to float (exact: below 2**13) times ``2**(4 * (e >> 2) - 25)``, the sign
    bit or'd in: the same value (exponent 31's weights never come here)."""
    from llvmlite import ir

    n = bits.type.count
    i16_t, i32_t = ir.VectorType(ir.IntType(16), n), ir.VectorType(ir.IntType(32), n)
    f32_t = ir.VectorType(ir.FloatType(), n)
    if _converts_halves(context):
        return builder.fpext(builder.bitcast(bits, ir.VectorType(ir.HalfType(), n)), f32_t)

    def const(v, vector_t=i16_t):
        return _filled(vector_t, v)

    field, significand = _weight_significands(builder, bits)
    power = builder.shl(builder.zext(builder.add(builder.and_(field, const(0x1C)),
                                                 const(_FLOAT_ONE - _WEIGHT_SCALE)), i32_t),
                        const(23, i32_t))
    magnitude = builder.fmul(builder.uitofp(significand, f32_t), builder.bitcast(power, f32_t))
    sign = builder.shl(builder.zext(builder.lshr(bits, const(15)), i32_t), const(31, i32_t))
    return builder.bitcast(builder.or_(builder.bitcast(magnitude, i32_t), sign), f32_t)


def _lanes_step(context, builder, sig, args, at, local, top_v, scale_v):
    """One vector of lanes: (``P >> s`` as i32 lanes, 0 beyond ``_NEAR``; the flags as an
    i16 mask; the weights' bits and the shifts, i16 lanes).  ``args[0:3]``: the weights
    (uint16 fp16 bits), data (float32), lane exponents (uint16); ``at`` the lane in the
    weights and data, ``local`` in the exponents."""
    from llvmlite import ir
    from numba.core import cgutils

    n = FLOAT_LANES
    i16, i32, f32 = ir.IntType(16), ir.IntType(32), ir.FloatType()
    f32_t, i32_t, i16_t = ir.VectorType(f32, n), ir.VectorType(i32, n), ir.VectorType(i16, n)
    bits = builder.load(_vector_at(context, builder, sig.args[0], args[0], at, n, i16), align=2)
    weight = _weights_as_float(context, builder, bits)
    data = builder.load(_vector_at(context, builder, sig.args[1], args[1], at, n, f32), align=4)
    value = builder.fmul(builder.fmul(weight, data), scale_v)
    floor = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f32_t, [f32_t]),
                                           f"llvm.floor.v{n}f32")
    whole = builder.call(floor, [value])
    shifted = builder.fptosi(whole, i32_t)
    exps = builder.load(_vector_at(context, builder, sig.args[2], args[2], local, n, i16),
                        align=2)
    shift = builder.sub(top_v, exps)

    def const(v):
        return _filled(i16_t, v)

    near = builder.icmp_unsigned("<=", shift, const(_NEAR))
    shifted = builder.select(near, shifted, ir.Constant(i32_t, [0] * n))
    always = builder.icmp_unsigned("<=", builder.sub(shift, const(_FLAG_FROM)), const(_FLAG_SPAN))
    low = builder.fcmp_ordered("<=", builder.fsub(value, whole),
                               ir.Constant(f32_t, [CARRY8_LOW_MAX / 256] * n))
    flag = builder.or_(always, builder.and_(builder.icmp_unsigned("==", shift, const(8)), low))
    return shifted, builder.bitcast(flag, i16), bits, shift


def _block_constants(context, builder, sig, args, top_arg):
    """The block's biased exponent (argument ``top_arg``) and its scale, each in every
    lane."""
    from llvmlite import ir
    from numba.core import types

    top = builder.trunc(context.cast(builder, args[top_arg], sig.args[top_arg], types.uint64),
                        ir.IntType(16))
    return _splat(builder, top, FLOAT_LANES), _splat(builder, _scale_of(builder, top),
                                                     FLOAT_LANES)


#: Lanes whose packed words' halves :func:`float_run` makes at a time: two vectors', in
#: 16-bit words.
PAIR_LANES = 2 * FLOAT_LANES


def _flagged_halves(context, builder, sig, args, bits, shifts, ats, locals_, mask, count):
    """The packed words' halves (:func:`sim.num.mac_fc._unpack`: the low 16 bits, the high
    16) of two vectors' lanes (their weights' ``bits`` and ``shifts``, i16 vectors; their
    first lanes ``ats`` in the weights and data, ``locals_`` in the chunk), 32 lanes a
    vector operation; those of ``mask`` (i32: bit ``j`` the first's lane ``j``, ``16 + j``
    the second's) stored in order from ``count`` on (:func:`float_run`'s arrays), their
    lanes too.  Returns the new count (i64)."""
    from llvmlite import ir
    from numba.core import cgutils

    n = FLOAT_LANES
    i8, i16, i32, i64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
    pair_t = ir.VectorType(i16, PAIR_LANES)
    both = ir.Constant(ir.VectorType(i32, PAIR_LANES), list(range(PAIR_LANES)))

    def pair(k, element):
        """The two vectors' words of argument ``k``."""
        a, b = (builder.load(_vector_at(context, builder, sig.args[k], args[k], at, n, element),
                             align=1) for at in ats)
        return builder.shuffle_vector(a, b, both)

    def const(v):
        return _filled(pair_t, v)

    bits = builder.shuffle_vector(bits[0], bits[1], both)
    sign = builder.zext(pair(3, i8), pair_t)
    dat = pair(4, i16)
    code = builder.lshr(builder.shuffle_vector(shifts[0], shifts[1], both), const(2))
    _, sig_w = _weight_significands(builder, bits)
    negative = builder.xor(builder.lshr(bits, const(15)), sign)
    low = builder.or_(sig_w, builder.shl(builder.and_(code, const(3)), const(14)))
    high = builder.or_(builder.or_(builder.lshr(code, const(2)), builder.shl(dat, const(1))),
                       builder.shl(negative, const(15)))
    lanes = builder.shuffle_vector(*(builder.add(
        _splat(builder, builder.trunc(local, i16), n), ir.Constant(ir.VectorType(i16, n),
                                                                   list(range(n))))
        for local in locals_), both)
    keep = builder.bitcast(mask, ir.VectorType(ir.IntType(1), PAIR_LANES))
    compress = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(pair_t, [pair_t, keep.type, pair_t]),
        f"llvm.experimental.vector.compress.v{PAIR_LANES}i16")
    for k, words in ((5, low), (6, high), (7, lanes)):
        packed = builder.call(compress, [words, keep, const(0)])
        builder.store(packed, _vector_at(context, builder, sig.args[k], args[k], count,
                                         PAIR_LANES, i16), align=2)
    return builder.add(count, builder.zext(builder.ctpop(mask), i64))


@intrinsic
def float_run(typingctx, w, x, exps, d_sign, d_sig, lows, highs, flagged, at, local, vectors,
              top, count):
    """Of ``vectors`` (at most 8: each lane's int32 sum stays exact) vectors of
    ``FLOAT_LANES`` lanes of one block: (the exact sum (int64) of ``P >> s``, 0 for
    shifts beyond 16; the new count of flagged lanes).  Weights ``w`` (uint16 fp16 bits,
    no exponent 31), data ``x`` (float32, :func:`float_data`), data signs ``d_sign``
    (uint8) and significands ``d_sig`` (uint16) from lane ``at``; lane exponents ``exps``
    (uint16, biased) from lane ``local``; the block's biased exponent ``top``.  The
    flagged lanes (that may carry, or are shifted by 20 to 28) go in order from ``count``
    on: their packed words' low and high halves (:func:`sim.num.mac_fc._unpack`) to
    ``lows`` and ``highs``, their lanes (``local`` on, uint16) to ``flagged`` (room for
    ``PAIR_LANES`` more in each: 0s written after them)."""
    from llvmlite import ir
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        at = context.cast(builder, args[8], sig.args[8], types.int64)
        local = context.cast(builder, args[9], sig.args[9], types.int64)
        vectors = context.cast(builder, args[10], sig.args[10], types.int64)
        top_v, scale_v = _block_constants(context, builder, sig, args, 11)
        i32, i64, n = ir.IntType(32), ir.IntType(64), FLOAT_LANES
        i32_t = ir.VectorType(i32, n)
        total = cgutils.alloca_once_value(builder, ir.Constant(i32_t, [0] * n))
        count = cgutils.alloca_once_value(
            builder, context.cast(builder, args[12], sig.args[12], types.int64))

        def step(offset):
            ats = builder.add(at, offset), builder.add(local, offset)
            shifted, mask, bits, shift = _lanes_step(context, builder, sig, args, *ats, top_v,
                                                     scale_v)
            builder.store(builder.add(builder.load(total), shifted), total)
            return mask, bits, shift, ats

        two = ir.Constant(i64, 2)
        with cgutils.for_range(builder, builder.udiv(vectors, two)) as loop:
            offset = builder.mul(loop.index, ir.Constant(i64, 2 * n))
            a = step(offset)
            b = step(builder.add(offset, ir.Constant(i64, n)))
            mask = builder.or_(builder.zext(a[0], i32),
                               builder.shl(builder.zext(b[0], i32), ir.Constant(i32, n)))
            builder.store(_flagged_halves(context, builder, sig, args, (a[1], b[1]),
                                          (a[2], b[2]), (a[3][0], b[3][0]), (a[3][1], b[3][1]),
                                          mask, builder.load(count)), count)
        odd = builder.icmp_unsigned("!=", builder.and_(vectors, ir.Constant(i64, 1)),
                                    ir.Constant(i64, 0))
        with builder.if_then(odd):  # the last vector alone: the pair's second half unused
            a = step(builder.mul(builder.sub(vectors, ir.Constant(i64, 1)), ir.Constant(i64, n)))
            builder.store(_flagged_halves(context, builder, sig, args, (a[1], a[1]),
                                          (a[2], a[2]), (a[3][0], a[3][0]), (a[3][1], a[3][1]),
                                          builder.zext(a[0], i32), builder.load(count)), count)
        wide_t = ir.VectorType(i64, n)
        reduce = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [wide_t]), f"llvm.vector.reduce.add.v{n}i64")
        total_sum = builder.call(reduce, [builder.sext(builder.load(total), wide_t)])
        return context.make_tuple(builder, sig.return_type, [total_sum, builder.load(count)])

    arrays = (w, x, exps, d_sign, d_sig, lows, highs, flagged)
    dtypes = (types.uint16, types.float32, types.uint16, types.uint8, types.uint16,
              types.uint16, types.uint16, types.uint16)
    if not _typed(arrays, dtypes):
        return None
    return types.UniTuple(types.int64, 2)(w, x, exps, d_sign, d_sig, lows, highs, flagged, at,
                                          local, vectors, top, count), codegen


def _typed(arrays, dtypes):
    """Whether the arrays are contiguous (the codegens load whole vectors from their data)
    and of the dtypes they read and write."""
    from numba.core import types

    return all(isinstance(a, types.Array) and a.layout == "C" and a.dtype == dtype
               for a, dtype in zip(arrays, dtypes, strict=True))


@intrinsic
def float_lanes(typingctx, w, x, exps, values, at, local, top):
    """:func:`float_run`'s lanes of one vector one by one (for the tests: the same code):
    each lane's ``P >> s`` (0 beyond 16) to ``values[0:FLOAT_LANES]`` (int32); returns the
    flags' mask (uint16)."""
    from llvmlite import ir
    from numba.core import types

    def codegen(context, builder, sig, args):
        at = context.cast(builder, args[4], sig.args[4], types.int64)
        local = context.cast(builder, args[5], sig.args[5], types.int64)
        top_v, scale_v = _block_constants(context, builder, sig, args, 6)
        shifted, mask, _, _ = _lanes_step(context, builder, sig, args, at, local, top_v,
                                          scale_v)
        out = _vector_at(context, builder, sig.args[3], args[3], ir.Constant(ir.IntType(64), 0),
                         FLOAT_LANES, ir.IntType(32))
        builder.store(shifted, out, align=4)
        return mask

    if not _typed((w, x, exps, values),
                  (types.uint16, types.float32, types.uint16, types.int32)):
        return None
    return types.uint16(w, x, exps, values, at, local, top), codegen
