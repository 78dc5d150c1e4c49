"""Returning free heap memory to the OS: the trimmer itself, and the batcher trimming between batches."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from assessors.serving.batcher import FairBatcher
from assessors.serving.heap import KERNEL_CACHE_ENV, HeapTrimmer, limit_kernel_cache

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


# three bfloat16 matmul shapes, twice over; oneDNN logs whether each kernel came from its cache
KERNEL_PROBE = """
import sys
from assessors.serving.heap import limit_kernel_cache
limit_kernel_cache(int(sys.argv[1]))
import torch
torch.set_num_threads(1)
lin = torch.nn.Linear(64, 64).to(torch.bfloat16)
with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON_CREATION):
    for _ in range(2):
        for n in (3, 5, 7):
            lin(torch.randn(n, 64, dtype=torch.bfloat16))
"""


def kernel_cache_log(capacity: int) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != KERNEL_CACHE_ENV}
    out = subprocess.run([sys.executable, "-c", KERNEL_PROBE, str(capacity)], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    return out.count("create:cache_hit"), out.count("create:cache_miss")


@pytest.mark.slow
def test_kernel_cache_cap_makes_oneDNN_prepare_evicted_shapes_again():
    hits, misses = kernel_cache_log(0)  # oneDNN's default capacity
    if hits + misses == 0:
        pytest.skip("this CPU runs bfloat16 linear layers without oneDNN primitives")
    assert (hits, misses) == (3, 3)
    assert kernel_cache_log(2) == (0, 6)  # a cap of 2 cannot hold 3 shapes: every kernel prepared anew


def test_kernel_cache_cap_from_the_environment_wins(monkeypatch):
    monkeypatch.setenv(KERNEL_CACHE_ENV, "")  # empty counts as unset; restored (removed) after the test
    assert limit_kernel_cache(0) is None and os.environ[KERNEL_CACHE_ENV] == ""
    assert limit_kernel_cache(16) == 16 and os.environ[KERNEL_CACHE_ENV] == "16"
    monkeypatch.setenv(KERNEL_CACHE_ENV, "64")
    assert limit_kernel_cache(16) == 64 and os.environ[KERNEL_CACHE_ENV] == "64"
