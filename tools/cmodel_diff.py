"""Differential fuzzing against NVIDIA's nv_full C-model: random ``nvdla-sim gen`` specs.

    python tools/cmodel_diff.py --player TP [--count 500] [--seed 1] [--out DIR]
                                [--only conv,sdp,...] [--spec FILE ...] [--config NAME]

Each random spec (every unit and mode gen supports: direct/Winograd/batched convolutions
and image input in all 36 pixel formats (convertor, X offset, mean, sign override) with
SDP and PDP on the fly, SDP X1/X2/Y with operands from registers or memory, LUT tables
(modes, ranges, named or random entries, slopes, priorities), PReLU and convertors, PDP
(column splits too), CDP (fp16 too, its LUT as the SDP's), BDMA, Rubik, chains of layers;
int8, int16, fp16; data and weights pushed toward saturation, extreme exponents and fp16
specials) is generated in this process (for ``--config``, default nv_full: its precisions
and units only; a master-map configuration needs that configuration's C-model and
``--regs-header`` its opendla.h), so the expected CRCs and counters are this simulator's, written
as a ``.cfg`` trace and replayed on the C-model's trace player TP through
``<shared>/cmodel/harness/tp.py`` (niced: it is a guest on a shared machine).  A spec gen
refuses is counted, not run.  Any check the C-model fails is a disagreement: the spec, the
trace and the C-model's output are kept under ``DIR/fail/<name>/``; ``DIR/log.jsonl`` has a
line per spec.  Nothing here builds or ships the C-model, and no test needs it.

Known places where we follow NVIDIA's RTL and the C-model does not (a disagreement there is
reported as ``known``, not as a failure):

* SDP_RDMA's D_STATUS_NAN/INF_INPUT_NUM: the RTL latches them in the RDMA's own register
  group, the C-model in the SDP core's (they differ after a fused layer that used no RDMA);
* on the master address map (nv_large, nv_small): CDP D_OUT_SATURATION, which the master RTL
  ties to 0, and SDP D_PERF_OUT_SATURATION, where the RTL flags every saturated result and the
  C-model fewer (checked on nv_small's RTL);
* (refused by gen, not drawn) 10/12/16-bit pixel formats on the master map: the
  master RTL's CDMA builds only the 8-bit ones where FEATURE_DATA_TYPE_INT8 is defined (every
  master project), nv_small's RTL reads other pixels, and the master C-models stop on a
  SIGFPE (a super-atom ratio of 0: a 16-bit atom wider than the memory bus);
* int8 average pooling with a padding value past int8, whose sums leave the RTL's 11/14-bit
  accumulators (:func:`sim.pdp.pooling._int8_average`): the C-model's wider sums give other
  bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.configs import CONFIGS  # noqa: E402
from sim.dma.pixel import PIXEL_FORMATS, max_x_offset, pixel_format  # noqa: E402
from sim.errors import SimError  # noqa: E402
from sim.gen import generate  # noqa: E402

PRECISIONS = ("int8", "int16", "fp16")
SPECIALS = ["nan", "inf", "-inf", "denormal", "max", "-max", "zero"]
IMAGE_FORMATS = list(PIXEL_FORMATS)  # format.rst Table 33: all 36
# SDP_RDMA D_STATUS_NAN_INPUT_NUM / D_STATUS_INF_INPUT_NUM on the nvdlav1 address map
RDMA_NAN_INF = ("addr=0x0000a078", "addr=0x0000a07c")
# polls of known RTL/C-model differences per address map: master CDP D_OUT_SATURATION and
# SDP D_PERF_OUT_SATURATION
KNOWN_POLLS = {"nvdlav1": RDMA_NAN_INF, "master": ("addr=0x0000d098", "addr=0x000090ec")}
UNIT_WEIGHTS = {"conv": 5, "sdp": 4, "pdp": 3, "cdp": 2, "bdma": 1, "rubik": 1, "chain": 2}


# -- random specs ---------------------------------------------------------------------------

def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"


def to_toml(seed: int, layers: list[dict], config: str = "nv_full") -> str:
    lines = [f'config = "{config}"', f"seed = {seed}", ""]
    for layer in layers:
        lines += ["[[layer]]", *(f"{k} = {_toml_value(v)}" for k, v in layer.items()), ""]
    return "\n".join(lines)


def _cube(r, cmax=40, hmax=10, wmax=12) -> list[int]:
    if r.random() < 0.25:  # now and then several atoms, lines and CBUF banks
        cmax, hmax, wmax = cmax * 4, hmax * 3, wmax * 3
    return [r.randint(1, cmax), r.randint(1, hmax), r.randint(1, wmax)]


def _data(r, precision: str) -> dict:
    """A data/weights table, pushed toward the edges now and then."""
    d: dict = {}
    if precision == "fp16":
        if r.random() < 0.35:
            d["specials"] = r.sample(SPECIALS, r.randint(1, 4))
            d["fraction"] = r.choice([0.01, 0.05, 0.2, 0.5])
        x = r.random()
        if x < 0.15:
            big = r.choice([100.0, 1000.0, 30000.0, 65000.0])
            d["low"], d["high"] = -big, big
        elif x < 0.3:
            tiny = r.choice([1e-3, 1e-5, 6e-8])
            d["low"], d["high"] = -tiny, tiny
        return d
    top = 127 if precision == "int8" else 32767
    x = r.random()
    if x < 0.3:
        d["low"], d["high"] = -top - 1, top
    elif x < 0.4:
        d["low"], d["high"] = top - 5, top
    return d


def _cvt(r, precision: str, out_precision: str | None):
    if r.random() < 0.5:
        return None
    offset = r.randint(-1000, 1000) if r.random() < 0.7 else r.randint(-(1 << 20), 1 << 20)
    scale = r.choice([1, 1, 2, 3, -1, 255, r.randint(-32768, 32767)])
    shift = r.choice([0, 1, 2, 5, 8, 16, r.randint(0, 31)])
    if precision == "fp16" and (out_precision or precision) == "fp16":
        shift = r.choice([0, shift])
    return [offset, scale, shift]


def _operand(r, precision: str, bits: int = 16):
    if precision == "fp16":
        return r.choice([0.5, -1.25, 2.0, 0.0, 3.140625, -65504.0, 1e-4, 100.0,
                         round(r.uniform(-8, 8), 3)])
    top = (1 << (bits - 1)) - 1
    if precision == "int8" and r.random() < 0.7:
        return r.randint(-128, 127)
    return r.choice([r.randint(-300, 300), r.randint(-top - 1, top), top, -top - 1])


def _stage(r, precision: str, key: str) -> dict:
    bits = 32 if key == "y" else 16
    t: dict = {}
    if r.random() < 0.6:
        t["alu"] = r.choice(["sum", "max", "min"])
        t["alu_operand"] = "memory" if r.random() < 0.4 else _operand(r, precision, bits)
        if key != "y" and r.random() < 0.3:
            t["alu_shift"] = r.randint(0, 10)
    if r.random() < 0.6:
        t["mul"] = "memory" if r.random() < 0.4 else _operand(r, precision, bits)
        if r.random() < 0.5:
            t["mul_shift"] = r.randint(0, 12)
        if key != "y" and r.random() < 0.25:
            t["prelu"] = True
    if key != "y" and r.random() < 0.4:
        t["relu"] = True
    if key == "y" and r.random() < 0.3:
        t["lut"] = True if r.random() < 0.3 else _lut(r, precision, "sdp")
    return t


def _lut(r, precision: str, unit: str, window: int = 5) -> dict:
    """A random ``lut`` table (sim.gen.lut): modes, ranges around the data's, index
    selects and offsets, named or random tables, slopes, priorities; each key now and then."""
    fp16 = precision == "fp16"
    if unit == "sdp" and fp16:
        lo_start = r.choice([-8.0, -2.0, 0.0, -100.0, round(r.uniform(-50, 0), 3)])
        le_start, sel_range, off_range = lo_start, (-8, 8), (-20, 20)
    elif fp16:  # CDP: square sums from 0
        lo_start = 0.0 if r.random() < 0.7 else round(r.uniform(0, 100), 2)
        le_start, sel_range, off_range = 0.0, (-10, 10), (-20, 30)
    elif unit == "sdp":
        k = r.randint(2, 14) if precision == "int8" else r.randint(10, 22)
        lo_start = -(1 << k) + r.randint(-50, 50)
        le_start, sel_range, off_range = lo_start, (0, k + 1), (-20, 20)
    else:
        bits = 9 if precision == "int8" else 17
        top = max(1, window * (1 << (bits - 1)) ** 2 >> r.randint(0, 12))
        lo_start = 0 if r.random() < 0.7 else r.randint(0, top // 4)
        le_start = 0
        sel_range = (0, min((top >> 6).bit_length() + 2, 31 if precision == "int8" else 63))
        off_range = (-20, 30)
    lut: dict = {}
    for name in ("le", "lo"):
        t: dict = {}
        exponent = name == "le" and r.random() < 0.5
        if exponent:
            t["mode"] = "exponent"
            if r.random() < 0.8:
                t["index_offset"] = r.randint(*off_range)
        elif r.random() < 0.8:
            t["index_select"] = r.randint(*sel_range)
        if r.random() < 0.8:
            t["start"] = le_start if name == "le" and (exponent or r.random() < 0.5) \
                else lo_start
        if r.random() < 0.2 and "start" in t:
            t["end"] = t["start"] + (r.uniform(0.5, 500) if fp16 else r.randint(1, 1 << 16))
        x = r.random()
        count = 65 if name == "le" else 257
        if x < 0.4:
            t["table"] = r.choice(["identity", "exp", "log", "tanh", "sigmoid", "recip",
                                   "rsqrt", "lrn"])
            t["x_scale"] = r.choice([1.0, 0.5, 0.01, 1e-4, 4.0])
            t["y_scale"] = r.choice([1.0, 2.0, 0.25] if fp16 else [1.0, 100.0, 3000.0, 30000.0])
        elif x < 0.8:
            if fp16:
                t["table"] = [round(r.uniform(-4, 4), 4) if r.random() < 0.97
                              else r.choice([float("inf"), float("-inf"), float("nan")])
                              for _ in range(count)]
            else:
                t["table"] = [r.randint(-32768, 32767) for _ in range(count)]
        if r.random() < 0.5:
            t["slopes"] = {side: round(r.uniform(-2, 2), 3) if fp16 else
                           [r.choice([0, 1, -1, r.randint(-32768, 32767)]), r.randint(-16, 15)]
                           for side in ("uflow", "oflow") if r.random() < 0.8}
        if t:
            lut[name] = t
    if r.random() < 0.6:
        lut["priority"] = {side: r.choice(["le", "lo"]) for side in ("uflow", "oflow", "hybrid")}
    return lut


def sdp_layer(r, precision: str, source=None) -> dict:
    layer = {"unit": "sdp", "precision": precision, "input": source or _cube(r)}
    if source is None and (d := _data(r, precision)):
        layer["data"] = d
    for key in ("x1", "x2", "y"):
        if r.random() < 0.55 and (t := _stage(r, precision, key)):
            layer[key] = t
    if r.random() < 0.4:
        layer["out_precision"] = r.choice(PRECISIONS)
    if c := _cvt(r, precision, layer.get("out_precision")):
        layer["cvt"] = c
    if precision == "fp16" and r.random() < 0.3:
        layer["nan_to_zero"] = True
    return layer


def _pooling(r, precision: str, shape=None) -> dict:
    kh, kw = r.randint(1, 8), r.randint(1, 8)
    if shape is not None:
        kh, kw = min(kh, shape[1]), min(kw, shape[2])
    p: dict = {"method": r.choice(["max", "min", "average"]), "kernel": [kh, kw]}
    if r.random() < 0.6:
        p["stride"] = [r.randint(1, min(kh + 2, 16)), r.randint(1, min(kw + 2, 16))]
    if r.random() < 0.5:
        p["pad"] = [r.randint(0, min(kw - 1, 7)), r.randint(0, min(kw - 1, 7)),
                    r.randint(0, min(kh - 1, 7)), r.randint(0, min(kh - 1, 7))]
        if precision != "fp16" and r.random() < 0.6:
            p["pad_value"] = r.choice([-20, 5, -128, 127, r.randint(-32768, 32767)])
    return p


def pdp_layer(r, precision: str, source=None) -> dict:
    shape = source or _cube(r, 40, 14, 16)
    split = source is None and r.random() < 0.35
    if split and r.random() < 0.6:  # wide: several splits of the line buffer
        shape[2] = r.randint(17, 400)
    layer = {"unit": "pdp", "precision": precision, "input": shape,
             **_pooling(r, precision, None if source else shape)}
    if split:
        layer["split"] = _split(r, layer)
    if source is None and (d := _data(r, precision)):
        layer["data"] = d
    if precision == "fp16" and r.random() < 0.3:
        layer["nan_to_zero"] = True
    return layer


def _split(r, layer: dict):
    """A PDP layer's ``split``: "auto", a number of splits or explicit output columns."""
    kw = layer["kernel"][1]
    sw = layer.get("stride", layer["kernel"])[1]
    left, right = layer.get("pad", [0, 0, 0, 0])[:2]
    out_w = (layer["input"][2] + left + right - kw) // sw + 1
    x = r.random()
    if x < 0.3 or out_w < 2:
        return "auto"
    if x < 0.65:
        return r.randint(2, min(out_w, 8))
    first = r.randint(1, out_w - 1)
    if out_w - first < 3 or r.random() < 0.4:
        return [first, out_w - first]
    mid = r.randint(1, max(1, (out_w - first - 1) // 2))
    return [first, mid, out_w - first - mid * ((out_w - first - 1) // mid)]


def cdp_layer(r, precision: str, source=None) -> dict:
    layer = {"unit": "cdp", "precision": precision, "input": source or _cube(r, 40, 6, 6),
             "window": r.choice([3, 5, 7, 9])}
    if precision != "fp16":  # fp16 data pass the convertors unchanged
        if r.random() < 0.6:
            layer["datin"] = [r.randint(-20, 20), r.choice([1, 2, 3, 7, 100]),
                              r.randint(0, 6)]
        if r.random() < 0.7:
            layer["datout"] = [r.randint(-100, 100), r.choice([1, 3, 17, 255, 1000]),
                               r.randint(0, 30)]
    elif r.random() < 0.3:
        layer["nan_to_zero"] = True
    if r.random() < 0.6:
        layer["lut"] = _lut(r, precision, "cdp", layer["window"])
    for key in ("sqsum_bypass", "mul_bypass"):
        if r.random() < 0.2:
            layer[key] = True
    if source is None and (d := _data(r, precision)):
        layer["data"] = d
    return layer


def bdma_layer(r, precision: str) -> dict:
    return {"unit": "bdma", "line_bytes": 32 * r.randint(1, 8), "lines": r.randint(1, 6),
            "surfaces": r.randint(1, 4), "src": r.choice(["mc", "cv"]),
            "dst": r.choice(["mc", "cv"])}


def rubik_layer(r, precision: str) -> dict:
    mode = r.choice(["contract", "split", "merge"])
    layer = {"unit": "rubik", "mode": mode, "precision": precision, "input": _cube(r, 40, 5, 8)}
    if mode == "contract":
        layer["stride"] = [r.randint(1, 4), r.randint(1, 4)]
    if r.random() < 0.3:
        layer["src"], layer["dst"] = r.choice(["mc", "cv"]), r.choice(["mc", "cv"])
    return layer


def conv_layer(r, precision: str, hw=None) -> dict:
    mode = r.choices(["direct", "winograd", "image"], [6, 2, 2])[0]
    layer: dict = {"unit": "conv", "precision": precision}
    if mode == "image":
        # only the pixel formats ``hw``'s CDMA reads (the 8-bit ones on an int8-only RTL)
        fmt = pixel_format(r.choice([f for f in IMAGE_FORMATS if (precision == "fp16"
                                     or PIXEL_FORMATS[f].precision != "fp16"
                                     and (precision == "int16" or f != "T_R16_F"))
                                     and (hw is None or hw.supports(PIXEL_FORMATS[f].precision))]))
        layer.update(mode="image", pixel_format=fmt.name,
                     input=[fmt.channels, r.randint(3, 12), r.randint(3, 14)])
        layer.update(_pixels(r, fmt, precision, hw.atom_bytes if hw else 32))
    elif mode == "winograd":
        layer.update(mode="winograd", kernel=[3, 3],
                     input=[r.randint(1, 40), r.randint(2, 12), r.randint(2, 12)])
    else:
        layer["input"] = _cube(r, 48, 10, 12)
    layer["kernels"] = r.choice([1, 2, 7, 8, 16, 17, 33, r.randint(1, 70)])
    if mode != "winograd":
        kh = r.randint(1, min(5, layer["input"][1]))
        kw = r.randint(1, min(5, layer["input"][2]))
        layer["kernel"] = [kh, kw]
        if r.random() < 0.4:
            layer["stride"] = [r.randint(1, 4), r.randint(1, 4)]
        if mode == "direct" and r.random() < 0.25:
            layer["dilation"] = [r.randint(1, 3), r.randint(1, 3)]
        if r.random() < 0.5:
            layer["pad"] = [r.randint(0, kw - 1), r.randint(0, kw - 1), r.randint(0, kh - 1),
                            r.randint(0, kh - 1)]
    if r.random() < 0.4:
        layer["pad_value"] = r.randint(-128, 127) if precision == "int8" \
            else _operand(r, precision)
    if mode == "direct" and r.random() < 0.2:
        layer["batch"] = r.randint(2, 4)
    if mode != "image" and (d := _data(r, precision)):
        layer["data"] = d
    if r.random() < 0.5 and (w := _data(r, precision)):
        layer["weights"] = w
    if precision != "fp16" and r.random() < 0.3:
        layer["truncate"] = r.randint(0, 20)
    if precision == "fp16" and r.random() < 0.2:
        layer["nan_to_zero"] = True
    sdp: dict = {}
    if r.random() < 0.5:
        sdp["bias"] = _operand(r, precision)
    if r.random() < 0.3:
        sdp["mul"] = _operand(r, precision)
        if r.random() < 0.5:
            sdp["mul_shift"] = r.randint(0, 10)
    if r.random() < 0.4:
        sdp["relu"] = True
    if r.random() < 0.3:
        sdp["out_precision"] = r.choice(PRECISIONS)
    if c := _cvt(r, precision, sdp.get("out_precision")):
        sdp["cvt"] = c
    if sdp:
        layer["sdp"] = sdp
    if r.random() < 0.3 and mode != "winograd" and layer.get("batch", 1) == 1:
        layer["pdp"] = _fly_pooling(r, precision, layer)
    return layer


def _pixels(r, fmt, precision: str, atom_bytes: int = 32) -> dict:
    """An image layer's pixel keys: convertor, X offset, mean, sign override, value range."""
    keys: dict = {}
    fp16 = fmt.dtype.kind == "f"
    raw_fp16 = fp16 and precision == "fp16" and fmt.precision != "fp16"
    if not raw_fp16 and (fmt.precision != precision or r.random() < 0.6):
        keys["pixel_cvt"] = [r.randint(-300, 300), r.choice([1, 2, 3, 255,
                                                              r.randint(-32768, 32767)]),
                             r.randint(0, 16)]
    elif fmt.precision == precision and r.random() < 0.3:
        keys["pixel_cvt"] = False
    if r.random() < 0.5:
        keys["pixel_offset"] = r.randint(0, max_x_offset(fmt, atom_bytes))
    if r.random() < 0.4:
        keys["mean"] = [round(r.uniform(-4, 4), 3) if fp16 else r.randint(0, 0xFFFF)
                        for _ in range(4)]
    if r.random() < 0.3:
        keys["pixel_sign_override"] = True
    if fp16 and precision == "fp16" and r.random() < 0.3:
        keys["data"] = {"specials": r.sample(SPECIALS, r.randint(1, 3)), "fraction": 0.05}
    elif not fp16 and r.random() < 0.2:
        keys["data"] = {"low": 0, "high": r.choice([3, 100, 255, 1023, 4095])}
    return keys


def _fly_pooling(r, precision: str, conv: dict) -> dict:
    """Pooling on the fly whose windows tile the convolution's output (pdp.flying_windows_tile:
    the padded output less the kernel a multiple of the stride)."""
    _, h, w = conv["input"]
    kh, kw = conv.get("kernel", [3, 3])
    sy, sx = conv.get("stride", [1, 1])
    dy, dx = conv.get("dilation", [1, 1])
    left, right, top, bottom = conv.get("pad", [0, 0, 0, 0])
    out = [max(1, (h + top + bottom - (kh - 1) * dy - 1) // sy + 1),
           max(1, (w + left + right - (kw - 1) * dx - 1) // sx + 1)]
    kernel, stride, pad = [], [], [[0, 0], [0, 0]]
    for axis, size in enumerate(out):
        k = r.randint(1, min(8, size + 2))
        step = r.randint(1, k)
        extra = (-(size - k)) % step if size >= k else k - size
        before = min(r.randint(0, extra), k - 1)
        after = extra - before
        if after > k - 1 or (size + before + after - k) % step:
            k, step, before, after = 1, 1, 0, 0  # no tiling with this draw: 1x1 windows
        kernel.append(k)
        stride.append(step)
        pad[axis] = [before, after]
    p = {"method": r.choice(["max", "min", "average"]), "kernel": kernel, "stride": stride,
         "pad": [pad[1][0], pad[1][1], pad[0][0], pad[0][1]]}
    if precision != "fp16" and r.random() < 0.5:
        p["pad_value"] = r.choice([-20, 5, -128, 127])
    return p


BUILDERS = {"conv": conv_layer, "sdp": sdp_layer, "pdp": pdp_layer, "cdp": cdp_layer,
            "bdma": bdma_layer, "rubik": rubik_layer}


def random_spec(r, only=None, config: str = "nv_full") -> str:
    hw = CONFIGS[config]
    # units the configuration lacks are never drawn (conv, sdp and chains always exist)
    units = [u for u in UNIT_WEIGHTS if (not only or u in only) and getattr(hw, u, True)]
    unit = r.choices(units, [UNIT_WEIGHTS[u] for u in units])[0]
    precision = r.choice([p for p in PRECISIONS if hw.supports(p)])
    seed = r.randint(0, 10 ** 6)
    if unit == "conv":
        return to_toml(seed, [conv_layer(r, precision, hw)], config)
    if unit != "chain":
        return to_toml(seed, [BUILDERS[unit](r, precision)], config)
    layers = [conv_layer(r, precision, hw) if r.random() < 0.6 else sdp_layer(r, precision)]
    for i in range(1, r.randint(2, 3)):
        layers.append(BUILDERS[r.choice(["sdp", "pdp", "cdp"])](r, precision, f"l{i - 1}"))
    for i, layer in enumerate(layers):
        layer["name"] = f"l{i}"
    return to_toml(seed, layers, config)


# -- the C-model side -----------------------------------------------------------------------

def replay(trace: Path, player: Path, harness: Path, header: Path | None, out: Path,
           timeout: float, known_polls=RDMA_NAN_INF) -> tuple[list[str], list[str]]:
    """(disagreements, known C-model/RTL differences) of ``trace`` replayed on ``player``."""
    args = ["nice", "-n", "19", sys.executable, str(harness), str(trace), "--player",
            str(player), "-o", str(out), "--timeout", str(timeout)]
    if header is not None:
        args += ["--regs-header", str(header)]
    result_file = out / "result.json"
    result_file.unlink(missing_ok=True)  # an interrupted earlier run's must not be read
    subprocess.run(args, env=dict(os.environ, SC_SIGNAL_WRITE_CHECK="DISABLE"),
                   capture_output=True, text=True)
    if not result_file.is_file():
        return ["the harness wrote no result.json"], []
    res = json.loads(result_file.read_text())
    bad, known = [], []
    if res.get("error"):
        bad.append(f"error: {res['error']}")
    if not res.get("trace_done"):
        bad.append("the trace did not run to its end")
    if res.get("wait_timeouts"):
        bad.append(f"{res['wait_timeouts']} interrupt(s) never came")
    for line in res.get("mismatches", []):
        (known if any(a in line for a in known_polls) else bad).append(f"poll {line}")
    for check in res.get("checks", []):
        if check["status"] != "MATCH":
            bad.append(f"{check['kind']} {check['status']} of {check['size']} bytes at "
                       f"{check['addr']}")
    return bad, known


def int8_average_overflows(spec_text: str) -> bool:
    """Does the spec pool int8 averages with a padding value past int8?  Only then can the
    sums leave the RTL's 11/14-bit accumulators (8 elements of int8 always fit)."""
    import tomllib

    for layer in tomllib.loads(spec_text)["layer"]:
        pool = layer.get("pdp", layer) if layer["unit"] == "conv" else layer
        if layer.get("precision") == "int8" and pool.get("method") == "average" \
                and not -128 <= pool.get("pad_value", 0) <= 127:
            return True
    return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--player", required=True, type=Path, help="the C-model's trace player")
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared",
                    help="the shared folder (its cmodel/harness/tp.py runs the player)")
    ap.add_argument("--regs-header", type=Path, default=None,
                    help="the C-model's arnvdla.h (default: the harness's choice)")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("cmodel-diff"))
    ap.add_argument("--only", default="", help="units to draw: conv,sdp,pdp,cdp,bdma,rubik,chain")
    ap.add_argument("--spec", type=Path, action="append", default=[],
                    help="replay these spec files instead of random ones")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per C-model run")
    ap.add_argument("--config", default="nv_full", choices=sorted(CONFIGS),
                    help="the configuration random specs are drawn for (the player's)")
    a = ap.parse_args(argv)
    harness = a.shared / "cmodel" / "harness" / "tp.py"
    if not harness.is_file():
        ap.error(f"{harness}: no C-model harness (pass --shared)")
    r = random.Random(a.seed)
    only = set(a.only.split(",")) if a.only else None
    work = a.out / "work"
    (a.out / "fail").mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    items = [(p.read_text(), p.stem) for p in a.spec] or \
        [(None, f"s{a.seed}_{i}") for i in range(a.count)]
    stats = dict.fromkeys(("ran", "ok", "known", "disagree", "refused", "gen_crash"), 0)
    with open(a.out / "log.jsonl", "a") as log:
        for text, name in items:
            text = text or random_spec(r, only, a.config)
            verdict = _one(a, text, name, work, harness)
            stats[verdict["verdict"]] += 1
            stats["ran"] += verdict["verdict"] in ("ok", "disagree", "known")
            log.write(json.dumps(verdict) + "\n")
            log.flush()
            if verdict["verdict"] in ("disagree", "gen_crash"):
                print(name, verdict["verdict"], verdict.get("bad", verdict.get("msg")),
                      flush=True)
    print(json.dumps(stats))
    return 1 if stats["disagree"] or stats["gen_crash"] else 0


def _one(a, text: str, name: str, work: Path, harness: Path) -> dict:
    spec = work / f"{name}.toml"
    spec.write_text(text)
    trace, out = work / name, work / f"{name}.cmodel"
    start = time.perf_counter()
    try:
        generate(spec, trace, fmt="cfg", dump_format="bin", force=True)
    except SimError as exc:
        spec.unlink()
        return {"name": name, "verdict": "refused", "msg": str(exc), "spec": text}
    except Exception:  # a crash of gen's is a finding too: keep it
        keep = a.out / "fail" / f"{name}_gen"
        keep.mkdir(exist_ok=True)
        (keep / "spec.toml").write_text(text)
        (keep / "traceback.txt").write_text(traceback.format_exc())
        return {"name": name, "verdict": "gen_crash",
                "msg": traceback.format_exc().splitlines()[-1], "spec": text}
    gen_s = time.perf_counter() - start
    bad, known = replay(trace, a.player, harness, a.regs_header, out, a.timeout,
                        KNOWN_POLLS[CONFIGS[a.config].address_map])
    if bad and int8_average_overflows(text) and all(b.startswith("crc") for b in bad):
        known, bad = known + bad, []
    verdict = "disagree" if bad else "known" if known else "ok"
    if bad or known:
        keep = a.out / "fail" / name
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(trace, keep / "trace")
        shutil.copytree(out, keep / "cmodel")
        (keep / "spec.toml").write_text(text)
        (keep / "found.txt").write_text("\n".join(bad + known) + "\n")
    shutil.rmtree(trace, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    spec.unlink()
    return {"name": name, "verdict": verdict, "bad": bad, "known": known,
            "gen_s": round(gen_s, 3), "spec": text}


if __name__ == "__main__":
    sys.exit(main())
