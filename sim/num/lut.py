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

import math

import numpy as np

from sim.jit import njit
from sim.num.fpcore import fp_add, fp_mul, fp_sub
from sim.num.ops import (
    fp16_to_fp17_bits,
    fp16_to_fp32_bits,
    fp32_to_fp17_bits,
    uint16_to_fp17_bits,
)
from sim.num.rounding import bit_length, round_via_double, sign_extend

LE_ENTRIES = 65
LO_ENTRIES = 257
LE, LO = 0, 1
ACCESS_CFG = "S_LUT_ACCESS_CFG_0"
ACCESS_DATA = "S_LUT_ACCESS_DATA_0"

# Lookup outcomes (the counter each one bumps) and a table's own result kinds
UFLOW, OFLOW, HYBRID, LE_HIT, LO_HIT = 0, 1, 2, 3, 4
COUNTER_NAMES = (
    "D_PERF_LUT_UFLOW_0", "D_PERF_LUT_OFLOW_0", "D_PERF_LUT_HYBRID_0",
    "D_PERF_LUT_LE_HIT_0", "D_PERF_LUT_LO_HIT_0",
)  # fmt: skip
KIND_UFLOW, KIND_OFLOW, KIND_HIT = 0, 1, 2


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
        self.tables = (np.zeros(LE_ENTRIES, np.int64), np.zeros(LO_ENTRIES, np.int64))
        self.table = LE
        self.addr = 0
        self.write_access = False
        self.cfg_readback = cfg_readback
        self.clamp = past_end == "clamp"

    def configure(self, value: int) -> None:
        """An S_LUT_ACCESS_CFG write: LUT_ADDR 9:0, TABLE_ID 16, ACCESS_TYPE 17."""
        self.addr = value & 0x3FF
        self.table = (value >> 16) & 1
        self.write_access = bool((value >> 17) & 1)

    def _entry(self) -> int | None:
        """The entry the address selects, or None past the table (``past_end="ignore"``)."""
        size = self.tables[self.table].size
        if self.addr < size:
            return self.addr
        return size - 1 if self.clamp else None

    def _advance(self) -> None:
        if self.addr < self.tables[self.table].size - 1:
            self.addr += 1

    def write(self, value: int) -> None:
        """An S_LUT_ACCESS_DATA write (ignored unless the access type is WRITE)."""
        if not self.write_access:
            return
        entry = self._entry()
        if entry is not None:
            self.tables[self.table][entry] = sign_extend(value & 0xFFFF, 16)
        self._advance()

    def read(self) -> int:
        """An S_LUT_ACCESS_DATA read (the entry, or 0 unless the access type is READ)."""
        if self.write_access:
            return 0
        entry = self._entry()
        value = 0 if entry is None else int(self.tables[self.table][entry]) & 0xFFFF
        self._advance()
        return value

    def read_cfg(self) -> int:
        """An S_LUT_ACCESS_CFG read (see ``cfg_readback``)."""
        if self.cfg_readback == "address":
            return self.addr
        return self.addr | (self.table << 16) | (int(self.write_access) << 17)

    def on_write(self, register: str, value: int) -> bool:
        """A CSB write to the unit's ``register``; True when the data port consumed it."""
        if register == ACCESS_CFG:
            self.configure(value)
            return False  # the register file keeps the word too
        if register == ACCESS_DATA:
            self.write(value)
            return True
        return False

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


@njit
def choose_table(le_kind, lo_kind, uflow_lo, oflow_lo, hybrid_lo):
    """(use LO, outcome) from the two tables' result kinds and the three priorities."""
    if le_kind == KIND_UFLOW and lo_kind == KIND_UFLOW:
        return uflow_lo != 0, UFLOW
    if le_kind == KIND_OFLOW and lo_kind == KIND_OFLOW:
        return oflow_lo != 0, OFLOW
    le_hit = le_kind == KIND_HIT
    lo_hit = lo_kind == KIND_HIT
    if le_hit != lo_hit:
        return lo_hit, (LO_HIT if lo_hit else LE_HIT)
    return hybrid_lo != 0, HYBRID


# --- CDP lookup ----------------------------------------------------------------

# Layout of the int64 parameter vector the kernels read (see sim.cdp.config.lut_params)
P_EXPONENT, P_UFLOW_PRI, P_OFLOW_PRI, P_HYBRID_PRI = 0, 1, 2, 3
P_LE_START, P_LE_END, P_LO_START, P_LO_END = 4, 5, 6, 7
P_LE_OFFSET, P_LE_SELECT, P_LO_SELECT = 8, 9, 10
P_LE_USCALE, P_LE_OSCALE, P_LO_USCALE, P_LO_OSCALE = 11, 12, 13, 14
P_LE_USHIFT, P_LE_OSHIFT, P_LO_USHIFT, P_LO_OSHIFT = 15, 16, 17, 18
N_PARAMS = 19


# --- integer lookup ----------------------------------------------------------

INTERP_BITS = 56  # width of the interpolation/extrapolation term


@njit
def _c_shift_right(x, n):
    """``x >> n`` with the shift count taken modulo 64, as x86 does."""
    return x >> (n & 63)


@njit
def _c_shift_left(x, n):
    return x << (n & 63)


@njit
def _extrapolate(base, x, ref, scale, shift):
    r = base + round_via_double((x - ref) * scale, shift, INTERP_BITS)
    return round_via_double(r, 0, 16)


@njit
def _interpolate(y0, y1, frac16):
    r = y0 + round_via_double((y1 - y0) * frac16, 16, INTERP_BITS)
    return round_via_double(r, 0, 16)


@njit
def _linear_lookup(x, table, size, start, end, select, uscale, ushift, oscale, oshift):
    """(value, kind) of a linear table; kind 0 underflow, 1 overflow, 2 hit."""
    d = x - start
    index = _c_shift_left(d, -select) if select < 0 else _c_shift_right(d, select)
    if index < 0 or d <= 0:
        return _extrapolate(table[0], x, start, uscale, ushift), 0
    if index >= size - 1:
        return _extrapolate(table[size - 1], x, end, oscale, oshift), 1
    frac = 0
    if select >= 0:
        frac = d % (np.int64(1) << (select & 31))
        if select > 16:
            frac = _c_shift_right(frac, select - 16)
        else:
            frac = _c_shift_left(frac, 16 - select)
    return _interpolate(table[index], table[index + 1], frac), 2


@njit
def _exponent_lookup(x, table, start, end, offset, uscale, ushift, oscale, oshift):
    """(value, kind) of the LE table in exponent mode."""
    d = x - start
    log2 = bit_length(d) - 1 if d > 0 else 0
    index = log2 - offset
    if index < 0 or d <= 0:
        bias = 0 if offset < 0 else _c_shift_left(np.int64(1), offset)
        return _extrapolate(table[0], x - bias, start, uscale, ushift), 0
    if index >= LE_ENTRIES - 1:
        return _extrapolate(table[LE_ENTRIES - 1], x, end, oscale, oshift), 1
    frac = d - (np.int64(1) << log2)
    frac = (frac >> (log2 - 16)) if log2 > 16 else (frac << (16 - log2))
    return _interpolate(table[index], table[index + 1], frac), 2


@njit
def _select(le_val, le_kind, lo_val, lo_kind, p):
    """Choose between the LE and LO results; returns (value, counter index)."""
    use_lo, outcome = choose_table(le_kind, lo_kind, p[P_UFLOW_PRI], p[P_OFLOW_PRI],
                                   p[P_HYBRID_PRI])
    return (lo_val if use_lo else le_val), outcome


@njit
def lookup_int(x, le, lo, p):
    """LUT value (int16) for the integer square sum ``x``; returns (value, counter index)."""
    if p[P_EXPONENT]:
        le_val, le_kind = _exponent_lookup(x, le, p[P_LE_START], p[P_LE_END], p[P_LE_OFFSET],
                                           p[P_LE_USCALE], p[P_LE_USHIFT],
                                           p[P_LE_OSCALE], p[P_LE_OSHIFT])
    else:
        le_val, le_kind = _linear_lookup(x, le, LE_ENTRIES, p[P_LE_START], p[P_LE_END],
                                         p[P_LE_SELECT], p[P_LE_USCALE], p[P_LE_USHIFT],
                                         p[P_LE_OSCALE], p[P_LE_OSHIFT])
    lo_val, lo_kind = _linear_lookup(x, lo, LO_ENTRIES, p[P_LO_START], p[P_LO_END],
                                     p[P_LO_SELECT], p[P_LO_USCALE], p[P_LO_USHIFT],
                                     p[P_LO_OSCALE], p[P_LO_OSHIFT])
    return _select(le_val, le_kind, lo_val, lo_kind, p)


# --- fp16 lookup (fp32 index arithmetic, fp17 interpolation) -------------------

@njit
def _f32(bits):
    """The IEEE value of an fp32 bit pattern, as float64."""
    return np.float64(np.array([bits & 0xFFFFFFFF], np.uint32).view(np.float32)[0])


@njit
def _f32_bits(value):
    return np.int64(np.array([value], np.float32).view(np.uint32)[0])


@njit
def _fp_table_lookup(x, table, size, exponent, start, end, offset, select,
                     uscale, oscale):
    """(fp17 value, kind) of one table for the fp32 square sum ``x``."""
    d = fp_sub(x, start, 8, 23)
    dv = _f32(d)
    kind = 2
    index = 0
    frac = 0
    if dv <= 0 or math.isnan(dv):
        kind = 0
    elif exponent:
        index = ((d >> 23) & 0xFF) - 127 - offset
        frac = (d >> 7) & 0xFFFF
        if index < 0:
            kind = 0
        elif index >= size - 1:
            kind = 1
    else:
        shifted = np.float64(np.float32(dv * (2.0 ** (-select))))
        if shifted >= size - 1:
            kind = 1
        else:
            index = np.int64(shifted)
            frac = np.int64((shifted - np.float64(index)) * 65536.0) & 0xFFFF
    if kind == 0:
        if exponent:
            bias = 0.0 if offset <= -127 else 2.0 ** offset
            d = fp_sub(x, fp_add(start, _f32_bits(bias), 8, 23), 8, 23)
        slope = fp16_to_fp17_bits(uscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, 6, 10)
        return fp_add(term, fp16_to_fp17_bits(table[0] & 0xFFFF), 6, 10), 0
    if kind == 1:
        d = fp_sub(x, end, 8, 23)
        slope = fp16_to_fp17_bits(oscale & 0xFFFF)
        term = fp_mul(fp32_to_fp17_bits(d), slope, 6, 10)
        return fp_add(term, fp16_to_fp17_bits(table[size - 1] & 0xFFFF), 6, 10), 1
    y0 = table[index] & 0xFFFF
    y1 = table[index + 1] & 0xFFFF
    diff = fp_sub(fp16_to_fp32_bits(y1), fp16_to_fp32_bits(y0), 8, 23)
    term = fp_mul(fp32_to_fp17_bits(diff), uint16_to_fp17_bits(frac), 6, 10)
    return fp_add(term, fp16_to_fp17_bits(y0), 6, 10), 2


@njit
def lookup_fp(x, le, lo, p):
    """LUT value (fp17 bits) for the fp32 square sum ``x``; returns (value, counter index)."""
    le_val, le_kind = _fp_table_lookup(x, le, LE_ENTRIES, p[P_EXPONENT] != 0, p[P_LE_START],
                                       p[P_LE_END], p[P_LE_OFFSET], p[P_LE_SELECT],
                                       p[P_LE_USCALE], p[P_LE_OSCALE])
    lo_val, lo_kind = _fp_table_lookup(x, lo, LO_ENTRIES, False, p[P_LO_START], p[P_LO_END],
                                       0, p[P_LO_SELECT], p[P_LO_USCALE], p[P_LO_OSCALE])
    return _select(le_val, le_kind, lo_val, lo_kind, p)
