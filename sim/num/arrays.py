"""Turning user operands (numpy arrays, numpy scalars, Python ints) into the
flat unsigned arrays the kernels loop over, and the results back."""

import numpy as np


def as_bits(x, dtype) -> np.ndarray:
    """``x`` as an array of raw bit patterns of ``dtype`` (integers only).

    Integers of another type are converted modulo 2**bits, so a negative
    Python int gives its two's-complement pattern.
    """
    arr = np.asarray(x)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind not in "iub":
        raise TypeError(f"expected integer bit patterns, got {arr.dtype}")
    return arr.astype(np.int64).astype(dtype)


def flat(arr: np.ndarray) -> np.ndarray:
    """A contiguous 1-D view (or copy) of ``arr``."""
    return np.ascontiguousarray(arr).reshape(-1)


def shaped(out: np.ndarray):
    """Return a 0-d result as a numpy scalar, anything else unchanged."""
    return out[()] if out.ndim == 0 else out


def broadcast_fields(data_ndim: int, fields: dict, dtype=np.int64) -> tuple:
    """Broadcast per-call configuration against per-lane data.

    A field with one dimension fewer than the data (a per-row setting, shape
    ``(N,)`` against ``(N, lanes)``) gets a trailing axis first.  Returns the
    common shape and the fields in the given order: flat ``dtype`` arrays, or
    0-d ones for scalar fields (one setting for every element broadcasts in
    the arithmetic, and stays one value to the functions that test for it).
    """
    arrays = []
    for name, value in fields.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in "iub":
            raise TypeError(f"{name}: expected integers, got {arr.dtype}")
        if 0 < arr.ndim == data_ndim - 1:
            arr = arr[..., None]
        arrays.append(arr)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return shape, tuple(a.astype(dtype) if a.ndim == 0 else
                        flat(np.broadcast_to(a, shape).astype(dtype, copy=False))
                        for a in arrays)


def sign_extend_array(values, bits: int) -> np.ndarray:
    """The low ``bits`` bits of each value read as two's complement (int64, vectorised)."""
    return (np.asarray(values, np.int64) << (64 - bits)) >> (64 - bits)
