"""Keep the memory a network's layers free for the next ones (glibc's allocator).

A network's layers allocate the same large arrays over and over (weights made
float32, im2col pieces, output cubes: 1-10 MiB each).  glibc gives a block of
128 KiB or more its own ``mmap`` (the threshold rises only to the largest block
freed so far) and hands a heap's free top back to the system beyond twice
that: so most of these blocks came as fresh pages, which the kernel faults in
and zeroes one by one (numpy asks for huge pages past 4 MiB: 2 MiB zeroed a
fault).  That zeroing was an eighth of an int8 ResNet-18's CPU time.  With a
fixed threshold at glibc's largest and no trimming, a freed block is reused as
it is.  A process that ends after one network keeps nothing it would give back.
"""

from __future__ import annotations

import sys

#: mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit systems (HEAP_MAX_SIZE / 2): blocks up to it
#: come from the heaps
MMAP_THRESHOLD = 32 << 20
#: free heap top kept rather than handed back: the most mallopt's int takes (2 GiB)
TRIM_THRESHOLD = (1 << 31) - 1


def keep_freed_memory() -> bool:
    """Have glibc reuse freed blocks of up to 32 MiB rather than return them to the
    system, for the rest of the process; False where that is not glibc's to decide."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # loaded by numpy already

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
