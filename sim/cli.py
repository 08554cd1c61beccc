"""``nvdla-sim``: run traces, regressions, numerics and layout tools.

Exit status: 0 success, 1 a check failed, 2 invalid input (one-line error),
3 an internal error of the simulator.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import SimError

EXIT_OK, EXIT_FAIL, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 3


def bundled_traces() -> Path:
    """The example traces shipped with the project."""
    from importlib.resources import files

    return Path(str(files("traces")))


def _print_result(result, out=None) -> None:
    out = out or sys.stdout
    print(f"{result.status.upper():5} {result.config}/{result.name} "
          f"({result.seconds:.2f}s) {result.message}", file=out)


def cmd_run(args) -> int:
    from .regress import discover, write_json
    from .trace import run_trace
    from .trace.player import find_trace_file

    if args.path is None:
        root = bundled_traces()
        items = discover(root)
        if not items:
            raise SimError(f"{root}: no bundled example traces found")
    else:
        path = Path(args.path)
        if not path.exists():
            raise SimError(f"{path}: no such trace file or folder")
        if path.is_dir() and not (path / "input.txn").exists() and not list(path.glob("*.cfg")):
            items = discover(path)
            if not items:
                find_trace_file(path)  # raises the precise reason
        else:
            items = [(None, path)]
    if args.config:
        from .configs import get_config

        get_config(args.config)  # an unknown name is invalid input
    dump_dir = Path(args.dump_dir) if args.dump_dir else None
    results = []
    for config, path in items:
        name = path.name if path.is_dir() else path.parent.name
        result = run_trace(path, args.config or config, dump_dir, name=name)
        results.append(result)
        _print_result(result)
    if args.json:
        write_json(args.json, results)
    if len(results) == 1 and results[0].status == "error":
        if not results[0].message.startswith("not implemented"):
            print(f"nvdla-sim: error: {results[0].message}", file=sys.stderr)
            return EXIT_INVALID
    return EXIT_OK if all(r.status == "pass" for r in results) else EXIT_FAIL


def cmd_regress(args) -> int:
    from .regress import regress

    return regress(Path(args.root), jobs=args.jobs, json_path=args.json, junit_path=args.junit,
                   config=args.config)


def cmd_fp(argv) -> int:
    from .num.cli import fp_main

    return fp_main(argv)


def cmd_layout(argv) -> int:
    from .dma.cli import layout_main

    return layout_main(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nvdla-sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a trace (folder or file), or the bundled examples")
    run.add_argument("path", nargs="?", help="trace folder or file (default: bundled examples)")
    run.add_argument("--config", help="hardware configuration (default: from the folder name)")
    run.add_argument("--json", help="write results as JSON to this file")
    run.add_argument("--dump-dir", help="write the checked memory regions here")
    run.set_defaults(func=cmd_run)

    reg = sub.add_parser("regress", help="run every trace under ROOT/<config>/<test>/")
    reg.add_argument("root")
    reg.add_argument("-j", "--jobs", type=int, default=1, help="parallel workers")
    reg.add_argument("--config", help="override the configuration of every trace")
    reg.add_argument("--json", help="write results as JSON to this file")
    reg.add_argument("--junit", help="write JUnit XML to this file")
    reg.set_defaults(func=cmd_regress)

    sub.add_parser("fp", help="evaluate one numerics primitive (nvdla-sim fp OP A [B])",
                   add_help=False)
    sub.add_parser("layout", help="convert .npy arrays to/from NVDLA memory images",
                   add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "fp":
            return cmd_fp(argv[1:])
        if argv and argv[0] == "layout":
            return cmd_layout(argv[1:])
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SimError as exc:
        print(f"nvdla-sim: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("nvdla-sim: interrupted", file=sys.stderr)
        return 130
    except (OSError, json.JSONDecodeError) as exc:
        print(f"nvdla-sim: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except Exception as exc:  # a simulator bug: one line, never a traceback
        print(f"nvdla-sim: internal error: {type(exc).__name__}: {exc} (please report)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
