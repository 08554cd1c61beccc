"""Element precisions and their numpy representation.

The simulator stores every element as the bits the hardware holds:

============  ==========================  ===================================
precision     numpy dtype                 meaning
============  ==========================  ===================================
``int8``      ``np.int8``                 signed 8-bit integer
``int16``     ``np.int16`` (little end.)  signed 16-bit integer
``fp16``      ``np.uint16``               IEEE half-precision *bit pattern*
============  ==========================  ===================================

fp16 data stays a bit pattern inside the simulator (bit-exact NaN payloads,
signed zeros); :func:`fp16_bits_to_float` / :func:`float_to_fp16_bits` convert
for users who want ``np.float16`` values.
"""

from __future__ import annotations

import numpy as np

from ..configs import FP16, INT8, INT16, Precision
from .align import LayoutError

#: name or member -> member (a Precision is a str, hashed as its name): one dict lookup where
#: the enum's call costs a microsecond, asked a thousand times a network
_PRECISIONS = {p: p for p in Precision}


def check_precision_name(precision: str) -> Precision:
    """The :class:`Precision` ``precision`` names (int8/int16/fp16), else raise LayoutError."""
    try:
        found = _PRECISIONS.get(precision)
    except TypeError:  # unhashable: no precision
        found = None
    if found is not None:
        return found
    try:
        return Precision(precision)
    except ValueError:
        raise LayoutError(f"unknown precision {precision!r} (expected int8, int16 or fp16)"
                          ) from None


def element_dtype(precision: str) -> np.dtype:
    """The dtype the simulator uses for elements of ``precision`` (fp16 -> uint16 bits)."""
    return check_precision_name(precision).dtype


def bytes_per_element(precision: str) -> int:
    """1 for int8, 2 for int16 and fp16."""
    return check_precision_name(precision).bytes


def elements_per_atom(precision: str, atom_bytes: int) -> int:
    """Channels held by one 1x1xC' memory atom (32 int8 / 16 int16|fp16 on nv_full)."""
    return atom_bytes // bytes_per_element(precision)


def infer_precision(array: np.ndarray) -> str:
    """Guess the precision of an array from its dtype (uint16 and float16 mean fp16)."""
    kind = np.asarray(array).dtype
    if kind == np.int8:
        return INT8
    if kind == np.int16:
        return INT16
    if kind in (np.uint16, np.float16):
        return FP16
    raise LayoutError(f"cannot infer a precision from dtype {kind} (use int8, int16, "
                      "uint16 fp16 bits or float16)")


def to_elements(array, precision: str) -> np.ndarray:
    """``array`` as the simulator's element dtype for ``precision``.

    float16 arrays become their bit patterns; integer arrays must already hold
    the precision's dtype (or a dtype whose values fit) -- values that do not
    fit raise LayoutError instead of wrapping silently.
    """
    arr = np.asarray(array)
    want = element_dtype(precision)
    if precision == FP16:
        if arr.dtype == np.float16:
            return arr.view(np.uint16).astype(want, copy=False)
        if arr.dtype in (np.uint16, np.int16):
            return arr.view(np.uint16).astype(want, copy=False)
        raise LayoutError(f"fp16 data must be float16 or uint16 bit patterns, not {arr.dtype}")
    if arr.dtype == want:
        return arr
    if arr.dtype.kind not in "iub":
        raise LayoutError(f"{precision} data must be integers, not {arr.dtype}")
    info = np.iinfo(want)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise LayoutError(f"{precision} data out of range [{info.min}, {info.max}]")
    return arr.astype(want)


def fp16_bits_to_float(bits: np.ndarray) -> np.ndarray:
    """np.float16 values of fp16 bit patterns (uint16)."""
    return np.asarray(bits).astype(np.uint16, copy=False).view(np.float16)


def float_to_fp16_bits(values) -> np.ndarray:
    """uint16 bit patterns of values rounded to fp16 (numpy's round-to-nearest-even)."""
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def to_user(elements: np.ndarray, precision: str) -> np.ndarray:
    """Elements as users see them (fp16 bit patterns become np.float16)."""
    if precision == FP16:
        return fp16_bits_to_float(elements)
    return elements


def as_bytes(elements: np.ndarray) -> np.ndarray:
    """Little-endian bytes of an element array, with a trailing axis of itemsize."""
    arr = np.ascontiguousarray(elements)
    if arr.dtype.itemsize > 1 and arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr.view(np.uint8).reshape(arr.shape + (arr.dtype.itemsize,))


def from_bytes(raw: np.ndarray, precision: str) -> np.ndarray:
    """Inverse of :func:`as_bytes`: a trailing axis of bytes back to elements."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    dtype = element_dtype(precision)
    return raw.view(dtype).reshape(raw.shape[:-1])
