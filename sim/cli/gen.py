"""``nvdla-sim gen``: write a trace folder from a layer description (TOML/YAML spec)."""

from __future__ import annotations

import argparse

from . import COMMAND_HELP, EXIT_OK, count_arg, parse_args
from .run import add_dump_options, check_dump_options

HELP = COMMAND_HELP["gen"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim gen", description=HELP,
        epilog="writes: DIR/<DIR>.cfg (check_crc, poll_reg_equal) and/or DIR/input.txn "
               "(dump_mem with golden .dat), the input .dat files, and with --dump-format "
               "every input and expected output region as RTL memory files "
               "(layer<N>_in<M>, layer<N>_out); a progress line per layer on stderr")
    p.add_argument("spec", help="layer description (.toml; .yaml with PyYAML)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="trace folder to write")
    p.add_argument("--config", help="hardware configuration (default: the spec's config)")
    p.add_argument("--seed", type=count_arg(0),
                   help="random seed >= 0 (default: the spec's seed, else 0)")
    p.add_argument("--format", choices=("cfg", "txn", "both"),
                   help="trace syntax (default: the spec's format, else both)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    add_dump_options(p)
    p.set_defaults(dump_format=None)
    return p


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)

    import sys

    from ..gen import generate

    check_dump_options(args)
    result = generate(args.spec, args.output, args.config, args.seed, args.format,
                      args.force, args.dump_format, args.word_bytes, progress=sys.stderr)
    print(f"wrote {result.folder}: {result.layers} layer(s), "
          + ", ".join(t.name for t in result.traces) + f" ({len(result.files)} files)")
    return EXIT_OK
