"""Alignment of start addresses, strides and sizes (format.rst Table 35).

The table is data: :data:`ALIGNMENT_RULES` maps each data format to the
required alignment of its start address, line stride, surface stride,
planar/cube stride and data size.  ``"atom"`` stands for the
configuration's memory atom (32 bytes on nv_full, where the table was
written; 8 on nv_small); numbers are literal byte counts.  ``None`` means the
table has no requirement.

Every violation raises :class:`LayoutError` (a ``SimError``) whose one-line
message names the rule, e.g.::

    feature data cube: line stride 0x30 is not 32-byte aligned (format.rst Table 35)
"""

from __future__ import annotations

from ..errors import LayoutError
from ..records import record

RULE_SOURCE = "format.rst Table 35"


@record
class AlignmentRule:
    """Required alignment (``"atom"``, a byte count, or None) of each quantity."""

    title: str
    start: int | str | None = None
    line_stride: int | str | None = None
    surface_stride: int | str | None = None
    planar_stride: int | str | None = None
    size: int | str | None = None


ALIGNMENT_RULES: dict[str, AlignmentRule] = {
    "feature": AlignmentRule("feature data cube", "atom", "atom", "atom", "atom", None),
    "weight": AlignmentRule("weight", 256, None, None, None, 128),
    "wmb": AlignmentRule("WMB", 256, None, None, None, 128),
    "wgs": AlignmentRule("WGS", 256, None, None, None, 128),
    "pixel": AlignmentRule("pitch linear pixel", "atom", "atom", None, None, None),
    "bias": AlignmentRule("bias", "atom", "atom", "atom", None, None),
    "prelu": AlignmentRule("PReLU", "atom", None, None, None, None),
    "bn": AlignmentRule("batch normalization", "atom", None, None, None, None),
    "ew": AlignmentRule("element-wise", "atom", "atom", None, None, "atom"),
}

_LABELS = {
    "start": "start address",
    "line_stride": "line stride",
    "surface_stride": "surface stride",
    "planar_stride": "planar/cube stride",
    "size": "data size",
}


def required_alignment(kind: str, quantity: str, atom_bytes: int) -> int | None:
    """Bytes ``quantity`` (start, line_stride, ...) of format ``kind`` must align to."""
    try:
        rule = ALIGNMENT_RULES[kind]
    except KeyError:
        raise LayoutError(f"unknown data format {kind!r} for alignment rules") from None
    value = getattr(rule, quantity)
    if value == "atom":
        return atom_bytes
    return value


def check_alignment(kind: str, atom_bytes: int, what: str = "", **values: int | None) -> None:
    """Check ``start=..., line_stride=..., surface_stride=..., planar_stride=..., size=...``.

    ``kind`` is a key of :data:`ALIGNMENT_RULES`; ``what`` (a register or file
    name) prefixes the message.  Values given as None are not checked.
    """
    for quantity, value in values.items():
        if quantity not in _LABELS:
            raise TypeError(f"check_alignment: unknown quantity {quantity!r}")
        if value is None:
            continue
        align = required_alignment(kind, quantity, atom_bytes)
        if align and value % align:
            prefix = f"{what}: " if what else ""
            title = ALIGNMENT_RULES[kind].title
            raise LayoutError(
                f"{prefix}{title}: {_LABELS[quantity]} {value:#x} is not {align}-byte "
                f"aligned ({RULE_SOURCE})"
            )


def ceil_div(value: int, divisor: int) -> int:
    """``value / divisor`` rounded up (positive ``divisor``): how many ``divisor``-sized
    pieces hold ``value``."""
    return -(-value // divisor)


def window_count(size: int, pad_lo: int, pad_hi: int, kernel: int, stride: int,
                 dilation: int = 1) -> int:
    """Output size of a sliding window along one axis: the positions, ``stride`` apart, of a
    ``kernel``-tap window (taps ``dilation`` apart) inside the padded input of ``size``
    (zero or less when the window does not fit)."""
    return (pad_lo + size + pad_hi - ((kernel - 1) * dilation + 1)) // stride + 1


def align_up(value: int, align: int) -> int:
    """Smallest multiple of ``align`` that is >= ``value``."""
    return ceil_div(value, align) * align
