"""Keep freed memory in the process heap for the CLI's lifetime (glibc only; a no-op elsewhere).

Why: building the tables allocates and frees about a hundred numpy arrays of 10-40 MB. glibc serves each
one with a fresh mmap and returns it with munmap, so the kernel maps and zeroes every page again: about
1 s of system time in a 5 s solve of Mixtral-8x22B on 64 GPUs (0.27 s with the heap kept, measured with
getrusage on this 2-core machine). A one-shot CLI gives its memory back at exit anyway, so it keeps the
heap; library callers (tests, benchmarks, notebooks) are left with glibc's defaults.
Knobs: glibc mallopt(3) M_MMAP_MAX (0: serve large blocks from the heap), M_TRIM_THRESHOLD (do not
return freed heap to the OS below this size), M_TOP_PAD (grow the heap in large steps).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX = -1, -2, -4  # <malloc.h>
_TRIM_THRESHOLD_BYTES = 1 << 30
_TOP_PAD_BYTES = 64 << 20


def keep_heap() -> bool:
    """Apply the settings above; False where glibc's mallopt is not there or SHARDPLAN_DEFAULT_MALLOC is set."""
    if not sys.platform.startswith("linux") or os.environ.get("SHARDPLAN_DEFAULT_MALLOC"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_MMAP_MAX, 0) == 1
    ok &= mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES) == 1
    ok &= mallopt(_M_TOP_PAD, _TOP_PAD_BYTES) == 1
    return bool(ok)
