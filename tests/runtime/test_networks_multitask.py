"""Loadables of several tasks: DLA, EMU, DLA, EMU (a Caffe Power layer the compiler put on the CPU).

NVIDIA's compiler chains each engine's operations over the whole network, so
a DLA task's last operation of a type names the next DLA task's first one (by
that task's index) and that operation counts the link; the runner makes each
DLA task's dependency graph task-local before the firmware sees it
(``task_local_dependencies``).  Checked here: that step on synthetic graphs
and on the compiled networks (only the multi-task one changes), the EMU power
operation against the runtime's formula computed independently (fp16, int8,
the 8-byte int8 layout, overlapping buffers), and ``mixnet_power`` end to
end on NVIDIA's firmware, its EMU power output against numpy on the first
DLA task's output buffer read back from the run.
"""

import struct
from pathlib import Path

import numpy as np
import pytest

from sim.runtime import read_loadable, run_loadable_bytes
from sim.runtime.emu import EmuTask
from sim.runtime.loadable import INTERFACE_DLA1, INTERFACE_EMU1
from sim.runtime.runner import task_local_dependencies

CONV, SDP, PDP = 1, 2, 3
MIXNET_POWER = Path("networks/nv_full/mixnet_power")


# -- dependency graphs ----------------------------------------------------------
def _entry(index, op_type, deps, consumers=None, fused=-1):
    """One 36-byte dependency-graph entry (the firmware's ``dla_common_op_desc``)."""
    slots = [-1] * 6
    for t, target in (consumers or {}).items():
        slots[t] = target
    raw = struct.pack("<hbBB3x", index, 0, op_type, deps)
    raw += b"".join(struct.pack("<hBx", s, 1) for s in slots)
    return raw + struct.pack("<hBx", fused, 2)


def _task_memory(entries):
    """A task's memory: network descriptor at 0 (dependency graph = entry 1), graph at 0x100."""
    network = bytearray(40)
    struct.pack_into("<h", network, 4, 1)
    struct.pack_into("<HH", network, 28, 1, len(entries))
    mem = bytearray(0x100 + 36 * len(entries))
    mem[:40] = network
    mem[0x100:] = b"".join(entries)
    writes = []

    def write(addr, data):
        writes.append(addr)
        mem[addr:addr + len(data)] = data

    return mem, (lambda a, n: bytes(mem[a:a + n])), write, [0, 0x100].__getitem__, writes


def _graph(mem, count):
    out = []
    for op in range(count):
        raw = bytes(mem[0x100 + 36 * op: 0x100 + 36 * (op + 1)])
        consumers = [struct.unpack_from("<h", raw, 8 + 4 * k)[0] for k in range(6)]
        out.append((raw[4], consumers, struct.unpack_from("<h", raw, 32)[0]))
    return out


def test_links_out_of_a_task_are_cut():
    """The first DLA task: its last CONV and SDP name operations 0 and 1 of the next task."""
    entries = [_entry(0, CONV, 1, {CONV: 2, SDP: 1}),
               _entry(1, SDP, 1, {CONV: 2, SDP: 3}, fused=0),
               _entry(2, CONV, 3, {CONV: 0, SDP: 3}),  # chain leaves the task: 0 is not after 2
               _entry(3, SDP, 2, {SDP: 1, PDP: 9}, fused=2)]  # 1 is behind, 9 past the end
    mem, read, write, address_of, _ = _task_memory(entries)
    notes = task_local_dependencies(read, write, address_of, 0)
    graph = _graph(mem, 4)
    assert graph[2][1][CONV] == -1 and graph[3][1][SDP] == -1 and graph[3][1][PDP] == -1
    assert graph[0][1][CONV] == 2 and graph[1][1][SDP] == 3 and graph[3][2] == 2  # kept
    assert [g[0] for g in graph] == [1, 1, 3, 2]  # every count matches the signals left
    assert len(notes) == 3 and all("link cut" in n for n in notes)


def test_counts_waiting_on_earlier_tasks_are_lowered():
    """The next DLA task: its first CONV and SDP also count the previous task's links."""
    entries = [_entry(0, CONV, 2, {CONV: 3, SDP: 1}),  # 1 from its fused SDP + 1 from before
               _entry(1, SDP, 2, {PDP: 2}, fused=0),  # 1 from CONV 0 + 1 from before
               _entry(2, PDP, 1, {}),
               _entry(3, CONV, 1, {})]
    mem, read, write, address_of, _ = _task_memory(entries)
    notes = task_local_dependencies(read, write, address_of, 2)
    assert [g[0] for g in _graph(mem, 4)] == [1, 1, 1, 1]
    assert len(notes) == 2 and all("count lowered" in n for n in notes)


def test_a_task_local_graph_is_left_as_it_is():
    entries = [_entry(0, CONV, 1, {CONV: 2, SDP: 1}),
               _entry(1, SDP, 1, {CONV: 2, SDP: 3}, fused=0),
               _entry(2, CONV, 3, {SDP: 3}),
               _entry(3, SDP, 1, {}, fused=2)]
    mem, read, write, address_of, writes = _task_memory(entries)
    before = bytes(mem)
    assert task_local_dependencies(read, write, address_of, 0) == []
    assert bytes(mem) == before and not writes


def _blob_reader(loadable, task):
    """read/address_of over a task's loadable memories, as placed by their blobs (no run)."""
    memories = {m.id: m for m in loadable.memories}

    def address_of(index):
        return index << 32

    def read(addr, size):
        entry = loadable.addresses[task.address_list[addr >> 32]]
        mem = memories[entry.mem_id]
        data = bytearray(mem.size)
        for name, offset in zip(mem.contents, mem.offsets, strict=True):
            blob = loadable.blobs[name].data
            data[offset:offset + len(blob)] = blob
        at = entry.offset + (addr & 0xFFFFFFFF)
        return bytes(data[at:at + size])

    return read, address_of


def test_only_the_multitask_network_needs_it(shared_dir):
    """Every compiled network's DLA tasks: single-task ones are already task-local."""
    found = sorted((shared_dir / "networks").glob("*/*/*.nvdla"))
    if not found:
        pytest.skip("no compiled networks in ../shared/networks")
    changed = {}
    for path in found:
        loadable = read_loadable(path)
        for task in loadable.tasks:
            if task.interface != INTERFACE_DLA1:
                continue
            read, address_of = _blob_reader(loadable, task)
            notes = task_local_dependencies(read, lambda a, d: None, address_of, task.id)
            if notes:
                changed.setdefault(path.parent.name, []).extend(notes)
    dla_tasks = {p.parent.name: sum(t.interface == INTERFACE_DLA1 for t in read_loadable(p).tasks)
                 for p in found}
    assert set(changed) == {name for name, n in dla_tasks.items() if n > 1}
    if "mixnet_power" in changed:
        notes = changed["mixnet_power"]
        assert sum("link cut" in n for n in notes) == sum("count lowered" in n for n in notes) > 0


# -- EMU power -----------------------------------------------------------------
def _half_ties_away(y):
    """float32 -> fp16 bits, ties away from zero, independently of sim.num.host."""
    y = np.asarray(y, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        even = y.astype(np.float16)  # ties to even; beyond 65520 infinity, as the half library
        err = np.abs(y.astype(np.float64) - even.astype(np.float64))
        ulp = np.spacing(np.abs(even)).astype(np.float64)
        tie = np.isfinite(even) & (err * 2 == ulp) & (np.abs(even) < np.abs(y))
        away = np.nextafter(even, np.copysign(np.float16(np.inf), even))
    return np.where(tie, away, even).view(np.uint16)


def _offsets(shape, group, bpe, line, surface):
    c, h, w = (np.arange(n) for n in shape)
    return ((c[:, None, None] // group) * surface + h[None, :, None] * line
            + w[None, None, :] * group * bpe + (c[:, None, None] % group) * bpe)


def _power_task(mem, fmt, src, dst, power, scale, shift, in_scale=1.0, out_scale=1.0):
    """Write an EMU task with one power op; src/dst: (addr, (c, h, w), line, surface)."""
    addrs = [0x0, 0x100, 0x200, 0, 0]  # network desc, op list, buffer list, src, dst
    mem[0:6] = struct.pack("<hhH", 1, 2, 1)
    mem[0x100:0x118] = struct.pack("<B3xfffff", 0, in_scale, out_scale, power, scale, shift)
    for slot, (idx, (addr, (c, h, w), line, surface)) in enumerate(((3, src), (4, dst))):
        addrs[idx] = addr
        mem[0x200 + 256 * slot: 0x200 + 256 * slot + 26] = struct.pack(
            "<hIIHHHHII", idx, 0, 0, fmt, w, h, c, line, surface)
    return EmuTask(addrs, lambda a, n: bytes(mem[a:a + n]),
                   lambda a, d: mem.__setitem__(slice(a, a + len(d)), d))


def test_power_fp16_against_numpy():
    rng = np.random.default_rng(7)
    shape, line, surface = (20, 3, 5), 5 * 32, 3 * 5 * 32
    x = (rng.standard_normal(shape) * 3).astype(np.float16)
    x.flat[:4] = [0, -0.0, 65504, -2]  # exact zero, big, a negative base of an integer power
    mem = bytearray(0x10000)
    src_off = _offsets(shape, 16, 2, line, surface)
    for off, v in zip(src_off.reshape(-1), x.reshape(-1), strict=True):
        mem[0x1000 + off: 0x1000 + off + 2] = v.tobytes()
    dst_shape, dst_line, dst_surface = (24, 4, 6), 6 * 32, 4 * 6 * 32  # a larger destination
    task = _power_task(mem, 3, (0x1000, shape, line, surface),
                       (0x6000, dst_shape, dst_line, dst_surface), 2.0, 0.5, 1.0)
    assert task.run() == 1
    want = _half_ties_away((np.float32(1.0) + np.float32(0.5) * x.astype(np.float32))
                           ** np.float32(2.0))
    dst_off = _offsets(shape, 16, 2, dst_line, dst_surface)
    got = np.array([struct.unpack_from("<H", mem, 0x6000 + o)[0] for o in dst_off.reshape(-1)])
    assert np.array_equal(got, want.reshape(-1))
    untouched = _offsets(dst_shape, 16, 2, dst_line, dst_surface)[20:, 3:, 5:]
    assert not any(mem[0x6000 + o] for o in untouched.reshape(-1))


@pytest.mark.parametrize("fmt, group", [(0, 32), (1, 8)])
def test_power_int8_against_numpy(fmt, group):
    rng = np.random.default_rng(fmt)
    shape = (40, 2, 3)
    line = 3 * group
    surface = 2 * line
    x = rng.integers(-128, 128, shape).astype(np.int8)
    mem = bytearray(0x10000)
    off = _offsets(shape, group, 1, line, surface)
    for o, v in zip(off.reshape(-1), x.reshape(-1), strict=True):
        mem[0x1000 + o] = int(v) & 0xFF
    task = _power_task(mem, fmt, (0x1000, shape, line, surface), (0x5000, shape, line, surface),
                       2.0, 0.5, -1.0, in_scale=0.05, out_scale=0.02)
    assert task.run() == 1
    y = ((np.float32(-1.0) + np.float32(0.5) * (x.astype(np.float32) * np.float32(0.05)))
         ** np.float32(2.0)) / np.float32(0.02)
    want = np.trunc(np.clip(y, -128, 127)).astype(np.int8)
    got = np.array([mem[0x5000 + o] for o in off.reshape(-1)], np.uint8).view(np.int8)
    assert np.array_equal(got, want.reshape(-1))
    assert (want == 127).any()  # saturation is exercised


def test_power_in_overlapping_buffers_follows_the_loop_order():
    """A destination one element past the source: each store feeds the next element's read."""
    shape, line, surface = (1, 1, 6), 6 * 32, 6 * 32
    x = np.arange(1, 7, dtype=np.float16)
    mem = bytearray(0x4000)
    for i, v in enumerate(x):
        mem[0x1000 + 32 * i: 0x1000 + 32 * i + 2] = v.tobytes()
    task = _power_task(mem, 3, (0x1000, shape, line, surface), (0x1020, shape, line, surface),
                       1.0, 2.0, 0.0)
    task.run()
    got = [np.frombuffer(bytes(mem[0x1000 + 32 * i: 0x1002 + 32 * i]), np.float16)[0]
           for i in range(7)]
    assert got == [1, 2, 4, 8, 16, 32, 64]  # sequential: each output doubled the previous one


# -- mixnet_power end to end ---------------------------------------------------------
@pytest.fixture(scope="module")
def mixnet_power(shared_dir):
    folder = shared_dir / MIXNET_POWER
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    return folder


def _buffer(raw):
    index, offset, size, fmt, w, h, c, line, surface = struct.unpack_from("<hIIHHHHII", raw)
    return {"index": index, "offset": offset, "format": fmt, "shape": (c, h, w),
            "line": line, "surface": surface}


def test_mixnet_power_runs_and_its_power_op_matches_numpy(mixnet_power, nvidia_kmd):
    loadable = read_loadable(mixnet_power / "mixnet_power.nvdla")
    order = [t for submit in loadable.submits for t in submit]
    kinds = {t.id: t.interface for t in loadable.tasks}
    assert [kinds[t] for t in order] == [INTERFACE_DLA1, INTERFACE_EMU1] * 2
    global_ids = {t.id: t.address_list for t in loadable.tasks}
    after = {}  # task id -> {global address id: bytes of its memory from that address}

    def on_task(view):
        sizes = {a.id: a.size for a in loadable.addresses}
        after[view.task.id] = {
            aid: view.read(i, 0, sizes[aid]) for i, aid in enumerate(global_ids[view.task.id])
            if view.addresses[i][0] == "pri_mem"}

    result = run_loadable_bytes(loadable, nvidia_kmd, "nv_full",
                                {0: (mixnet_power / "input.bin").read_bytes()}, on_task=on_task)
    assert result.tasks == 4 and result.hw_layers > 0
    probabilities = np.frombuffer(result.outputs[0], np.float16)[:10].astype(np.float64)
    assert np.all(probabilities >= 0) and abs(probabilities.sum() - 1) < 0.01

    first_dla, power_task = order[0], order[1]
    emu = after[power_task]
    ids = global_ids[power_task]
    op_index, buf_index, count = struct.unpack("<hhH", emu[ids[0]][:6])
    assert count == 1
    op = emu[ids[op_index]]
    assert op[0] == 0  # the power operation
    power, scale, shift = struct.unpack_from("<fff", op, 12)
    src, dst = _buffer(emu[ids[buf_index]][:256]), _buffer(emu[ids[buf_index]][256:512])
    assert src["format"] == dst["format"] == 3  # fp16: 16 elements per 32-byte atom
    # the source as the first DLA task left it; the destination after the EMU task
    x_mem = after[first_dla][ids[src["index"]]]
    y_mem = emu[ids[dst["index"]]]
    x_off = src["offset"] + _offsets(src["shape"], 16, 2, src["line"], src["surface"])
    y_off = dst["offset"] + _offsets(src["shape"], 16, 2, dst["line"], dst["surface"])
    x = np.frombuffer(x_mem, np.uint8)[x_off[..., None] + np.arange(2)].copy().view(np.float16)
    y = np.frombuffer(y_mem, np.uint8)[y_off[..., None] + np.arange(2)].copy().view(np.uint16)
    assert np.isfinite(x).all() and np.count_nonzero(x) > x.size // 4  # a real feature map
    want = _half_ties_away((np.float32(shift) + np.float32(scale) * x.astype(np.float32))
                           ** np.float32(power))
    assert np.array_equal(y, want)
