"""Typed values of the register table's enumerated fields.

The register codes are the table's (``regs/nvdla.regmap``: ``enum=INT8:0,INT16:1,FP16:2``
on every precision field, ``MAX:0,MIN:1,SUM:2,EQL:3`` on the SDP's ALU fields,
``CV:0,MC:1`` on RAM types); ``tests/foundation/test_regs_enums.py`` holds these
classes to the table.

:class:`Precision` is also the name users see: its value is the lower-case name
(``"int8"``, ``"int16"``, ``"fp16"``) used in configurations, specs, the command line
and JSON, and it is a ``str``, so it compares, hashes, formats and serialises as that
name.  ``Precision("fp16")`` parses a name, ``Precision.from_code(2)`` a register code.
"""

from __future__ import annotations

from enum import Enum, IntEnum

import numpy as np


class Precision(str, Enum):
    """An element precision: INT8, INT16 or FP16 (fp16 elements are uint16 bit patterns)."""

    INT8 = "int8"
    INT16 = "int16"
    FP16 = "fp16"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def code(self) -> int:
        """The register code (IN/PROC/OUT_PRECISION, INPUT_DATA, INPUT_DATA_TYPE)."""
        return _CODES[self]

    @property
    def bytes(self) -> int:
        """Bytes per element."""
        return 1 if self is Precision.INT8 else 2

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype the simulator keeps elements of this precision in."""
        return _DTYPES[self]

    @classmethod
    def from_code(cls, code: int) -> Precision | None:
        """The precision a register code names, or None for a reserved code."""
        return _BY_CODE.get(int(code))


_CODES = {Precision.INT8: 0, Precision.INT16: 1, Precision.FP16: 2}
_BY_CODE = {code: p for p, code in _CODES.items()}
_DTYPES = {Precision.INT8: np.dtype(np.int8), Precision.INT16: np.dtype("<i2"),
           Precision.FP16: np.dtype("<u2")}

#: The members by their short names (``from sim.regs.enums import INT8``).
INT8, INT16, FP16 = Precision.INT8, Precision.INT16, Precision.FP16


class AluAlgo(IntEnum):
    """The SDP ALU algorithm (``BS/BN/EW_ALU_ALGO``); EQL is the EW stage's "not equal"."""

    MAX = 0
    MIN = 1
    SUM = 2
    EQL = 3


class RamType(IntEnum):
    """Where a DMA reads or writes (``*_RAM_TYPE``): on-chip SRAM (CV) or DRAM (MC)."""

    CV = 0
    MC = 1


#: Field name -> the class of its values, for the fields whose enum these classes model.
TYPED_FIELDS = {
    "IN_PRECISION": Precision, "PROC_PRECISION": Precision, "OUT_PRECISION": Precision,
    "INPUT_DATA": Precision, "INPUT_DATA_TYPE": Precision,
    "BS_ALU_ALGO": AluAlgo, "BN_ALU_ALGO": AluAlgo, "EW_ALU_ALGO": AluAlgo,
}
