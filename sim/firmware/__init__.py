"""NVIDIA's KMD firmware on the simulator: build it (:mod:`.build`), drive it (:mod:`.driver`).

``Firmware(machine, kmd_dir, recorder=None).run_task(addresses)`` runs one
DLA task; the runtime (:mod:`sim.runtime`) builds the address list from a
loadable.
"""

from .build import FirmwareBuildError, build_firmware
from .driver import Firmware, FirmwareCrashed, FirmwareError, FirmwareTaskFailed, TaskStats

__all__ = ["Firmware", "FirmwareBuildError", "FirmwareCrashed", "FirmwareError",
           "FirmwareTaskFailed", "TaskStats", "build_firmware"]
