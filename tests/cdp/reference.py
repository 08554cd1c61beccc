"""A plain-Python model of integer LRN, written from the documented semantics.

Slow and simple on purpose: Python integers, one element at a time, no
numba and no code shared with sim.cdp.  Valid while every intermediate stays
below 2**53 (the C-model rounds its LUT terms through doubles beyond that).
"""

from __future__ import annotations

from dataclasses import dataclass, field


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def clamp(v: int, bits: int) -> int:
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


def round_shift(v: int, s: int) -> int:
    """v / 2**s rounded half away from zero (s < 0 multiplies)."""
    if s <= 0:
        return v << -s
    q, r = divmod(abs(v), 1 << s)
    if 2 * r >= (1 << s):
        q += 1
    return q if v >= 0 else -q


@dataclass
class Table:
    entries: list
    start: int = 0
    end: int = 0
    select: int = 0  # linear: index = (x - start) >> select
    exponent: bool = False  # LE only: index = floor(log2(x - start)) - offset
    offset: int = 0
    uscale: int = 0
    ushift: int = 0
    oscale: int = 0
    oshift: int = 0


@dataclass
class Lut:
    le: Table
    lo: Table
    uflow_lo: bool = False
    oflow_lo: bool = False
    hybrid_lo: bool = False
    counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("uflow", "oflow", "hybrid", "le_hit", "lo_hit"), 0))


def lookup_table(t: Table, x: int):
    """(value, 'under' | 'over' | 'hit')."""
    last = len(t.entries) - 1
    d = x - t.start
    if t.exponent:
        k = d.bit_length() - 1 if d > 0 else 0
        index = k - t.offset
        if d <= 0 or index < 0:
            bias = (1 << t.offset) if t.offset >= 0 else 0
            v = t.entries[0] + round_shift((d - bias) * t.uscale, t.ushift)
            return clamp(v, 16), "under"
        frac = ((d - (1 << k)) << 16) >> k
    else:
        index = d >> t.select if t.select >= 0 else d << -t.select
        if d <= 0 or index < 0:
            return clamp(t.entries[0] + round_shift(d * t.uscale, t.ushift), 16), "under"
        frac = ((d % (1 << t.select)) << 16) >> t.select if t.select >= 0 else 0
    if index >= last:
        v = t.entries[last] + round_shift((x - t.end) * t.oscale, t.oshift)
        return clamp(v, 16), "over"
    y0, y1 = t.entries[index], t.entries[index + 1]
    return clamp(y0 + round_shift((y1 - y0) * frac, 16), 16), "hit"


def lookup(lut: Lut, x: int) -> int:
    le, le_kind = lookup_table(lut.le, x)
    lo, lo_kind = lookup_table(lut.lo, x)
    if le_kind == lo_kind == "under":
        lut.counts["uflow"] += 1
        return lo if lut.uflow_lo else le
    if le_kind == lo_kind == "over":
        lut.counts["oflow"] += 1
        return lo if lut.oflow_lo else le
    if (le_kind == "hit") != (lo_kind == "hit"):
        lut.counts["le_hit" if le_kind == "hit" else "lo_hit"] += 1
        return le if le_kind == "hit" else lo
    lut.counts["hybrid"] += 1
    return lo if lut.hybrid_lo else le


def lrn_pixel(values: list, channels: int, padded: int, bits: int, window: int, lut: Lut,
              datin=(0, 1, 0), datout=(0, 1, 0), sqsum_bypass=False, mul_bypass=False):
    """Outputs (padded channels) and saturation count for one pixel's raw values."""
    in_bits = 9 if bits == 8 else 17
    off = sext(datin[0], bits)

    def icvt(v):
        return clamp(round_shift((v - off) * sext(datin[1], 16), datin[2]), in_bits)

    a = [icvt(values[c]) if c < channels else icvt(off) for c in range(padded)]
    half = window // 2
    out, saturated = [], 0
    out_off = sext(datout[0], 25 if bits == 8 else 32)
    for c in range(padded):
        if sqsum_bypass:
            s = a[c]
        else:
            s = sum(a[j] ** 2 for j in range(c - half, c + half + 1) if 0 <= j < padded)
        v = lookup(lut, s)
        y = v if mul_bypass else v * a[c]
        z = (y - out_off) * sext(datout[1], 16)
        r = clamp(round_shift(z, datout[2]), bits)
        if abs((z >> datout[2]) - r) > 1:
            saturated += 1
        out.append(r)
    return out, saturated
