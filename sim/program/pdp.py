"""Program a PDP layer: pooling from memory (PDP_RDMA) or on the fly behind the SDP."""

from __future__ import annotations

from ..errors import ConfigurationError
from ..records import record
from ..regs.enums import Precision
from .registers import set_reg

PDP, PDP_RDMA = "NVDLA_PDP", "NVDLA_PDP_RDMA"
METHODS = {"average": 0, "max": 1, "min": 2}  # POOLING_METHOD


@record
class Pooling:
    method: str  # average | max | min
    kernel: tuple[int, int]  # (height, width)
    stride: tuple[int, int]  # (height, width)
    pad: tuple[int, int, int, int]  # (left, right, top, bottom)
    pad_value: int  # the value of one padded element (int8/int16)

    def out_size(self, height: int, width: int) -> tuple[int, int]:
        """(H', W') of the pooled cube."""
        left, right, top, bottom = self.pad
        return ((height + top + bottom - self.kernel[0]) // self.stride[0] + 1,
                (width + left + right - self.kernel[1]) // self.stride[1] + 1)

    def fit(self, height: int, width: int) -> tuple[int, int, int, int]:
        """(height, width, bottom, right): the input the PDP is programmed to pool and
        the bottom/right padding, such that the windows end on the last padded line and
        column (otherwise NVDLA's RTL may hang or write other data: see
        ``sim.pdp.pooling.check_tiling``).  Padding no window reaches is dropped, and so
        are input lines and columns after the last window: the pooled cube is the same."""
        out_h, out_w = self.out_size(height, width)
        _, _, top, _ = self.pad
        span_h = (out_h - 1) * self.stride[0] + self.kernel[0] - top
        span_w = (out_w - 1) * self.stride[1] + self.kernel[1] - self.pad[0]
        return (min(height, span_h), min(width, span_w), max(span_h - height, 0),
                max(span_w - width, 0))


@record
class WidthSplit:
    """A layer pooled in column splits (SPLIT_NUM + 1 of them), as NVIDIA's software splits
    a layer wider than the PDP's line buffer: each split's output columns (``outs``:
    first, the middle ones all alike, last) and the input columns each reads.

    A split's windows tile its own input exactly, so the splits pool what one pass
    over the (:meth:`Pooling.fit`) cube would: the first reads its windows' columns
    after the left padding, a middle one ``out * stride`` new columns, the last the
    rest; every split after the first re-reads the kernel-stride overlap before them
    (the registers count the new columns only).
    """

    outs: tuple[int, ...]
    ins: tuple[int, ...]  # new input columns of each split

    @classmethod
    def plan(cls, pool: Pooling, width: int, outs) -> WidthSplit:
        """The splits of output widths ``outs`` over a cube ``width`` columns wide."""
        _, fit_w, _, _ = pool.fit(1, width)
        kw, sw, left = pool.kernel[1], pool.stride[1], pool.pad[0]
        ins = [(outs[0] - 1) * sw + kw - left] + [o * sw for o in outs[1:-1]]
        return cls(tuple(outs), (*ins, fit_w - sum(ins)))

    def fields(self, kind: str) -> dict:
        """PARTIAL_WIDTH_<kind>_{FIRST,MID,LAST} (kind "in" or "out") less one; the middle
        width 0 with two splits (there is none)."""
        widths = self.ins if kind == "in" else self.outs
        mid = widths[1] if len(widths) > 2 else 1
        return {f"partial_width_{kind}_first": widths[0] - 1,
                f"partial_width_{kind}_mid": mid - 1,
                f"partial_width_{kind}_last": widths[-1] - 1}


def recip(kernel: int, precision: str) -> int:
    """RECIP_KERNEL_* for a kernel size: 1/k with 16 fraction bits, or an fp17 for fp16."""
    if precision != "fp16":
        return 0x10000 // kernel
    from ..num.host import float32_bits
    from ..num.ops import fp32_to_fp17

    return int(fp32_to_fp17(float32_bits(1.0 / kernel)))


def program_pdp(m, shape, precision: str, pool: Pooling, dst: tuple, *, src: tuple | None = None,
                nan_to_zero: bool = False, split: WidthSplit | None = None) -> None:
    """PDP registers of a layer in one split, or in the column splits ``split``.

    ``shape`` is the input (C, H, W); ``dst`` and ``src`` are (address,
    FeatureLayout); no ``src`` means the input comes on the fly from the SDP.
    The PDP is programmed with :meth:`Pooling.fit`'s input and bottom/right padding.
    """
    c, full_h, full_w = shape
    oh, ow = pool.out_size(full_h, full_w)
    h, w, bottom, right = pool.fit(full_h, full_w)
    if src is None and (h, w) != (full_h, full_w):
        register, n, what = (("D_DATA_CUBE_IN_HEIGHT_0", full_h - h, "line") if h < full_h
                             else ("D_DATA_CUBE_IN_WIDTH_0", full_w - w, "column"))
        left_out = what if n == 1 else f"{n} {what}s"
        raise ConfigurationError(
            f"{PDP}.{register}: a {pool.kernel[0]}x{pool.kernel[1]} pooling kernel at stride "
            f"{pool.stride[0]}x{pool.stride[1]} with padding {list(pool.pad)} leaves the last "
            f"{left_out} of the {full_h}x{full_w} input in no window, but on the fly the PDP "
            "pools the whole cube the SDP sends")
    (kh, kw), (sh, sw) = pool.kernel, pool.stride
    left, _, top, _ = pool.pad
    set_reg(m, PDP, "D_DATA_CUBE_IN_WIDTH_0", cube_in_width=w - 1)
    set_reg(m, PDP, "D_DATA_CUBE_IN_HEIGHT_0", cube_in_height=h - 1)
    set_reg(m, PDP, "D_DATA_CUBE_IN_CHANNEL_0", cube_in_channel=c - 1)
    set_reg(m, PDP, "D_DATA_CUBE_OUT_WIDTH_0", cube_out_width=ow - 1)
    set_reg(m, PDP, "D_DATA_CUBE_OUT_HEIGHT_0", cube_out_height=oh - 1)
    set_reg(m, PDP, "D_DATA_CUBE_OUT_CHANNEL_0", cube_out_channel=c - 1)
    set_reg(m, PDP, "D_OPERATION_MODE_CFG_0", pooling_method=METHODS[pool.method],
            flying_mode=int(src is not None), split_num=_splits(split) - 1)
    set_reg(m, PDP, "D_NAN_FLUSH_TO_ZERO_0", nan_to_zero=int(nan_to_zero))
    if _splits(split) == 1:
        set_reg(m, PDP, "D_PARTIAL_WIDTH_IN_0", partial_width_in_first=w - 1)
        set_reg(m, PDP, "D_PARTIAL_WIDTH_OUT_0", partial_width_out_first=ow - 1)
    else:
        set_reg(m, PDP, "D_PARTIAL_WIDTH_IN_0", **split.fields("in"))
        set_reg(m, PDP, "D_PARTIAL_WIDTH_OUT_0", **split.fields("out"))
    set_reg(m, PDP, "D_POOLING_KERNEL_CFG_0", kernel_width=kw - 1, kernel_height=kh - 1,
            kernel_stride_width=sw - 1, kernel_stride_height=sh - 1)
    set_reg(m, PDP, "D_RECIP_KERNEL_WIDTH_0", recip_kernel_width=recip(kw, precision))
    set_reg(m, PDP, "D_RECIP_KERNEL_HEIGHT_0", recip_kernel_height=recip(kh, precision))
    set_reg(m, PDP, "D_POOLING_PADDING_CFG_0", pad_left=left, pad_top=top, pad_right=right,
            pad_bottom=bottom)
    for n in range(1, 8):  # the sum of n padded elements, as firmware programs it
        set_reg(m, PDP, f"D_POOLING_PADDING_VALUE_{n}_CFG_0",
                **{f"pad_value_{n}x": (n * pool.pad_value) & 0x7FFFF})
    if src is not None:
        addr, lay = src
        set_reg(m, PDP, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=addr)
        set_reg(m, PDP, "D_SRC_LINE_STRIDE_0", src_line_stride=lay.line_stride)
        set_reg(m, PDP, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=lay.surface_stride)
    addr, lay = dst
    set_reg(m, PDP, "D_DST_BASE_ADDR_LOW_0", dst_base_addr_low=addr)
    set_reg(m, PDP, "D_DST_LINE_STRIDE_0", dst_line_stride=lay.line_stride)
    set_reg(m, PDP, "D_DST_SURFACE_STRIDE_0", dst_surface_stride=lay.surface_stride)
    set_reg(m, PDP, "D_DST_RAM_CFG_0", dst_ram_type=1)
    set_reg(m, PDP, "D_DATA_FORMAT_0", input_data=Precision(precision).code)


def _splits(split: WidthSplit | None) -> int:
    return 1 if split is None else len(split.outs)


def program_pdp_rdma(m, shape, precision: str, pool: Pooling, src: tuple,
                     split: WidthSplit | None = None) -> None:
    """PDP_RDMA reading the input cube (C, H, W) at ``src`` = (address, FeatureLayout)."""
    c, h, w = shape
    h, w, _, _ = pool.fit(h, w)
    addr, lay = src
    set_reg(m, PDP_RDMA, "D_DATA_CUBE_IN_WIDTH_0", cube_in_width=w - 1)
    set_reg(m, PDP_RDMA, "D_DATA_CUBE_IN_HEIGHT_0", cube_in_height=h - 1)
    set_reg(m, PDP_RDMA, "D_DATA_CUBE_IN_CHANNEL_0", cube_in_channel=c - 1)
    set_reg(m, PDP_RDMA, "D_FLYING_MODE_0", flying_mode=1)
    set_reg(m, PDP_RDMA, "D_SRC_BASE_ADDR_LOW_0", src_base_addr_low=addr)
    set_reg(m, PDP_RDMA, "D_SRC_LINE_STRIDE_0", src_line_stride=lay.line_stride)
    set_reg(m, PDP_RDMA, "D_SRC_SURFACE_STRIDE_0", src_surface_stride=lay.surface_stride)
    set_reg(m, PDP_RDMA, "D_SRC_RAM_CFG_0", src_ram_type=1)
    set_reg(m, PDP_RDMA, "D_DATA_FORMAT_0", input_data=Precision(precision).code)
    set_reg(m, PDP_RDMA, "D_OPERATION_MODE_CFG_0", split_num=_splits(split) - 1)
    set_reg(m, PDP_RDMA, "D_POOLING_KERNEL_CFG_0", kernel_width=pool.kernel[1] - 1,
            kernel_stride_width=pool.stride[1] - 1)
    set_reg(m, PDP_RDMA, "D_POOLING_PADDING_CFG_0", pad_width=pool.pad[0])
    if _splits(split) == 1:
        set_reg(m, PDP_RDMA, "D_PARTIAL_WIDTH_IN_0", partial_width_in_first=w - 1)
    else:
        set_reg(m, PDP_RDMA, "D_PARTIAL_WIDTH_IN_0", **split.fields("in"))
