"""The memory a device under test produced: one file or a folder of them.

Each file is read with :func:`sim.dram.read_memory_file` (NVDLA hex or
record ``.dat``, raw binary, plain hex words, ``$readmemh``).  A file that
states its address (a hex ``.dat`` header, ``@`` word addresses, our
``start_address=`` comment) lands there; one that does not is matched by
name to a checked region (the ``dump_mem`` file name, or ``crc_<address>``
as ``nvdla-sim run --dump-dir`` names CRC regions), or sits at ``base``, or
is the only checked region's content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import SimError
from ..memfiles import read_memory_file
from ..records import record


@record(frozen=False)
class Piece:
    path: Path
    addr: int
    data: bytes
    memory: str | None  # the memory of the region it was matched to by name


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise SimError(f"{path}: no memory files in this folder")
        return files
    if not path.is_file():
        raise SimError(f"{path}: no such file or folder")
    return [path]


def load_actual(path: str | Path, regions, base: int | None = None) -> list[Piece]:
    """The pieces of memory in ``path``, placed against the trace's ``regions``."""
    path = Path(path)
    by_stem = {Path(r.name).stem: r for r in regions}
    pieces = []
    for file in _files(path):
        addr, data = read_memory_file(file)
        region = by_stem.get(file.stem)
        if addr is None:
            if region is not None:
                addr = region.addr
            elif base is not None:
                addr = base
            elif len(regions) == 1:
                addr, region = regions[0].addr, regions[0]
            elif path.is_dir():
                continue  # an unrelated file in the folder
            else:
                names = ", ".join(sorted(by_stem))
                raise SimError(f"{file}: the file does not say its address and the trace checks "
                               f"{len(regions)} regions; name it after one ({names}) or pass "
                               "--base ADDRESS")
        pieces.append(Piece(file, addr, data, region.memory if region is not None else None))
    if not pieces:
        raise SimError(f"{path}: no file matches a checked region")
    return pieces


def region_bytes(region, pieces: list[Piece]) -> tuple[np.ndarray, np.ndarray]:
    """(actual bytes, known mask) of ``region``: later pieces win where they overlap."""
    data = np.zeros(region.size, dtype=np.uint8)
    known = np.zeros(region.size, dtype=bool)
    for piece in pieces:
        if piece.memory is not None and piece.memory != region.memory:
            continue
        lo = max(region.addr, piece.addr)
        hi = min(region.end, piece.addr + len(piece.data))
        if lo >= hi:
            continue
        src = np.frombuffer(piece.data, dtype=np.uint8)[lo - piece.addr : hi - piece.addr]
        data[lo - region.addr : hi - region.addr] = src
        known[lo - region.addr : hi - region.addr] = True
    return data, known
