"""Shared fixtures: the ../shared folder of reference traces and vectors, NVIDIA's firmware."""

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run and every machine (fixed seeds: a
# failure in CI is a failure here), and keep no example database between runs.
settings.register_profile("fixed", derandomize=True, database=None)
settings.load_profile("fixed")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
KMD_DEFAULT = Path.home() / "nvdla-sw" / "kmd"  # where a session unpacks nvdla/sw's kmd/


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: reference traces and golden vectors not available")
    return SHARED


def _is_kmd(folder: Path) -> bool:
    return all((folder / sub).is_dir() for sub in ("firmware", "firmware/include", "include")) \
        and any((folder / "firmware").glob("*.c"))


@pytest.fixture(scope="session")
def nvidia_kmd() -> Path:
    """NVIDIA's KMD firmware sources: $NVDLA_KMD, else ~/nvdla-sw/kmd; skip when neither is one."""
    named = os.environ.get("NVDLA_KMD")
    candidates = [Path(named)] if named else [KMD_DEFAULT]
    for folder in candidates:
        if _is_kmd(folder):
            if not (shutil.which("cc") or shutil.which("gcc")):
                pytest.skip("no C compiler: NVIDIA's firmware cannot be built")
            return folder
    where = f"NVDLA_KMD={named}" if named else f"NVDLA_KMD unset and {KMD_DEFAULT}"
    pytest.skip(f"NVIDIA's KMD firmware is not available ({where} is not a KMD folder: "
                f"firmware/*.c, firmware/include/, include/ expected); take kmd/ out of nvdla/sw "
                f"into {KMD_DEFAULT} or point NVDLA_KMD at it")


@pytest.fixture()
def count_calls(monkeypatch):
    """``count_calls(function, *(module, name))``: each place patched, for the test, with
    ``function`` that also keeps each call's argument; returns the list they go to."""
    def patch(function, *places):
        calls = []

        def counting(arg):
            calls.append(arg)
            return function(arg)

        for module, name in places:
            monkeypatch.setattr(module, name, counting)
        return calls

    return patch
