"""``nvdla-sim``: run traces, regressions, numerics and layout tools.

One module per subcommand (``sim/cli/<name>.py``), each with ``HELP`` and
``main(argv) -> int``, a thin wrapper over a public Python function.  Exit
status: 0 success, 1 a check failed, 2 invalid input (one-line error),
3 an internal error of the simulator.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys

from ..errors import SimError

EXIT_OK, EXIT_FAIL, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
#: Allocations between the cycle collector's youngest-generation runs in a command's
#: process (Python's default: 700), see :func:`console`.
RARE_COLLECTIONS = 100_000
#: set by :func:`console`: this process runs one command, then ends (a command may then
#: tune process-wide state for itself; called as a function, :func:`main` leaves it alone)
ONE_COMMAND_PROCESS = False

# subcommand -> module under sim.cli (imported only when that command runs)
SUBCOMMANDS = {
    "run": "run",
    "regress": "regress",
    "diff": "diff",
    "gen": "gen",
    "fp": "fp",
    "layout": "layout",
    "loadable": "loadable",
    "rtl": "rtl",
}
# subcommand -> its one-line help (the module's HELP): here, so that the list of
# commands imports none of them
COMMAND_HELP = {
    "run": "run a trace (folder or file), or the bundled examples",
    "regress": "run every trace under ROOT/<config>/<test>/",
    "diff": "compare the memory a device produced with a trace and localise differences",
    "gen": "generate a trace folder (registers, inputs, expected results) from a layer spec",
    "fp": "evaluate one numerics primitive on raw bit patterns",
    "layout": "convert .npy arrays to/from NVDLA memory images",
    "loadable": "run a compiled network (loadable) with NVIDIA's KMD firmware",
    "rtl": "run a trace on an RTL testbench (NVIDIA's Verilated VNV_nvdla) and judge each check",
}


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse a subcommand's arguments (argparse exits 2 on a usage error)."""
    return parser.parse_args(argv)


def int_arg(text: str) -> int:
    """An argparse type: a decimal or 0x/0b/0o integer."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def count_arg(minimum: int):
    """An argparse type: a decimal integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value

    return parse


def _module(name: str):
    return importlib.import_module(f"{__name__}.{SUBCOMMANDS[name]}")


def _usage() -> str:
    lines = ["usage: nvdla-sim COMMAND [ARGS]  (nvdla-sim COMMAND --help for its options)",
             "", "commands:"]
    for name in SUBCOMMANDS:
        lines.append(f"  {name:10} {COMMAND_HELP[name]}")
    return "\n".join(lines)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvdla-sim")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] in ("-V", "--version"):
        print(f"nvdla-sim {_version()}")
        return EXIT_OK
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return EXIT_OK if argv else EXIT_INVALID
    if argv[0] not in SUBCOMMANDS:
        raise SimError(f"unknown command {argv[0]!r} (one of: {', '.join(SUBCOMMANDS)})")
    return _module(argv[0]).main(argv[1:])


def _bad_json(exc: Exception) -> bool:
    """``exc`` is a json.JSONDecodeError: invalid input (json is not imported here: only
    a command that reads JSON has it, and only such a command raises it)."""
    json = sys.modules.get("json")
    return json is not None and isinstance(exc, json.JSONDecodeError)


def console() -> None:
    """The ``nvdla-sim`` command (and ``python -m sim.cli``): :func:`main`, then the process
    ends at once, its output flushed.

    By then the command has written its files and closed the firmware's process: what is
    left is the interpreter's teardown, which frees every array and module one by one
    (35-70 ms after a ResNet-50, a tenth of the run).  An exception, or argparse's exit,
    takes the ordinary way out.

    The cycle collector runs rarely: a command's objects are mostly acyclic, and at the
    default thresholds it ran a hundred times over the modules, decoded layers and
    arrays of a ResNet-50's first run (12-16 ms, 2% of it).  The process ends soon
    after, so what little cyclic garbage it leaves costs nothing.
    """
    global ONE_COMMAND_PROCESS
    ONE_COMMAND_PROCESS = True
    gc.set_threshold(RARE_COLLECTIONS)
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stream: nothing more can be said
        pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()  # what the interpreter's exit would flush
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # numpy's BLAS would run its own threads, which spin on the cores for a while after
    # every matrix product -- the firmware's process and the next unit's threads then
    # wait for a core; the simulator splits its products over its own threads instead
    # (a user's own setting wins; it takes effect only before numpy loads)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        return _dispatch(argv)
    except SimError as exc:
        print(f"nvdla-sim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("nvdla-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader (head, less) went away: stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        print(f"nvdla-sim: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except Exception as exc:  # a simulator bug: one line, never a traceback
        if _bad_json(exc):
            print(f"nvdla-sim: error: {exc}", file=sys.stderr)
            return EXIT_INVALID
        print(f"nvdla-sim: internal error: {type(exc).__name__}: {exc} (please report)",
              file=sys.stderr)
        return EXIT_INTERNAL
