"""NVDLA's register map, loaded from ``nvdla.regmap`` (the one source of truth).

Registers are named as NVDLA's traces name them: ``NVDLA_SDP.D_DATA_CUBE_WIDTH_0``.
The table is validated when loaded (unique addresses, non-overlapping fields,
reset values that fit), in the manner of riscv-opcodes.

Two address maps exist: ``nvdlav1`` (the nv_full release, which the nv_full
traces use) and ``master`` (every later configuration).  They differ only in
the unit base addresses and, for a few fields, in which bits are stored.
"""

from __future__ import annotations

import os
from functools import cache, cached_property
from pathlib import Path

ADDRESS_MAPS = ("nvdlav1", "master")
ACCESS_KINDS = ("rw", "ro", "wo", "w1c")
TABLE = Path(__file__).with_name("nvdla.regmap")


class RegisterMapError(ValueError):
    """The table itself is malformed (a bug in the project, not user input)."""


class Record:
    """An immutable value, as a frozen dataclass is: equality and hash over the fields of
    ``_compare`` (and the type), a repr of those of ``_shown``, no assignment.

    Written out rather than made by ``dataclasses``, whose class creation took a
    third of this module's import (the register map's classes; sim.trace.ops's
    too).  Instances keep their fields in ``__dict__`` (written past
    ``__setattr__``), so they pickle as they are.  (Records declared as dataclass
    fields use ``sim.records.record`` instead, which keeps dataclass's ``__init__``.)
    """

    _compare: tuple[str, ...] = ()
    _shown: tuple[str, ...] = ()

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self._compare)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}")


class Field(Record):
    _compare = ("name", "msb", "lsb", "access", "reset", "self_clearing")
    _shown = ("name", "msb", "lsb", "access", "reset", "enum", "stored", "self_clearing")

    def __init__(self, name: str, msb: int, lsb: int, access: str, reset: int = 0,
                 enum: dict | None = None, stored: dict | None = None,
                 self_clearing: bool = False):
        self.__dict__.update(
            name=name, msb=msb, lsb=lsb, access=access, reset=reset,
            enum={} if enum is None else enum,  # name -> value (not compared)
            # bits actually stored, per address map, as (msb, lsb); absent = msb:lsb
            # (not compared)
            stored={} if stored is None else stored,
            # the hardware clears it when the operation it starts completes (OP_EN, LAUNCH)
            self_clearing=self_clearing)

    @property
    def width(self) -> int:
        return self.msb - self.lsb + 1

    def stored_mask(self, address_map: str) -> int:
        """Register-word mask of the bits this field keeps on ``address_map``."""
        msb, lsb = self.stored.get(address_map, (self.msb, self.lsb))
        return ((1 << (msb - lsb + 1)) - 1) << lsb

    def decode(self, word: int, address_map: str) -> int:
        """The field's value, aligned at the field's nominal lsb.

        Where a map stores fewer low bits (nvdlav1 addresses keep [31:5]), the
        dropped bits read as zero, so an address field still decodes to a byte
        address on every map.
        """
        return (word & self.stored_mask(address_map)) >> self.lsb


class Register(Record):
    _compare = _shown = ("unit", "name", "offset", "fields")

    def __init__(self, unit: str, name: str, offset: int, fields: tuple):
        # full_name and double_buffered (D_ registers exist once per group, selected by
        # S_POINTER) are derived, not compared: kept as attributes, as every CSB access
        # of the register file asks for them
        self.__dict__.update(unit=unit, name=name, offset=offset, fields=fields,
                             full_name=f"{unit}.{name}", double_buffered=name.startswith("D_"))

    @cached_property
    def _by_field_name(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}

    def field(self, name: str) -> Field:
        f = self._by_field_name.get(name)
        if f is None:
            raise KeyError(f"{self.full_name} has no field {name}")
        return f

    def reset_value(self) -> int:
        return sum(f.reset << f.lsb for f in self.fields)

    @cached_property
    def _decoders(self) -> dict:
        return {}

    def field_decoders(self, address_map: str) -> dict[str, tuple[int, int]]:
        """Field name (lower case) -> (stored mask, lsb) on ``address_map``, what
        :meth:`Field.decode` computes (made once per map: layer decoders read fields of
        every layer's registers)."""
        table = self._decoders.get(address_map)
        if table is None:
            table = self._decoders[address_map] = {
                f.name.lower(): (f.stored_mask(address_map), f.lsb) for f in self.fields}
        return table

    def field_plan(self, address_map: str) -> tuple[tuple[str, int, int], ...]:
        """(field name, stored mask, lsb) of the :meth:`field_decoders` whose name does not
        start with '_': what a register view decodes at once (made once per map)."""
        plan = self._decoders.get(("plan", address_map))
        if plan is None:
            plan = self._decoders["plan", address_map] = tuple(
                (name, mask, lsb) for name, (mask, lsb) in self.field_decoders(address_map).items()
                if name[:1] != "_")
        return plan

    @property
    def software_owned(self) -> bool:
        """Only software changes it: what a read returns never depends on the timing
        of the hardware (every field read-write and none cleared by the hardware)."""
        return bool(self.fields) and all(f.access == "rw" and not f.self_clearing
                                         for f in self.fields)

    @cached_property
    def _masks(self) -> dict:
        return {}

    def mask(self, address_map: str, kinds=ACCESS_KINDS) -> int:
        """The bits of the fields of access ``kinds`` (a tuple) stored on ``address_map``
        (computed once per map and kinds: every CSB access asks)."""
        key = (address_map, kinds)
        m = self._masks.get(key)
        if m is None:
            m = 0
            for f in self.fields:
                if f.access in kinds:
                    m |= f.stored_mask(address_map)
            self._masks[key] = m
        return m


class Unit(Record):
    _compare = _shown = ("name", "bases", "registers")

    def __init__(self, name: str, bases: dict, registers: tuple):
        # bases: address map -> base byte address (absent: unit not on that map)
        self.__dict__.update(name=name, bases=bases, registers=registers)


class RegisterMap:
    """All units and registers, with lookups by name and by byte address."""

    def __init__(self, units: list[Unit]):
        self.units = {u.name: u for u in units}
        self._by_name = {r.full_name: r for u in units for r in u.registers}
        self._resets: dict[tuple[str, bool], dict[str, int]] = {}
        self._fields: dict[str, dict[str, list[Register]]] = {}
        self._decoders: dict[tuple[str, str], dict[str, tuple | None]] = {}
        self._memos: dict = {}
        self._by_addr = {m: {} for m in ADDRESS_MAPS}
        for u in units:
            for amap, base in u.bases.items():
                for r in u.registers:
                    addr = base + r.offset
                    other = self._by_addr[amap].get(addr)
                    if other is not None:
                        raise RegisterMapError(
                            f"{amap}: {r.full_name} and {other.full_name} share address {addr:#x}"
                        )
                    self._by_addr[amap][addr] = r

    def __iter__(self):
        return iter(self._by_name.values())

    def reset_words(self, unit: str, double_buffered: bool = False) -> dict[str, int]:
        """Register name -> reset word of ``unit``'s registers, or of its double-buffered
        ones only (computed once; callers copy it)."""
        words = self._resets.get((unit, double_buffered))
        if words is None:
            words = self._resets[unit, double_buffered] = {
                r.name: r.reset_value() for r in self.units[unit].registers
                if r.double_buffered or not double_buffered}
        return words

    def field_index(self, unit: str) -> dict[str, list[Register]]:
        """Field name (lower case) -> the registers of ``unit`` that have it (computed once)."""
        index = self._fields.get(unit)
        if index is None:
            index = self._fields[unit] = {}
            for reg in self.units[unit].registers:
                for f in reg.fields:
                    index.setdefault(f.name.lower(), []).append(reg)
        return index

    def field_decoders(self, unit: str, address_map: str) -> dict[str, tuple | None]:
        """Field name (lower case) -> (register name, stored mask, lsb) of ``unit``'s
        fields on ``address_map``, None for a name several registers share (computed once:
        every decoded snapshot of a unit reads its fields through it)."""
        table = self._decoders.get((unit, address_map))
        if table is None:
            table = self._decoders[unit, address_map] = {
                name: (regs[0].name, *regs[0].field_decoders(address_map)[name])
                if len(regs) == 1 else None
                for name, regs in self.field_index(unit).items()}
        return table

    def memo(self, key) -> dict:
        """A dict kept with this map for tables derived from it (``key`` names the table;
        the users of the map fill it): work done once per map, not once per machine."""
        table = self._memos.get(key)
        if table is None:
            table = self._memos[key] = {}
        return table

    def __len__(self):
        return len(self._by_name)

    def by_name(self, name: str) -> Register:
        """``NVDLA_SDP.D_OP_ENABLE_0``; the trailing ``_0`` may be omitted."""
        reg = self._by_name.get(name) or self._by_name.get(name + "_0")
        if reg is None:
            raise KeyError(name)
        return reg

    def by_address(self, addr: int, address_map: str) -> Register:
        try:
            return self._by_addr[address_map][addr]
        except KeyError:
            raise KeyError(f"{addr:#x}") from None

    def address(self, reg: Register, address_map: str) -> int:
        base = self.units[reg.unit].bases.get(address_map)
        if base is None:
            raise KeyError(f"{reg.unit} is not on the {address_map} address map")
        return base + reg.offset


def _int(text: str) -> int:
    return int(text, 0)


def _bits(text: str) -> tuple[int, int]:
    msb, lsb = text.split(":")
    return int(msb), int(lsb)


def parse_table(text: str, source: str = str(TABLE)) -> RegisterMap:
    units: list[Unit] = []
    unit_name = bases = None
    regs: list[Register] = []
    reg_head = None
    fields: list[Field] = []

    def close_reg():
        nonlocal reg_head, fields
        if reg_head is not None:
            regs.append(Register(unit_name, reg_head[0], reg_head[1], tuple(fields)))
        reg_head, fields = None, []

    def close_unit():
        nonlocal regs
        close_reg()
        if unit_name is not None:
            units.append(Unit(unit_name, bases, tuple(regs)))
        regs = []

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        where = f"{source}:{lineno}"
        words = line.split()
        try:
            if words[0] == "unit":
                close_unit()
                unit_name = words[1]
                bases = {}
                for w in words[2:]:
                    amap, value = w.split("=")
                    if amap not in ADDRESS_MAPS:
                        raise RegisterMapError(f"unknown address map {amap}")
                    if value != "-":
                        bases[amap] = _int(value)
            elif words[0] == "reg":
                close_reg()
                reg_head = (words[1], _int(words[2]))
            else:
                fields.append(_parse_field(words))
        except (ValueError, IndexError) as exc:
            raise RegisterMapError(f"{where}: {exc}") from None
    close_unit()
    regmap = RegisterMap(units)
    validate(regmap)
    return regmap


def _parse_field(words: list[str]) -> Field:
    name = words[0]
    msb, lsb = _bits(words[1])
    access = words[2]
    if access not in ACCESS_KINDS:
        raise RegisterMapError(f"field {name}: unknown access {access}")
    reset, enum, stored, self_clearing = 0, {}, {}, False
    for w in words[3:]:
        if w == "selfclear":
            self_clearing = True
            continue
        key, value = w.split("=", 1)
        if key == "reset":
            reset = _int(value)
        elif key == "enum":
            enum = {k: int(v) for k, v in (item.split(":") for item in value.split(","))}
        elif key in ADDRESS_MAPS:
            stored[key] = _bits(value)
        else:
            raise RegisterMapError(f"field {name}: unknown attribute {key}")
    return Field(name, msb, lsb, access, reset, enum, stored, self_clearing)


def validate(regmap: RegisterMap) -> None:
    """Check the table's invariants; raise RegisterMapError naming the culprit."""
    for reg in regmap:
        if reg.offset % 4:
            raise RegisterMapError(f"{reg.full_name}: offset {reg.offset:#x} not word aligned")
        used = 0
        for f in reg.fields:
            if not 0 <= f.lsb <= f.msb <= 31:
                raise RegisterMapError(f"{reg.full_name}.{f.name}: bad bit range")
            bits = ((1 << f.width) - 1) << f.lsb
            if used & bits:
                raise RegisterMapError(f"{reg.full_name}.{f.name}: overlaps another field")
            used |= bits
            if f.reset >> f.width:
                raise RegisterMapError(f"{reg.full_name}.{f.name}: reset does not fit")
            for value in f.enum.values():
                if value >> f.width:
                    raise RegisterMapError(f"{reg.full_name}.{f.name}: enum value does not fit")
            for msb, lsb in f.stored.values():
                if not f.lsb <= lsb <= msb <= f.msb:
                    raise RegisterMapError(f"{reg.full_name}.{f.name}: stored bits outside field")


@cache
def load() -> RegisterMap:
    """The project's register map (parsed once per process, and kept in a cache file:
    :func:`cached_map`)."""
    text = TABLE.read_text()
    return cached_map(text, lambda: _with_reset_words(parse_table(text)))


def _with_reset_words(regmap: RegisterMap) -> RegisterMap:
    """``regmap`` with every unit's reset words worked out, so that its cache file holds
    them: working them out took ~2 ms of every process's first machine."""
    for unit in regmap.units:
        for double_buffered in (False, True):
            regmap.reset_words(unit, double_buffered)
    return regmap


def cache_folder() -> Path:
    """Where the parsed map is kept: beside sim.jit's numba caches."""
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                             "nvdla-sim")
    return Path(base)


def cached_map(text: str, parse) -> RegisterMap:
    """``parse()``'s map of the table ``text``, unpickled from the cache when an earlier
    process parsed the very same table with the very same parser, else parsed and stored.

    Parsing takes a small trace's whole run; unpickling a fifth of it.  The file
    holds the table's text and this module's source, and is used only when both
    equal the present ones (its name, a CRC of them, just keeps checkouts apart): a
    changed table or parser is never served an old map.  An unreadable, unwritable
    or broken cache is parsed around.
    """
    import pickle
    import zlib

    try:
        source = Path(__file__).read_text()
    except OSError:
        return parse()
    key = (_CACHE_FORMAT, __name__, source, text)
    digest = zlib.crc32("\0".join(key).encode()) & 0xFFFFFFFF
    path = cache_folder() / f"regmap-{digest:08x}.pickle"
    try:
        with open(path, "rb") as f:
            stored_key, regmap = pickle.load(f)
        if stored_key == key and isinstance(regmap, RegisterMap):
            return regmap
    except Exception:  # absent, unreadable or from another Python: parse instead
        pass
    regmap = parse()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump((key, regmap), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # whole or not at all: processes may race harmlessly
    except OSError:
        pass  # a read-only home: parse every time
    return regmap


_CACHE_FORMAT = "1"  # of the cache file's contents (python version rides in pickle's format)
