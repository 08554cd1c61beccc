"""Files written whole or not at all: one file (``write_atomically``) or a folder
of them (``write_folder_atomically``), with the modes a plain ``open`` or ``mkdir``
gives."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import SimError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file, as ``Path(path).read_bytes()`` reads them (a name as text is
    opened as it is: pathlib's parse costs more than reading a small file); SimError
    naming it if unreadable."""
    try:  # unbuffered: the raw file's readall, without the buffer (and the terminal
        # check) a buffered reader costs: a small file's read is a few system calls
        with open(path, "rb", buffering=0) as file:
            return file.readall()
    except OSError as exc:
        raise SimError(f"{Path(path)}: cannot read ({exc.strerror})") from None


def write_atomically(path: str | Path, content: bytes | str | list | Iterator) -> None:
    """Write a file so that it is never left half-written, with the modes a plain
    ``open`` gives (0666 less the umask; the temporary file it starts as is 0600).

    ``content`` may be a list or an iterator of buffers (bytes, contiguous uint8 arrays)
    written one after another: a large rendered file need never be joined in memory, nor
    (from an iterator) ever be whole in memory.
    """
    publish(write_hidden(path, content), path)


#: A file at least this large whose size is known is given its blocks before it is written
RESERVED_SIZE = 1 << 20


def write_hidden(path: str | Path, content: bytes | str | list | Iterator,
                 size: int | None = None) -> Path:
    """Write ``content`` (as :func:`write_atomically` takes it) to a new hidden file
    beside ``path`` and return its name: :func:`publish` puts it in place, so a file can
    be written early (while other work goes on) and appear only when all is done.  On
    failure nothing is left behind.

    ``size``: the bytes ``content`` holds, if known: a large file's blocks are reserved
    at once (:func:`_reserve`), which made writing AlexNet's 760 MB trace file a third
    cheaper (0.11 -> 0.07 s of CPU on ext4) than the file growing a page at a time.  A
    wrong ``size`` costs only that: the file is cut to what was written."""
    path = Path(path)
    data = content.encode() if isinstance(content, str) else content
    parts = data if isinstance(data, (list, Iterator)) else [data]
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    except OSError as exc:
        raise SimError(f"{path}: cannot write ({exc.strerror})") from None
    with _removed_on_failure(Path(tmp), path), os.fdopen(fd, "wb") as handle:
        reserving = size is not None and size >= RESERVED_SIZE
        if reserving:
            _reserve(fd, size)
        for part in parts:
            handle.write(part)
        if reserving and handle.tell() != size:
            handle.truncate()  # to what was written: the reservation set the size told
    return Path(tmp)


def _reserve(fd: int, size: int) -> bool:
    """Give the empty file ``fd`` its ``size`` bytes of blocks (and that size) by Linux's
    ``fallocate``: whether it did.  A refusal (a file system without it, a full disk, a
    system without the call) leaves the file to be written as usual, which reports its
    own errors.  Not ``os.posix_fallocate``: where the file system cannot, glibc's
    emulates it by writing into every block (NFS, ZFS before 2.2): slower than no
    reservation."""
    fallocate = _fallocate()
    return fallocate is not None and fallocate(fd, 0, 0, size) == 0


@functools.cache
def _fallocate():
    """libc's ``fallocate64(fd, mode, offset, length)`` (64-bit offsets on every
    system), None where there is none."""
    try:
        import ctypes  # loaded here only: a large file's write costs it, no other

        function = ctypes.CDLL(None, use_errno=True).fallocate64
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    function.restype = ctypes.c_int
    return function


def publish(hidden: Path, path: str | Path) -> None:
    """Put the file :func:`write_hidden` wrote in place as ``path``, with the modes a
    plain ``open`` gives; on failure it is removed, and ``path`` is untouched."""
    with _removed_on_failure(Path(hidden), path):
        os.chmod(hidden, 0o666 & ~_umask())
        os.replace(hidden, path)


@contextmanager
def _removed_on_failure(hidden: Path, path: str | Path):
    """A block on the hidden file behind ``path``: if it fails, the hidden file goes, and an
    OSError becomes the one-line error naming ``path``."""
    try:
        yield
    except OSError as exc:
        hidden.unlink(missing_ok=True)
        raise SimError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        hidden.unlink(missing_ok=True)
        raise


def write_folder_atomically(folder: str | Path, files: dict[str, bytes | str]) -> Path:
    """Write a folder of files (a generated trace, a loadable's outputs) whole or not at all.

    The files go to a hidden sibling folder first, which then replaces
    ``folder`` by two renames (an existing folder is moved aside and removed
    only once the new one is in place), so a reader never sees a half-written
    trace and an interrupted run leaves the previous folder or a ``.old``
    copy of it, never a mix.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if Path(name).name != name or name in ("", ".", ".."):
            raise SimError(f"{folder}: {name!r} is not a plain file name")
        if not isinstance(content, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"{folder}: the content of {name} is {type(content).__name__}, "
                            "not str or bytes")
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    os.chmod(tmp, 0o777 & ~_umask())  # a folder as mkdir makes it, not mkdtemp's 0700
    old = None
    try:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            (tmp / name).write_bytes(data)
        if folder.exists():
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.old."))
            os.replace(folder, old / folder.name)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not folder.exists():
            os.replace(old / folder.name, folder)  # put the previous folder back
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return folder
