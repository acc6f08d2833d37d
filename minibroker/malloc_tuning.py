"""Keep freed request buffers in the heap, so the next request reuses them (glibc only).

A produce request is read into one buffer of its own size (up to a megabyte with librdkafka's
defaults). glibc serves a block that large with mmap, or from the top of the heap, and hands it
back to the kernel when it is freed (munmap, or a trim of the heap top); the next request's buffer
then takes a page fault for every 4 KiB page the kernel must zero again. Measured with `perf
record` on a 10 KiB-record produce: anonymous page faults (`exc_page_fault`, `clear_page_erms`)
were the broker's largest cost, about 110,000 faults per 200 MB. With mmap reserved for blocks
above 32 MiB and the heap trimmed only when 64 MiB at its top are free, buffers are recycled and
the broker keeps at most that much freed memory. This is process-wide, so only the command-line
broker calls it; an in-process test fixture leaves its host's allocator alone.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger("minibroker.malloc")

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
TRIM_THRESHOLD = 64 << 20


def is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (ValueError, OSError, AttributeError):
        return False


def tune_malloc() -> bool:
    """Set glibc's mmap and trim thresholds; False where the C library is not glibc."""
    if not is_glibc():
        return False
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols, libc's included (find_library would run ldconfig)
        ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(_M_TRIM_THRESHOLD,
                                                                                   TRIM_THRESHOLD) == 1
    except (OSError, AttributeError):
        return False
    if not ok:
        log.debug("mallopt refused the thresholds; keeping glibc's defaults")
    return ok
