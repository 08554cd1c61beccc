"""Running a block convertor over arrays.

The public block functions broadcast their keyword arrays (a per-call
setting of shape ``(N,)`` applies to every lane of ``(N, lanes)`` data) into
flat int64 columns, compute on whole columns and shape the outputs (raw,
unsigned bit patterns) back.
"""

import numpy as np

from sim.num.arrays import broadcast_fields, shaped


def elementwise(inputs: dict) -> tuple:
    """Broadcast a block's keyword arrays; returns (shape, flat int64 columns).

    ``inputs`` maps names to arrays in the order the block reads them; the
    first is the data array whose shape the others broadcast against.
    """
    data_ndim = np.ndim(next(iter(inputs.values())))
    return broadcast_fields(data_ndim, inputs)


def results(shape: tuple, **outputs) -> dict:
    """Each ``name=(flat values, dtype)`` as an array of ``shape`` (a scalar for shape ())."""
    return {
        name: shaped(np.broadcast_to(values, (int(np.prod(shape)),)).astype(dtype).reshape(shape))
        for name, (values, dtype) in outputs.items()
    }
