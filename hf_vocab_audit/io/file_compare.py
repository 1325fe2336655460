"""Compare byte ranges of two files without reading them into Python: both memory-mapped a window at a
time and compared in the page cache by libc's ``memcmp`` (numpy where there is no C library).

The fix verifier's tool (``fix/verify.py`` decides what must be equal; this module compares bytes).
"""

from __future__ import annotations

import functools
import mmap
from pathlib import Path
from typing import Any

import numpy as np

BLOCK = 1024 * 1024  # bytes compared at a time
WINDOW = 16 * BLOCK  # bytes mapped at a time


@functools.cache
def _libc_memcmp() -> Any:
    """libc's ``memcmp`` (vectorised; ctypes releases the GIL around it, so two threads compare at once),
    or None where there is no C library to load it from."""
    try:
        import ctypes

        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError, TypeError):  # Windows: no CDLL(None)
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return fn


def _window(fh: Any, offset: int, size: int) -> tuple[mmap.mmap, np.ndarray]:
    """``size`` bytes at ``offset`` of an open file, memory-mapped (the map starts on an allocation boundary)."""
    base = offset - offset % mmap.ALLOCATIONGRANULARITY
    mm = mmap.mmap(fh.fileno(), offset - base + size, access=mmap.ACCESS_READ, offset=base)
    return mm, np.frombuffer(mm, np.uint8, count=size, offset=offset - base)


def same_bytes(a: Path, a_off: int, b: Path, b_off: int, length: int) -> bool:
    """Whether ``length`` bytes at ``a_off`` of ``a`` equal those at ``b_off`` of ``b``: both memory-mapped a
    window at a time (mapped pages count in the resident set) and compared in the page cache by
    ``memcmp`` (numpy where there is none): no copy into this process."""
    if length <= 0:
        return True
    if a.stat().st_size < a_off + length or b.stat().st_size < b_off + length:
        return False
    memcmp = _libc_memcmp()
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for at in range(0, length, WINDOW):
            size = min(WINDOW, length - at)
            ma, xa = _window(fa, a_off + at, size)
            mb: mmap.mmap | None = None
            xb: np.ndarray | None = None
            try:
                mb, xb = _window(fb, b_off + at, size)
                if memcmp is not None:
                    same = memcmp(xa.ctypes.data, xb.ctypes.data, size) == 0
                else:
                    same = all(np.array_equal(xa[i : i + BLOCK], xb[i : i + BLOCK]) for i in range(0, size, BLOCK))
            finally:
                del xa, xb  # the arrays export the maps' buffers: released before the maps close
                ma.close()
                if mb is not None:  # the second window may have failed to open
                    mb.close()
            if not same:
                return False
    return True
