"""Program a BDMA copy: queue it (CFG_OP) and launch its group (CFG_LAUNCH0/1)."""

from __future__ import annotations

from .registers import set_reg

BDMA = "NVDLA_BDMA"
RAM = {"sec_mem": 0, "pri_mem": 1}  # CVSRAM 0, MC 1


def program_bdma_copy(m, src: int, dst: int, *, line_bytes: int, lines: int = 1,
                      surfaces: int = 1, src_mem: str = "pri_mem", dst_mem: str = "pri_mem",
                      src_line: int | None = None, dst_line: int | None = None,
                      src_surface: int | None = None, dst_surface: int | None = None) -> None:
    """Queue one copy of ``surfaces`` x ``lines`` lines of ``line_bytes`` (a multiple of 32).

    Strides default to packed lines and surfaces.  Address and stride fields
    hold bits 31:5, so whole words are written.
    """
    src_line = line_bytes if src_line is None else src_line
    dst_line = line_bytes if dst_line is None else dst_line
    src_surface = src_line * lines if src_surface is None else src_surface
    dst_surface = dst_line * lines if dst_surface is None else dst_surface
    for side, addr in (("SRC", src), ("DST", dst)):
        m.write_reg(f"{BDMA}.CFG_{side}_ADDR_LOW_0", addr & 0xFFFFFFFF)
        m.write_reg(f"{BDMA}.CFG_{side}_ADDR_HIGH_0", addr >> 32)
    set_reg(m, BDMA, "CFG_LINE_0", size=line_bytes // 32 - 1)
    set_reg(m, BDMA, "CFG_CMD_0", src_ram_type=RAM[src_mem], dst_ram_type=RAM[dst_mem])
    set_reg(m, BDMA, "CFG_LINE_REPEAT_0", number=lines - 1)
    m.write_reg(f"{BDMA}.CFG_SRC_LINE_0", src_line)
    m.write_reg(f"{BDMA}.CFG_DST_LINE_0", dst_line)
    set_reg(m, BDMA, "CFG_SURF_REPEAT_0", number=surfaces - 1)
    m.write_reg(f"{BDMA}.CFG_SRC_SURF_0", src_surface)
    m.write_reg(f"{BDMA}.CFG_DST_SURF_0", dst_surface)
    set_reg(m, BDMA, "CFG_OP_0", en=1)


def launch_bdma(m, group: int = 0) -> None:
    """Run every copy queued since the last launch; BDMA_DONE_STATUS<group> follows."""
    set_reg(m, BDMA, f"CFG_LAUNCH{group}_0", **{f"grp{group}_launch": 1})
