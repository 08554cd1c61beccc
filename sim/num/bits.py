"""A value's bit fields for people: ``sign | exponent | mantissa`` (fp16, fp17, fp32).

For reports and the ``nvdla-sim fp`` command, where speed does not matter:
:func:`describe_fields` splits a raw pattern into its fields with
``bitstring``; :func:`describe_value` gives the pattern in hex and the value
IEEE-754 would read from it.  NVDLA's arithmetic reads exponent-0 and
all-ones-exponent patterns differently (see :mod:`sim.num.rules`).
"""

from __future__ import annotations

from bitstring import Bits

# name -> (exponent bits, mantissa bits); integer formats have no exponent
FORMATS = {
    "fp16": (5, 10), "fp17": (6, 10), "fp32": (8, 23),
    "uint16": (0, 16), "int8": (0, 8), "int16": (0, 16), "int32": (0, 32),
}  # fmt: skip


def _width(fmt: str) -> tuple[int, int, int]:
    try:
        E, M = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})") from None
    return E, M, M if E == 0 else 1 + E + M


def describe_fields(value: int, fmt: str) -> str:
    """The bits of ``value`` (its low bits, as stored) grouped by field.

    ``describe_fields(0x7c00, "fp16") == "0 | 11111 | 0000000000"``; integer
    formats give their bits in groups of four.
    """
    E, M, width = _width(fmt)
    bits = Bits(uint=int(value) & ((1 << width) - 1), length=width)
    if E == 0:
        return " ".join(group.bin for group in bits.cut(4))
    sign, exponent, mantissa = bits.unpack(f"bin1, bin{E}, bin{M}")
    return f"{sign} | {exponent} | {mantissa}"


def describe_value(value: int, fmt: str) -> str:
    """``0x...`` and the decimal value IEEE-754 reads from a pattern of format ``fmt``."""
    E, M, width = _width(fmt)
    value = int(value) & ((1 << width) - 1)
    text = f"0x{value:0{(width + 3) // 4}x}"
    if E == 0:
        return f"{text} ({value})"
    sign = -1.0 if value >> (E + M) & 1 else 1.0
    expo = (value >> M) & ((1 << E) - 1)
    mant = value & ((1 << M) - 1)
    bias = (1 << (E - 1)) - 1
    if expo == (1 << E) - 1:
        special = "nan" if mant else ("-inf" if sign < 0 else "inf")
        return f"{text} ({special})"
    if expo == 0:
        number = sign * mant * 2.0 ** (1 - bias - M)
    else:
        number = sign * (mant + (1 << M)) * 2.0 ** (expo - bias - M)
    return f"{text} ({number:.9g})"
