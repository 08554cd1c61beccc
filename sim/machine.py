"""The machine: register file, memories, interrupts, and layer launch.

Data flows one way: a write to a register goes to the ``RegisterFile``; an
armed ``D_OP_ENABLE`` queues a launch; ``step()`` runs the oldest layer whose
blocks are all armed (a fused pipeline such as CDMA -> ... -> CACC -> SDP ->
PDP on the fly launches only when every stage of the chain is armed, as in
hardware).  The engine reads its decoded register groups and memory, computes,
writes memory, and returns counters; the machine stores them in the
read-only registers of each block's group, clears OP_EN, flips the consumer
pointers and raises the done interrupts.

Layers run when the caller lets the machine advance (``step``/``run``), not at
the OP_EN write: a register read right after launching still sees the layer
as running, as the hardware's would.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from .configs import UNIT_FEATURES, HardwareConfig, get_config
from .dram import Memory
from .engines import ENGINES, Engine
from .errors import ConfigurationError, MemoryFault, SimError
from .limits import DEFAULT_LIMITS, MemoryLimits
from .listeners import LayerListeners, RegisterListeners, memory_listeners
from .races import RaceWatch
from .records import record
from .regfile import Block, RegisterFile

RAM_CV, RAM_MC = 0, 1  # NVDLA's RAM_TYPE encoding (CV-SRAM = 0, MC = 1)
GLB = "NVDLA_GLB"


@record(frozen=False)
class LayerContext:
    """What a unit sees while it runs one layer: its registers, its memories and the unit
    state it owns -- never the machine itself (``_machine`` is the machine's own)."""

    _machine: Machine
    groups: dict  # block (unit name) -> group executing
    counters: dict = field(default_factory=dict)  # (unit, register) -> value
    # a direct convolution's decoded registers (sim.conv.layer.ConvLayer), left by the
    # convolution for the layer's listeners; None for any other layer
    conv_layer: object = None

    @property
    def config(self) -> HardwareConfig:
        return self._machine.config

    def regs(self, unit: str, group: int | None = None) -> Block:
        """Decoded snapshot of ``unit``'s executing group (or of register group ``group``)."""
        return self._machine.regfile.snapshot(unit, self.groups[unit] if group is None else group)

    def armed(self, unit: str, group: int) -> bool:
        """Is ``unit``'s register group ``group`` armed (its D_OP_ENABLE set)?"""
        return self._machine.regfile.armed[unit][group]

    def memory(self, ram_type: int, what: str = "") -> Memory:
        """The memory a RAM_TYPE field selects; ``what`` names the field in errors."""
        return self._machine.memory(ram_type, what)

    def state(self, unit: str):
        """The state the machine keeps for ``unit`` between layers (``Engine.unit_state``),
        e.g. the SDP's LUT RAM and RDMA fetches, for whichever engine runs the unit."""
        return self._machine.unit_state(unit)

    def set_counter(self, unit: str, register: str, value: int) -> None:
        """Store a counter/status value in ``unit``'s group at layer end."""
        self.counters[(unit, register)] = int(value)


_ENGINE_TABLES: dict = {}  # engine classes -> _EngineTables: worked out once, not per machine


class _EngineTables:
    """Who sees a machine's CSB accesses, by index in its engine list (the same for every
    machine of these engine classes): ``on_write``/``on_read``, unit -> the indices of the
    engines overriding the method among those owning the unit, in engine order;
    ``ports``, (engine index, the data port names it serves) for each engine that is the
    first write hook of its ports' units (its ``on_write`` would consume their writes
    before any other engine saw them)."""

    def __init__(self, engines: list[Engine]):
        self.on_write = self._hooks(engines, "on_write")
        self.on_read = self._hooks(engines, "on_read")
        owners: dict[int, list[str]] = {}
        for unit, indices in self.on_write.items():
            first = indices[0]
            owners.setdefault(first, []).extend(
                name for name in engines[first].data_ports() if name.partition(".")[0] == unit)
        self.ports = tuple((i, tuple(names)) for i, names in owners.items() if names)

    @staticmethod
    def _hooks(engines: list[Engine], method: str) -> dict[str, tuple[int, ...]]:
        table: dict[str, list[int]] = {}
        for i, engine in enumerate(engines):
            if getattr(type(engine), method) is not getattr(Engine, method):
                for unit in engine.units:
                    table.setdefault(unit, []).append(i)
        return {unit: tuple(indices) for unit, indices in table.items()}

    @classmethod
    def of(cls, engines: list[Engine]) -> _EngineTables:
        key = tuple(map(type, engines))
        tables = _ENGINE_TABLES.get(key)
        if tables is None:
            tables = _ENGINE_TABLES[key] = cls(engines)
        return tables

    def data_ports(self, engines: list[Engine]) -> dict:
        """Register full name -> the callable of ``engines`` consuming its every CSB write."""
        ports = {}
        for i, names in self.ports:
            served = engines[i].data_ports()
            ports.update((name, served[name]) for name in names)
        return ports


def _hooked(engine: Engine, register: str) -> bool:
    """Does ``engine``'s on_write act on CSB writes of ``register`` (a full name)?"""
    names = engine.write_hooks()
    return names is None or register in names


class _MachineTables:
    """What every machine of one configuration and engine set shares, worked out by the
    first (a trace makes a machine, and makes it in a fraction of the time that working
    these out took): ``engines``, their :class:`_EngineTables`; ``stateful``, the indices
    of the engines keeping unit state (``Engine.unit_state`` overridden); ``lacking``, unit
    -> the feature its registers need that the configuration lacks; ``idle_status``,
    (register, value) of each status register whose idle value is not its reset value
    (``Engine.idle_status``, of a unit on the map); ``intr_status`` and ``intr_mask``,
    S_INTR_STATUS and S_INTR_MASK; and the tables the machines fill as they meet
    registers, kept with the register map (shared by every machine of its address map,
    engine set and lacking units):

    * ``write_plans``: write_reg's argument -> its plan (:meth:`Machine._write_plan`; a plan
      names the engines hooked by their place in the engine list);
    * ``plain_writes``: write_reg's argument -> the register file's plain_plan of a register
      that a write only stores into (not hooked, not lacking here), False for any other;
    * ``registers``: name or byte address -> its register (every poll looks one up);
    * ``counter_registers``: (unit, register name) -> the register of a counter a layer
      stores (:meth:`Machine._finish`: every layer stores a few, by the same names);
    * ``intr_bits``: (source, group) -> its done bit in S_INTR_STATUS (every layer raises
      one, every intr_notify waits for and clears one)."""

    def __init__(self, config: HardwareConfig, engines: list[Engine], regfile: RegisterFile):
        self.engines = _EngineTables.of(engines)
        self.stateful = tuple(i for i, engine in enumerate(engines)
                              if type(engine).unit_state is not Engine.unit_state)
        self.lacking = {unit: feature for unit, feature in UNIT_FEATURES.items()
                        if not getattr(config, feature)}
        amap, memo, types = config.address_map, regfile.regmap.memo, tuple(map(type, engines))
        self.write_plans = memo(("machine writes", amap, types))
        self.plain_writes = memo(("machine plain writes", amap, types,
                                  tuple(sorted(self.lacking))))
        self.registers = memo(("registers", amap))
        self.counter_registers = memo(("counter registers", amap))
        self.intr_bits = memo("interrupt bits")
        self.intr_status = regfile.register(f"{GLB}.S_INTR_STATUS_0")
        self.intr_mask = regfile.register(f"{GLB}.S_INTR_MASK_0")
        self.idle_status = tuple(
            (reg, value) for engine in engines for name, value in engine.idle_status.items()
            if (reg := regfile.regmap.by_name(name)).unit in regfile.units)

    @classmethod
    def of(cls, config: HardwareConfig, engines: list[Engine], regfile: RegisterFile
           ) -> _MachineTables:
        """The tables of machines of ``config`` and these engines' classes, kept with
        ``regfile``'s register map (made by the first machine that asks)."""
        held = regfile.regmap.memo(("machine tables", config, tuple(map(type, engines))))
        tables = held.get("tables")
        if tables is None:
            tables = held["tables"] = cls(config, engines, regfile)
        return tables


class Machine:
    """One NVDLA instance of a hardware configuration."""

    def __init__(self, config: HardwareConfig | str = "nv_full",
                 limits: MemoryLimits = DEFAULT_LIMITS):
        self.config = get_config(config) if isinstance(config, str) else config
        self.regfile = RegisterFile(self.config.address_map)
        bits = self.config.address_bits
        self.pri_mem = Memory("pri_mem", bits, limits)
        self.sec_mem = Memory("sec_mem", bits, limits) if self.config.secondary_memory else None
        self.engines: list[Engine] = [cls() for cls in ENGINES]
        shared = _MachineTables.of(self.config, self.engines, self.regfile)
        # unit -> the state its engine keeps between layers (LayerContext.state)
        self._unit_states = {unit: state for i in shared.stateful
                             for unit, state in self.engines[i].unit_state().items()}
        # the engines that see CSB accesses of a unit: only those of its own units, and
        # only engines that intercept at all (every trace line is a register write)
        self._write_hooks = shared.engines.on_write  # unit -> indices in self.engines
        self._read_hooks = shared.engines.on_read
        # register full name -> what takes its every write: a data port (the LUT's) whose
        # engine is the first to see its unit's writes, so the hook would consume it anyway
        self._ports = shared.engines.data_ports(self.engines)
        # unit -> the feature its registers need that this configuration lacks
        self._lacking = shared.lacking
        # the tables a machine fills as it meets registers, shared (_MachineTables)
        self._write_plans = shared.write_plans
        self._plain_writes = shared.plain_writes
        # write_reg's argument -> the data port its writes go to, learnt at its first write
        # (this machine's: a port is its engine's bound method)
        self._port_writes: dict[str | int, object] = {}
        self._registers = shared.registers
        self._counter_registers = shared.counter_registers
        self._launches: list[str] = []  # units whose OP_EN was armed, oldest first
        # done interrupts of the last layer not raised yet: a fused layer's blocks
        # finish one after another (CDMA data, CDMA weights, CACC, SDP ...), so
        # each step raises one, as a bench waiting for them one by one sees them
        self._deferred: list[tuple[str, int]] = []
        self.layers_run = 0
        # the layers that may still run in the hardware, checked against each new one
        self.races = RaceWatch()
        # told when a layer starts and ends (sim.listeners.LayerListener): add/remove
        self.listeners = LayerListeners()
        self.register_listeners = RegisterListeners()  # told of every CSB write
        # the list behind it: its truth is the test every write makes (a list's is free)
        self._register_listening = self.register_listeners.items_view()
        self._intr_status = shared.intr_status
        self._intr_mask = shared.intr_mask
        self._intr_bits = shared.intr_bits
        for reg, value in shared.idle_status:  # status registers idle, not at reset
            self.regfile.poke(reg, value)

    # -- memory ---------------------------------------------------------------
    def memory(self, ram_type: int | str, what: str = "") -> Memory:
        prefix = f"{what}: " if what else ""
        if ram_type in (RAM_MC, "pri_mem", "pri", "mc", "1"):
            return self.pri_mem
        if ram_type in (RAM_CV, "sec_mem", "sec", "cv"):
            if self.sec_mem is None:
                raise ConfigurationError(f"{prefix}{self.config.name} has no secondary memory "
                                         "(CV-SRAM)")
            return self.sec_mem
        raise SimError(f"{prefix}unknown memory {ram_type!r}")

    def memory_listeners(self, ram: int | str = RAM_MC):
        """The write listeners of a memory (sim.listeners.MemoryListener): add/remove."""
        return memory_listeners(self.memory(ram))

    def memories(self) -> list[Memory]:
        """The memories of this machine: pri_mem, and sec_mem if it has one."""
        return [m for m in (self.pri_mem, self.sec_mem) if m is not None]


    def load(self, addr: int, data, ram: int | str = RAM_MC) -> None:
        self.memory(ram).write(addr, data)

    def read_memory(self, addr: int, size: int, ram: int | str = RAM_MC) -> bytes:
        return self.memory(ram).read(addr, size)

    def read_array(self, addr: int, size: int, dtype=np.uint8, ram: int | str = RAM_MC):
        return self.memory(ram).read_array(addr, size).view(dtype)

    # -- what the units see -------------------------------------------------------
    def context(self, groups: dict | None = None) -> LayerContext:
        """What a unit sees of this machine while ``groups`` ({unit: group}) run; with no
        groups, what a CSB hook (``Engine.on_write``) may hand to unit code."""
        return LayerContext(self, {} if groups is None else groups)

    def unit_state(self, unit: str):
        """The state an engine keeps for ``unit`` between layers (``Engine.unit_state``)."""
        try:
            return self._unit_states[unit]
        except KeyError:
            raise ConfigurationError(f"this machine keeps no state for {unit}") from None

    # -- registers ------------------------------------------------------------
    def _reg(self, reg):
        r = self._registers.get(reg)
        if r is None:
            rf = self.regfile
            r = self._registers[reg] = (rf.register_at(reg) if isinstance(reg, int)
                                        else rf.register(reg))
        return r

    def _write_plan(self, reg: str | int) -> tuple:
        """What a CSB write of ``reg`` does, worked out once per register, address map and
        engine set: (register, the register file's plan, None for a plain write (no
        interrupt bits, data port or engine hook), else (the interrupt bits it sets
        (S_INTR_SET) or None, its data port's name or None, the indices in
        ``self.engines`` of the engines whose ``on_write`` sees it))."""
        r = self._reg(reg)
        sets = None
        if r.unit == GLB and r.name == "S_INTR_SET_0":
            sets = r.mask(self.config.address_map, ("wo",))
        port = r.full_name if r.full_name in self._ports else None
        hooks = tuple(i for i in self._write_hooks.get(r.unit, ())
                      if _hooked(self.engines[i], r.full_name))
        special = None if sets is None and port is None and not hooks else (sets, port, hooks)
        plan = self._write_plans[reg] = (r, self.regfile.write_plan(r), special)
        return plan

    def write_reg(self, reg: str | int, value: int) -> None:
        """CSB write by name (``NVDLA_SDP.D_OP_ENABLE_0``) or byte address."""
        plain = self._plain_writes.get(reg)
        if not self._register_listening:
            if plain:  # most writes: stored, nothing else
                self.regfile.write_plain(plain, value)
                return
            port = self._port_writes.get(reg)  # a LUT upload: hundreds of writes
            if port is not None:
                port(value)
                return
        r, rf_plan, special = self._write_plans.get(reg) or self._write_plan(reg)
        if self._register_listening:
            self.register_listeners.wrote_register(r, value)
        unit = r.unit
        if unit in self._lacking:  # a block this configuration does not have
            self.config.require(self._lacking[unit], r.full_name)
        if plain is None:  # the first write of reg on this map: is it a plain one?
            self._plain_writes[reg] = special is None and self.regfile.plain_plan(r) or False
        if special is not None:
            port = special[1]  # a LUT data port (thousands of writes): what its engine's
            write = self._ports.get(port) if port is not None else None  # on_write does
            if write is not None:
                self._port_writes[reg] = write
                write(value)
                return
            if self._special_write(r, special, value):
                return
        if r is self._intr_status:  # write-1-to-clear: software saw the bits it cleared
            before = self.regfile.peek(r)
            self.regfile.apply_write(rf_plan, value)
            self.races.seen(before & ~self.regfile.peek(r))
            return
        if self.regfile.apply_write(rf_plan, value) == "launch":
            self._launches.append(unit)
            self.races.armed(unit, self.regfile.producer[unit])
        elif r.name == "D_OP_ENABLE_0" and not value & 1:
            self.races.disarmed(unit, self.regfile.producer[unit])

    def _special_write(self, r, special: tuple, value: int) -> bool:
        """The interrupt set and engine hooks of a write; True if consumed."""
        sets, _, hooks = special
        if sets is not None:
            self._raise_bits(value & sets)
            return True
        engines = self.engines
        for i in hooks:
            if engines[i].on_write(self, r, value):
                return True
        return False

    def read_depends(self, reg) -> str | None:
        """The other register of ``reg``'s unit whose CSB write changes what ``reg`` reads:
        S_INTR_SET for the interrupt status (a write raises its bits), else the register
        file's (:meth:`RegisterFile.read_depends`)."""
        if reg.unit == GLB and reg.name == "S_INTR_STATUS_0":
            return "S_INTR_SET_0"
        return self.regfile.read_depends(reg)

    def read_reg(self, reg: str | int) -> int:
        """CSB read by name or byte address."""
        return self.read_register(self._reg(reg))

    def read_register(self, r) -> int:
        """CSB read of a register already looked up (``RegisterFile.register``): a poll
        reads one register many times."""
        for i in self._read_hooks.get(r.unit, ()):
            engine = self.engines[i]
            value = engine.on_read(self, r)
            if value is not None:
                return value
        return self.regfile.cpu_read(r)

    # -- interrupts -----------------------------------------------------------
    def _raise_bits(self, bits: int) -> None:
        reg = self._intr_status
        self.regfile.poke(reg, self.regfile.peek(reg) | bits)

    def _done_bit(self, source: str, group: int) -> int:
        """The bit of ``<source>_DONE_STATUS<group>`` in S_INTR_STATUS_0 (KeyError: none)."""
        bit = self._intr_bits.get((source, group))
        if bit is None:
            f = self._intr_status.field(f"{source}_DONE_STATUS{group}")
            bit = self._intr_bits[source, group] = 1 << f.lsb
        return bit

    def raise_interrupt(self, source: str, group: int) -> None:
        """Set ``<source>_DONE_STATUS<group>`` (source: SDP, CDP, PDP, BDMA, ...)."""
        self._raise_bits(self._done_bit(source, group))

    def interrupt_status(self) -> int:
        return self.regfile.peek(self._intr_status)

    def interrupt_pending(self) -> bool:
        """The interrupt line: a status bit that is not masked."""
        mask = self.regfile.peek(self._intr_mask)
        return bool(self.interrupt_status() & ~mask)

    def interrupt_sources(self) -> tuple[str, ...]:
        """Interrupt sources of ``S_INTR_STATUS_0`` (SDP, CDMA_DAT, CACC, ...), as named there."""
        memo = self.regfile.regmap.memo("interrupt sources")  # one answer per register map
        if not memo:
            names = (f.name.rpartition("_DONE_STATUS")[0] for f in self._intr_status.fields)
            memo["sources"] = tuple(dict.fromkeys(n for n in names if n))
        return memo["sources"]

    def done_interrupts(self, bits: int) -> list[tuple[str, int, int]]:
        """(source, group, bit) of each done bit set in ``bits`` (an S_INTR_STATUS word),
        in the register's field order."""
        found = []
        for f in self._intr_status.fields:
            source, _, group = f.name.rpartition("_DONE_STATUS")
            if source and bits >> f.lsb & 1:
                found.append((source, int(group), f.lsb))
        return found

    def interrupt_set(self, source: str, group: int) -> bool:
        return bool(self.interrupt_status() & self._done_bit(source, group))

    def clear_interrupt(self, source: str, group: int) -> None:
        reg = self._intr_status
        status, bit = self.regfile.peek(reg), self._done_bit(source, group)
        self.regfile.poke(reg, status & ~bit)
        self.races.seen(status & bit)

    def clear_interrupts(self) -> None:
        """Clear every status bit that is not masked (what a handler saw, it clears)."""
        reg = self._intr_status
        mask, status = self.regfile.peek(self._intr_mask), self.regfile.peek(reg)
        self.regfile.poke(reg, status & mask)
        self.races.seen(status & ~mask)

    def completions_seen(self, pending_of: frozenset | None = None) -> None:
        """Software has seen every layer that raised its done interrupts end (a poll that
        held, a task the firmware reported complete): none of them races a later one.
        ``pending_of``: the units whose done interrupts still to be raised it has seen too
        (None: every unit, as at a task's end; :meth:`sim.races.RaceWatch.seen_all`)."""
        self.races.seen_all(pending_of)

    # -- execution ------------------------------------------------------------
    def layer_finishing(self) -> bool:
        """The last layer still has done interrupts to raise: its writes are complete only
        at its last one (a fused convolution's SDP or PDP, whose write DMA finishes last)."""
        return bool(self._deferred)

    def busy(self) -> bool:
        return bool(self._deferred) or any(e.ready(self) is not None for e in self.engines)

    def step(self) -> bool:
        """Raise the next deferred done interrupt, else run the oldest launchable layer.

        Returns False when nothing can happen.
        """
        if self._deferred:
            self._raise_done(*self._deferred.pop(0))
            return True
        for engine in self._by_launch_order():
            groups = engine.ready(self)
            if groups is None:
                continue
            ctx = self.context(groups)
            self.listeners.layer_begin(self.layers_run, engine, ctx)
            accesses = self._run_layer(engine, ctx)
            self.listeners.layer_end()
            flight = self.races.layer_ran(self.layers_run, engine.name, ctx.groups, accesses)
            self._finish(engine, ctx, flight)
            self.layers_run += 1
            return True
        return False

    def run(self, max_layers: int | None = None) -> int:
        """Run until idle (or until ``max_layers`` layers ran); returns the layers run.  Run
        until idle, the caller has waited for every layer: none races a later one."""
        start = self.layers_run
        while max_layers is None or self.layers_run - start < max_layers:
            if not self.step():
                self.completions_seen()  # run dry: the caller waited for every layer to end
                break
        return self.layers_run - start

    def _run_layer(self, engine: Engine, ctx: LayerContext) -> list:
        """Run one layer; a DMA fault names the unit when the reader did not.  Returns
        (memory name, reads, writes) of each memory it read or wrote."""
        watch = engine.refuses_overlap
        for mem in self.memories():
            mem.begin_layer(watch)
        accesses = []
        try:
            engine.run(ctx)
        except MemoryFault as exc:
            if not exc.where:  # the DMA named no register: name the layer's units
                exc.where = "/".join(ctx.groups) or engine.name
                exc.reason = f"DMA {exc.reason}"
            raise
        finally:
            for mem in self.memories():
                reads, writes = mem.end_layer()
                if reads or writes:
                    accesses.append((mem.name, reads, writes))
        return accesses

    def _by_launch_order(self):
        if not self._launches:  # every engine ranks last: the registry's order
            return self.engines

        def rank(engine):
            positions = [i for i, u in enumerate(self._launches) if u in engine.units]
            return positions[-1] if positions else len(self._launches)

        return sorted(self.engines, key=rank)

    def _raise_done(self, source: str, group: int) -> None:
        """Raise a done interrupt of the last layer."""
        bit = self._done_bit(source, group)
        self._raise_bits(bit)
        self.races.raised(bit)

    def _finish(self, engine: Engine, ctx: LayerContext, flight) -> None:
        rf = self.regfile
        registers = self._counter_registers
        for key, value in ctx.counters.items():
            reg = registers.get(key)
            if reg is None:
                reg = registers[key] = rf.register(f"{key[0]}.{key[1]}")
            rf.poke(reg, value, ctx.groups.get(key[0]))
        for unit in ctx.groups:
            if unit in rf.armed:
                self.races.completed(unit, rf.complete(unit))
                if unit in self._launches:
                    self._launches.remove(unit)
        done = engine.interrupts(ctx)
        pending = [(source, ctx.groups[unit]) for source, unit in done]
        self.races.interrupts(flight, [(self._done_bit(source, ctx.groups[unit]), unit)
                                       for source, unit in done])
        if pending:
            self._raise_done(*pending[0])
            self._deferred.extend(pending[1:])
