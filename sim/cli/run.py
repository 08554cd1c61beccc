"""``nvdla-sim run``: run a trace folder or file, or the bundled examples."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import SimError
from . import COMMAND_HELP, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, parse_args

HELP = COMMAND_HELP["run"]


def bundled_traces() -> Path:
    """The example traces shipped with the project."""
    from importlib.resources import files

    return Path(str(files("sim.traces")))


def print_result(result, out=None) -> None:
    out = out or sys.stdout
    print(f"{result.status.upper():5} {result.config}/{result.name} "
          f"({result.seconds:.2f}s) {result.message}", file=out)


def _is_invalid(result) -> bool:
    """An error in the input (exit 2), not a feature the simulator lacks."""
    from ..trace import TraceStatus

    return result.status == TraceStatus.ERROR and not result.not_implemented


def explain_failure(path, config, out=None) -> None:
    """Where a failing trace's output differs from its golden dump_mem files (sim.diff)."""
    from ..diff import explain_mismatch

    out = out or sys.stdout
    try:
        report = explain_mismatch(path, config)
    except SimError as exc:
        print(f"      (cannot localise the difference: {exc})", file=out)
        return
    if report is None:  # CRC checks only: no expected bytes to compare with
        return
    for line in report.summary_lines(more="nvdla-sim diff --json lists them all")[1:]:
        print(f"      {line}", file=out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim run", description=HELP,
        epilog="writes: the --json results file and, with --dump-dir, every checked memory "
               "region (dump_mem: its file name; check_crc: crc_<address>) in --dump-format; "
               "a failing dump_mem check prints the differing elements (layer, unit, coordinates); "
               "exit 0 all pass, 1 a check failed, 2 invalid input")
    p.add_argument("path", nargs="?", help="trace folder or file (default: bundled examples)")
    p.add_argument("--config", help="hardware configuration (default: from the folder name)")
    p.add_argument("--json", help="write results as JSON to this file")
    p.add_argument("--dump-dir", help="write the checked memory regions here (a new or empty "
                   "folder)")
    p.add_argument("--force", action="store_true",
                   help="write into a --dump-dir that already holds files")
    add_dump_options(p)
    return p


# the --dump-format names, those of sim.memfiles.MEMORY_FILE_FORMATS: written out, so that
# --help need not load sim.memfiles and numpy (tests/foundation/test_startup.py holds them equal)
DUMP_FORMATS = ("dat", "bin", "hex", "readmemh")


def add_dump_options(p: argparse.ArgumentParser) -> None:
    """--dump-format and --word-bytes (run and gen)."""
    p.add_argument("--dump-format", choices=DUMP_FORMATS, default="dat",
                   help="dat: NVDLA hex .dat; bin: raw binary; hex: one word a line; "
                        "readmemh: $readmemh image with @word addresses (.mem)")
    p.add_argument("--word-bytes", type=int, default=1,
                   help="bytes per word of hex/readmemh dumps (little-endian words; default 1)")


def check_dump_options(args) -> None:
    from ..memfiles import check_word_bytes

    check_word_bytes(args.word_bytes)
    folder = getattr(args, "dump_dir", None)
    if folder:
        path = Path(folder)
        if path.exists() and not path.is_dir():
            raise SimError(f"--dump-dir {folder}: exists and is not a folder")
        if path.is_dir() and any(path.iterdir()) and not getattr(args, "force", False):
            raise SimError(f"--dump-dir {folder}: the folder holds files; name a new or empty "
                           f"folder (or pass --force to write into it)")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SimError(f"--dump-dir {folder}: cannot create the folder "
                           f"({exc.strerror})") from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise SimError(f"--dump-dir {folder}: the folder is not writable")


def _items(path_arg):
    from ..regress import discover
    from ..trace.player import find_trace_file

    if path_arg is None:
        root = bundled_traces()
        items = discover(root)
        if not items:
            raise SimError(f"{root}: no bundled example traces found")
        return items
    path = Path(path_arg)
    if not path.exists():
        raise SimError(f"{path}: no such trace file or folder")
    if path.is_dir() and not (path / "input.txn").exists() and not list(path.glob("*.cfg")):
        items = discover(path)
        if not items:
            find_trace_file(path)  # raises the precise reason
        return items
    return [(None, path)]


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)  # before the simulator loads: --help is quick

    from ..regress import write_json
    from ..trace import TraceStatus, run_trace

    items = _items(args.path)
    if args.config:
        from ..configs import get_config

        get_config(args.config)  # an unknown name is invalid input
    check_dump_options(args)
    dump_dir = Path(args.dump_dir) if args.dump_dir else None
    results = []
    try:
        for config, path in items:
            name = path.name if path.is_dir() else path.parent.name
            result = run_trace(path, args.config or config, dump_dir, name=name,
                               dump_format=args.dump_format, word_bytes=args.word_bytes)
            results.append(result)
            if not (len(items) == 1 and _is_invalid(result)):  # that one goes to stderr only
                print_result(result)
            if result.status == TraceStatus.FAIL:
                explain_failure(path, args.config or config)
    except KeyboardInterrupt:  # keep the results of the traces that finished
        if args.json:
            write_json(args.json, results, complete=False)
        print(f"nvdla-sim: interrupted after {len(results)} of {len(items)} traces",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        write_json(args.json, results)
    if len(results) == 1 and _is_invalid(results[0]):
        print(f"nvdla-sim: error: {results[0].message}", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK if all(r.status == TraceStatus.PASS for r in results) else EXIT_FAIL
