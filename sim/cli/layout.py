"""``nvdla-sim layout``: convert .npy arrays to and from NVDLA memory images.

::

    nvdla-sim layout pack FORMAT IN.npy OUT.bin [options]
    nvdla-sim layout unpack FORMAT IN.bin OUT.npy --shape C,H,W [options]

FORMAT is ``feature``, a pixel format name of format.rst Table 33 (``T_R8``,
``T_A8B8G8R8``, ...), ``weight-dc``, ``weight-img``, ``weight-winograd``,
``bias``, ``prelu``, ``bn`` or ``ew``.  Arrays are C,H,W (feature and pixel
data; N,C,H,W for batches) and K,C,R,S for weights; operand arrays are C
(per channel) or C,H,W (per element), with a leading axis of 2 for two
components (BN).  The dtype follows the precision: int8, int16, float16.
Memory images are raw binary, or NVDLA record ``.dat`` files when the name
ends in ``.dat``.  Without stride options a feature cube is packed.
``weight-winograd`` packs K,C,4,4 transformed kernels, or transforms K,C,3,3
ones first.  Semi-planar pixel images hold the chroma plane right after
``height x line stride`` bytes of luma.

Foreign layouts (:mod:`sim.dma.foreign`): ``dvsdk`` (DMP DV700 network I/O,
fp16 C,H,W or D,C,H,W; DWHC, or DHWC with ``--transpose``) and
``kneron-4w4c8b``, ``kneron-1w16c8b``, ``kneron-16w1c8b`` (int8 C,H,W).
"""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

from ..configs import get_config
from ..dma import foreign, operands, pixel, weights
from ..dma.align import LayoutError
from ..dma.elements import infer_precision, to_elements, to_user
from ..dma.feature import pack_feature, unpack_feature
from ..errors import SimError
from ..limits import check_extent
from . import COMMAND_HELP, int_arg

WEIGHT_FORMATS = ("weight-dc", "weight-img", "weight-winograd")
OPERAND_FORMATS = ("bias", "prelu", "bn", "ew")
FOREIGN_FORMATS = tuple(foreign.FOREIGN_PRECISION)
HELP = COMMAND_HELP["layout"]


def _shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated shape") from None
    if not dims or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"shape {text!r} must have positive dimensions")
    return dims


def build_parser() -> argparse.ArgumentParser:
    writes = ("writes: OUTPUT: pack a memory image (raw binary, or record .dat when the name "
              "ends in .dat), unpack a .npy array")
    parser = argparse.ArgumentParser(prog="nvdla-sim layout",
                                     description=__doc__.splitlines()[0], epilog=writes)
    sub = parser.add_subparsers(dest="action", required=True)
    for action in ("pack", "unpack"):
        p = sub.add_parser(action, help=f"{action} an array {'to' if action == 'pack' else 'from'}"
                           " a memory image", epilog=writes)
        p.add_argument("format", help="feature, a pixel format, weight-*, bias, prelu, bn, ew, "
                       "dvsdk, kneron-4w4c8b, kneron-1w16c8b, kneron-16w1c8b")
        p.add_argument("input")
        p.add_argument("output")
        if action == "unpack":
            p.add_argument("--shape", type=_shape, required=True,
                           help="C,H,W (features, pixels), K,C,R,S (weights), C (per channel)")
        p.add_argument("--config", default="nv_full", help="hardware configuration")
        p.add_argument("--precision", choices=("int8", "int16", "fp16"))
        p.add_argument("--line-stride", type=int_arg)
        p.add_argument("--surface-stride", type=int_arg)
        p.add_argument("--batch-stride", type=int_arg)
        p.add_argument("--transpose", action="store_true",
                       help="dvsdk only: DHWC instead of DWHC")
        p.add_argument("--x-offset", type=int_arg, default=0, help="pixel X offset")
        p.add_argument("--uv-line-stride", type=int_arg, help="chroma plane line stride")
        p.add_argument("--post-extension", type=int, choices=(1, 2, 4), default=1,
                       help="weight-img channel post-extension")
        p.add_argument("--per-element", action="store_true", help="bias/ew: per-element data")
        p.add_argument("--data-size", type=int, choices=(1, 2), help="operand bytes/component")
        p.add_argument("--components", type=int, choices=(1, 2), help="operand components")
    return parser


# -- memory image files -------------------------------------------------------

def write_image(path: str, data: np.ndarray) -> None:
    """Raw binary, or a record .dat when ``path`` ends in .dat."""
    from ..files import write_atomically
    from ..memfiles import format_record_dat

    raw = np.asarray(data, dtype=np.uint8).tobytes()
    write_atomically(path, format_record_dat(raw) if path.endswith(".dat") else raw)


def read_image(path: str) -> np.ndarray:
    from ..memfiles import load_image

    return np.frombuffer(load_image(path), dtype=np.uint8)


def _load_npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise SimError(f"{path}: cannot read a .npy array ({exc})") from None


def _save_npy(path: str, array: np.ndarray) -> None:
    from ..files import write_atomically

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    write_atomically(path, buf.getvalue())


# -- per format ---------------------------------------------------------------

def _operand_fmt(args, precision: str):
    use = args.format
    per_element = args.per_element or use == "ew"
    return operands.operand_format(use, precision, args.data_size, args.components, per_element)


def _operand_user_dtype(fmt) -> np.dtype:
    if fmt.data_size == 1:
        return np.dtype(np.int8)
    return np.dtype(np.float16) if fmt.precision == "fp16" else np.dtype(np.int16)


def _pack(args, cfg, array: np.ndarray) -> np.ndarray:
    name = args.format
    if name == "feature":
        data, _ = pack_feature(array, cfg, precision=args.precision,
                               line_stride=args.line_stride, surface_stride=args.surface_stride,
                               batch_stride=args.batch_stride)
        return data
    if name in OPERAND_FORMATS:
        precision = args.precision or infer_precision(array)
        fmt = _operand_fmt(args, precision)
        data, _ = operands.pack_operand(array, fmt, cfg, line_stride=args.line_stride,
                                        surface_stride=args.surface_stride)
        return data
    if name in WEIGHT_FORMATS:
        precision = args.precision or infer_precision(array)
        if name == "weight-dc":
            return weights.pack_weight_dc(array, precision, cfg)
        if name == "weight-img":
            return weights.pack_weight_image(array, precision, cfg,
                                             post_extension=args.post_extension)
        if array.ndim == 4 and array.shape[2:] == (3, 3):
            array = weights.winograd_weights(array, precision)
        return weights.pack_weight_winograd(array, precision, cfg)
    fmt = pixel.pixel_format(name)
    strides = [args.line_stride, args.uv_line_stride][: fmt.planes]
    planes, layout = pixel.pack_pixels(array, fmt, strides, args.x_offset, cfg.atom_bytes)
    if fmt.planes == 1:
        return planes[0]
    luma = np.zeros(layout.height * layout.line_strides[0], dtype=np.uint8)
    luma[: planes[0].size] = planes[0]
    return np.concatenate([luma, planes[1]])


def _check_shape_fits(shape, data: np.ndarray) -> None:
    """Every layout stores an element in at least one byte: refuse, before allocating
    anything, a --shape the image cannot hold (a 2^31-wide cube, a typo)."""
    elements = int(np.prod([int(d) for d in shape], dtype=object))
    if elements > data.size:
        raise LayoutError(f"--shape {','.join(map(str, shape))} has {elements} elements; the "
                          f"image holds only {data.size} bytes")
    check_extent(elements, f"--shape {','.join(map(str, shape))}")


def _unpack(args, cfg, data: np.ndarray) -> np.ndarray:
    name, shape = args.format, args.shape
    _check_shape_fits(shape, data)
    if name == "feature":
        precision = args.precision or "int8"
        batch = shape[0] if len(shape) == 4 else 1
        strides = (args.line_stride, args.surface_stride, args.batch_stride)
        elems = unpack_feature(data, 0, shape[-3:], strides, cfg, precision=precision,
                               batch=batch)
        return to_user(elems, precision)
    if name in OPERAND_FORMATS:
        fmt = _operand_fmt(args, args.precision or "int8")
        dims = tuple(shape) + (1,) * (3 - len(shape))
        if len(shape) not in (1, 3):
            raise LayoutError(f"{name}: --shape must be C or C,H,W")
        comps = operands.unpack_operand(data, 0, fmt, *dims, cfg=cfg, line_stride=args.line_stride,
                                        surface_stride=args.surface_stride)
        return comps.view(_operand_user_dtype(fmt)) if fmt.dtype == np.uint16 else comps
    if name in WEIGHT_FORMATS:
        precision = args.precision or "int8"
        if len(shape) != 4:
            raise LayoutError(f"{name}: --shape must be K,C,R,S")
        if name == "weight-dc":
            elems = weights.unpack_weight_dc(data, shape, precision, cfg)
        elif name == "weight-img":
            elems = weights.unpack_weight_image(data, shape, precision, cfg,
                                                post_extension=args.post_extension)
        else:
            elems = weights.unpack_weight_winograd(data, shape, precision, cfg)
        return to_user(elems, precision)
    fmt = pixel.pixel_format(name)
    if len(shape) != 3:
        raise LayoutError(f"{name}: --shape must be C,H,W")
    pixel.check_pixel_setting(fmt, channels=shape[0])
    layout = pixel.pixel_layout(fmt, shape[2], shape[1], [args.line_stride, args.uv_line_stride],
                                args.x_offset, cfg.atom_bytes)
    addrs = [0, layout.height * layout.line_strides[0]][: fmt.planes]
    return pixel.unpack_pixels([data] * fmt.planes, fmt, shape[2], shape[1],
                               layout.line_strides, args.x_offset, addrs, cfg.atom_bytes)


def _prepare_input(args, array: np.ndarray) -> np.ndarray:
    """Check a feature/weight array against --precision (float16/uint16 mean fp16)."""
    precision = args.precision
    if not precision or args.format not in ("feature",) + WEIGHT_FORMATS:
        return array
    if precision == "fp16":
        if array.dtype.kind == "f":
            return array.astype(np.float16)
        if array.dtype != np.uint16:
            raise LayoutError(f"{args.format}: fp16 data must be float16 (or uint16 bit "
                              f"patterns), not {array.dtype}")
        return array
    if array.dtype.kind not in "iu":
        raise LayoutError(f"{args.format}: {precision} data must be integers, not {array.dtype}")
    return to_elements(array, precision)


def _run_foreign(args, name: str) -> int:
    """pack/unpack a DV-SDK or Kneron image (no hardware configuration involved)."""
    want = foreign.FOREIGN_PRECISION[name]
    if args.precision and args.precision != want:
        raise LayoutError(f"{name}: data are {want}, not --precision {args.precision}")
    if args.action == "pack":
        raw = foreign.pack_foreign(name, _load_npy(args.input), args.transpose)
        write_image(args.output, np.frombuffer(raw, dtype=np.uint8))
    else:
        data = read_image(args.input)  # foreign layouts compare sizes themselves
        check_extent(int(np.prod(args.shape, dtype=object)), f"--shape {args.shape}")
        _save_npy(args.output, foreign.unpack_foreign(name, data, args.shape,
                                                      args.transpose))
    return 0


def run(args) -> int:
    if args.format.lower() in FOREIGN_FORMATS:
        return _run_foreign(args, args.format.lower())
    cfg = get_config(args.config)
    if args.action == "pack":
        array = _prepare_input(args, _load_npy(args.input))
        if args.precision or args.format in ("feature",) + WEIGHT_FORMATS:
            cfg.require_precision(args.precision or infer_precision(array), f"{args.input}")
        write_image(args.output, _pack(args, cfg, array))
    else:
        if args.precision:
            cfg.require_precision(args.precision, f"--precision {args.precision}")
        _save_npy(args.output, _unpack(args, cfg, read_image(args.input)))
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``nvdla-sim layout``; returns the exit status (2: invalid input)."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except SimError as exc:
        print(f"nvdla-sim layout: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"nvdla-sim layout: error: {exc}", file=sys.stderr)
        return 2
