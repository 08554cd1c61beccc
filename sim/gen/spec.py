"""The layer description ``nvdla-sim gen`` reads (TOML, or YAML when PyYAML is installed).

::

    config = "nv_small"        # optional (--config overrides)
    seed = 1                   # optional (--seed overrides)

    [[layer]]
    unit = "conv"              # conv | sdp | pdp | cdp | bdma | rubik
    input = [8, 6, 6]          # C, H, W -- or the name of an earlier layer to chain
    kernels = 16
    sdp = { bias = 10, relu = true }

Every key a layer does not give gets a legal default for the configuration;
a key the unit does not know, a value out of its range or a feature the
configuration lacks is an error naming the layer, the key and the rule.
See ``examples/specs/`` for one spec per unit.
"""

from __future__ import annotations

import math
import sys
from dataclasses import field
from pathlib import Path

from ..configs import CONFIGS, HardwareConfig, get_config
from ..errors import SpecError
from ..program.pdp import METHODS
from ..records import record
from ..regs.enums import AluAlgo, Precision

UNITS = ("conv", "sdp", "pdp", "cdp", "bdma", "rubik")
PRECISIONS = tuple(p.value for p in Precision)
SPECIALS = ("nan", "inf", "-inf", "denormal", "max", "-max", "zero")
ALU_ALGOS = {a.name.lower(): int(a) for a in (AluAlgo.MAX, AluAlgo.MIN, AluAlgo.SUM)}
POOLING = tuple(METHODS)  # pooling methods (sim.program.pdp)
CONV_MODES = ("direct", "winograd", "image")

# keys each unit accepts (besides unit, name, input, precision, data)
UNIT_KEYS = {
    "conv": {"kernels", "kernel", "stride", "dilation", "pad", "pad_value", "truncate", "mode",
             "batch", "weights", "sdp", "pdp", "pixel_format", "nan_to_zero", "pixel_cvt",
             "pixel_offset", "mean", "pixel_sign_override"},
    "sdp": {"out_precision", "x1", "x2", "y", "cvt", "nan_to_zero"},
    "pdp": {"method", "kernel", "stride", "pad", "pad_value", "nan_to_zero", "split"},
    "cdp": {"window", "datin", "datout", "sqsum_bypass", "mul_bypass", "nan_to_zero", "lut"},
    "bdma": {"line_bytes", "lines", "surfaces", "src", "dst"},
    "rubik": {"mode", "stride", "src", "dst"},
}
COMMON_KEYS = {"unit", "name", "input", "precision", "data"}
STAGE_KEYS = {"alu", "alu_operand", "alu_shift", "mul", "mul_shift", "relu", "prelu", "lut"}
FLY_SDP_KEYS = {"bias", "mul", "mul_shift", "relu", "cvt", "out_precision"}
FLY_PDP_KEYS = {"method", "kernel", "stride", "pad", "pad_value"}
DATA_KEYS = {"low", "high", "specials", "fraction"}


@record(frozen=False)
class LayerSpec:
    index: int
    unit: str
    name: str
    precision: str
    input: tuple | str | None  # (C, H, W), an earlier layer's name, or None (bdma)
    options: dict = field(default_factory=dict)

    def where(self, key: str) -> str:
        return f"layer {self.index} ({self.name}).{key}"

    def fail(self, key: str, rule: str) -> SpecError:
        return SpecError(rule, where=self.where(key))

    def require(self, config: HardwareConfig, feature: str, key: str) -> None:
        """``key`` asks for ``feature``: a SpecError naming it when ``config`` lacks it."""
        config.require(feature, self.where(key), SpecError)

    def get(self, key: str, default=None):
        return self.options.get(key, default)


@record(frozen=False)
class Spec:
    path: Path
    config: HardwareConfig
    seed: int
    layers: list[LayerSpec]


def load_spec(path: str | Path, config: str | None = None, seed: int | None = None) -> Spec:
    """Read and validate a spec file; ``config``/``seed`` override the file's."""
    path = Path(path)
    doc = _read(path)
    if not isinstance(doc, dict):
        raise SpecError(f"{path}: a spec is a table with a [[layer]] list")
    unknown = set(doc) - {"config", "seed", "layer", "layers", "format"}
    if unknown:
        raise SpecError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} (config, seed, "
                        "layer)")
    name = config or doc.get("config")
    if name is None:
        raise SpecError(f"{path}: no configuration: set config = \"...\" or pass --config "
                        f"({', '.join(CONFIGS)})")
    cfg = get_config(name)
    seed = seed if seed is not None else doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SpecError(f"{path}: seed = {seed!r}: a seed is a whole number >= 0")
    raw = doc.get("layer", doc.get("layers"))
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"{path}: no layers: add at least one [[layer]] table")
    layers: list[LayerSpec] = []
    for i, entry in enumerate(raw):
        layers.append(_layer(path, i, entry, cfg, layers))
    return Spec(path, cfg, seed, layers)


def _read(path: Path):
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror})") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise SpecError(f"{path}: YAML specs need PyYAML (pip install pyyaml); "
                            "or write the spec in TOML") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"{path}: not valid YAML ({exc})") from None
    import tomllib

    try:
        return tomllib.loads(text.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from None


def _layer(path: Path, i: int, entry, cfg: HardwareConfig, earlier: list) -> LayerSpec:
    if not isinstance(entry, dict):
        raise SpecError(f"{path}: layer {i} is not a table")
    unit = entry.get("unit")
    if unit not in UNITS:
        raise SpecError(f"{path}: layer {i}.unit: {unit!r} is not one of {', '.join(UNITS)}")
    name = str(entry.get("name", f"layer{i}"))
    if any(e.name == name for e in earlier):
        raise SpecError(f"{path}: layer {i}.name: {name!r} is already used by an earlier layer")
    spec = LayerSpec(i, unit, name, "int8", None,
                     {k: v for k, v in entry.items() if k not in COMMON_KEYS})
    unknown = set(spec.options) - UNIT_KEYS[unit]
    if unknown:
        raise spec.fail(sorted(unknown)[0], f"a {unit} layer has no such key (known: "
                        f"{', '.join(sorted(UNIT_KEYS[unit] | COMMON_KEYS))})")
    precision = entry.get("precision", sorted(cfg.precisions, key=PRECISIONS.index)[0])
    if precision not in PRECISIONS:
        raise spec.fail("precision", f"{precision!r} is not one of {', '.join(PRECISIONS)}")
    if not cfg.supports(precision):
        raise spec.fail("precision", f"{cfg.name} does not support {precision} (it supports "
                        f"{', '.join(sorted(cfg.precisions))})")
    spec.precision = precision
    spec.input = _input(spec, entry.get("input"), earlier)
    spec.options["data"] = _data(spec, entry.get("data", {}))
    if "weights" in spec.options:  # a convolution's weights: drawn as data is
        spec.options["weights"] = _data(spec, spec.options["weights"], "weights")
    return spec


def _input(spec: LayerSpec, value, earlier: list):
    if spec.unit == "bdma":
        if value is not None:
            raise spec.fail("input", "a BDMA copy takes line_bytes/lines/surfaces, not an input")
        return None
    if value is None:
        raise spec.fail("input", "give the input cube [C, H, W] or the name of an earlier layer")
    if isinstance(value, str):
        if not any(e.name == value for e in earlier):
            names = ", ".join(e.name for e in earlier) or "none"
            raise spec.fail("input", f"{value!r} is not an earlier layer (earlier: {names})")
        return value
    return tuple(dims(spec, "input", value, 3))


def dims(spec: LayerSpec, key: str, value, count: int, low: int = 1, high: int = 8192):
    """A list of ``count`` integers in [low, high]."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value] * count
    if not isinstance(value, (list, tuple)) or len(value) != count \
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise spec.fail(key, f"expected {count} integers, got {value!r}")
    for v in value:
        if not low <= v <= high:
            raise spec.fail(key, f"{v} is outside {low}..{high}")
    return list(value)


def integer(spec: LayerSpec, key: str, value, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise spec.fail(key, f"expected an integer, got {value!r}")
    if not low <= value <= high:
        raise spec.fail(key, f"{value} is outside {low}..{high}")
    return value


FLOAT_MAX = sys.float_info.max
FP16_MAX = 65504.0


def shown(value, width: int = 60) -> str:
    """``value``'s repr cut to ``width`` (a huge integer by its size: its repr may not exist)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    return f"{value!r:.{width}}"


def finite(spec: LayerSpec, key: str, value, limit: float = FLOAT_MAX,
           rule: str = "expected a finite number, got {}", *, infinities: bool = False) -> float:
    """``value`` as a float: a number (not a bool) within +-``limit``, checked before float()
    as TOML integers have no bound; with ``infinities``, also inf, -inf and nan."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not (abs(value) <= limit or (
            infinities and isinstance(value, float) and not math.isfinite(value))):
        raise spec.fail(key, rule.format(shown(value)))
    return float(value)


def choice(spec: LayerSpec, key: str, value, options) -> str:
    if value not in options:
        raise spec.fail(key, f"{value!r} is not one of {', '.join(map(str, options))}")
    return value


def check_keys(spec: LayerSpec, key: str, table, known: set) -> dict:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise spec.fail(key, f"expected a table, got {table!r}")
    unknown = set(table) - known
    if unknown:
        raise spec.fail(f"{key}.{sorted(unknown)[0]}",
                        f"no such key (known: {', '.join(sorted(known))})")
    return table


def _data(spec: LayerSpec, table, key: str = "data") -> dict:
    """A ``data`` (or a convolution's ``weights``) table: value range and fp16 specials."""
    table = check_keys(spec, key, table, DATA_KEYS)
    specials = table.get("specials", [])
    if not isinstance(specials, list):
        raise spec.fail(f"{key}.specials", f"expected a list of kinds ({', '.join(SPECIALS)}), "
                        f"got {specials!r}")
    if specials and spec.precision != "fp16":
        raise spec.fail(f"{key}.specials", "NaN/Inf/denormal specials need precision fp16")
    for s in specials:
        choice(spec, f"{key}.specials", s, SPECIALS)
    fraction = table.get("fraction", 0.1)
    if not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise spec.fail(f"{key}.fraction", f"{fraction!r} is not in (0, 1]")
    low, high = table.get("low"), table.get("high")
    for name, v in (("low", low), ("high", high)):  # bounds of a draw: finite
        if v is not None:
            finite(spec, f"{key}.{name}", v)
    if low is not None and high is not None and low > high:
        raise spec.fail(f"{key}.low", f"{low} is above {key}.high {high}")
    if not (key == "data" and spec.unit == "conv" and spec.options.get("mode") == "image"):
        _bounds_meet_precision(spec, key, low, high)  # (pixels: sim.gen.image checks)
    return {"low": low, "high": high, "specials": list(specials), "fraction": float(fraction)}


def _bounds_meet_precision(spec: LayerSpec, key: str, low, high) -> None:
    """Values of the layer's precision lie within ``low``/``high``: an integer bound past the
    precision's far end leaves none to draw, an fp16 bound past fp16's range infinities."""
    if spec.precision == "fp16":
        for name, v in (("low", low), ("high", high)):
            if v is not None and not abs(v) <= FP16_MAX:
                raise spec.fail(f"{key}.{name}", f"{v} is outside fp16's "
                                f"{-FP16_MAX:g}..{FP16_MAX:g} (infinities: specials)")
        return
    top = (1 << (Precision(spec.precision).bytes * 8 - 1)) - 1
    if low is not None and low > top:
        raise spec.fail(f"{key}.low", f"{low} is above {spec.precision}'s largest value {top}")
    if high is not None and high < -top - 1:
        raise spec.fail(f"{key}.high", f"{high} is below {spec.precision}'s smallest value "
                        f"{-top - 1}")
