"""Seeded random data for generated traces, with fp16 specials on request."""

from __future__ import annotations

import numpy as np

from ..dma.elements import element_dtype
from ..limits import check_extent

# default value ranges: (feature data of a convolution, weights, other units' data)
RANGES = {
    "int8": {"conv": (-16, 16), "weight": (-4, 4), "feature": (-128, 127)},
    "int16": {"conv": (-256, 256), "weight": (-16, 16), "feature": (-32768, 32767)},
    "fp16": {"conv": (-2.0, 2.0), "weight": (-1.0, 1.0), "feature": (-8.0, 8.0)},
}

FP16_SPECIALS = {
    "nan": lambda rng, n: 0x7E00 | rng.integers(0, 0x200, n),
    "inf": lambda rng, n: np.full(n, 0x7C00),
    "-inf": lambda rng, n: np.full(n, 0xFC00),
    "denormal": lambda rng, n: rng.integers(1, 0x400, n) | (rng.integers(0, 2, n) << 15),
    "max": lambda rng, n: np.full(n, 0x7BFF),
    "-max": lambda rng, n: np.full(n, 0xFBFF),
    "zero": lambda rng, n: rng.integers(0, 2, n) << 15,
}


def random_cube(rng, shape, precision: str, data: dict | None = None,
                kind: str = "feature") -> np.ndarray:
    """Elements of ``shape`` in the simulator's dtype (fp16 as bit patterns).

    ``data`` may give ``low``/``high`` (the value range), ``specials`` (fp16:
    nan, inf, -inf, denormal, max, -max, zero) and ``fraction`` (the share of
    elements replaced by specials, spread evenly over the kinds asked for).
    """
    # numpy draws 8-byte values first: refuse, before allocating, what the host cannot hold
    check_extent(8 * int(np.prod([int(d) for d in shape], dtype=object)),
                 f"{kind} data {tuple(int(d) for d in shape)} drawn as 8-byte values")
    data = data or {}
    lo, hi = RANGES[precision][kind]
    low, high = data.get("low"), data.get("high")
    # one bound given: the other's default moves to it when it would cross it
    lo = low if low is not None else lo if high is None else min(lo, high)
    hi = high if high is not None else hi if low is None else max(hi, lo)
    if precision == "fp16":
        values = rng.uniform(lo, hi, shape).astype(np.float16).view(np.uint16)
        specials = data.get("specials") or []
        if specials:
            flat = values.reshape(-1)
            count = max(len(specials), int(round(flat.size * data.get("fraction", 0.1))))
            where = rng.permutation(flat.size)[:count]
            for i, name in enumerate(specials):
                chosen = where[i :: len(specials)]
                flat[chosen] = FP16_SPECIALS[name](rng, chosen.size).astype(np.uint16)
        return values
    dtype = element_dtype(precision)
    info = np.iinfo(dtype)
    lo, hi = max(int(lo), info.min), min(int(hi), info.max)
    return rng.integers(lo, hi + 1, shape).astype(dtype)
