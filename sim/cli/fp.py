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

import numpy as np

import sim.num.ops as ops
from sim.errors import SimError
from sim.num.bits import FORMATS, describe_fields, describe_value

from . import COMMAND_HELP, parse_args

HELP = COMMAND_HELP["fp"]

def _operand_formats(op: str) -> tuple[list[str], str]:
    if op in ops.BINARY_OPS:
        fmt = op.split("_")[0]
        return [fmt, fmt], fmt
    src, dst = op.split("_to_")
    return [src], dst


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except SimError as exc:  # bad operands: one line, as argparse's own errors
        print(f"nvdla-sim fp: {exc}", file=sys.stderr)
        return exc.exit_code


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="nvdla-sim fp",
        description="Run one NVDLA floating-point primitive on raw bit patterns.",
        epilog="operations: " + " ".join(ops.BINARY_OPS + ops.UNARY_OPS)
        + ". writes: the operands and the result (hex, decimal, bit fields) on stdout",
    )
    parser.add_argument("op", help="operation, e.g. fp16_add or fp32_to_fp16")
    parser.add_argument("operands", nargs="+", metavar="A", help="bit pattern (0x..., decimal)")
    args = parse_args(parser, argv)  # usage errors: argparse prints them and exits 2

    if args.op not in ops.BINARY_OPS + ops.UNARY_OPS:
        raise SimError(f"unknown operation {args.op!r}")
    formats, out_fmt = _operand_formats(args.op)
    if len(args.operands) != len(formats):
        raise SimError(f"{args.op} takes {len(formats)} operand(s)")
    values = []
    for text, fmt in zip(args.operands, formats, strict=True):
        E, M = FORMATS[fmt]
        try:
            value = int(text, 0)
        except ValueError:
            raise SimError(f"bad number {text!r}") from None
        if not 0 <= value < 1 << (M if E == 0 else 1 + E + M):
            raise SimError(f"{text} does not fit in {fmt}")
        values.append(value)

    result = int(getattr(ops, args.op)(*values))
    for label, value, fmt in zip("ab", values, formats, strict=False):
        print(f"{label}   = {describe(value, fmt)}")
    print(f"out = {describe(result, out_fmt)}")
    ieee = _ieee(args.op, values)
    if ieee is not None and ieee != result and not _both_nan(ieee, result, out_fmt):
        print(f"note: IEEE 754 gives {describe_value(ieee, out_fmt)}; NVDLA differs: "
              f"{_why(values, formats, ieee, out_fmt)}")
    return 0


_IEEE_TYPES = {"fp16": (np.float16, np.uint16), "fp32": (np.float32, np.uint32)}
_IEEE_VERBS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
               "min": np.minimum}


def _ieee(op: str, values: list[int]) -> int | None:
    """The bits IEEE 754 (numpy, round to nearest even) gives, where it has the formats."""
    formats, out_fmt = _operand_formats(op)
    if any(f not in _IEEE_TYPES for f in (*formats, out_fmt)):
        return None
    floats = [np.array(v, _IEEE_TYPES[f][1]).view(_IEEE_TYPES[f][0])
              for v, f in zip(values, formats, strict=True)]
    with np.errstate(all="ignore"):
        if op in ops.BINARY_OPS:
            out = _IEEE_VERBS[op.split("_")[1]](*floats)
        else:
            out = floats[0].astype(_IEEE_TYPES[out_fmt][0])
    return int(np.asarray(out, _IEEE_TYPES[out_fmt][0]).view(_IEEE_TYPES[out_fmt][1]))


def _fields(value: int, fmt: str) -> tuple[int, int]:
    exponent_bits, mantissa_bits = FORMATS[fmt]
    return (value >> mantissa_bits) & ((1 << exponent_bits) - 1), value & ((1 << mantissa_bits) - 1)


def _both_nan(a: int, b: int, fmt: str) -> bool:
    top = (1 << FORMATS[fmt][0]) - 1
    return all(_fields(v, fmt)[0] == top and _fields(v, fmt)[1] for v in (a, b))


def _why(values, formats, ieee: int, out_fmt: str) -> str:
    """Which of NVDLA's rules (sim.num.rules) makes the difference."""
    def special(value, fmt, kind):
        exponent, mantissa = _fields(value, fmt)
        if kind == "top":
            return exponent == (1 << FORMATS[fmt][0]) - 1
        return exponent == 0 and mantissa != 0

    if any(special(v, f, "top") for v, f in zip(values, formats, strict=True)):
        return ("an all-ones exponent is an ordinary finite number to NVDLA, not Inf or NaN "
                "(sim.num.rules, rules 4 and 5)")
    if special(ieee, out_fmt, "top"):
        return "overflow gives the largest finite value, never Inf (sim.num.rules, rule 3)"
    if any(special(v, f, "low") for v, f in zip(values, formats, strict=True)) \
            or special(ieee, out_fmt, "low"):
        return ("exponent-0 patterns are not IEEE denormals, and results below the normal "
                "range are zero (sim.num.rules, rules 1 and 2)")
    return "NVDLA's datapath rounds or orders this case its own way (sim.num.rules)"


def describe(value: int, fmt: str) -> str:
    """Hex, decimal value and bit fields: ``0x7c00 (inf)  0 | 11111 | 0000000000``."""
    return f"{describe_value(value, fmt)}  {describe_fields(value, fmt)}"
