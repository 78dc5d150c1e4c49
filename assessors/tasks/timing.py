"""Wall time of a task's stages, for its ``time/*`` metrics and its log."""
from __future__ import annotations

import contextlib
import logging
import time

log = logging.getLogger(__name__)


@contextlib.contextmanager
def stage(times: dict, key: str):
    """Time the block into ``times[key]`` (seconds, summed over repeats) and log it: a run's log then
    shows where its wall time went."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        dt = time.perf_counter() - t0
        times[key] = times.get(key, 0.0) + dt
        log.info("stage %s: %.1f s", key, dt)
