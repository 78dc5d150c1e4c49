"""Processes sharing an embedding cache embed each prompt once (a file lock per shard).

The lock is a file lock, so two threads with a cache each contend as two processes do: the fast
test uses threads, the slow ones real processes.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from assessors.features.cache import EmbeddingCache

SHARD = 10  # 120 prompts: 12 shards to share out


def _embed(cache_dir: str, texts: list[str], out: str, barrier, seconds_per_shard: float) -> None:
    """One process: unigram features of ``texts`` through the cache, logging every text it embeds."""
    import assessors.features.cache as cache
    from assessors.features.ngrams import UnigramFeaturizer

    cache.SHARD_SIZE = SHARD
    f = UnigramFeaturizer(cache_dir=cache_dir).fit(texts)
    compute = f._transform

    def counting(chunk):
        with open(Path(out) / f"embedded-{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(t) + "\n" for t in chunk)
        time.sleep(seconds_per_shard)  # a real encoder's time per shard: the processes overlap
        return compute(chunk)

    f._transform = counting  # the instance's compute step, seen by Featurizer.transform
    barrier.wait()
    start = time.monotonic()
    X = f.transform(texts)
    np.save(Path(out) / f"X-{os.getpid()}.npy", X)
    (Path(out) / f"span-{os.getpid()}.json").write_text(json.dumps([start, time.monotonic()]))


def _run(n, cache_dir, texts, out, seconds_per_shard=0.1):
    ctx = mp.get_context("spawn")  # no fork of a test process that may hold threads
    barrier = ctx.Barrier(n)
    procs = [ctx.Process(target=_embed, args=(str(cache_dir), texts, str(out), barrier, seconds_per_shard),
                         daemon=True)  # killed, not waited for, if the test fails
             for _ in range(n)]
    for p in procs:
        p.start()
    procs[0].barrier = barrier  # alive until the children have it: its semaphores go with the object
    return procs


def _embedded(out: Path) -> dict[str, list[str]]:
    return {p.stem: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
            for p in out.glob("embedded-*.jsonl")}


def test_two_caches_at_once_embed_each_text_once(train_prompts, tmp_path):
    texts = list(dict.fromkeys(train_prompts))
    barrier, computed, out = threading.Barrier(2), [], {}

    def compute(chunk):
        computed.extend(chunk)
        time.sleep(0.02)  # an encoder's time per shard: the two overlap
        return np.array([[len(t), t.count("a")] for t in chunk], dtype=np.float32)

    def run(i):
        barrier.wait()
        out[i] = EmbeddingCache(tmp_path, "toy", shard_size=SHARD).get_or_compute(texts, compute)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(computed) == sorted(texts)  # each text once, over both
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0][:, 0], [len(t) for t in texts])
    assert not list(tmp_path.rglob("*.lock"))


@pytest.mark.slow
def test_two_processes_embed_each_prompt_once(train_prompts, tmp_path):
    texts = list(dict.fromkeys(train_prompts))
    procs = _run(2, tmp_path / "cache", texts, tmp_path)
    for p in procs:
        p.join(120)
        assert p.exitcode == 0, p.exitcode
    (a, b) = [json.loads(p.read_text()) for p in tmp_path.glob("span-*.json")]
    assert a[0] < b[1] and b[0] < a[1], "the two processes did not run at the same time: the test proves nothing"
    embedded = _embedded(tmp_path)
    counts = {}
    for chunk in embedded.values():
        for t in chunk:
            counts[t] = counts.get(t, 0) + 1
    assert counts == {t: 1 for t in texts}  # every prompt embedded, none twice
    X1, X2 = [np.load(p) for p in sorted(tmp_path.glob("X-*.npy"))]
    np.testing.assert_array_equal(X1, X2)
    assert not list((tmp_path / "cache").rglob("*.lock"))  # shard locks are removed after use
    print("texts embedded per process:", sorted(len(v) for v in embedded.values()))


@pytest.mark.slow
def test_a_killed_holder_leaves_its_shard_to_the_waiter(train_prompts, tmp_path):
    """The lock dies with its process: a process waiting for that shard computes it itself."""
    texts = list(dict.fromkeys(train_prompts))[:SHARD]  # one shard
    holder = _run(1, tmp_path / "cache", texts, tmp_path, seconds_per_shard=120)[0]
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("embedded-*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)  # the holder has the lock and is computing
    waiter = _run(1, tmp_path / "cache", texts, tmp_path, seconds_per_shard=0)[0]
    time.sleep(3)  # the waiter reaches the lock and waits
    assert waiter.is_alive()
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(10)
    waiter.join(60)
    assert waiter.exitcode == 0
    embedded = _embedded(tmp_path)
    assert sorted(len(v) for v in embedded.values()) == [SHARD, SHARD]  # the holder's try, then the waiter's
    assert np.load(next(tmp_path.glob(f"X-{waiter.pid}.npy"))).shape[0] == SHARD
