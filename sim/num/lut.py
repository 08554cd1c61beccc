"""NVDLA's lookup tables (SDP and CDP): the LUT RAM, table choice, and the CDP's lookup.

Two tables hold 16-bit entries: LE ("linear or exponent", 65 entries) and
LO ("linear only", 257 entries).  Software programs them through
``S_LUT_ACCESS_CFG`` (table, start address, read or write) followed by a
stream of ``S_LUT_ACCESS_DATA`` accesses; the address advances after each
access until it reaches the table's last entry, where it stays
(:class:`LutRam`, one per unit).

A lookup of ``x`` in each table under- or overflows or hits; both tables are
looked up and :func:`choose_table` picks the result: both underflow -> the
UFLOW priority, both overflow -> the OFLOW priority, one hits -> that one,
otherwise (both hit, or one under- and one overflows) -> the HYBRID priority
(priority 1 = LO).  The outcome bumps one of ``D_PERF_LUT_{UFLOW, OFLOW,
HYBRID, LE_HIT, LO_HIT}``.

The index and interpolation datapaths differ between the units in NVDLA's
C-model: the SDP's (35-bit fraction, golden-vector cells) is
:func:`sim.num.sdp.sdp_y_idx` / :func:`sim.num.sdp.sdp_y_inp`; the CDP's is
below (:func:`lookup_int`, :func:`lookup_fp`):

* LE in exponent mode: ``i = floor(log2(x - start)) - index_offset``; the
  fraction is the position of ``x - start`` inside ``[2**k, 2**(k+1))``.
* LE in linear mode and LO: ``i = (x - start) >> index_select`` (a negative
  select shifts left); the fraction is the bits shifted out.
* Below the table (``x <= start`` or ``i < 0``): underflow, extrapolated
  from entry 0 with the underflow slope (scale, shift); at or beyond the last
  interval: overflow, extrapolated from the last entry with the overflow
  slope measured from ``end``; otherwise a hit, interpolated between entries
  ``i`` and ``i+1`` with a 16-bit fraction.

Integer data (int8/int16) is looked up with integer arithmetic exactly as the
C-model does it, including its rounding through IEEE doubles
(:func:`sim.num.rounding.round_via_double`).  fp16 data is looked up in
fp32/fp17 with the primitives of ``sim.num``.
"""

from __future__ import annotations

import numpy as np

from sim.num.vector_int import bit_length, i64, round_via_double

LE_ENTRIES = 65
LO_ENTRIES = 257
LE, LO = 0, 1
ACCESS_CFG = "S_LUT_ACCESS_CFG_0"
ACCESS_DATA = "S_LUT_ACCESS_DATA_0"
LUT_PORTS = (ACCESS_CFG, ACCESS_DATA)  # the registers whose reads the LUT RAM answers

# Lookup outcomes (the counter each one bumps) and a table's own result kinds
UFLOW, OFLOW, HYBRID, LE_HIT, LO_HIT = 0, 1, 2, 3, 4
COUNTER_NAMES = (
    "D_PERF_LUT_UFLOW_0", "D_PERF_LUT_OFLOW_0", "D_PERF_LUT_HYBRID_0",
    "D_PERF_LUT_LE_HIT_0", "D_PERF_LUT_LO_HIT_0",
)  # fmt: skip
KIND_UFLOW, KIND_OFLOW, KIND_HIT = 0, 1, 2

# The parameter vector of the CDP lookups (sim.num.lut_cdp; sim.cdp.config.lut_params)
P_EXPONENT, P_UFLOW_PRI, P_OFLOW_PRI, P_HYBRID_PRI = 0, 1, 2, 3
P_LE_START, P_LE_END, P_LO_START, P_LO_END = 4, 5, 6, 7
P_LE_OFFSET, P_LE_SELECT, P_LO_SELECT = 8, 9, 10
P_LE_USCALE, P_LE_OSCALE, P_LO_USCALE, P_LO_OSCALE = 11, 12, 13, 14
P_LE_USHIFT, P_LE_OSHIFT, P_LO_USHIFT, P_LO_OSHIFT = 15, 16, 17, 18
N_PARAMS = 19


class LutRam:
    """The two tables and the access pointer behind S_LUT_ACCESS_CFG/DATA.

    The two units' register models differ in two details, kept as settings:
    ``cfg_readback`` -- a read of S_LUT_ACCESS_CFG returns the current address
    only (``"address"``, the CDP) or the whole configuration word with the
    current address (``"word"``, the SDP); ``past_end`` -- an access while the
    address lies past the table (a start address beyond it) is ignored and
    reads 0 (``"ignore"``, the CDP) or goes to the last entry (``"clamp"``,
    the SDP).
    """

    def __init__(self, cfg_readback: str = "address", past_end: str = "ignore"):
        # the entries as Python ints (a CSB write lands in one without numpy);
        # ``tables`` gives them as int64 arrays, rebuilt after writes
        self._entries = ([0] * LE_ENTRIES, [0] * LO_ENTRIES)
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self.table = LE
        self.addr = 0
        self.write_access = False
        self.cfg_readback = cfg_readback
        self.clamp = past_end == "clamp"

    @property
    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(LE, LO) entries as int64 arrays (do not write into them: :meth:`write` does)."""
        arrays = self._arrays
        if arrays is None:
            arrays = self._arrays = (np.array(self._entries[LE], np.int64),
                                     np.array(self._entries[LO], np.int64))
        return arrays

    def configure(self, value: int) -> None:
        """An S_LUT_ACCESS_CFG write: LUT_ADDR 9:0, TABLE_ID 16, ACCESS_TYPE 17."""
        self.addr = value & 0x3FF
        self.table = (value >> 16) & 1
        self.write_access = bool((value >> 17) & 1)

    def _entry(self) -> int | None:
        """The entry the address selects, or None past the table (``past_end="ignore"``)."""
        size = len(self._entries[self.table])
        if self.addr < size:
            return self.addr
        return size - 1 if self.clamp else None

    def _advance(self) -> None:
        if self.addr < len(self._entries[self.table]) - 1:
            self.addr += 1

    def write(self, value: int) -> None:
        """An S_LUT_ACCESS_DATA write (ignored unless the access type is WRITE)."""
        if not self.write_access:
            return
        entries, addr = self._entries[self.table], self.addr
        value &= 0xFFFF
        value -= (value >> 15) << 16  # a signed 16-bit entry
        if addr < len(entries) - 1:  # the usual case: write, then advance
            entries[addr] = value
            self.addr = addr + 1
        elif addr == len(entries) - 1 or self.clamp:  # the last entry: the address stays
            entries[-1] = value
        else:  # past the table: ignored
            return
        self._arrays = None

    def read(self) -> int:
        """An S_LUT_ACCESS_DATA read (the entry, or 0 unless the access type is READ)."""
        if self.write_access:
            return 0
        entry = self._entry()
        value = 0 if entry is None else self._entries[self.table][entry] & 0xFFFF
        self._advance()
        return value

    def read_cfg(self) -> int:
        """An S_LUT_ACCESS_CFG read (see ``cfg_readback``)."""
        if self.cfg_readback == "address":
            return self.addr
        return self.addr | (self.table << 16) | (int(self.write_access) << 17)

    def on_write(self, register: str, value: int) -> bool:
        """A CSB write to the unit's ``register``; True when the data port consumed it."""
        if register == ACCESS_DATA:
            self.write(value)
            return True
        if register == ACCESS_CFG:
            self.configure(value)
        return False  # the register file keeps the word (ACCESS_CFG: too)

    def on_read(self, register: str) -> int | None:
        """The value of a CSB read of ``register``, or None when it is not a LUT port."""
        if register == ACCESS_CFG:
            return self.read_cfg()
        if register == ACCESS_DATA:
            return self.read()
        return None

    @property
    def le(self) -> np.ndarray:
        return self.tables[LE]

    @property
    def lo(self) -> np.ndarray:
        return self.tables[LO]

    def snapshot(self) -> tuple[np.ndarray, np.ndarray]:
        return self.tables[LE].copy(), self.tables[LO].copy()


def choose_tables(le_uflow, le_oflow, lo_uflow, lo_oflow, uflow_lo, oflow_lo, hybrid_lo):
    """(use LO, outcome) per element from each table's under/overflow and the priorities.

    Both underflow -> ``uflow_lo``; both overflow -> ``oflow_lo``; exactly one
    hits -> that one; otherwise (both hit, or one under- and one overflows)
    -> ``hybrid_lo`` (a priority of 1 picks LO).
    """
    le_hit, lo_hit = ~(le_uflow | le_oflow), ~(lo_uflow | lo_oflow)
    both_u, both_o, one = le_uflow & lo_uflow, le_oflow & lo_oflow, le_hit != lo_hit
    use_lo = np.where(both_u, np.asarray(uflow_lo) != 0,
                      np.where(both_o, np.asarray(oflow_lo) != 0,
                               np.where(one, lo_hit, np.asarray(hybrid_lo) != 0)))
    outcome = np.where(both_u, UFLOW, np.where(both_o, OFLOW,
                                               np.where(one, np.where(lo_hit, LO_HIT, LE_HIT),
                                                        HYBRID)))
    return use_lo, outcome




# --- CDP integer lookup (numpy, whole arrays) -----------------------------------
INTERP_BITS = 56  # width of the interpolation/extrapolation term


def _extrapolate(base, x, ref, scale, shift):
    return round_via_double(base + round_via_double((x - ref) * scale, shift, INTERP_BITS), 0, 16)


def _interpolate(y0, y1, frac16):
    return round_via_double(y0 + round_via_double((y1 - y0) * frac16, 16, INTERP_BITS), 0, 16)


def _kinds(uflow, oflow, under, over, hit):
    """(value, under, over) of a table: ``under``/``over``/``hit`` compute the candidate
    values of the elements they are given (each side only for the elements it applies to)."""
    value = np.empty(uflow.shape, np.int64)
    for mask, compute in ((uflow, under), (oflow, over), (~(uflow | oflow), hit)):
        if mask.any():
            value[mask] = compute(mask)
    return value, uflow, oflow


def _linear_lookup(x, table, start, end, select, uscale, ushift, oscale, oshift):
    """(value, underflow, overflow) of a linear table (C shifts: counts modulo 64)."""
    size = table.size
    d = x - start
    index = d << ((-select) & 63) if select < 0 else d >> (select & 63)
    uflow = (index < 0) | (d <= 0)
    oflow = ~uflow & (index >= size - 1)
    frac = np.zeros_like(d)
    if select >= 0:
        frac = np.mod(d, np.int64(1) << (select & 31))
        frac = frac >> ((select - 16) & 63) if select > 16 else frac << ((16 - select) & 63)
    i = np.clip(index, 0, size - 2)
    return _kinds(uflow, oflow, lambda m: _extrapolate(table[0], x[m], start, uscale, ushift),
                  lambda m: _extrapolate(table[size - 1], x[m], end, oscale, oshift),
                  lambda m: _interpolate(table[i[m]], table[i[m] + 1], frac[m]))


def _exponent_lookup(x, table, start, end, offset, uscale, ushift, oscale, oshift):
    """(value, underflow, overflow) of the LE table in exponent mode."""
    d = x - start
    log2 = np.where(d > 0, bit_length(np.maximum(d, 0)) - 1, 0)
    index = log2 - offset
    uflow = (index < 0) | (d <= 0)
    oflow = ~uflow & (index >= LE_ENTRIES - 1)
    bias = 0 if offset < 0 else np.int64(1) << np.int64(offset & 63)
    frac = d - (np.int64(1) << np.clip(log2, 0, 62))
    frac = np.where(log2 > 16, frac >> np.clip(log2 - 16, 0, 63), frac << np.clip(16 - log2, 0, 63))
    i = np.clip(index, 0, LE_ENTRIES - 2)
    return _kinds(uflow, oflow,
                  lambda m: _extrapolate(table[0], x[m] - bias, start, uscale, ushift),
                  lambda m: _extrapolate(table[LE_ENTRIES - 1], x[m], end, oscale, oshift),
                  lambda m: _interpolate(table[i[m]], table[i[m] + 1], frac[m]))


def lookup_int(x, le, lo, p):
    """LUT values (int16) of the integer square sums ``x``, and each one's counter index.

    Integer arithmetic as NVDLA's C-model does it, with its rounding through
    IEEE doubles; ``p`` is the parameter vector (``P_*``).
    """
    x, le, lo = np.atleast_1d(i64(x)), i64(le), i64(lo)
    p = [int(v) for v in p]
    if p[P_EXPONENT]:
        le_val, le_u, le_o = _exponent_lookup(x, le, p[P_LE_START], p[P_LE_END], p[P_LE_OFFSET],
                                              p[P_LE_USCALE], p[P_LE_USHIFT], p[P_LE_OSCALE],
                                              p[P_LE_OSHIFT])
    else:
        le_val, le_u, le_o = _linear_lookup(x, le, p[P_LE_START], p[P_LE_END], p[P_LE_SELECT],
                                            p[P_LE_USCALE], p[P_LE_USHIFT], p[P_LE_OSCALE],
                                            p[P_LE_OSHIFT])
    lo_val, lo_u, lo_o = _linear_lookup(x, lo, p[P_LO_START], p[P_LO_END], p[P_LO_SELECT],
                                        p[P_LO_USCALE], p[P_LO_USHIFT], p[P_LO_OSCALE],
                                        p[P_LO_OSHIFT])
    use_lo, outcome = choose_tables(le_u, le_o, lo_u, lo_o, p[P_UFLOW_PRI], p[P_OFLOW_PRI],
                                    p[P_HYBRID_PRI])
    return np.where(use_lo, lo_val, le_val), outcome
