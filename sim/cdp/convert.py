"""CDP input and output convertors for integer data (cdp_icvt / cdp_ocvt).

TODO(move to sim.num): the numerics module is adding cdp_icvt/cdp_ocvt
block functions; these element kernels are built only from
``sim.num.rounding`` and will be replaced by (or become) those.  They are
checked against ../shared/golden/fp/cdp_icvt.npz and cdp_ocvt.npz by
tests/cdp/test_convert.py.

Input convertor (``D_DATIN_OFFSET/SCALE/SHIFTER``)::

    y = saturate(round_half_away(((x - offset) * scale) >> shifter))

into 17 bits for int16 data and 9 bits for int8 data.  For int8 only the
low 8 bits of the 16-bit offset take part (read as a signed byte).

Output convertor (``D_DATOUT_OFFSET/SCALE/SHIFTER``): the same form into 16
(int16) or 8 (int8) bits; for int8 only the low 25 bits of the 32-bit offset
take part.  It also reports saturation (``D_OUT_SATURATION``): set when the
rounded result differs from the plain arithmetic shift by more than one.
"""

from __future__ import annotations

from sim.jit import njit
from sim.num.rounding import convert, convert_flag, sign_extend


@njit
def icvt_int(x, offset, scale, shifter, int8):
    """Input convertor on one integer element (raw register fields)."""
    if int8:
        return convert((x - sign_extend(offset, 8)) * sign_extend(scale, 16), shifter & 31, 9)
    return convert((x - sign_extend(offset, 16)) * sign_extend(scale, 16), shifter & 31, 17)


@njit
def ocvt_int(x, offset, scale, shifter, int8):
    """Output convertor on one value: returns (result, saturated)."""
    if int8:
        v = (x - sign_extend(offset, 25)) * sign_extend(scale, 16)
        return convert_flag(v, shifter & 63, 8)
    v = (x - sign_extend(offset, 32)) * sign_extend(scale, 16)
    return convert_flag(v, shifter & 63, 16)
