"""The firmware bridge: build errors and a task that can never complete (never a hang)."""

import shutil

import pytest

from sim.firmware import Firmware, FirmwareError
from sim.firmware.build import FirmwareBuildError, build_firmware
from sim.machine import Machine


@pytest.fixture(scope="module")
def kmd(shared_dir):
    folder = shared_dir / "nvdla-sw" / "kmd"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: NVIDIA's firmware sources are not available")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: NVIDIA's firmware cannot be built")
    return folder


def test_build_is_cached_per_register_map(kmd):
    first = build_firmware(kmd, "nvdlav1")
    assert build_firmware(kmd, "nvdlav1") == first  # the same digest: no rebuild
    assert build_firmware(kmd, "master") != first  # DLA_2_CONFIG: another library


def test_not_a_kmd_folder(tmp_path):
    with pytest.raises(FirmwareBuildError, match="not a KMD folder"):
        build_firmware(tmp_path, "nvdlav1")


def test_a_task_that_never_interrupts_stops_with_an_error(kmd):
    m = Machine("nv_full")
    m.load(0x80000000, bytes(4096))  # an all-zero network descriptor: no operation to run
    fw = Firmware(m, kmd)
    with pytest.raises(FirmwareError, match="stalled"):
        fw.run_task([0x80000000] * 6)
