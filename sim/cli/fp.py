"""``nvdla-sim fp OP A [B]``: run one primitive by hand.

Operands are raw bit patterns (``0x7c00``, ``31744``, ``0b...``).  The
operands and the result are printed in hex, as the decimal value IEEE-754
would read from the pattern (fp17: 1 sign, 6 exponent bits with bias 31,
10 mantissa bits) and as bit fields ``sign | exponent | mantissa``
(:mod:`sim.num.bits`).  Remember that NVDLA arithmetic reads exponent-0 and
all-ones-exponent patterns differently (see ``sim.num.rules``).
"""

import argparse
import sys

import sim.num.ops as ops
from sim.num.bits import FORMATS, describe_fields, describe_value

HELP = "evaluate one numerics primitive on raw bit patterns"

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
        + ". writes: the operands and the result (hex, decimal, bit fields) on stdout",
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
        E, M = FORMATS[fmt]
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


def describe(value: int, fmt: str) -> str:
    """Hex, decimal value and bit fields: ``0x7c00 (inf)  0 | 11111 | 0000000000``."""
    return f"{describe_value(value, fmt)}  {describe_fields(value, fmt)}"
