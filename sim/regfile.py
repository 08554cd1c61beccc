"""The register file as NVDLA's CSB sees it.

Per unit, ``S_`` (and other single) registers exist once; ``D_`` registers
exist in two groups.  ``S_POINTER.PRODUCER`` selects the group the CPU
reads and writes, ``S_POINTER.CONSUMER`` (hardware-owned) the group the
datapath executes next.  Writing ``D_OP_ENABLE.OP_EN = 1`` arms the
producer's group; the ``Machine`` launches a layer when every block it
needs is armed, and on completion clears OP_EN, flips the consumer and
stores the counters the layer produced into that group's read-only
registers.  Software writes to read-only registers are ignored (NVDLA's
traces write random values into them); write-only fields read as zero.
"""

from __future__ import annotations

from . import regs as regtable
from .errors import ConfigurationError, SimError
from .regs.enums import Precision

IDLE, RUNNING, PENDING = 0, 1, 2
GROUPS = (0, 1)
# what a CSB write of a register does besides storing its bits (RegisterFile.write_plan)
PLAIN, POINTER, OP_ENABLE = 0, 1, 2
STATUS = 3  # what a CSB read of a register does besides masking its word: S_STATUS shows groups


class RegView:
    """One register's decoded fields: ``view.field_name`` (lower case).

    Made per use (layer decoders read a dozen registers of every layer this way): its
    few fields are decoded at once into plain attributes (by the register's
    :meth:`regs.Register.field_plan`), so a read is an attribute, not a
    ``__getattr__`` call; ``register``, ``word`` and ``address_map`` come first.
    """

    def __init__(self, register: regtable.Register, word: int, address_map: str):
        values = self.__dict__
        for name, mask, lsb in register.field_plan(address_map):
            values[name] = (word & mask) >> lsb  # as Field.decode computes it
        self.register = register
        self.word = word
        self.address_map = address_map

    def __getattr__(self, name: str) -> int:  # not a field (every field is an attribute)
        register = self.__dict__.get("register")
        if register is None:  # not made by __init__ (a copy being made)
            raise AttributeError(name)
        raise AttributeError(f"{register.full_name} has no field {name.upper()}")

    def __repr__(self) -> str:
        return (f"RegView(register={self.register.full_name}, word={self.word:#x}, "
                f"address_map={self.address_map!r})")


class Block:
    """A frozen, decoded snapshot of one unit's registers for one group.

    ``block.width`` reads the field ``WIDTH`` (field names are unique within a
    unit except for BDMA, where ``block.reg("CFG_LINE_0").size`` is used).
    Values are raw: every "+1" encoding stays visible where it is applied.
    Address fields decode to byte addresses on every address map.
    """

    def __init__(self, unit: str, group: int, words: dict, regmap, address_map: str):
        self._unit = unit
        self.group = group
        self._words = words  # register name -> word
        self._regmap = regmap
        self._address_map = address_map
        self._fields = regmap.field_index(unit)
        # field name -> (register name, stored mask, lsb); None: several registers have it
        self._decoders = regmap.field_decoders(unit, address_map)
        self._views: dict[str, RegView] = {}  # register name -> its view: decoders ask twice

    @property
    def unit(self) -> str:
        return self._unit

    def reg(self, name: str) -> RegView:
        view = self._views.get(name)
        if view is None:
            reg = self._regmap.by_name(f"{self._unit}.{name}")
            view = self._views[name] = RegView(reg, self._words[reg.name], self._address_map)
        return view

    def word(self, name: str) -> int:
        return self._words[self._regmap.by_name(f"{self._unit}.{name}").name]

    def __getattr__(self, name: str) -> int:
        if name[:1] == "_":
            raise AttributeError(name)
        entry = self.__dict__["_decoders"].get(name, False)
        if not entry:
            if entry is None:
                raise AttributeError(f"{self._unit}.{name.upper()} is ambiguous: use block.reg()")
            raise AttributeError(f"{self._unit} has no field {name.upper()}")
        reg_name, mask, lsb = entry  # as Field.decode computes it
        value = (self._words[reg_name] & mask) >> lsb
        self.__dict__[name] = value  # a snapshot: decoded once, then a plain attribute
        return value

    def fields(self) -> dict[str, int]:
        """Every field of the block (those :meth:`__getattr__` reads) decoded at once, as a
        dict; they become plain attributes too.  A decoder that reads most of a unit's
        fields calls this first: one pass over the unit's table costs less than a
        ``__getattr__`` miss per field."""
        values = self.__dict__.get("_all")
        if values is None:
            words = self._words
            values = {name: (words[reg] & mask) >> lsb
                      for name, reg, mask, lsb in _field_plan(self._regmap, self._unit,
                                                              self._address_map)}
            self.__dict__.update(values)
            self._all = values
        return values

    def values(self, names: tuple[str, ...]) -> tuple[int, ...] | None:
        """The fields ``names`` (a decoder's constant tuple) as :meth:`__getattr__` reads
        them, by a plan kept per unit and map (each field's register, mask and lsb, found
        once): for a decoder that reads a few fields of a fresh snapshot, no dict of every
        field (:meth:`fields`) and no lookup per field.  None when a name is not one that
        :meth:`fields` decodes (the caller's general path says why)."""
        plans = self._regmap.memo(("field plans", self._unit, self._address_map))
        plan = plans.get(names, False)
        if plan is False:
            plan = plans[names] = _values_plan(self._regmap, self._unit, self._address_map,
                                               names)
        if plan is None:
            return None
        words = self._words
        return tuple([(words[reg] & mask) >> lsb for reg, mask, lsb in plan])

    def words_key(self) -> tuple:
        """The block's register names and words as a hashable value:
        equal keys of one unit and map are equal programming, for a decoder's memo."""
        key = self.__dict__.get("_key")
        if key is None:
            key = self._key = tuple(self._words.items())
        return key

    def memo(self, name: str) -> dict:
        """A dict kept with the register map for this unit and address map: a decoder's
        memo keyed on :meth:`words_key`, shared by every machine on the map."""
        return self._regmap.memo((name, self._unit, self._address_map))

    def precision(self, name: str) -> Precision:
        """The precision field ``name`` (``in_precision``, ``input_data``, ...) as a
        :class:`Precision`; a reserved code raises ConfigurationError naming the register."""
        code = getattr(self, name)
        precision = Precision.from_code(code)
        if precision is None:
            reg = self.__dict__["_fields"][name][0]
            raise ConfigurationError(f"{name.upper()} {code} is reserved",
                                     where=f"{self._unit}.{reg.name}")
        return precision

    def address(self, stem: str) -> int:
        """Combine ``<STEM>_LOW`` and ``<STEM>_HIGH`` fields into a byte address."""
        low = getattr(self, f"{stem}_low")
        high = getattr(self, f"{stem}_high", 0) if f"{stem}_high" in self._fields else 0
        return (high << 32) | low


def _field_plan(regmap, unit: str, address_map: str) -> tuple:
    """(field name, register name, stored mask, lsb) of every field of ``unit`` that
    :meth:`Block.fields` decodes: unambiguous, and not the name of a Block attribute."""
    plans = regmap.memo(("block fields", address_map))
    plan = plans.get(unit)
    if plan is None:
        taken = set(dir(Block)) | {"group"}
        plan = plans[unit] = tuple(
            (name, *entry) for name, entry in regmap.field_decoders(unit, address_map).items()
            if entry and name not in taken and name[:1] != "_")
    return plan


def _values_plan(regmap, unit: str, address_map: str, names: tuple) -> tuple | None:
    """(register name, stored mask, lsb) of each of ``names`` for :meth:`Block.values`,
    None unless every one is a field :meth:`Block.fields` decodes."""
    decodes = {name: (reg, mask, lsb)
               for name, reg, mask, lsb in _field_plan(regmap, unit, address_map)}
    if not all(name in decodes for name in names):
        return None
    return tuple(decodes[name] for name in names)


class _ResetCopies(dict):
    """unit -> a copy of its reset words (``groups`` copies in a list, if not 0), made the
    first time the unit is looked up with ``[]``: ``in`` and iteration see only those."""

    __slots__ = ("_reset", "_groups")

    def __init__(self, reset: dict[str, dict[str, int]], groups: int):
        super().__init__()
        self._reset, self._groups = reset, groups

    def __missing__(self, unit: str):
        words = self._reset[unit]  # KeyError: no such unit (on this map)
        copy = [words.copy() for _ in range(self._groups)] if self._groups else words.copy()
        self[unit] = copy
        return copy


class RegisterFile:
    def __init__(self, address_map: str, regmap=None):
        self.regmap = regmap or regtable.load()
        self.address_map = address_map
        # (units, reset words per unit, reset words of the double-buffered units) of this map
        layout = self.regmap.memo(("register file", address_map))
        if not layout:
            units = {name: unit for name, unit in self.regmap.units.items()
                     if address_map in unit.bases}
            layout["units"] = units
            layout["single"] = {name: self.regmap.reset_words(name) for name in units}
            layout["grouped"] = {name: words for name in units
                                 if (words := self.regmap.reset_words(name, double_buffered=True))}
        self.units = dict(layout["units"])
        # unit -> its words (double-buffered: a dict per group), copied from its reset words
        # when first used: a trace uses a few of the map's units
        self.single: dict[str, dict[str, int]] = _ResetCopies(layout["single"], 0)
        self.grouped: dict[str, list[dict[str, int]]] = _ResetCopies(layout["grouped"], 2)
        self.producer: dict[str, int] = {}
        self.consumer: dict[str, int] = {}
        self.armed: dict[str, list[bool]] = {}
        # unit -> {group: Block}: snapshots handed out since the unit's words last changed
        self._blocks: dict[str, dict[int, Block]] = {}
        # (unit, register) -> write plan, shared by every register file of this map
        self._plans: dict[tuple[str, str], tuple] = self.regmap.memo(("write plans", address_map))
        # register full name -> read plan (cpu_read), shared likewise
        self._read_plans: dict[str, tuple] = self.regmap.memo(("read plans", address_map))
        for name in layout["grouped"]:
            self.producer[name] = self.consumer[name] = 0
            self.armed[name] = [False, False]

    # -- lookup ---------------------------------------------------------------
    def register(self, name: str) -> regtable.Register:
        try:
            reg = self.regmap.by_name(name)
        except KeyError:
            raise SimError(f"unknown register {name}") from None
        if reg.unit not in self.units:
            raise SimError(f"{name}: unit {reg.unit} is not on the {self.address_map} map")
        return reg

    def register_at(self, addr: int) -> regtable.Register:
        try:
            return self.regmap.by_address(addr, self.address_map)
        except KeyError:
            raise SimError(f"no register at byte address {addr:#x}") from None

    def address_of(self, reg: regtable.Register) -> int:
        return self.regmap.address(reg, self.address_map)

    # -- raw storage ----------------------------------------------------------
    def _store(self, reg: regtable.Register, group: int | None = None) -> dict[str, int]:
        if reg.double_buffered:
            g = self.producer[reg.unit] if group is None else group
            return self.grouped[reg.unit][g]
        return self.single[reg.unit]

    def peek(self, reg: regtable.Register, group: int | None = None) -> int:
        return self._store(reg, group)[reg.name]

    def poke(self, reg: regtable.Register, value: int, group: int | None = None) -> None:
        """Hardware-side write: bypasses access rules (counters, status)."""
        self._store(reg, group)[reg.name] = value & 0xFFFFFFFF
        self._blocks.pop(reg.unit, None)

    # -- CPU-side access -----------------------------------------------------
    def write_plan(self, reg: regtable.Register) -> tuple:
        """How a CSB write of ``reg`` applies, worked out once per register and address
        map (every trace line is a write): (unit, register name, PLAIN/POINTER/OP_ENABLE,
        writable bits, write-1-to-clear bits, double-buffered?, (mask, lsb) of S_POINTER's
        PRODUCER field or None)."""
        plan = self._plans.get((reg.unit, reg.name))
        if plan is None:
            amap, unit = self.address_map, reg.unit
            kind, producer = PLAIN, None
            if reg.name == "S_POINTER_0" and unit in self.producer:
                kind = POINTER
                f = reg.field("PRODUCER")
                producer = (f.stored_mask(amap), f.lsb)
            elif reg.name == "D_OP_ENABLE_0" and unit in self.armed:
                kind = OP_ENABLE
            plan = (unit, reg.name, kind, reg.mask(amap, ("rw",)), reg.mask(amap, ("w1c",)),
                    reg.double_buffered, producer)
            self._plans[reg.unit, reg.name] = plan
        return plan

    def plain_plan(self, reg: regtable.Register) -> tuple | None:
        """How :meth:`write_plain` writes ``reg``, if a CSB write of it only stores its
        writable bits (no S_POINTER, no D_OP_ENABLE, no write-1-to-clear bits: most of a
        trace's writes): (unit, register name, the bits kept, the bits written,
        double-buffered?); else None."""
        unit, name, kind, writable, w1c, grouped, _ = self.write_plan(reg)
        if kind != PLAIN or w1c:
            return None
        return unit, name, ~writable & 0xFFFFFFFF, writable, grouped

    def write_plain(self, plan: tuple, value: int) -> None:
        """:meth:`apply_write` of a register by its :meth:`plain_plan`."""
        unit, name, kept, writable, grouped = plan
        store = self.grouped[unit][self.producer[unit]] if grouped else self.single[unit]
        if self._blocks:
            self._blocks.pop(unit, None)
        store[name] = (store[name] & kept) | (value & writable)

    def cpu_write(self, reg: regtable.Register, value: int) -> str | None:
        """Apply a CSB write.  Returns ``"launch"`` when an OP_EN was armed."""
        return self.apply_write(self.write_plan(reg), value)

    def apply_write(self, plan: tuple, value: int) -> str | None:
        """:meth:`cpu_write` by a register's :meth:`write_plan`."""
        unit, name, kind, writable, w1c, grouped, producer = plan
        value &= 0xFFFFFFFF
        if kind == POINTER:
            mask, lsb = producer
            self.producer[unit] = (value & mask) >> lsb
            return None
        store = self.grouped[unit][self.producer[unit]] if grouped else self.single[unit]
        if self._blocks:
            self._blocks.pop(unit, None)
        old = store[name]
        if w1c:
            store[name] = (old & ~writable & ~w1c) | (value & writable) | (old & w1c & ~value)
        else:
            store[name] = (old & ~writable) | (value & writable)
        if kind == OP_ENABLE:
            self.armed[unit][self.producer[unit]] = bool(value & 1)
            if value & 1:
                return "launch"
        return None

    def cpu_read(self, reg: regtable.Register) -> int:
        plan = self._read_plans.get(reg.full_name)
        if plan is None:
            plan = self._read_plan(reg)
        kind, readable = plan
        unit = reg.unit
        if kind == POINTER:
            return self.producer[unit] | (self.consumer[unit] << 16)
        if kind == STATUS:
            return self.group_status(unit, 0) | (self.group_status(unit, 1) << 16)
        if reg.double_buffered:
            return self.grouped[unit][self.producer[unit]][reg.name] & readable
        return self.single[unit][reg.name] & readable

    def _read_plan(self, reg: regtable.Register) -> tuple:
        """(POINTER, STATUS or PLAIN, the readable bits) of a CSB read of ``reg``, worked out
        once per register and address map (a poll reads one many times)."""
        kind = PLAIN
        if reg.name == "S_POINTER_0" and reg.unit in self.producer:
            kind = POINTER
        elif reg.name == "S_STATUS_0" and reg.unit in self.armed:
            kind = STATUS
        plan = self._read_plans[reg.full_name] = (
            kind, reg.mask(self.address_map, ("rw", "ro", "w1c")))
        return plan

    def read_depends(self, reg: regtable.Register) -> str | None:
        """The other register of ``reg``'s unit whose CSB write changes what ``reg`` reads
        (its own writes aside): D_OP_ENABLE for S_STATUS (:meth:`cpu_read` shows the groups'
        states), S_POINTER for a register of a group (it selects the group); else None."""
        if reg.name == "S_STATUS_0":
            return "D_OP_ENABLE_0"
        return "S_POINTER_0" if reg.double_buffered else None

    def group_status(self, unit: str, group: int) -> int:
        if not self.armed[unit][group]:
            return IDLE
        return RUNNING if self.consumer[unit] == group else PENDING

    # -- datapath side --------------------------------------------------------
    def snapshot(self, unit: str, group: int) -> Block:
        """``unit``'s single registers and register group ``group`` as a :class:`Block`
        (one Block for every call until a write changes the unit's words)."""
        blocks = self._blocks.get(unit)
        if blocks is None:
            blocks = self._blocks[unit] = {}
        block = blocks.get(group)
        if block is None:
            words = dict(self.single[unit])
            if unit in self.producer:  # a unit with register groups
                words.update(self.grouped[unit][group])
            block = blocks[group] = Block(unit, group, words, self.regmap, self.address_map)
        return block

    def is_armed(self, unit: str) -> bool:
        """Is the consumer group of ``unit`` armed (its OP_EN set)?"""
        return unit in self.armed and self.armed[unit][self.consumer[unit]]

    def complete(self, unit: str) -> int:
        """Finish the consumer group's layer: clear OP_EN, flip the consumer."""
        group = self.consumer[unit]
        self.armed[unit][group] = False
        op_en = self.regmap.by_name(f"{unit}.D_OP_ENABLE_0")
        self.grouped[unit][group][op_en.name] = 0
        self._blocks.pop(unit, None)
        self.consumer[unit] = group ^ 1
        return group
