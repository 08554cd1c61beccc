"""Precision-conversion validity (format.rst "Precision Conversion", Tables 29-32).

:data:`PRECISION_TABLES` maps a unit to ``{(input, output): pipeline}``: the
precision the pipeline computes in, or None for an invalid case.

* ``conv`` (Table 29): input is a feature precision (``int8``, ``int16``,
  ``fp16``) or an image class, ``image-int`` (uint8/int16/uint16 pixels) or
  ``image-fp16`` (float pixels); the pipeline value is also the weight
  precision.  Only image input converts.
* ``sdp`` (Table 30, offline mode): int8 <-> int16 and int16 <-> fp16.
* ``cdp`` (Table 31, LRN) and ``pdp`` (Table 32, pooling): no conversion.

:func:`check_precision` raises ``ConfigurationError`` naming the registers.
"""

from __future__ import annotations

from ..configs import FP16, INT8, INT16
from ..errors import ConfigurationError

IMAGE_INT, IMAGE_FP16 = "image-int", "image-fp16"
_P = (INT8, INT16, FP16)

PRECISION_TABLES: dict[str, dict[tuple[str, str], str | None]] = {
    "conv": {
        **{(IMAGE_INT, out): out for out in _P},
        (IMAGE_FP16, INT8): None, (IMAGE_FP16, INT16): None, (IMAGE_FP16, FP16): FP16,
        **{(i, o): (i if i == o else None) for i in _P for o in _P},
    },
    "sdp": {
        (INT8, INT8): "int32", (INT8, INT16): "int32", (INT8, FP16): None,
        (INT16, INT8): "int32", (INT16, INT16): "int32", (INT16, FP16): "int32",
        (FP16, INT8): None, (FP16, INT16): "fp32", (FP16, FP16): "fp32",
    },
    "cdp": {(i, o): (i if i == o else None) for i in _P for o in _P},
    "pdp": {(i, o): (i if i == o else None) for i in _P for o in _P},
}

TABLE_NAMES = {
    "conv": "format.rst Table 29, convolution",
    "sdp": "format.rst Table 30, SDP",
    "cdp": "format.rst Table 31, LRN",
    "pdp": "format.rst Table 32, pooling",
}


def pipeline_precision(unit: str, in_prec: str, out_prec: str) -> str | None:
    """The pipeline precision for a conversion, or None when the table forbids it."""
    try:
        table = PRECISION_TABLES[unit]
    except KeyError:
        raise ConfigurationError(f"no precision table for unit {unit!r}") from None
    return table.get((in_prec, out_prec))


def check_precision(unit: str, in_prec: str, out_prec: str, what: str = "") -> str:
    """Return the pipeline precision or raise ConfigurationError naming ``what``.

    ``what`` names the registers, e.g. ``"NVDLA_PDP.D_DATA_FORMAT_0"``.
    """
    pipe = pipeline_precision(unit, in_prec, out_prec)
    if pipe is None:
        prefix = f"{what}: " if what else ""
        raise ConfigurationError(f"{prefix}{unit} cannot convert {in_prec} input to {out_prec} "
                                 f"output ({TABLE_NAMES[unit]})")
    return pipe
