"""EMU tasks: the layers NVIDIA's runtime computes on the CPU (power, softmax).

An EMU task's address list maps each index to a place in memory; index 0
holds the network descriptor (operation list index, operation-buffer list
index, operation count), each operation a 24-byte container (type, input
and output scale factors, then power/scale/shift or the softmax axis) and
each operation's buffers a 512-byte container (source and destination
buffer descriptors of 256 bytes: address index and offset, size, format,
width, height, channels, line and surface strides).  The arithmetic is the
runtime's: float32 with the C library's ``expf``/``powf`` (:mod:`sim.num.host`).
"""

from __future__ import annotations

import struct

import numpy as np

from ..dma.feature import FeatureLayout
from ..errors import EmuError
from ..num.host import expf, float32_from_half, half_from_float32, powf, saturate_int8
from ..records import record

OP_POWER, OP_SOFTMAX = 0, 1
FORMAT_INT8, FORMAT_INT8_8, FORMAT_INT16, FORMAT_FF16 = 0, 1, 2, 3
BUFFER_CONTAINER, BUFFER_DESC = 512, 256


@record
class EmuLayout:
    """One revision of the EMU interface (both declare emulator version 0.0.1).

    The first revision (NVIDIA's 2018 runtime, fp16 only) has 16-byte
    operation containers holding the type and the power parameters, buffer
    descriptors without an offset, and format code 2 for fp16; the second
    has 24-byte containers with input/output scale factors, a buffer offset
    and int8 formats.  The operation list's size tells them apart.
    """

    op_size: int
    params_at: int  # power, scale, shift (floats) / softmax axis
    scales_at: int | None  # input and output scale factors
    buffer_struct: str
    formats: dict  # format code in the descriptor -> FORMAT_*


FIRST = EmuLayout(16, 1, None, "<hIHHHHII", {2: FORMAT_FF16})
SECOND = EmuLayout(24, 12, 4, "<hIIHHHHII", {FORMAT_INT8: FORMAT_INT8,
                                             FORMAT_INT8_8: FORMAT_INT8_8,
                                             FORMAT_FF16: FORMAT_FF16})
BYTES = {FORMAT_INT8: 1, FORMAT_INT8_8: 1, FORMAT_FF16: 2}
GROUP_BYTES = {FORMAT_INT8: 32, FORMAT_FF16: 32, FORMAT_INT8_8: 8}  # bytes per channel group


@record
class Buffer:
    index: int
    offset: int
    size: int
    format: int
    width: int
    height: int
    channels: int
    line_stride: int
    surface_stride: int

    @classmethod
    def decode(cls, raw: bytes, layout: EmuLayout) -> Buffer:
        fields = struct.unpack_from(layout.buffer_struct, raw, 0)
        if len(fields) == 8:  # no offset field
            fields = fields[:1] + (0,) + fields[1:]
        index, offset, size, fmt, *rest = fields
        if fmt not in layout.formats:
            raise EmuError(f"EMU buffer format {fmt} is not supported")
        return cls(index, offset, size, layout.formats[fmt], *rest)

    def element_offsets(self, shape: tuple[int, int, int] | None = None) -> np.ndarray:
        """Byte offsets of (c, h, w) elements, as the runtime's address helper computes them.

        ``shape``: (channels, height, width) to address, by default this
        buffer's own (the power loop walks the source's shape in both).
        """
        if self.format not in GROUP_BYTES:
            raise EmuError(f"EMU buffer format {self.format} is not supported (int8 or fp16)")
        bpe = BYTES[self.format]
        group = GROUP_BYTES[self.format] // bpe
        channels, height, width = shape or (self.channels, self.height, self.width)
        return FeatureLayout(channels, height, width, group, bpe, self.line_stride,
                             self.surface_stride).element_offsets()


class EmuTask:
    """One EMU task over ``read(addr, n)``/``write(addr, data)`` of system memory."""

    def __init__(self, addresses: list[int | None], read, write, sizes=None):
        self.addresses, self.read, self.write = addresses, read, write
        self.sizes = sizes  # bytes from each address to the end of its memory

    def _layout(self, op_index: int, count: int) -> EmuLayout:
        size = self.sizes[op_index] if self.sizes else None
        if size is not None and size < count * SECOND.op_size and size >= count * FIRST.op_size:
            return FIRST
        return SECOND

    def _address(self, index: int) -> int:
        if not 0 <= index < len(self.addresses) or self.addresses[index] is None:
            raise EmuError(f"EMU task: address list index {index} has no system memory")
        return self.addresses[index]

    def run(self) -> int:
        """Run every operation; returns how many ran."""
        op_index, buf_index, count = struct.unpack("<hhH", self.read(self._address(0), 6))
        ops = self._address(op_index)
        bufs = self._address(buf_index)
        layout = self._layout(op_index, count)
        for n in range(count):
            op = self.read(ops + n * layout.op_size, layout.op_size)
            kind = op[0]
            in_scale, out_scale = (np.frombuffer(op, "<f4", 2, layout.scales_at)
                                   if layout.scales_at is not None else (1.0, 1.0))
            raw = self.read(bufs + n * BUFFER_CONTAINER, BUFFER_CONTAINER)
            src = Buffer.decode(raw[:BUFFER_DESC], layout)
            dst = Buffer.decode(raw[BUFFER_DESC:], layout)
            if src.format != dst.format:
                raise EmuError(f"EMU op {n}: source format {src.format} differs from the "
                               f"destination's {dst.format}")
            if kind == OP_POWER:
                power, scale, shift = np.frombuffer(op, "<f4", 3, layout.params_at)
                self._power(src, dst, in_scale, out_scale, power, scale, shift)
            elif kind == OP_SOFTMAX:
                self._softmax(src, dst, in_scale, out_scale)
            else:
                raise EmuError(f"EMU op {n}: unknown operation type {kind}")
        return count

    # -- data -----------------------------------------------------------------
    def _base(self, buf: Buffer) -> int:
        return self._address(buf.index) + buf.offset

    def _gather(self, buf: Buffer, offsets: np.ndarray) -> np.ndarray:
        bpe = BYTES[buf.format]
        span = int(offsets.max()) + bpe if offsets.size else 0
        data = np.frombuffer(self.read(self._base(buf), span), np.uint8)
        idx = offsets.reshape(-1)[:, None] + np.arange(bpe)
        return data[idx].reshape(-1).view("<u2" if bpe == 2 else np.int8)

    def _scatter(self, buf: Buffer, offsets: np.ndarray, values: np.ndarray) -> None:
        """Store ``values`` at ``offsets``: one write of the span, bytes between kept."""
        bpe = BYTES[buf.format]
        offsets = offsets.reshape(-1)
        raw = np.ascontiguousarray(values).view(np.uint8).reshape(-1, bpe)
        if len(raw) != len(offsets):
            raise EmuError(f"EMU op: {len(raw)} values for {len(offsets)} places")
        if not len(offsets):
            return
        low = int(offsets.min())
        base = self._base(buf) + low
        span = np.frombuffer(self.read(base, int(offsets.max()) - low + bpe), np.uint8).copy()
        span[(offsets - low)[:, None] + np.arange(bpe)] = raw
        self.write(base, span.tobytes())

    # -- operations -----------------------------------------------------------
    def _power(self, src, dst, in_scale, out_scale, power, scale, shift) -> None:
        """y = (shift + scale * x) ** power over the source's (c, h, w), in float32.

        The runtime's loop: for each source element in channel, line, pixel
        order, x is the fp16 value (or the int8 value times the input scale),
        y is ``powf`` of float32 ``shift + scale * x``, stored as a half
        (round to nearest, ties away) or as int8 (y over the output scale,
        clamped, truncated) at the same (c, h, w) of the destination, through
        the destination's own strides.  Element by element, in that order,
        when the destination's bytes meet the source's (but for in place).
        """
        shape = (src.channels, src.height, src.width)
        x_off, y_off = src.element_offsets(), dst.element_offsets(shape)

        def compute(x: np.ndarray) -> np.ndarray:
            if src.format == FORMAT_FF16:
                return half_from_float32(powf(np.float32(shift) + np.float32(scale)
                                              * float32_from_half(x), power))
            xf = x.astype(np.float32) * np.float32(in_scale)
            return saturate_int8(powf(np.float32(shift) + np.float32(scale) * xf, power)
                                 / np.float32(out_scale))

        if self._overlaps(src, x_off, dst, y_off):
            for xo, yo in zip(x_off.reshape(-1), y_off.reshape(-1), strict=True):
                one_x, one_y = np.array([xo]), np.array([yo])
                self._scatter(dst, one_y, compute(self._gather(src, one_x)))
            return
        self._scatter(dst, y_off, compute(self._gather(src, x_off)))

    def _overlaps(self, src, x_off, dst, y_off) -> bool:
        """Do the destination's bytes meet the source's, other than element for element?

        Then a store can change a source element the loop reads later, and the
        elements are computed one by one in the loop's order.
        """
        if not x_off.size:
            return False
        bpe = BYTES[src.format]
        xs = self._base(src) + x_off.reshape(-1)
        ys = self._base(dst) + y_off.reshape(-1)
        if ys.max() + bpe <= xs.min() or xs.max() + bpe <= ys.min():
            return False
        if np.array_equal(xs, ys):
            return False  # in place, element for element: each is read before it is written
        return True

    def _softmax(self, src, dst, in_scale, out_scale) -> None:
        """Softmax over the first ``channels`` elements of the source (the runtime's loop)."""
        n = src.channels
        bpe = BYTES.get(src.format)
        if bpe is None:
            raise EmuError(f"EMU softmax: format {src.format} is not supported (int8 or fp16)")
        offsets = np.arange(n, dtype=np.int64) * bpe
        x = self._gather(src, offsets)
        if src.format == FORMAT_FF16:
            halves = x
        else:
            halves = half_from_float32(x.astype(np.float32) * np.float32(in_scale))
        values = float32_from_half(halves)
        top = np.float32(values.max()) if n else np.float32(-np.inf)
        exps = expf(values - top)
        total = np.float32(0.0)
        for e in exps:  # float32 accumulation in order, as the runtime's loop adds
            total = np.float32(total + e)
        out = half_from_float32(exps / total)
        if src.format == FORMAT_FF16:  # the fp16 loop stores the source's count
            self._scatter(dst, offsets, out)
            return
        out = saturate_int8(float32_from_half(out) / np.float32(out_scale))
        count = min(dst.channels, n)  # the int8 loop stores the destination's count
        self._scatter(dst, offsets[:count], out[:count])
