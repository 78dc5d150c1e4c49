"""Give the C heap's free memory back to the operating system, now and then.

The encoder's forward passes allocate and free large, differently sized buffers (activations of
batches of every size and length). glibc keeps freed heap memory for reuse instead of returning
it, so under sustained uncached load a MiniLM server's resident memory climbs by hundreds of MB
although the live data does not grow: one measured server held 1.87 GB, and 0.79 GB after a single
``malloc_trim(0)`` (``docs/serving.md``). :class:`HeapTrimmer` calls ``malloc_trim`` at most every
``interval_s`` seconds between encoder batches. Where the C library has no ``malloc_trim``
(musl, macOS) it does nothing.

A bfloat16 encoder also keeps a prepared oneDNN kernel (a "primitive") for every input shape it
has met, up to oneDNN's default of 1,024. A fresh server meets new batch shapes for thousands of
requests, so its memory rose by about 10% between requests 2,000 and 20,000 even with trimming.
:func:`limit_kernel_cache` caps that cache; oneDNN reads the cap when it prepares its first kernel,
so it must run before the process encodes anything.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time

log = logging.getLogger("assessors.serving")

#: The environment variable oneDNN reads its primitive-cache capacity from.
KERNEL_CACHE_ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"


def limit_kernel_cache(capacity: int) -> int | None:
    """Cap oneDNN's cache of prepared kernels at ``capacity`` for this process and its children.

    Call it before the first encode: oneDNN reads the cap once, when it prepares its first kernel.
    A cap the environment already sets wins (it is logged); ``capacity`` 0 keeps oneDNN's default.

    Returns
    -------
    int or None
        The cap in force, or None for oneDNN's default.
    """
    if os.environ.get(KERNEL_CACHE_ENV):
        log.info("oneDNN kernel cache: %s=%s from the environment", KERNEL_CACHE_ENV, os.environ[KERNEL_CACHE_ENV])
        return int(os.environ[KERNEL_CACHE_ENV])
    if capacity <= 0:
        return None
    os.environ[KERNEL_CACHE_ENV] = str(int(capacity))
    return int(capacity)


def _malloc_trim():
    """glibc's ``malloc_trim(size_t pad)``, or None where the C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


class HeapTrimmer:
    """Return free heap memory to the OS at most every ``interval_s`` seconds.

    Parameters
    ----------
    interval_s : float
        Minimum time between two trims; 0 turns trimming off.

    Attributes
    ----------
    available : bool
        The C library has ``malloc_trim``.
    trims, trim_s : int, float
        Trims done and the time they took, since start.
    """

    def __init__(self, interval_s: float = 1.0):
        self.interval_s = float(interval_s)
        self._fn = _malloc_trim() if self.interval_s > 0 else None
        self.available = self._fn is not None
        self._last = time.monotonic()
        self.trims, self.trim_s = 0, 0.0

    def due(self) -> bool:
        """Whether a trim is due now (always False when off or unavailable)."""
        return self._fn is not None and time.monotonic() - self._last >= self.interval_s

    def trim(self) -> None:
        """Trim now (call it on the thread that just freed the memory: glibc trims every arena)."""
        t = time.monotonic()
        self._fn(0)
        self._last = time.monotonic()
        self.trims += 1
        self.trim_s += self._last - t
