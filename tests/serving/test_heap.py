"""Returning free heap memory to the OS: the trimmer itself, and the batcher trimming between batches."""
from __future__ import annotations

import asyncio
import os
import time

import numpy as np
import pytest

from assessors.serving.batcher import FairBatcher
from assessors.serving.heap import HeapTrimmer

glibc = pytest.mark.skipif(not HeapTrimmer(1.0).available, reason="the C library has no malloc_trim")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@glibc
def test_trim_returns_freed_heap_memory_that_free_keeps():
    # 64 KB blocks come from the heap (below glibc's mmap threshold); the last one stays alive and
    # pins the heap's top, so free() alone keeps the ~190 MB below it resident
    blocks = [bytearray(os.urandom(16)) * 4096 for _ in range(3000)]
    keep = bytearray(b"x") * 65536
    before = rss_mb()
    del blocks
    kept = rss_mb()
    t = HeapTrimmer(interval_s=1e-9)
    assert t.due()
    t.trim()
    after = rss_mb()
    assert kept - after > 100, (before, kept, after)
    assert t.trims == 1 and t.trim_s >= 0
    del keep


def test_off_or_not_yet_due_never_trims():
    assert not HeapTrimmer(0).due() and not HeapTrimmer(0).available
    t = HeapTrimmer(3600)
    assert not t.due()  # the interval counts from construction


class Entry:
    name = "a"


@glibc
def test_batcher_trims_between_batches_at_most_every_interval():
    def embed(prompts):
        time.sleep(0.02)
        return np.zeros((len(prompts), 2), np.float32)

    async def main(trim_s):
        b = FairBatcher(embed, lambda X, e: (np.zeros((len(e), len(X))), None), window_ms=0, max_prompts=1,
                        trim_s=trim_s)
        b.start()
        for k in range(20):  # 20 sequential batches of ~20 ms each
            await b.submit("c", [f"p{k}"], [Entry()])
        await b.stop()
        return b.stats

    often, never = asyncio.run(main(0.1)), asyncio.run(main(0))
    assert 1 <= often["heap_trims"] <= 5, often  # ~0.4 s of batches, a trim at most every 0.1 s
    assert never["heap_trims"] == 0
