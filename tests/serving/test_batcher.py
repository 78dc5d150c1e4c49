"""The fair micro-batcher: round-robin batches, shared classifier calls, bounded queue, cancellation."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from assessors.serving.batcher import FairBatcher, QueueFull


class Entry:
    def __init__(self, name):
        self.name = name


class Recorder:
    """Embeds a prompt "c<client>-<i>" as the row [i]; records each batch; can be held by a gate
    (``held=True``: closed until the test opens it)."""

    def __init__(self, held: bool = False):
        self.batches: list[list[str]] = []
        self.score_calls = 0
        self.gate = threading.Event()
        if not held:
            self.gate.set()
        self.entered = threading.Event()  # set once the encoder holds its first batch

    def started(self, **params) -> FairBatcher:
        """A started batcher over this recorder (inside the event loop), no batching window by default."""
        b = FairBatcher(self.embed, self.score, **{"window_ms": 0, **params})
        b.start()
        return b

    def embed(self, prompts):
        self.entered.set()
        self.gate.wait(10)
        self.batches.append(list(prompts))
        return np.array([[float(p.rsplit("-", 1)[1])] for p in prompts], np.float32)

    def score(self, X, entries):
        self.score_calls += 1
        return np.stack([X[:, 0] + k for k in range(len(entries))]), None


def run(coro):
    return asyncio.run(coro)


async def held(rec: Recorder) -> None:
    """Wait until the encoder holds its first batch (a fixed sleep is not enough on a loaded machine)."""
    for _ in range(1000):
        if rec.entered.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the encoder never received a batch")


def test_results_match_each_request_and_share_one_classifier_call():
    rec = Recorder()

    async def main():
        b = rec.started(window_ms=20, max_prompts=64)
        ents = [Entry("a"), Entry("b")]
        futs = [b.submit(f"c{c}", [f"c{c}-{i}" for i in range(3)], ents) for c in range(5)]
        out = await asyncio.gather(*futs)
        await b.stop()
        return out

    out = run(main())
    for names, P, STD in out:
        assert STD is None
        assert names == ["a", "b"]
        np.testing.assert_array_equal(P, [[0, 1, 2], [1, 2, 3]])
    # the window let all 5 concurrent requests share one encoder batch and one classifier call
    assert len(rec.batches) == 1 and len(rec.batches[0]) == 15 and rec.score_calls == 1


def test_round_robin_a_big_batch_cannot_starve_a_single_prompt():
    rec = Recorder(held=True)

    async def main():
        b = rec.started(max_prompts=8, quantum=4)
        heavy = [b.submit("heavy", [f"h-{i}" for i in range(30)], [Entry("a")]) for _ in range(3)]
        await held(rec)  # the first batch (heavy prompts) is now held in the encoder
        light = b.submit("light", ["l-0"], [Entry("a")])
        rec.gate.set()
        await light
        n_batches_when_light_done = len(rec.batches)
        await asyncio.gather(*heavy)
        await b.stop()
        return n_batches_when_light_done

    n = run(main())
    # the light prompt rides in the second batch, ahead of 82 queued heavy prompts, and is answered
    # before the heavy work ends (the encoder thread may already hold the third batch by then)
    assert "l-0" in rec.batches[1] and n < len(rec.batches)
    assert sum(len(x) for x in rec.batches) == 91


def heavy_then_light(max_prompts: int, quantum: int, n_heavy: int, n_light: int) -> list[list[str]]:
    """The encoder batches when one client's ``n_heavy``-prompt request is in the encoder and another
    client then queues ``n_light`` one-prompt requests."""
    rec = Recorder(held=True)

    async def main():
        b = rec.started(max_prompts=max_prompts, quantum=quantum)
        heavy = b.submit("heavy", [f"h-{i}" for i in range(n_heavy)], [Entry("a")])
        await held(rec)  # the first batch (heavy prompts only) is now held in the encoder
        light = [b.submit("light", [f"l-{i}"], [Entry("a")]) for i in range(n_light)]
        rec.gate.set()
        await asyncio.gather(heavy, *light)
        await b.stop()

    run(main())
    return rec.batches


def test_a_client_of_many_one_prompt_requests_gets_a_full_quantum_per_turn():
    batches = heavy_then_light(max_prompts=8, quantum=4, n_heavy=40, n_light=6)
    # one turn of the light client takes 4 of its one-prompt jobs, not 1: half the next batch
    second = batches[1]
    assert sum(p.startswith("l-") for p in second) == 4 and len(second) == 8
    assert [p for x in batches for p in x if p.startswith("l-")] == [f"l-{i}" for i in range(6)]  # FIFO


def test_queue_full_raises_with_retry_after():
    rec = Recorder(held=True)

    async def main():
        b = rec.started(max_prompts=4, queue_max_prompts=10, client_max_prompts=6)
        f1 = b.submit("a", [f"a-{i}" for i in range(6)], [Entry("x")])
        await held(rec)  # 4 taken into the held batch, 2 still queued
        with pytest.raises(QueueFull, match="this client") as e1:
            b.submit("a", [f"a-{i}" for i in range(5)], [Entry("x")])
        f2 = b.submit("b", [f"b-{i}" for i in range(6)], [Entry("x")])
        with pytest.raises(QueueFull, match="queue is full") as e2:
            b.submit("c", [f"c-{i}" for i in range(3)], [Entry("x")])
        rec.gate.set()
        await asyncio.gather(f1, f2)
        stats = dict(b.stats)
        await b.stop()
        return e1.value, e2.value, stats

    e1, e2, stats = run(main())
    assert e1.retry_after_s >= 1 and e2.retry_after_s >= 1 and stats["rejected"] == 2


def test_cancelled_job_drops_its_queued_prompts():
    rec = Recorder(held=True)

    async def main():
        b = rec.started(max_prompts=4, quantum=4)
        fut = b.submit("a", [f"a-{i}" for i in range(20)], [Entry("x")])
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(fut, 0.05)   # as the endpoints do: the job is cancelled
        after = b.submit("b", ["b-0"], [Entry("x")])
        rec.gate.set()
        await after
        stats, pending = dict(b.stats), b.pending_prompts
        await b.stop()
        return stats, pending

    stats, pending = run(main())
    # only the batch already in the encoder ran; the other 16 prompts were never encoded
    assert [len(x) for x in rec.batches] == [4, 1]
    assert stats["prompts_cancelled"] == 16 and stats["jobs_cancelled"] == 1 and pending == 0


def test_encoder_error_reaches_every_request_of_the_batch():
    def bad(prompts):
        raise RuntimeError("encoder failed")

    async def main():
        b = FairBatcher(bad, lambda X, e: X.T, window_ms=5)
        b.start()
        futs = [b.submit(c, ["x-1"], [Entry("a")]) for c in "ab"]
        res = await asyncio.gather(*futs, return_exceptions=True)
        await b.stop()
        return res

    assert all(isinstance(r, RuntimeError) for r in run(main()))


def test_embed_only_jobs_share_the_queue_and_return_features():
    """Evidence at registration: prompts embedded in the same fair batches as scoring, no classifier call for them."""
    rec = Recorder()

    async def main():
        b = rec.started(window_ms=20, max_prompts=64)
        emb = b.submit_embed("c1", ["e-3", "e-5"])
        sc = b.submit("c2", ["s-1"], [Entry("a")])
        X, (names, P, _) = await emb, await sc
        await b.stop()
        return X, names, P

    X, names, P = run(main())
    np.testing.assert_array_equal(X, [[3.0], [5.0]])
    assert names == ["a"] and P.tolist() == [[1.0]]
    assert len(rec.batches) == 1 and sorted(rec.batches[0]) == ["e-3", "e-5", "s-1"] and rec.score_calls == 1


def test_a_small_batch_is_shared_equally_not_taken_by_whoever_goes_first():
    # room 9 with quantum 8: turn by turn, the first client would take 8 and leave 1 every batch
    batches = heavy_then_light(max_prompts=9, quantum=8, n_heavy=60, n_light=12)
    per_batch = [sum(p.startswith("l-") for p in x) for x in batches[1:4]]
    assert min(per_batch) >= 4, per_batch


def test_batches_are_capped_by_the_encoder_time_they_would_take():
    rec = Recorder()
    b = FairBatcher(rec.embed, rec.score, max_prompts=64, quantum=8, batch_ms=150)
    assert b.batch_room() == 64  # no rate measured yet
    b._rate = 100.0  # prompts/s, as a MiniLM encoder here: 15 prompts take 150 ms
    assert b.batch_room() == 15
    b._rate = 20.0
    assert b.batch_room() == 8  # never below one client's turn
    b._rate = 5000.0
    assert b.batch_room() == 64
    assert FairBatcher(rec.embed, rec.score, max_prompts=64, batch_ms=0).batch_room() == 64

    async def main():  # a measured rate caps the batches _take builds
        c = FairBatcher(rec.embed, rec.score, window_ms=0, max_prompts=64, quantum=8, batch_ms=150)
        c.start()
        c._rate = 100.0
        fut = c.submit("a", [f"a-{i}" for i in range(20)], [Entry("x")])
        batch = c._take()  # before any await: the scheduler coroutine has not run
        await c.stop()
        fut.cancel()
        return batch

    batch = run(main())
    assert sum(stop - start for _, start, stop in batch) == 15
