"""``nvdla-sim fp OP A [B]``: run one primitive by hand.

Operands are raw bit patterns (``0x7c00``, ``31744``, ``0b...``).  The
operands and the result are printed in hex and as the decimal value IEEE-754
would read from the pattern (fp17: 1 sign, 6 exponent bits with bias 31,
10 mantissa bits).  Remember that NVDLA arithmetic reads exponent-0 and
all-ones-exponent patterns differently (see ``sim.num.rules``).
"""

import argparse
import sys

import sim.num.ops as ops

HELP = "evaluate one numerics primitive on raw bit patterns"

# name -> (exponent bits, mantissa bits); uint16 is a plain integer
_FORMATS = {"fp16": (5, 10), "fp17": (6, 10), "fp32": (8, 23), "uint16": (0, 16)}


def describe(bits: int, fmt: str) -> str:
    """``0x...`` and the decimal value of a pattern of format ``fmt``."""
    E, M = _FORMATS[fmt]
    digits = (M + 3) // 4 if E == 0 else (1 + E + M + 3) // 4
    text = f"0x{bits:0{digits}x}"
    if E == 0:
        return f"{text} ({bits})"
    sign = -1.0 if bits >> (E + M) & 1 else 1.0
    expo = (bits >> M) & ((1 << E) - 1)
    mant = bits & ((1 << M) - 1)
    bias = (1 << (E - 1)) - 1
    if expo == (1 << E) - 1:
        value = "nan" if mant else ("-inf" if sign < 0 else "inf")
        return f"{text} ({value})"
    if expo == 0:
        value = sign * mant * 2.0 ** (1 - bias - M)
    else:
        value = sign * (mant + (1 << M)) * 2.0 ** (expo - bias - M)
    return f"{text} ({value:.9g})"


def _operand_formats(op: str) -> tuple[list[str], str]:
    if op in ops.BINARY_OPS:
        fmt = op.split("_")[0]
        return [fmt, fmt], fmt
    src, dst = op.split("_to_")
    return [src], dst


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="nvdla-sim fp",
        description="Run one NVDLA floating-point primitive on raw bit patterns.",
        epilog="operations: " + " ".join(ops.BINARY_OPS + ops.UNARY_OPS)
        + ". writes: the operands and the result (hex and decimal) on stdout",
    )
    parser.add_argument("op", help="operation, e.g. fp16_add or fp32_to_fp16")
    parser.add_argument("operands", nargs="+", metavar="A", help="bit pattern (0x..., decimal)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # usage errors: argparse has printed them
        return int(exit_.code or 0)

    if args.op not in ops.BINARY_OPS + ops.UNARY_OPS:
        print(f"nvdla-sim fp: unknown operation {args.op!r}", file=sys.stderr)
        return 2
    formats, out_fmt = _operand_formats(args.op)
    if len(args.operands) != len(formats):
        print(f"nvdla-sim fp: {args.op} takes {len(formats)} operand(s)", file=sys.stderr)
        return 2
    values = []
    for text, fmt in zip(args.operands, formats, strict=True):
        E, M = _FORMATS[fmt]
        try:
            value = int(text, 0)
        except ValueError:
            print(f"nvdla-sim fp: bad number {text!r}", file=sys.stderr)
            return 2
        if not 0 <= value < 1 << (M if E == 0 else 1 + E + M):
            print(f"nvdla-sim fp: {text} does not fit in {fmt}", file=sys.stderr)
            return 2
        values.append(value)

    result = int(getattr(ops, args.op)(*values))
    for label, value, fmt in zip("ab", values, formats, strict=False):
        print(f"{label}   = {describe(value, fmt)}")
    print(f"out = {describe(result, out_fmt)}")
    return 0
