"""Running a block convertor ("cell") over arrays.

A cell kernel reads one row of int64 inputs ``r`` and writes one row of int64
outputs ``o`` (raw, unsigned bit patterns).  The public block functions
broadcast their keyword arrays (a per-call setting of shape ``(N,)`` applies
to every lane of ``(N, lanes)`` data), stack them into a table with one row
per element, run the module's cell loop and split the output columns again.
"""

import numpy as np

from sim.num.arrays import broadcast_fields, shaped

PRECISION_INT8 = 0
PRECISION_INT16 = 1
PRECISION_FP16 = 2


def run_cells(loop, cell: int, inputs: dict, outputs: dict) -> dict:
    """Run ``cell`` of ``loop`` element-wise over broadcast ``inputs``.

    ``inputs`` maps names to arrays in the order the cell reads them; the
    first is the data array whose shape the others broadcast against.
    ``outputs`` maps output names to their numpy storage type.
    """
    data_ndim = np.ndim(next(iter(inputs.values())))
    shape, columns = broadcast_fields(data_ndim, inputs)
    return run_table(loop, cell, np.stack(columns, axis=1), shape, outputs)


def run_table(loop, cell: int, table: np.ndarray, shape: tuple, outputs: dict) -> dict:
    """Run ``cell`` on every row of ``table``; reshape each output to ``shape``."""
    table = np.ascontiguousarray(table, dtype=np.int64)
    width = max(1, len(outputs))
    result = np.zeros((table.shape[0], width), np.int64)
    loop(cell, table, result)
    return {
        name: shaped(result[:, j].astype(dtype).reshape(shape))
        for j, (name, dtype) in enumerate(outputs.items())
    }
