"""``nvdla-sim loadable``: run a compiled network with NVIDIA's KMD firmware."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import SimError
from . import COMMAND_HELP, count_arg, parse_args

HELP = COMMAND_HELP["loadable"]
#: races between layers printed one by one, at most (a split deconvolution makes several)
RACES_SHOWN = 5


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nvdla-sim loadable", description=HELP,
        epilog="writes: OUTDIR/o_00000i.dimg for output tensor i (NVIDIA's runtime format) and, "
               "with --trace-out, a replayable .cfg trace with its memory files beside it; a "
               "progress bar per task on a terminal (a line per task otherwise) on stderr; "
               "exit 0 success, 1 the firmware reports a task failure, 2 invalid input")
    p.add_argument("loadable", help="the loadable (flatbuffer) NVIDIA's compiler wrote")
    p.add_argument("--firmware", required=True, metavar="KMD_DIR",
                   help="KMD source folder (firmware/*.c, firmware/include/, include/)")
    p.add_argument("--config", default="nv_full", help="hardware configuration (nv_full)")
    p.add_argument("--input", metavar="FILE",
                   help="input tensor 0's raw buffer, exactly the size the loadable declares "
                        "for it (default: zeros, as NVIDIA's runtime leaves an unbound input)")
    p.add_argument("--image", metavar="FILE.pgm",
                   help="input tensor 0 from a binary PGM image, converted as NVIDIA's runtime "
                        "does (--mean, --normalize)")
    p.add_argument("--mean", type=float, default=0.0, help="value subtracted from each pixel")
    p.add_argument("--normalize", type=count_arg(1), default=1,
                   help="divisor of each pixel (fp16), >= 1")
    p.add_argument("--trace-out", metavar="FILE.cfg", help="record the run as a .cfg trace")
    p.add_argument("--trace-memory", choices=("dat", "bin"), default=None,
                   help="with --trace-out, the memory files as record .dat text (the default: "
                        "NVIDIA's C-model and RTL benches read it) or as raw .bin bytes, "
                        "which nvdla-sim run and rtl read (a quarter of the size, much "
                        "faster)")
    p.add_argument("--layers", metavar="DIR",
                   help="write every hardware layer's output cube to DIR as layerNNN_UNIT.npy "
                        "(int8/int16, or float16 for fp16) with a summary line per layer in "
                        "DIR/layers.txt")
    p.add_argument("--dimg", choices=("regression", "current"), default="regression",
                   help="whose .dimg packing the outputs get: regression (default), the runtime "
                        "of NVIDIA's regression goldens and of the shared networks' expected "
                        "outputs (int8 in groups of 32 channels on every configuration); "
                        "current, NVIDIA's current runtime (nv_small's int8 FEATURE_X8 "
                        "outputs in groups of 8, its newer format codes)")
    p.add_argument("-o", "--out-dir", required=True, metavar="OUTDIR")
    p.add_argument("--force", action="store_true",
                   help="replace OUTDIR (and the --layers DIR) if it exists")
    return p


def _input(path: str | None, loadable) -> dict[int, bytes]:
    """Input tensor 0's buffer from ``path``: the tensor's raw bytes, whole."""
    if path is None:
        return {}
    from ..runtime.runner import input_tensor

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SimError(f"{path}: cannot read ({exc.strerror})") from None
    if data[:4] == b"DIMG":
        raise SimError(f"{path}: a .dimg file holds packed elements; give input tensor 0's raw "
                       f"buffer")
    tensor = input_tensor(loadable, 0)
    if len(data) != tensor.size:
        n, c, h, w = tensor.dims
        raise SimError(f"{path}: {len(data)} bytes, but input tensor 0 ({tensor.name!r}, "
                       f"{n}x{c}x{h}x{w}) is a {tensor.size}-byte buffer")
    return {0: data}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _check_output_folder(folder: str) -> None:
    """An output folder is created or replaced only if it holds nothing of the user's."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise SimError(f"{folder}: exists and is not a folder; name a new or empty folder "
                       f"(or pass --force to replace it)")
    if path.is_dir() and any(path.iterdir()):
        raise SimError(f"{folder}: folder is not empty; name a new or empty folder (or pass "
                       f"--force to replace it)")


def main(argv: list[str]) -> int:
    args = parse_args(build_parser(), argv)
    if args.trace_memory and not args.trace_out:
        raise SimError("--trace-memory says how --trace-out writes memories: give --trace-out")

    from ..configs import get_config
    from ..files import write_folder_atomically
    from ..runtime import read_loadable, run_loadable_bytes
    from ..runtime.dimg import DATA_TYPE_HALF
    from ..runtime.heap import keep_freed_memory
    from . import ONE_COMMAND_PROCESS

    get_config(args.config)
    if ONE_COMMAND_PROCESS:  # the process runs this one network, then ends
        keep_freed_memory()
    loadable = read_loadable(args.loadable)
    if any(t.data_type == DATA_TYPE_HALF for t in loadable.tensors):
        # fp16 layers run numba's kernels: numba comes in while the firmware starts
        from ..jit import prepare_numba_in_background

        prepare_numba_in_background()
    inputs = _input(args.input, loadable)
    if args.image:
        from ..runtime.image import image_to_tensor, read_pgm
        from ..runtime.runner import input_tensor

        inputs[0] = image_to_tensor(read_pgm(args.image), input_tensor(loadable, 0),
                                    (args.mean,) * 4, args.normalize)
    for folder in filter(None, (args.out_dir, args.layers)):
        if not args.force:
            _check_output_folder(folder)
    layers = None
    if args.layers:
        from ..runtime.layers import LayerOutputs

        layers = LayerOutputs()
    result = run_loadable_bytes(loadable, args.firmware, args.config, inputs, args.trace_out,
                                progress=sys.stderr, layers=layers,
                                trace_memory=args.trace_memory or "dat", dimg=args.dimg)
    if result.notes:
        print(f"note: {len(result.notes)} dependency link(s) between DLA tasks made task-local "
              f"(NVIDIA's compiler chains engines across tasks; see the README)",
              file=sys.stderr)
    for race in result.races[:RACES_SHOWN]:
        print(f"warning: {race}", file=sys.stderr)
    if len(result.races) > RACES_SHOWN:
        print(f"warning: ... and {len(result.races) - RACES_SHOWN} more such pairs of layers",
              file=sys.stderr)
    if result.races:
        print("warning: the outputs hold the layers' results computed one after the other; "
              "NVDLA's bytes there depend on timing (see the README)", file=sys.stderr)
        if args.trace_out:
            print(f"warning: {args.trace_out} records these layers as enabled: `nvdla-sim "
                  f"run` stops it at the first race (a trace's expectations must not depend "
                  f"on timing)", file=sys.stderr)
    files = {f"o_{i:06d}.dimg": data for i, data in enumerate(result.dimgs)}
    write_folder_atomically(args.out_dir, files)
    if layers is not None:
        write_folder_atomically(args.layers, layers.files())
        for out in layers.outputs:
            print(out.summary())
    print(f"{Path(args.loadable).name}: {_count(result.tasks, 'task')}, "
          f"{_count(result.hw_layers, 'hardware layer')}, {_count(result.macs, 'MAC')}, "
          f"{_count(len(files), 'output')} in {args.out_dir} ({result.seconds:.2f}s)")
    return 0
