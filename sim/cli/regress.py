"""``nvdla-sim regress``: run every trace under ROOT/<config>/<test>/."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import COMMAND_HELP, count_arg, parse_args

HELP = COMMAND_HELP["regress"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim regress", description=HELP,
        epilog="writes: a table per configuration on stdout (a progress bar on a terminal, "
               "plain lines otherwise, on stderr), the --json results and the --junit XML")
    p.add_argument("root")
    p.add_argument("-j", "--jobs", type=count_arg(1), default=1,
                   help="parallel workers (>= 1)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop a trace after this long and report it as an error (each trace "
                        "then runs in a worker process, so a crash is reported too)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask distributed cluster (e.g. tcp://host:8786; workers need "
                        "nvdla-sim and the traces at the same paths; the [cluster] extra)")
    p.add_argument("--config", help="override the configuration of every trace")
    p.add_argument("--json", help="write results as JSON to this file")
    p.add_argument("--junit", help="write JUnit XML to this file")
    return p


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)

    from ..regress import regress

    return regress(Path(args.root), jobs=args.jobs, json_path=args.json, junit_path=args.junit,
                   config=args.config, timeout=args.timeout, scheduler=args.scheduler)
