"""RUBIK: the data reshape unit (contract, split, merge); see :mod:`sim.rubik.engine`."""
