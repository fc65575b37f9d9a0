"""Big blocks go back to the system when they are freed (glibc's malloc).

Why: glibc raises its mmap threshold to the size of each big block freed (up to 32 MB), after
which blocks that big come from the heap, and a heap returns only what lies above its last block
in use. A harness that receives 9 to 15 MB list pages again and again, and writes their text for
its findings, kept about 55 MB of free heap between `fuzz` examples that way (issue 30, 100,000
tools). A fixed threshold keeps every block of BIG_BLOCK or more in a mapping of its own,
unmapped when it is freed; smaller blocks are served as before.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Final

BIG_BLOCK: Final = 1024 * 1024
_M_MMAP_THRESHOLD: Final = -3  # glibc's <malloc.h>


@functools.cache
def return_big_blocks() -> bool:
    """Once per process; whether it took (False where the C library is not glibc)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        return bool(ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, BIG_BLOCK))
    except (ValueError, OSError, AttributeError):  # no such confstr name, no libc, no mallopt
        return False

