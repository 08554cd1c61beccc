"""Run loadables compiled for an older firmware interface on a newer firmware.

NVIDIA's firmware interface 0.12 added a 32-bit ``offset`` to every data
cube of the surface descriptors (after the address-list index; the hardware
address becomes the address-list entry plus that offset).  Loadables compiled
for an earlier interface (NVIDIA's published regression loadables declare
0.10 or 0.11) lay cubes out without it.  When such a loadable meets a 0.12+
firmware, each task's surface descriptors are rewritten to the new layout
with offset 0, which addresses exactly what the old firmware addressed.

Layout facts (firmware's ``dla_interface.h``): the network descriptor holds
the surface list's and the dependency graph's address-list indexes (int16 at
bytes 2 and 4) and the operation count (uint16 at byte 30); each dependency
graph entry is 36 bytes with the operation type at byte 3; each surface
container is 644 bytes; a convolution and an SDP surface start with five
data cubes, a PDP, CDP and Rubik surface with two, a BDMA surface with none.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

EMU_INTERFACE = 2  # the loadable's interface code of CPU (EMU) blobs
OFFSET_INTERFACE = (0, 12)  # first firmware interface with data_cube.offset
SURFACE_CONTAINER, DEP_ENTRY = 644, 36
OLD_CUBE, NEW_CUBE = 28, 32
CUBES_BY_OP = {0: 0, 1: 5, 2: 5, 3: 2, 4: 2, 5: 2}  # BDMA, CONV, SDP, PDP, CDP, RUBIK


def firmware_interface(kmd_dir: str | Path) -> tuple[int, int]:
    """(major, minor) of the KMD firmware's interface; before versioning: (0, 10)."""
    path = Path(kmd_dir) / "firmware" / "include" / "dla_fw_version.h"
    if not path.is_file():
        return (0, 10)
    text = path.read_text(errors="replace")
    major = re.search(r"FIRMWARE_VERSION_MAJOR\s+(0x[0-9a-fA-F]+|\d+)", text)
    minor = re.search(r"FIRMWARE_VERSION_MINOR\s+(0x[0-9a-fA-F]+|\d+)", text)
    if not major or not minor:
        return (0, 10)
    return int(major.group(1), 0), int(minor.group(1), 0)


def descriptor_interface(loadable) -> tuple[int, int] | None:
    """The firmware interface the loadable's DLA descriptors were written for.

    Descriptor blobs (network, operation, surface, dependency and LUT lists)
    carry the interface version they were compiled for; data blobs (weights,
    tensors: the compiler's ``tb-*``) carry none (0.0.0), and EMU blobs carry
    the EMU interface's own version.  Older loadables tag descriptors with
    interface 0 instead of DLA, so the version, not the tag, tells them apart.
    """
    versions = [tuple(b.version[:2]) for b in loadable.blobs.values()
                if b.interface != EMU_INTERFACE and b.version and any(b.version)]
    return min(versions) if versions else None


def needs_upgrade(loadable, kmd_dir) -> bool:
    oldest = descriptor_interface(loadable)
    return (oldest is not None and oldest < OFFSET_INTERFACE
            <= firmware_interface(kmd_dir))


def upgrade_surface(container: bytes, op_type: int) -> bytes:
    """One 644-byte surface container from the old cube layout to the new one."""
    cubes = CUBES_BY_OP.get(op_type, 0)
    if not cubes:
        return container
    new = bytearray()
    for i in range(cubes):
        old = container[i * OLD_CUBE : (i + 1) * OLD_CUBE]
        new += old[:4] + b"\0\0\0\0" + old[4:]
    new += container[cubes * OLD_CUBE :]
    return bytes(new[:SURFACE_CONTAINER])


def operation_types(read, address_of) -> list[int]:
    """The operation type of each operation of a DLA task (from its dependency graph)."""
    network = read(address_of(0), 32)
    (dep_index,) = struct.unpack_from("<h", network, 4)
    (count,) = struct.unpack_from("<H", network, 30)
    deps = read(address_of(dep_index), count * DEP_ENTRY) if count else b""
    return [deps[op * DEP_ENTRY + 3] for op in range(count)]


def upgrade_task(read, write, address_of) -> None:
    """Rewrite the surface list of one DLA task (``address_of(index)``: its base address)."""
    (surface_index,) = struct.unpack_from("<h", read(address_of(0), 4), 2)
    base = address_of(surface_index)
    for op, op_type in enumerate(operation_types(read, address_of)):
        at = base + op * SURFACE_CONTAINER
        write(at, upgrade_surface(read(at, SURFACE_CONTAINER), op_type))
