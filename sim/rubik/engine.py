"""RUBIK engine: the data reshape unit (nv_full).

One layer moves a cube between layouts (:mod:`sim.dma.rubik`): *contract*
reassembles a strided deconvolution's output (input surfaces are the
``stride_x * stride_y`` phases), *split* writes each channel as a plane,
*merge* gathers planes into a feature cube.  Register rules that would hang
the hardware stop with the register named.
"""

from __future__ import annotations

from ..dma.align import ceil_div
from ..engine import Engine, armed_groups
from ..errors import ConfigurationError, MemoryFault, SimError

# sim.dma.rubik, the data movement, loads with the first Rubik layer (every machine builds
# this engine; few traces use it)
RBK = "NVDLA_RBK"
MODES = {0: "contract", 1: "split", 2: "merge"}  # RUBIK_MODE -> its function in sim.dma.rubik
# the simulator moves Rubik data one line at a time: a layer needing more line transfers
# than this is refused (like sim.dram's memory limits) instead of running for minutes
MAX_LINE_TRANSFERS = 1 << 18
WINDOW_LIMIT = 1 << 20  # bytes: a source window larger than this is read line by line


def _bytes(block, field: str) -> int:
    """Address-low and stride fields hold bits [31:5]: their value counts 32-byte units."""
    from ..dma.rubik import ATOM

    return getattr(block, field) * ATOM


def decode_layout(block):
    """The :class:`sim.dma.rubik.RubikLayout` the registers of ``block`` describe."""
    from ..dma.rubik import RubikLayout

    if block.rubik_mode not in MODES:
        raise ConfigurationError(f"{RBK}.D_MISC_CFG_0.RUBIK_MODE {block.rubik_mode} is reserved")
    precision = block.precision("in_precision")
    return RubikLayout(
        width=block.datain_width + 1, height=block.datain_height + 1,
        in_channels=block.datain_channel + 1, out_channels=block.dataout_channel + 1,
        ebs=precision.bytes,
        src=(block.dain_addr_high << 32) | _bytes(block, "dain_addr_low"),
        src_line=_bytes(block, "dain_line_stride"), src_surface=_bytes(block, "dain_surf_stride"),
        src_planar=_bytes(block, "dain_planar_stride"),
        dst=(block.daout_addr_high << 32) | _bytes(block, "daout_addr_low"),
        dst_line=_bytes(block, "daout_line_stride"),
        dst_surface=_bytes(block, "daout_surf_stride"),
        dst_planar=_bytes(block, "daout_planar_stride"),
        super_line=_bytes(block, "contract_stride_1"),
        stride_x=block.deconv_x_stride + 1, stride_y=block.deconv_y_stride + 1)


def check_work(layout, mode: int) -> None:
    channels = layout.in_channels if mode == 2 else layout.out_channels
    surfaces = ceil_div(channels, layout.epa)
    per_row = layout.stride_x * layout.stride_y if mode == 0 else layout.epa
    lines = surfaces * layout.height * (per_row + 1)
    if lines > MAX_LINE_TRANSFERS:
        raise SimError(f"{RBK}.D_DATAIN_SIZE_0_0: the layer moves {lines} lines, more than the "
                       f"simulator's limit of {MAX_LINE_TRANSFERS}")


def check_split_channels(layout) -> None:
    """Split reads the input's surfaces and writes the output's: they must agree."""
    read = ceil_div(layout.in_channels, layout.epa)
    written = ceil_div(layout.out_channels, layout.epa)
    if read != written:
        raise ConfigurationError(
            f"{RBK}.D_DATAOUT_SIZE_1_0.DATAOUT_CHANNEL: split mode reads {read} surfaces "
            f"(DATAIN_CHANNEL) but writes {written}: they must cover the same surfaces")


SRC_WHAT, DST_WHAT = f"{RBK}.D_DAIN_ADDR", f"{RBK}.D_DAOUT_ADDR"


def _source_window(layout, mode: str, src_mem, dst_mem):
    """``read(addr, size)`` of the lines of one window read at once (a memory read per line
    cost more than the layer's moves), or None where that could differ from reading
    line by line between the writes: the window faults (a line would name its own
    range) or meets the bytes the layer writes (a line read after a write onto it sees
    the new bytes, and an overlap is refused only for lines read before the write)."""
    from ..dma.rubik import read_lines, write_lines

    offsets, size = read_lines(layout, mode)
    if not offsets.size or not size:
        return None
    base, span = layout.src, int(offsets.max()) + size
    if span > WINDOW_LIMIT:  # sparse lines (planes far apart): not worth a window
        return None
    if dst_mem is src_mem:
        written, length = write_lines(layout, mode)  # offsets >= 0: strides are unsigned
        end = layout.dst + (int(written.max()) + length if written.size else 0)
        if layout.dst < base + span and base < end:
            return None
    try:
        src_mem.check(base, span, SRC_WHAT, "read")
    except MemoryFault:
        return None
    window = src_mem.read_array(base, span, SRC_WHAT, lines=(offsets, size))

    def read(addr: int, n: int):
        return window[addr - base: addr - base + n]

    return read


def _write_lines(layout, mode: str, dst_mem, lines: list) -> None:
    """Write the ``lines`` (address, bytes) a layer made, in order: as one window where
    that leaves what line writes leave (:meth:`sim.dram.Memory.window_write_ok`)."""
    from ..dma.rubik import write_lines

    offsets, size = write_lines(layout, mode)
    base = layout.dst
    span = int(offsets.max()) + size if offsets.size else 0
    if span and span <= WINDOW_LIMIT and dst_mem.window_write_ok(base, span, (offsets, size)):
        window = dst_mem.read_for_update(base, span, DST_WHAT)
        for addr, data in lines:
            window[addr - base: addr - base + len(data)] = memoryview(data)
        dst_mem.write(base, window, DST_WHAT, lines=(offsets, size))
        return
    for addr, data in lines:
        dst_mem.write(addr, data, DST_WHAT)


class RubikEngine(Engine):
    name = "RUBIK"
    units = (RBK,)

    def ready(self, machine):
        if RBK not in machine.regfile.units:
            return None
        return armed_groups(machine, (RBK,))

    def run(self, ctx):
        ctx.config.require("rubik", f"{RBK}.D_OP_ENABLE_0")
        block = ctx.regs(RBK)
        layout = decode_layout(block)
        check_work(layout, block.rubik_mode)
        if block.rubik_mode == 1:
            check_split_channels(layout)
        src_mem = ctx.memory(block.datain_ram_type)
        dst_mem = ctx.memory(block.dataout_ram_type)
        from ..dma import rubik

        mode = MODES[block.rubik_mode]
        read = _source_window(layout, mode, src_mem, dst_mem)
        if read is None:  # line by line, reads between the writes, as the DMA moves them

            def read(addr: int, size: int) -> bytes:
                return src_mem.read(addr, size, SRC_WHAT)

            def write(addr: int, data: bytes) -> None:
                dst_mem.write(addr, data, DST_WHAT)

            getattr(rubik, mode)(layout, read, write)
        else:  # the source is read: the lines written are kept, then written in order
            lines: list[tuple[int, bytes]] = []
            getattr(rubik, mode)(layout, read, lambda addr, data: lines.append((addr, data)))
            _write_lines(layout, mode, dst_mem, lines)
        ctx.set_counter(RBK, "D_PERF_READ_STALL_0", 0)
        ctx.set_counter(RBK, "D_PERF_WRITE_STALL_0", 0)

    def interrupts(self, ctx):
        return [("RUBIK", RBK)]
