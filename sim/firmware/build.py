"""Build a KMD firmware source folder into the program that runs it, once per digest.

The folder has NVIDIA's ``kmd/`` layout: ``firmware/*.c``,
``firmware/include/``, ``include/``.  It is compiled with the system C
compiler, with our prelude (the kernel's types and attributes), our port
layer (:file:`port.c`) and the host that relays it to the simulator
(:file:`host.c`), into the executable ``<cache>/<digest>/firmware``; the
digest covers the folder's path, every source, our port and the compiler
flags, so an edited (or moved) firmware is rebuilt and an unchanged one is
taken from the cache.  A program of its own starts in a millisecond, where a
Python process loading a library took tens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

from ..errors import FirmwareBuildError, SimError
from ..files import write_atomically

HERE = Path(__file__).parent
PORT_FILES = ("port.c", "port.h", "host.c", "prelude.h", "stub/linux/types.h")
# register map of the configuration -> preprocessor symbols the firmware needs
MAP_DEFINES = {"nvdlav1": (), "master": ("DLA_2_CONFIG",)}
CFLAGS = ("-O1", "-w", "-std=gnu99")


def cache_root() -> Path:
    base = os.environ.get("NVDLA_SIM_CACHE") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) / "nvdla-sim" if base else Path.home() / ".cache" / "nvdla-sim"
    return root / "firmware"


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc or not shutil.which(cc):
        raise FirmwareBuildError("no C compiler found (install gcc, or set CC) to build the "
                                 "KMD firmware")
    return cc


def firmware_sources(kmd_dir: str | Path) -> list[Path]:
    kmd = Path(kmd_dir)
    sources = sorted((kmd / "firmware").glob("*.c"))
    for need in (kmd / "firmware", kmd / "firmware" / "include", kmd / "include"):
        if not need.is_dir():
            raise FirmwareBuildError(f"{kmd}: not a KMD folder (no {need.relative_to(kmd)}/; "
                                     f"expected firmware/*.c, firmware/include/, include/)")
    if not sources:
        raise FirmwareBuildError(f"{kmd}: no firmware/*.c sources")
    return sources


def _digest(kmd: Path, defines: tuple[str, ...]) -> str:
    """Digest of what goes into the program: flags, folder, every source, our port.

    Hashing the sources takes longer than a small network's whole run, so the
    digest is remembered for as long as no file is added, removed or changed
    (its size, modification and change times, inode: an edit changes them): in
    this process, and in the cache for the next (:func:`_remembered`).
    """
    stamps = []
    folders = [str(kmd / "firmware"), str(kmd / "include")]
    for folder in folders:
        for entry in os.scandir(folder):
            if entry.is_dir():
                folders.append(entry.path)
            elif entry.name.endswith((".c", ".h")) and entry.is_file():
                st = entry.stat()
                stamps.append((entry.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                               st.st_ino))
    for name in PORT_FILES:
        st = os.stat(HERE / name)
        stamps.append((name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    key = (str(kmd), defines, tuple(sorted(stamps)))
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _remembered(key)
        if digest is None:
            digest = _hash_sources(kmd, defines)
            _remember(key, digest)
        _DIGESTS[key] = digest
    return digest


_DIGESTS: dict[tuple, str] = {}  # (folder, defines, file stamps) -> digest


def _memo_path(key: tuple) -> tuple[Path, str]:
    """Where the digest of ``key`` is remembered across processes, and the key's text
    (the file holds it whole, so a file of another key that shares the name is ignored)."""
    text = repr(key)
    return cache_root() / "digests" / f"{zlib.crc32(text.encode()):08x}", text


def _remembered(key: tuple) -> str | None:
    """The digest an earlier process computed for exactly ``key``: each process would
    otherwise read and hash every KMD source at its start (5-20 ms)."""
    path, text = _memo_path(key)
    try:
        stored_key, digest = path.read_text().rsplit("\n", 1)
    except (OSError, ValueError):
        return None
    return digest if stored_key == text and digest else None


def _remember(key: tuple, digest: str) -> None:
    path, text = _memo_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, f"{text}\n{digest}")  # whole or not at all
    except (OSError, SimError):
        pass  # an unwritable cache: the next process hashes again


def _hash_sources(kmd: Path, defines: tuple[str, ...]) -> str:
    import hashlib  # loads OpenSSL (milliseconds): only when the sources are hashed

    h = hashlib.sha256()
    # the folder too: the program's messages (assertions) name its source files by path,
    # so a copy elsewhere gets its own build and cites the folder the user gave
    h.update(repr((CFLAGS, defines, str(kmd))).encode())
    files = sorted(p for d in ("firmware", "include") for p in (kmd / d).rglob("*")
                   if p.is_file() and p.suffix in (".c", ".h"))
    for path in files:
        h.update(str(path.relative_to(kmd)).encode() + b"\0" + path.read_bytes())
    for name in PORT_FILES:
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return h.hexdigest()[:20]


def build_firmware(kmd_dir: str | Path, address_map: str) -> Path:
    """Path of the firmware program for ``kmd_dir`` and a register map, building it if
    needed (``firmware FD_IN FD_OUT`` serves the simulator over two pipes: :file:`host.c`)."""
    kmd = Path(kmd_dir).resolve()
    sources = firmware_sources(kmd)
    defines = MAP_DEFINES[address_map]
    target = cache_root() / _digest(kmd, defines) / "firmware"
    if target.is_file():
        return target
    cc = compiler()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=target.parent)
    os.close(fd)
    cmd = [cc, *CFLAGS, "-include", str(HERE / "prelude.h"), f"-I{HERE / 'stub'}",
           f"-I{kmd / 'firmware' / 'include'}", f"-I{kmd / 'firmware'}", f"-I{kmd / 'include'}",
           *(f"-D{d}" for d in defines), *map(str, sources), str(HERE / "port.c"),
           str(HERE / "host.c"), "-o", tmp]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FirmwareBuildError(f"{kmd}: the C compiler failed to run ({exc})") from None
    if result.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        lines = [ln for ln in result.stderr.splitlines() if "error" in ln.lower()]
        first = (lines or result.stderr.splitlines() or ["(no message)"])[0]
        raise FirmwareBuildError(f"{kmd}: firmware does not compile: {first.strip()}")
    os.chmod(tmp, 0o755)  # mkstemp made it private and not executable
    os.replace(tmp, target)  # whole or not at all; parallel builders race harmlessly
    return target
