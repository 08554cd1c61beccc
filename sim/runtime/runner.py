"""Run a loadable end to end: memories, inputs, DLA tasks through the firmware, EMU tasks.

What NVIDIA's runtime and its test application do, on a simulated NVDLA:
every memory the loadable allocates is placed in simulated memory and filled
with its blobs; input and output tensors (bindable memories) get buffers of
their own — an input nothing binds holds what a fresh allocation holds
(zeros), an output starts zeroed as the test application's image does; each
submit runs its tasks in order: DLA tasks through the KMD firmware with the
task's address list, EMU tasks on the CPU (:mod:`.emu`).  Outputs come back
as numpy byte buffers and as NVIDIA's ``.dimg`` files.

Tasks share the loadable's memories: every task's address list names global
address entries (a DLA task's list is its network descriptor, the compiler's
memory pools, then its own dependency graph, operation, surface and LUT
lists), and a DLA task's descriptors index its own list.  The runtime ignores
the loadable's events (the submits run one after the other, each task to
completion) and a DLA task's instance (one device; an EMU task may only ask
for emulator 0), and its relocations only rewrite strides when an
application binds a tensor laid out differently from the loadable's own
descriptor (the test application never does).

One thing is added to what NVIDIA's runtime does, for loadables with more
than one DLA task (a layer the compiler put on the CPU between two DLA
parts): NVIDIA's compiler chains each engine's operations across the whole
network, not per task, so the last operation of a type in one DLA task
names, as its consumer, the index the first operation of that type has in
the next DLA task, and that operation's dependency count includes the link.
NVIDIA's firmware, given such a task, follows the link inside the running
task (it re-reads a finished operation of the same index and leaves it in
its descriptor cache, which ``dla_clear_task`` keeps), then fails at the
next DLA task, and would wait forever on the counted link if it got past
that.  The submit order already runs every operation of earlier tasks
first, so before a DLA task goes to the firmware its dependency graph is
made task-local (:func:`task_local_dependencies`): links to operations of
other tasks are cut and counts lowered to the signals the task itself
gives.  A graph that is already task-local (every single-DLA-task loadable)
is left as it is.
"""

from __future__ import annotations

import struct
import time
from dataclasses import field

import numpy as np

from ..dma.align import align_up
from ..errors import SimError
from ..logs import LazyLogger
from ..machine import Machine
from ..records import record
from .compat import needs_upgrade, operation_types, upgrade_task
from .dimg import pack_dimg
from .emu import EmuTask
from .loadable import (
    DOMAIN_SRAM,
    FLAG_ALLOC,
    INTERFACE_DLA1,
    INTERFACE_EMU1,
    Blob,
    Loadable,
    read_loadable,
)
from .macs import MacCounter

# firmware operation type -> (name, the HardwareConfig feature it needs)
OPERATION_UNITS = {0: ("BDMA", "bdma"), 1: ("convolution", None), 2: ("SDP", None),
                   3: ("PDP", "pdp"), 4: ("CDP", "cdp"), 5: ("Rubik", "rubik")}
BASES = {"pri_mem": 0x80000000, "sec_mem": 0x50000000}  # where NVIDIA's benches put memory
PAGE = 0x1000
# firmware interface (dla_interface.h): network descriptor and dependency-graph entries
NETWORK_DESC = 40  # bytes; dependency graph index (int16) at 4, num_rois/num_operations at 28/30
DEP_ENTRY = 36  # index, roi, op type (byte 3), dependency count (byte 4), 6 consumers, fused parent
CONSUMERS_AT, FUSED_AT, NUM_OP_TYPES = 8, 32, 6  # each consumer: int16 index, u8 event, u8 pad

log = LazyLogger("sim.runtime")


@record(frozen=False)
class RunResult:
    outputs: list[bytes]  # bytes of each output tensor's buffer, by bind id
    dimgs: list[bytes]  # the .dimg file of each output tensor
    tasks: int = 0
    hw_layers: int = 0
    seconds: float = 0.0
    task_seconds: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # links cut to make DLA tasks task-local
    #: layers the hardware may run at once on the same bytes (sim.races): computed one
    #: after the other, the hardware's bytes there may differ
    races: list[str] = field(default_factory=list)
    firmware_seconds: float = 0.0  # in the firmware's calls, less the simulator's answers
    macs: int = 0  # logical multiply-accumulates of the convolution layers run (.macs)


@record(frozen=False)
class TaskView:
    """One finished task, as ``on_task`` sees it: its address list in simulated memory."""

    task: object  # the loadable's Task
    label: str  # "DLA" or "EMU"
    addresses: list[tuple[str, int, int]]  # (ram, memory base, offset) per address-list entry
    machine: Machine

    def address(self, index: int) -> int:
        """The address entry ``index`` names (memory base plus the entry's offset)."""
        _, base, offset = self.addresses[index]
        return base + offset

    def read(self, index: int, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset`` past address-list entry ``index``."""
        ram = self.addresses[index][0]
        return self.machine.memory(ram).read(self.address(index) + offset, size)


class Placement:
    """Where each memory of the loadable lives in simulated memory."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self.next = dict(BASES)
        self.where: dict[int, tuple[str, int, int]] = {}  # mem id -> (ram, base, size)

    def allocate(self, mem_id: int, size: int, alignment: int, ram: str) -> int:
        align = max(int(alignment), PAGE)
        base = align_up(self.next[ram], align)
        self.next[ram] = base + max(int(size), 1)
        self.machine.memory(ram).check(base, max(int(size), 1), f"memory {mem_id}", "allocate")
        self.where[mem_id] = (ram, base, int(size))
        return base


def _ram_of(memory, machine: Machine) -> str:
    if memory.domain == DOMAIN_SRAM:
        if machine.sec_mem is None:
            raise SimError(f"loadable memory {memory.id} is in SRAM, but "
                           f"{machine.config.name} has no CV-SRAM")
        return "sec_mem"
    return "pri_mem"


def _tensor_of(loadable: Loadable, memory):
    for t in loadable.tensors:
        if t.id == memory.tensor_desc_id:
            return t
    raise SimError(f"loadable memory {memory.id}: tensor descriptor {memory.tensor_desc_id} is "
                   f"missing")


def input_tensor(loadable: Loadable, bind_id: int):
    """The tensor descriptor of input ``bind_id``."""
    for mem in loadable.memories:
        if mem.is_input and mem.bind_id == bind_id:
            return _tensor_of(loadable, mem)
    raise SimError(f"the loadable has no input tensor {bind_id}")


def place_memories(loadable: Loadable, machine: Machine, inputs: dict[int, bytes]) -> Placement:
    """Allocate and fill every memory; bound inputs get ``inputs[bind_id]`` (else zeros)."""
    place = Placement(machine)
    for mem in loadable.memories:
        bindable = mem.is_input or mem.is_output
        if not bindable and not mem.flags & FLAG_ALLOC:
            continue
        size = _tensor_of(loadable, mem).size if bindable else mem.size
        ram = _ram_of(mem, machine)
        base = place.allocate(mem.id, size, mem.alignment, ram)
        if mem.is_input and mem.bind_id in inputs:
            data = inputs[mem.bind_id][:size]
            machine.memory(ram).write(base, data, f"input tensor {mem.bind_id}")
        if bindable:
            continue
        contents = _contents(loadable, mem, size)
        memory = machine.memory(ram)
        # the blobs' pages in address order (the blobs come in another): a layer's weights
        # are then read as a view of them (sim.dram.Memory.read_view), not copied
        memory.hold([(base + offset, len(blob.data)) for _, offset, blob in contents])
        for name, offset, blob in contents:
            memory.write(base + offset, blob.data, f"blob {name}")
    return place


def _contents(loadable: Loadable, mem, size: int) -> list[tuple[str, int, Blob]]:
    """(name, offset, blob) of each content blob of a memory of ``size`` bytes, checked."""
    if len(mem.contents) != len(mem.offsets):
        raise SimError(f"loadable memory {mem.id}: {len(mem.contents)} contents but "
                       f"{len(mem.offsets)} offsets")
    out = []
    for name, offset in zip(mem.contents, mem.offsets, strict=True):
        blob = loadable.blobs.get(name)
        if blob is None:
            raise SimError(f"loadable memory {mem.id}: content blob {name!r} is missing")
        if offset + len(blob.data) > size:
            raise SimError(f"loadable memory {mem.id}: blob {name!r} does not fit")
        out.append((name, offset, blob))
    return out


def task_addresses(loadable: Loadable, place: Placement, task) -> list[tuple[str, int, int]]:
    """(ram, memory base, offset) of each entry of a task's address list."""
    out = []
    for i, aid in enumerate(task.address_list):
        if aid >= len(loadable.addresses):
            raise SimError(f"task {task.id}: address list entry {i} names address {aid}, past "
                           f"the loadable's {len(loadable.addresses)}")
        entry = loadable.addresses[aid]
        if entry.mem_id not in place.where:
            raise SimError(f"task {task.id}: address {aid} is in memory {entry.mem_id}, which "
                           f"is never allocated")
        ram, base, _ = place.where[entry.mem_id]
        out.append((ram, base, entry.offset))
    return out


def run_loadable_bytes(loadable: Loadable, firmware_dir, config: str = "nv_full",
                       inputs: dict[int, bytes] | None = None, recorder_path=None,
                       progress=None, layers=None, on_task=None,
                       trace_memory: str = "dat", dimg: str = "regression") -> RunResult:
    """Run every submitted task; ``progress``: a stream for a progress bar (sim.progress).
    ``dimg``: whose ``.dimg`` packing the outputs get (:data:`sim.runtime.dimg.CONVENTIONS`).

    ``recorder_path``: record the run there as a ``.cfg`` trace, its memories as
    ``trace_memory`` files (sim.trace.record.TraceRecorder's ``memory_format``).

    ``layers``: a :class:`sim.runtime.layers.LayerOutputs` to attach to the
    machine; ``on_task``: called with a :class:`TaskView` after each task.
    """
    from ..progress import Progress

    total = sum(len(submit) for submit in loadable.submits)
    with Progress(total, progress, "loadable") if progress is not None else _NoProgress() as bar:
        return _run_tasks(loadable, firmware_dir, config, inputs, recorder_path, bar, layers,
                          on_task, trace_memory, dimg)


class _NoProgress:
    def step(self, item: str = "", summary: str = "") -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _run_tasks(loadable: Loadable, firmware_dir, config: str, inputs, recorder_path,
               bar, layers=None, on_task=None, trace_memory: str = "dat",
               dimg: str = "regression") -> RunResult:
    from ..firmware import Firmware

    start = time.perf_counter()
    machine = Machine(config)
    macs = MacCounter().attach(machine)
    if layers is not None:
        layers.attach(machine)
    recorder = None
    if recorder_path:
        from ..trace.record import TraceRecorder  # only a recorded run loads the recorder

        recorder = TraceRecorder(machine, recorder_path, trace_memory)
    firmware = None
    if any(t.interface == INTERFACE_DLA1 for t in loadable.tasks):
        # its process starts while the memories are placed
        firmware = Firmware(machine, firmware_dir, recorder)
    try:
        place = place_memories(loadable, machine, inputs or {})
    except BaseException:
        if firmware is not None:
            firmware.close()
        raise
    result = RunResult([], [])

    def race(message: str) -> None:  # a library caller of run_loadable sees it logged
        log.warning("%s", message)
        result.races.append(message)
    machine.races.report = race
    recorded: dict[int, np.ndarray] = {}
    tasks = {t.id: t for t in loadable.tasks}
    # DLA tasks still to run: only their _record_loads read what _record_checks copies
    dla_left = sum(tasks[i].interface == INTERFACE_DLA1 for submit in loadable.submits
                   for i in submit if i in tasks)
    upgrade = needs_upgrade(loadable, firmware_dir)
    pri = machine.pri_mem

    def cpu_write(addr: int, data: bytes) -> None:
        pri.write(addr, data, "runtime CPU write")
    try:
        for submit in loadable.submits:
            for task_id in submit:
                task = tasks.get(task_id)
                if task is None:
                    raise SimError(f"submit names task {task_id}, which the loadable lacks")
                t0 = time.perf_counter()
                addresses = task_addresses(loadable, place, task)
                if task.interface == INTERFACE_DLA1:
                    address_of = _address_of(addresses)
                    check_units(machine.config, task.id, operation_types(pri.read, address_of))
                    for note in task_local_dependencies(pri.read, cpu_write, address_of,
                                                        task.id):
                        log.info("%s", note)
                        result.notes.append(note)
                    if upgrade:
                        upgrade_task(pri.read, cpu_write, address_of)
                    dla_left -= 1
                    if recorder is not None:
                        recorder.begin_task(f"DLA task {task.id}")
                        _record_loads(recorder, machine, place, recorded)
                    # what the task changes is checked only in a recorded trace: against
                    # the bytes _record_loads just read (a read of every memory less)
                    before = dict(recorded) if recorder is not None else None
                    stats = firmware.run_task([(b, o) if r == "pri_mem" else (b + o, 0)
                                               for r, b, o in addresses])
                    result.hw_layers += stats.hw_layers
                    if recorder is not None:
                        _record_checks(recorder, machine, place, before, recorded,
                                       firmware.cpu_writes, keep=dla_left > 0)
                    label = "DLA"
                elif task.interface == INTERFACE_EMU1:
                    if task.instance not in (-1, 0):  # the runtime has one emulator
                        raise SimError(f"loadable EMU task {task.id} asks for emulator instance "
                                       f"{task.instance}; the runtime has only instance 0")
                    emu_list = [b + o if r == "pri_mem" else None for r, b, o in addresses]
                    sizes = [_memory_end(place, b) - (b + o) for r, b, o in addresses]
                    EmuTask(emu_list, pri.read, cpu_write, sizes).run()
                    label = "EMU"
                else:
                    raise SimError(f"task {task.id}: unknown interface {task.interface}")
                result.tasks += 1
                result.task_seconds.append((f"{label} task {task.id}", time.perf_counter() - t0))
                if on_task is not None:
                    on_task(TaskView(task, label, addresses, machine))
                bar.step(f"{label} task {task.id} ({time.perf_counter() - t0:.2f}s)")
    except BaseException as exc:
        if recorder is not None:  # what ran until the failure, replayable
            recorder.comment(f"the run stopped here: {type(exc).__name__}")
            recorder.save(recorder_path)
        raise
    finally:
        if firmware is not None:
            result.firmware_seconds = firmware.call_seconds - firmware.serve_seconds
            firmware.close()
    for mem in sorted((m for m in loadable.memories if m.is_output), key=lambda m: m.bind_id):
        ram, base, size = place.where[mem.id]
        data = machine.memory(ram).read(base, size)
        result.outputs.append(data)
        result.dimgs.append(pack_dimg(data, _tensor_of(loadable, mem), dimg))
    if recorder is not None:
        recorder.save(recorder_path)
    result.macs = macs.macs
    result.seconds = time.perf_counter() - start
    return result


def _address_of(addresses):
    """``address_of(index)``: where address-list entry ``index`` starts (base + offset)."""
    return lambda index: addresses[index][1] + addresses[index][2]


def check_units(config, task_id: int, op_types) -> None:
    """A task whose operations need a unit the configuration lacks is invalid input."""
    for op, kind in enumerate(op_types):
        name, feature = OPERATION_UNITS.get(kind, (f"operation type {kind}", None))
        if kind not in OPERATION_UNITS:
            raise SimError(f"loadable DLA task {task_id}: operation {op} has unknown type {kind}")
        if feature and not getattr(config, feature):
            raise SimError(f"loadable DLA task {task_id}: operation {op} needs the {name}, "
                           f"which {config.name} lacks")


def task_local_dependencies(read, write, address_of, task_id: int = 0) -> list[str]:
    """Make one DLA task's dependency graph name only the task's own operations.

    ``address_of(index)``: where address-list entry ``index`` starts.  In
    every ROI's block of entries, a consumer link is the task's own when it
    names a later operation of the task of the consumer slot's type; a link
    of an operation's own type is the engine's chain, which leaves the task
    from the last operation of that type (NVIDIA's compiler orders and
    numbers each task's operations in one topological order, so every link
    inside a task points forward).  Other links (and a fused parent that is
    not the task's) are cut; a dependency count above the number of links
    left that signal the operation is lowered to it.  Returns a note per
    change (none for a task-local graph).
    """
    network = read(address_of(0), NETWORK_DESC)
    (dep_index,) = struct.unpack_from("<h", network, 4)
    num_rois, count = struct.unpack_from("<HH", network, 28)
    if not count:
        return []
    base = address_of(dep_index)
    notes = []
    for roi in range(max(num_rois, 1)):
        start = base + roi * count * DEP_ENTRY
        graph = bytearray(read(start, count * DEP_ENTRY))
        types = [graph[op * DEP_ENTRY + 3] for op in range(count)]
        last = {t: op for op, t in enumerate(types)}  # last operation of each type
        signals = [0] * count
        changed = False
        for op in range(count):
            entry = op * DEP_ENTRY
            for slot in range(NUM_OP_TYPES + 1):
                at = entry + (CONSUMERS_AT + 4 * slot if slot < NUM_OP_TYPES else FUSED_AT)
                (target,) = struct.unpack_from("<h", graph, at)
                if target == -1:
                    continue
                if slot < NUM_OP_TYPES:
                    own = (op < target < count and types[target] == slot
                           and not (slot == types[op] and last[slot] == op))
                    what = f"consumer of type {slot}"
                else:  # the operation it is fused to: the one before it in the pipeline
                    own = 0 <= target < op and types[target] == types[op] - 1
                    what = "fused parent"
                if own:
                    signals[target] += 1
                    continue
                struct.pack_into("<h", graph, at, -1)
                changed = True
                notes.append(f"DLA task {task_id}: operation {op} (type {types[op]}) names "
                             f"operation {target} as its {what}, not one of this task's: link cut")
        for op in range(count):
            waits = graph[op * DEP_ENTRY + 4]
            if waits > signals[op]:
                graph[op * DEP_ENTRY + 4] = signals[op]
                changed = True
                notes.append(f"DLA task {task_id}: operation {op} (type {types[op]}) waits on "
                             f"{waits} signals, {signals[op]} from this task: count lowered")
        if changed:
            write(start, bytes(graph))
    return notes


def _memory_end(place, base: int) -> int:
    for _, b, size in place.where.values():
        if b == base:
            return b + size
    return base


def _record_loads(recorder, machine, place, recorded) -> None:
    """mem_load every memory whose bytes changed since last recorded (the CPU wrote them)."""
    for mid, (ram, base, size) in place.where.items():
        mem = machine.memory(ram)
        old = recorded.get(mid)
        if old is not None and _holds(mem, base, size, old):
            continue  # unchanged: no copy of it made (a network's weights: 200 MB)
        data = _copy(mem, base, size)
        if old is not None or data.any():  # changed, or no longer all zero
            recorder.load_memory(ram, base, data)
        recorded[mid] = data


def _record_checks(recorder, machine, place, before, recorded, cpu_writes,
                   keep: bool = True) -> None:
    """check_crc every memory the task's hardware layers wrote.

    Memories the firmware itself wrote (its bookkeeping in the descriptors) are
    left out: a replay has no firmware to write them.  ``keep``: a copy of each
    memory the task changed is kept in ``recorded`` for the next task's
    :func:`_record_loads`; after the run's last DLA task none is made (ResNet-50's
    20 MB of feature maps copied for nothing).
    """
    for mid, (ram, base, size) in place.where.items():
        mem = machine.memory(ram)
        if _holds(mem, base, size, before[mid]):
            recorded[mid] = before[mid]
            continue
        touched = ram == "pri_mem" and any(base <= a < base + size for a, _ in cpu_writes)
        if not touched:
            recorder.check_crc(ram, base, size)
        if keep:
            recorded[mid] = _copy(mem, base, size)


def _copy(mem, base: int, size: int) -> np.ndarray:
    """The bytes of ``mem`` at ``base``, a read-only array of their own: numpy's large
    arrays come in huge pages, faulted in 4 times faster than a bytes object's."""
    data = mem.read_array(base, size)
    data.flags.writeable = False
    return data


def _holds(mem, base: int, size: int, data: bytes | np.ndarray, piece: int = 1 << 20) -> bool:
    """Whether ``mem`` holds ``data`` (``size`` bytes) at ``base``: compared a piece at a
    time, each piece a view of the memory's pages where they lie in one slab
    (``Memory.read_view``), in 64-bit words: no copy of a whole memory (reading a
    network's 200 MB of weights to compare them took most of the time a recording
    added)."""
    old = np.frombuffer(data, np.uint8)
    for start in range(0, size, piece):
        now, was = mem.read_view(base + start, min(piece, size - start)), old[start:start + piece]
        if now.size % 8 == 0:
            now, was = now.view(np.uint64), was.view(np.uint64)
        if (now != was).any():
            return False
    return True


def run_loadable(path, firmware, config: str = "nv_full", inputs=None) -> list[np.ndarray]:
    """Run the loadable at ``path`` with the KMD firmware folder ``firmware``.

    ``inputs``: None (inputs hold zeros, as NVIDIA's runtime leaves them), or a
    list/dict of numpy arrays or bytes per input bind id, laid out as the
    input tensor's buffer.  Returns each output tensor's buffer as uint8 arrays.
    """
    loadable = read_loadable(path)
    result = run_loadable_bytes(loadable, firmware, config, _input_bytes(inputs))
    return [np.frombuffer(b, np.uint8) for b in result.outputs]


def _input_bytes(inputs) -> dict[int, bytes]:
    if inputs is None:
        return {}
    items = inputs.items() if isinstance(inputs, dict) else enumerate(inputs)
    return {int(k): (v if isinstance(v, bytes) else np.ascontiguousarray(v).tobytes())
            for k, v in items}
