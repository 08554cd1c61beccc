"""``nvdla-sim diff``: compare a device's memory with what a trace should produce."""

from __future__ import annotations

import argparse

from . import COMMAND_HELP, EXIT_FAIL, EXIT_OK, int_arg, parse_args

HELP = COMMAND_HELP["diff"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim diff", description=HELP,
        epilog="ACTUAL: a memory file (NVDLA .dat, raw binary, hex words, $readmemh) or a "
               "folder of them, named like the trace's dump_mem files or crc_<address> as "
               "'run --dump-dir' writes them, or stating their address. "
               "writes: a summary on stdout, the --json report (every differing element), "
               "the --png heatmaps (one panel per output surface); exit 0 identical, "
               "1 differences, 2 invalid input")
    p.add_argument("trace", help="trace folder or file (input.txn or .cfg)")
    p.add_argument("actual", help="memory the device under test produced (file or folder)")
    p.add_argument("--config", help="hardware configuration (default: from the folder name)")
    p.add_argument("--layer", type=int, help="report only the bytes layer N wrote (0 = first)")
    p.add_argument("--base", type=int_arg, help="address of the first byte of a file that "
                   "does not state its own (raw binary, plain hex)")
    p.add_argument("--json", help="write the full report as JSON to this file")
    p.add_argument("--png", help="write heatmaps of the differences to this PNG file "
                   "(needs matplotlib: the [plot] extra)")
    return p


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)

    from ..diff import diff_trace

    if args.png:
        from ..diff.plot import _matplotlib

        _matplotlib()  # fail before the run when matplotlib is missing
    report = diff_trace(args.trace, args.actual, args.config, args.layer, args.base)
    if args.png:
        from ..diff.plot import draw_png

        report.panels = draw_png(report, args.png)
    report.print_summary()
    if args.json:
        report.write_json(args.json)
    return EXIT_OK if report.identical else EXIT_FAIL
