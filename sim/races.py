"""Two layers the hardware may run at once must not race on memory.

NVDLA runs a layer from its D_OP_ENABLE on, and software knows it has finished
only once its done interrupt is raised and seen (the firmware clears the
S_INTR_STATUS bit; a trace's ``intr_notify`` or a poll that held).  Until then a
later layer may run beside it: one whose DMA reads bytes the other writes, or
writes bytes the other reads or writes, gets bytes that depend on timing
(NVIDIA's C-model gives neither the "before" nor the "after"), while the
simulator, running layers one after the other, would give the sequential answer.

The hardware orders some accesses itself: a unit runs its register groups one
after the other, and data flows down a chain (CDMA -> CSC -> CMAC -> CACC ->
SDP -> PDP on the fly; each RDMA -> its unit), so an access the later layer makes
at a unit downstream of a unit both layers use comes after every access the
earlier layer made upstream of that unit.  The convolution pipelines consecutive
layers: the next layer's CDMA fetches while the last one's SDP still writes.

A layer's accesses retire when a done interrupt of its own unit, or of a unit
downstream of it in the same layer, has been seen; an access named by no unit
retires at the first interrupt of its layer seen.  Software is taken to have seen
every interrupt raised when a trace's poll holds, when the firmware reports its
task complete, and when a caller runs the machine dry (``Machine.run``).  Every
such choice can only miss a race, never report one the hardware orders.  What
this cannot see: a layer armed behind the machine's back (BDMA's launch counts
from when it runs), SDP_RDMA's reads against the writes of layers running at its
enable (:data:`AT_ENABLE`), a CDMA whose weights are still being fetched once its
data-done interrupt was seen, and the memory interface's own order between two
units' requests.
"""

from __future__ import annotations

import numpy as np

from .errors import MemoryFault

_CONV = ("NVDLA_CDMA", "NVDLA_CSC", "NVDLA_CMAC_A", "NVDLA_CMAC_B", "NVDLA_CACC")
_SDP_ON = ("NVDLA_SDP", "NVDLA_PDP")
#: unit -> the units its data reaches within a layer (itself included)
DOWNSTREAM: dict[str, frozenset] = {
    **{unit: frozenset(_CONV[i:] + _SDP_ON) for i, unit in enumerate(_CONV)},
    "NVDLA_SDP_RDMA": frozenset(("NVDLA_SDP_RDMA",) + _SDP_ON),
    "NVDLA_SDP": frozenset(_SDP_ON),
    "NVDLA_PDP_RDMA": frozenset(("NVDLA_PDP_RDMA", "NVDLA_PDP")),
    "NVDLA_PDP": frozenset(("NVDLA_PDP",)),
    "NVDLA_CDP_RDMA": frozenset(("NVDLA_CDP_RDMA", "NVDLA_CDP")),
    "NVDLA_CDP": frozenset(("NVDLA_CDP",)),
    "NVDLA_BDMA": frozenset(("NVDLA_BDMA",)),
    "NVDLA_RBK": frozenset(("NVDLA_RBK",)),
}
#: units whose reads the simulator takes when their layer is enabled, as NVIDIA's C-model
#: does (sim.sdp.fetch: NVIDIA's KMD enables a ResNet's shortcut SDP while the pooling
#: writing its operand runs): not checked against the writes of layers running then
AT_ENABLE = frozenset(("NVDLA_SDP_RDMA",))
#: how many finished layers are kept, at most: older ones are forgotten (a race missed,
#: never one reported), should a unit stay armed for ever and hold them all
MAX_FLIGHTS = 64
#: pairs of windows below which two layers' accesses are compared one by one
SMALL_PAIRS = 256
_UNITS: dict[str, str | None] = {}  # an access's ``what`` -> the unit it names


def access_unit(what: str) -> str | None:
    """The unit a DMA access's ``what`` (``NVDLA_SDP.D_DST_BASE_ADDR``...) names, or None."""
    unit = _UNITS.get(what, False)
    if unit is False:
        head = what.partition(".")[0].partition(" ")[0]  # "NVDLA_CDMA image" too
        unit = _UNITS[what] = head if head in DOWNSTREAM else None
    return unit


class Flight:
    """One layer that ran and may still be running in the hardware."""

    __slots__ = ("number", "engine", "groups", "starts", "accesses", "bits")

    def __init__(self, number: int, engine: str, groups: dict, starts: dict, accesses: list):
        self.number, self.engine, self.groups = number, engine, dict(groups)
        self.starts = starts  # unit -> the clock before which it cannot have started
        # of each memory it touched: (name, reads, writes, the reads checked against
        # other layers' writes (AT_ENABLE's left out)), each list with the span of its
        # windows, (first byte, end) or None: most layers' spans meet no other's
        self.accesses = []
        for name, reads, writes in accesses:
            checked = [r for r in reads if access_unit(r.what) not in AT_ENABLE]
            self.accesses.append((name, *((a, _box(a)) for a in (reads, writes, checked))))
        self.bits: list[list] = []  # [S_INTR_STATUS bit, unit, raised, clock seen or None]

    def name(self) -> str:
        """``hardware layer 3 (CONV: CDMA,...,SDP group 1, SDP_RDMA group 0)``: numbered as
        the machine counts layers (the ``--layers`` dumps' numbers)."""
        by_group: dict[int, list[str]] = {}
        for unit, group in self.groups.items():
            by_group.setdefault(group, []).append(unit.removeprefix("NVDLA_"))
        units = ", ".join(f"{','.join(names)} group {group}" for group, names in by_group.items())
        return f"hardware layer {self.number} ({self.engine}: {units})"

    def start_of(self, unit: str | None) -> int:
        """The clock before which an access of ``unit`` in this layer cannot happen: the
        latest start of the units upstream of it (of all the layer's, unit unnamed or
        none of them upstream: the later, the fewer races reported)."""
        upstream = [at for u, at in self.starts.items()
                    if unit is not None and unit in DOWNSTREAM.get(u, (u,))]
        return max(upstream or self.starts.values(), default=0)

    def retired_at(self, unit: str | None) -> int | None:
        """The clock at which software knew an access of ``unit`` in this layer ended: a
        done interrupt of it or of a unit downstream seen (any, unit unnamed); None."""
        down = DOWNSTREAM.get(unit, ()) if unit is not None else None
        seen = [at for _, u, _, at in self.bits
                if at is not None and (down is None or u in down)]
        return min(seen, default=None)

    def done(self) -> int | None:
        """The clock at which its last done interrupt was seen, if all were."""
        if not self.bits or any(at is None for *_, at in self.bits):
            return None
        return max(at for *_, at in self.bits)


class RaceWatch:
    """The layers in flight, the clock of interrupts seen, and the check of each new
    layer against them (:meth:`Machine.step` calls it after the layer ran)."""

    def __init__(self):
        #: None: a race stops the run (a trace's expectations must not depend on timing);
        #: else called with each race's one-line message and the run goes on, the layers
        #: computed one after the other (one of the orders the hardware may take): a
        #: compiled network's user gets its outputs and the warning
        self.report = None
        self.clock = 0  # interrupts seen so far, in events
        self._armed_at: dict[tuple[str, int], int] = {}  # (unit, group) -> clock at its enable
        # unit -> the clock before which its last layer cannot have started there: a unit
        # runs its groups in turn, so a layer starts no sooner than the one before it
        self._started: dict[str, int] = {}
        self.flights: list[Flight] = []
        self._raising: Flight | None = None  # the layer whose done interrupts are raised

    # -- events ---------------------------------------------------------------
    def armed(self, unit: str, group: int) -> None:
        self._armed_at.setdefault((unit, group), self.clock)

    def disarmed(self, unit: str, group: int) -> None:
        """OP_EN written 0: a later enable of the group counts from then, not from this."""
        self._armed_at.pop((unit, group), None)

    def completed(self, unit: str, group: int) -> None:
        self._armed_at.pop((unit, group), None)

    def raised(self, bit: int) -> None:
        if self._raising is not None:
            for entry in self._raising.bits:
                if entry[0] == bit and not entry[2]:
                    entry[2] = True
                    return

    def seen(self, bits: int) -> None:
        """Software saw the done interrupts ``bits`` (it cleared them, or waited on them)."""
        if not bits or not self.flights:
            return
        self.clock += 1
        # a unit runs its groups in turn: a done interrupt seen of it tells that its
        # earlier layers ended too (their bits raised before, perhaps never cleared)
        last_of: dict[str, int] = {}  # unit -> the latest flight whose done of it was seen
        for i, flight in enumerate(self.flights):
            for entry in flight.bits:
                if entry[2] and entry[3] is None and entry[0] & bits:
                    entry[3] = self.clock
                    last_of[entry[1]] = i
        for unit, last in last_of.items():
            for flight in self.flights[:last]:
                for entry in flight.bits:
                    if entry[1] == unit and entry[3] is None:
                        entry[3] = self.clock

    def seen_all(self, pending_of: frozenset | None = None) -> None:
        """Software waited (a poll held, a task ended, the machine ran dry): every done
        interrupt raised so far counts as seen, and so do those still to be raised of the
        units in ``pending_of`` (None: every unit; a poll of a unit's S_STATUS that reads
        idle: that unit, which reads idle from the op-done that raises its interrupt on)."""
        if not self.flights:
            return
        self.clock += 1
        for flight in self.flights:
            for entry in flight.bits:
                if entry[3] is None and (entry[2] or pending_of is None
                                         or entry[1] in pending_of):
                    entry[2], entry[3] = True, self.clock

    # -- a layer --------------------------------------------------------------
    def layer_ran(self, number: int, engine: str, groups: dict, accesses: list) -> Flight:
        """Check the layer that just ran against those that may still run beside it;
        raise a MemoryFault naming both on a race.  Returns its Flight, whose done bits
        :meth:`interrupts` fills in."""
        clock, started = self.clock, self._started
        starts = {u: max(self._armed_at.get((u, g), clock), started.get(u, 0))
                  for u, g in groups.items()}
        started.update(starts)
        flight = Flight(number, engine, groups, starts, accesses)
        if accesses:
            for other in self.flights:
                self._check(other, flight)
        self._forget()
        self.flights.append(flight)
        return flight

    def interrupts(self, flight: Flight, bits: list[tuple[int, str]]) -> None:
        """The done interrupts of ``flight`` ((bit, unit), in the order they are raised)."""
        flight.bits = [[bit, unit, False, None] for bit, unit in bits]
        self._raising = flight

    def _forget(self) -> None:
        """Drop the layers every layer yet to run was enabled after (all seen before)."""
        pending = min(self._armed_at.values(), default=self.clock)
        self.flights = [f for f in self.flights if (done := f.done()) is None or done > pending]
        if len(self.flights) >= MAX_FLIGHTS:
            del self.flights[0]

    def _check(self, early: Flight, late: Flight) -> None:
        earliest = min(late.starts.values(), default=self.clock)
        pair = None
        for mem_name, e_reads, e_writes, _ in early.accesses:
            for name, _, l_writes, l_reads in late.accesses:
                if name != mem_name:
                    continue
                for mine, theirs, kinds in ((e_writes, l_reads, ("writes", "reads")),
                                            (e_writes, l_writes, ("writes", "writes")),
                                            (e_reads, l_writes, ("reads", "writes"))):
                    (mine, mine_box), (theirs, their_box) = mine, theirs
                    if mine_box is None or their_box is None or mine_box[1] <= their_box[0] \
                            or their_box[1] <= mine_box[0]:
                        continue
                    pair = pair or _Pair(early, late)
                    live = [a for a in mine if pair.live_at(a, earliest)]
                    hit = _first_race(live, theirs, pair)
                    if hit is not None:
                        error = _race_error(early, late, mem_name, kinds, *hit)
                        if self.report is None:
                            raise error
                        self.report(str(error))
                        return  # one warning a pair of layers


class _Pair:
    """What orders an access of an early layer before one of a late layer."""

    def __init__(self, early: Flight, late: Flight):
        self.early, self.late = early, late
        self.shared = early.groups.keys() & late.groups.keys()
        self._retired: dict = {}  # unit -> early.retired_at(unit): a layer moves many lines

    def live_at(self, access, clock: int) -> bool:
        """Was the early layer's ``access`` possibly still running at ``clock``?"""
        unit = access_unit(access.what)
        retired = self._retired.get(unit, False)
        if retired is False:
            retired = self._retired[unit] = self.early.retired_at(unit)
        return retired is None or retired > clock

    def races(self, a, b) -> bool:
        """May the early access ``a`` and the late one ``b`` happen at the same time?"""
        early_unit, late_unit = access_unit(a.what), access_unit(b.what)
        if not self.live_at(a, self.late.start_of(late_unit)):
            return False  # software saw it end before the late one could start
        if not self.shared:
            return True
        if early_unit is None or late_unit is None:
            return False  # unnamed: assume ordered (a race missed, never a false one)
        return not any(x in DOWNSTREAM[early_unit] and late_unit in DOWNSTREAM.get(x, ())
                       for x in self.shared)


def _box(accesses) -> tuple[int, int] | None:
    """(first byte, end) of the windows of ``accesses``, or None if there are none."""
    if not accesses:
        return None
    return min(a.addr for a in accesses), max(a.addr + a.size for a in accesses)


def _spans(accesses) -> tuple[np.ndarray, np.ndarray]:
    """(first byte, last byte) of each access's window, as uint64."""
    spans = np.array([(a.addr, a.addr + a.size - 1) for a in accesses], np.uint64)
    return spans[:, 0], spans[:, 1]


def _first_race(early: list, late: list, pair: _Pair):
    """(early access, late access, first byte, end) of the first pair whose bytes meet
    and which no shared unit orders, or None."""
    if not early or not late:
        return None
    if len(early) * len(late) <= SMALL_PAIRS:  # a few windows each: numpy would cost more
        for b in late:
            b_end = b.addr + b.size
            for a in early:
                if a.addr < b_end and b.addr < a.addr + a.size and pair.races(a, b):
                    met = _meeting(a, b)
                    if met is not None:
                        return (a, b, *met)
        return None
    e_first, e_last = _spans(early)
    order = np.argsort(e_first, kind="stable")
    e_first, e_last = e_first[order], e_last[order]
    reach = np.maximum.accumulate(e_last)  # the last byte any of the first k reaches
    l_first, l_last = _spans(late)
    below = np.searchsorted(e_first, l_last, side="right")  # early windows starting in time
    near = (below > 0) & (reach[np.maximum(below, 1) - 1] >= l_first)
    for j in np.flatnonzero(near).tolist():
        b = late[j]
        k = int(below[j])
        for i in np.flatnonzero(e_last[:k] >= l_first[j]).tolist():
            a = early[int(order[i])]
            if not pair.races(a, b):
                continue
            met = _meeting(a, b)
            if met is not None:
                return (a, b, *met)
    return None


def _meeting(a, b) -> tuple[int, int] | None:
    """The first run of bytes both accesses really move, as (start, end), or None."""
    if not a.intersects(b):
        return None
    base = min(a.addr, b.addr)
    starts, ends = a.intervals(base)
    o_starts, o_ends = b.intervals(base)
    first = np.searchsorted(ends, o_starts, side="right")  # a's first line ending past it
    inside = first < starts.size
    k = np.flatnonzero(inside)
    i = first[inside]
    lo, hi = np.maximum(starts[i], o_starts[k]), np.minimum(ends[i], o_ends[k])
    met = np.flatnonzero(lo < hi)
    if not met.size:
        return None
    m = met[np.argmin(lo[met])]
    return base + int(lo[m]), base + int(hi[m])


def _race_error(early: Flight, late: Flight, memory: str, kinds: tuple, a, b, lo: int,
                hi: int) -> MemoryFault:
    early_does, late_does = kinds
    return MemoryFault(
        f"{late.name()} {late_does} {memory} bytes {lo:#x}..{hi - 1:#x} "
        f"({b.what or 'DMA'}) that {early.name()} {early_does} ({a.what or 'DMA'}), and "
        f"was enabled before that layer's end was seen: the result would depend on timing")
