"""``nvdla-sim rtl``: run a trace on NVIDIA's Verilator testbench and judge each check."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from . import COMMAND_HELP, EXIT_FAIL, EXIT_INVALID, EXIT_OK, parse_args

HELP = COMMAND_HELP["rtl"]
BENCH_VARIABLE = "NVDLA_RTL_BENCH"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim rtl", description=HELP,
        epilog="The trace (.cfg or input.txn) is replayed on the simulator, written in the "
               "testbench's binary command format (each intr_notify waits for its own done "
               "bit before the trace goes on) and run; each memory check's region is dumped "
               "and judged (CRC or golden bytes), a failing one localised against the "
               "simulator (layer, unit, element). writes: with --keep, trace.bin, bench.log "
               "and the dumped regions there (without it, a temporary folder, kept only on "
               "failure); exit 0 every check passes, 1 a memory check fails or the RTL hangs, "
               "2 a register read differs (the bench's verdicts) or invalid input")
    p.add_argument("trace", help="trace folder or file (.cfg or input.txn)")
    p.add_argument("--bench", help=f"the testbench binary (default: ${BENCH_VARIABLE})")
    p.add_argument("--config", help="hardware configuration (default: from the folder name "
                   "or the trace's header)")
    p.add_argument("--keep", type=Path, help="keep the testbench's files in this new or "
                   "empty folder")
    p.add_argument("--log", action="store_true", help="keep all the testbench printed in "
                   "bench.log (a line per memory beat: large); default: its last 200 lines")
    p.add_argument("--idle", type=_seconds, default=60.0, help="call the RTL hung after this "
                   "many seconds without output while it waits for an interrupt (default 60)")
    p.add_argument("--timeout", type=_seconds, help="stop the testbench after this many "
                   "seconds (default: none)")
    return p


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)

    from ..errors import SimError
    from ..rtl.verdict import run_on_rtl

    bench = args.bench or os.environ.get(BENCH_VARIABLE)
    if not bench:
        raise SimError(f"nvdla-sim rtl: no testbench: pass --bench VNV_nvdla or set "
                       f"${BENCH_VARIABLE}")
    report = run_on_rtl(args.trace, bench, args.config, args.keep, args.idle, args.timeout,
                        args.log)
    print("\n".join(report.lines()))
    if report.memory_failed:
        return EXIT_FAIL
    return EXIT_INVALID if report.run.read_failures else EXIT_OK
