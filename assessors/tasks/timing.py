"""Wall time of a task's stages, for its ``time/*`` metrics and its log."""
from __future__ import annotations

import contextlib
import logging
import time

log = logging.getLogger(__name__)


@contextlib.contextmanager
def stage(times: dict, key: str):
    """Time the block into ``times[key]`` (seconds, summed over repeats) and log it: a run's log then
    shows where its wall time went, and the process's CPU time beside it (on shared cores the wall
    time moves with the load; the CPU time much less)."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        dt = time.perf_counter() - t0
        times[key] = times.get(key, 0.0) + dt
        log.info("stage %s: %.1f s (CPU %.1f s)", key, dt, time.process_time() - c0)
