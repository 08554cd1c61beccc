"""The LUT a spec asks for: the SDP Y stage's (``y.lut``) or the CDP's (``lut``).

``lut = true`` keeps gen's default tables; a table chooses any of::

    lut = { le = { mode = "exponent", start = 0, index_offset = -4, table = "exp",
                   x_scale = 1.0, y_scale = 1.0, end = ..., slopes = { uflow = [s, shift],
                   oflow = [s, shift] } },
            lo = { start = -256, index_select = 2, table = [ ...257 values... ] },
            priority = { uflow = "lo", oflow = "le", hybrid = "le" } }

Every key not given keeps its default, independently of the others (``end``:
the point of the table's last entry, from its start, mode, select or offset).
Integer processing takes integer starts/ends and 16-bit table values; fp16
takes numbers (starts/ends programmed as fp32, table values and slope scales
as fp16, as the hardware reads them).
"""

from __future__ import annotations

import numpy as np

from ..num.host import float32_bits
from ..program.cdp import linear_lut
from ..records import record
from .spec import FP16_MAX, check_keys, choice, finite, integer

LUT_KEYS = {"le", "lo", "priority"}
TABLE_KEYS = {"mode", "start", "end", "index_select", "index_offset", "table", "x_scale",
              "y_scale", "slopes"}
ENTRIES = {"le": 65, "lo": 257}
PRIORITIES = ("uflow", "oflow", "hybrid")
FP32_MAX = float(np.finfo(np.float32).max)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# named tables: y_scale * f(x_scale * x) at each entry's input x
FUNCTIONS = {
    "identity": lambda x: x,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "recip": lambda x: 1.0 / x,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "lrn": lambda x: (1.0 + 1e-4 * x) ** -0.75,  # AlexNet's k = 1, alpha = 1e-4, beta = 0.75
}


@record
class LutPlan:
    """Register fields (S_LUT_* names less ``lut_``; starts/ends whole values, 38-bit for
    the CDP) and the two tables as 16-bit patterns."""

    fields: dict
    le: np.ndarray
    lo: np.ndarray


def _start_range(unit: str) -> tuple[int, int]:
    bits = 38 if unit == "cdp" else 32  # the CDP's start/end have 6 HIGH bits
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _select_range(unit: str, proc: str) -> tuple[int, int]:
    """INDEX_SELECT as the hardware reads it: 8 signed bits, but the CDP keeps 6 for int8
    data and 7 for int16 (sim.cdp.config.lut_params)."""
    bits = 8 if unit == "sdp" or proc == "fp16" else {"int8": 6, "int16": 7}[proc]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _defaults(unit: str, proc: str, window: int) -> dict:
    """Each table's default start, select (or offset) and, for the integer CDP, its values:
    gen's historical LUTs for integers (the CDP's: sim.program.cdp.linear_lut)."""
    if unit == "sdp":
        if proc == "fp16":  # [-8, 8): LE in 64 steps of 1/4, LO in 256 of 1/16
            return {"le": (-8.0, -2), "lo": (-8.0, -4)}
        k = 8 if proc == "int8" else 16  # [-2^k, 2^k)
        return {"le": (-(1 << k), k - 5), "lo": (-(1 << k), k - 7)}
    if proc == "fp16":  # square sums of the default data (|x| <= 8) from 0
        return {"le": (0.0, 4), "lo": (0.0, 2)}
    lut = linear_lut(proc, window)
    return {name: (0, lut[f"{name}_select"], lut[name]) for name in ("le", "lo")}


def _default_table(unit: str, proc: str, name: str, rng) -> np.ndarray | str:
    """Gen's historical SDP integer tables (LO with seeded noise), else a named one."""
    if proc == "fp16":
        return "tanh" if unit == "sdp" else "lrn"
    if name == "le":
        return np.round(12000 * np.tanh(np.arange(65) / 16.0 - 2.0)).astype(np.int64)
    return np.round(np.linspace(-8000, 8000, 257) + rng.integers(-50, 51, 257)).astype(np.int64)


def lut_plan(layer, key: str, value, unit: str, proc: str, rng, window: int = 5) -> LutPlan:
    """The validated LUT of spec key ``key`` (``y.lut`` or ``lut``): True or a table."""
    if value is True:
        value = {}
    table = check_keys(layer, key, value, LUT_KEYS)
    defaults = _defaults(unit, proc, window)
    fields: dict = {}
    tables = {}
    for name in ("le", "lo"):
        t = check_keys(layer, f"{key}.{name}", table.get(name), TABLE_KEYS)
        tables[name] = _table(layer, f"{key}.{name}", name, t, unit, proc, defaults[name],
                              rng, fields)
    prio = table.get("priority", {})
    if isinstance(prio, str):
        prio = dict.fromkeys(PRIORITIES, prio)
    prio = check_keys(layer, f"{key}.priority", prio, set(PRIORITIES))
    for side in PRIORITIES:
        which = choice(layer, f"{key}.priority.{side}", prio.get(side, "le"), ("le", "lo"))
        fields[f"{side}_priority"] = int(which == "lo")
    return LutPlan(fields, tables["le"], tables["lo"])


def _table(layer, key, name, t, unit, proc, default, rng, fields) -> np.ndarray:
    mode = choice(layer, f"{key}.mode", t.get("mode", "linear"),
                  ("linear", "exponent") if name == "le" else ("linear",))
    exponent = mode == "exponent"
    if name == "le":
        fields["le_function"] = int(not exponent)
    start = _point(layer, f"{key}.start", t.get("start", default[0]), unit, proc)
    select = offset = 0
    if exponent:
        if "index_select" in t:
            raise layer.fail(f"{key}.index_select", "exponent mode indexes by log2(x - start): "
                             "set index_offset, not index_select")
        offset = integer(layer, f"{key}.index_offset", t.get("index_offset", 0), -128, 127)
        fields["le_index_offset"] = offset & 0xFF
    else:
        if "index_offset" in t:
            raise layer.fail(f"{key}.index_offset", "only the LE table in exponent mode has "
                             "an index offset")
        select = integer(layer, f"{key}.index_select", t.get("index_select", default[1]),
                         *_select_range(unit, proc))
    fields[f"{name}_index_select"] = select & 0xFF
    inputs = _entry_inputs(start, select, offset, exponent, ENTRIES[name])
    end = t.get("end")
    if end is None:  # the last entry's input, held to the register's range
        lo, hi = (-FP32_MAX, FP32_MAX) if proc == "fp16" else _start_range(unit)
        end = min(max(inputs[-1], lo), hi)
        end = end if proc == "fp16" else int(end)
    fields[f"{name}_start"] = _register_point(start, unit, proc)
    fields[f"{name}_end"] = _register_point(_point(layer, f"{key}.end", end, unit, proc),
                                            unit, proc)
    _slopes(layer, f"{key}.slopes", name, t.get("slopes"), proc, fields)
    values = t.get("table")
    scales = [k for k in ("x_scale", "y_scale") if k in t]
    if values is None:
        values = default[2] if len(default) > 2 else _default_table(unit, proc, name, rng)
        if scales and not isinstance(values, str):
            raise layer.fail(f"{key}.{scales[0]}", "scales apply to a named table: set table")
    if isinstance(values, str):
        return _named(layer, key, values, t, inputs, proc)
    if scales:
        raise layer.fail(f"{key}.{scales[0]}", "scales apply to a named table, not to values")
    return _values(layer, f"{key}.table", values, ENTRIES[name], proc)


def _point(layer, key, value, unit, proc):
    """A start or end: an integer in the register's range, or an fp32 number for fp16."""
    if proc == "fp16":
        return finite(layer, key, value, FP32_MAX, "expected a finite fp32 number, got {}")
    return integer(layer, key, value, *_start_range(unit))


def _register_point(value, unit, proc) -> int:
    if proc == "fp16":
        return float32_bits(value)
    return value & ((1 << (38 if unit == "cdp" else 32)) - 1)


def _entry_inputs(start, select, offset, exponent, count) -> np.ndarray:
    """The input x each entry stands for: start + i * 2^select (linear), start +
    2^(i + offset) (exponent; entry 0 covers differences from 2^offset)."""
    i = np.arange(count, dtype=np.float64)
    steps = 2.0 ** (i + offset) if exponent else i * 2.0 ** select
    return float(start) + steps


def _slopes(layer, key, name, table, proc, fields) -> None:
    """``slopes = { uflow = [scale, shift], oflow = ... }``: the extrapolation past each end
    (fp16: a number, the scale alone)."""
    table = check_keys(layer, key, table, {"uflow", "oflow"})
    for side in ("uflow", "oflow"):
        value = table.get(side, 0 if proc == "fp16" else [0, 0])
        where = f"{key}.{side}"
        if proc == "fp16":
            value = finite(layer, where, value, FP16_MAX,
                           "an fp16 slope is one finite fp16 number (no shift), got {}")
            scale, shift = int(np.float16(value).view(np.uint16)), 0
        else:
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise layer.fail(where, f"expected [scale, shift], got {value!r}")
            scale = integer(layer, f"{where}[0]", value[0], -(1 << 15), (1 << 15) - 1) & 0xFFFF
            shift = integer(layer, f"{where}[1]", value[1], -16, 15) & 0x1F
        fields[f"{name}_slope_{side}_scale"] = scale
        fields[f"{name}_slope_{side}_shift"] = shift


def _named(layer, key, name, t, inputs, proc) -> np.ndarray:
    choice(layer, f"{key}.table", name, tuple(FUNCTIONS))
    scales = [finite(layer, f"{key}.{k}", t.get(k, 1.0)) for k in ("x_scale", "y_scale")]
    with np.errstate(all="ignore"):
        y = scales[1] * FUNCTIONS[name](scales[0] * inputs)
    # held to the entry format: infinities to its extremes, NaN (outside the domain) to 0
    top = FP16_MAX if proc == "fp16" else 32767
    y = np.clip(np.nan_to_num(y, nan=0.0, posinf=top, neginf=-top), -top - (proc != "fp16"),
                top)
    if proc == "fp16":
        return y.astype(np.float16).view(np.uint16).astype(np.int64)
    return (np.sign(y) * np.floor(np.abs(y) + 0.5)).astype(np.int64) & 0xFFFF


def _values(layer, key, values, count, proc) -> np.ndarray:
    if isinstance(values, np.ndarray):  # a default table
        return values.astype(np.int64) & 0xFFFF
    if not isinstance(values, list) or len(values) != count:
        raise layer.fail(key, f"expected a table name ({', '.join(FUNCTIONS)}) or {count} "
                         f"values, got {values!r:.60}")
    if proc == "fp16":
        values = [finite(layer, key, v, FP16_MAX, "{} is not an fp16 value (finite up to "
                         "65504, inf, -inf or nan)", infinities=True) for v in values]
        return np.array(values, np.float64).astype(np.float16).view(np.uint16).astype(np.int64)
    for i, v in enumerate(values):
        integer(layer, f"{key}[{i}]", v, -(1 << 15), (1 << 15) - 1)
    return np.array(values, np.int64) & 0xFFFF
