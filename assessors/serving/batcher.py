"""Fair micro-batching of scoring requests in front of the encoder.

Every ``/v1/predict``, ``/v1/route`` and proxied chat request becomes a :class:`Job` in its
client's queue. One scheduler coroutine builds encoder batches by visiting the clients in
round-robin order and taking at most ``quantum`` prompts from each per turn, so one client's
large batches cannot starve another client's single prompts. Each batch is embedded and
scored in a single worker thread (the event loop stays free to accept requests), with one
classifier call per distinct LLM set. When the encoder was idle the scheduler waits a short
window so that concurrent requests share a batch.

The queue is bounded (overall and per client): :meth:`FairBatcher.submit` raises
:class:`QueueFull` instead of letting requests pile up. A job whose caller stopped waiting
(timeout, disconnect) is cancelled: its prompts not yet encoded are dropped.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from assessors.serving.heap import HeapTrimmer

log = logging.getLogger("assessors.serving")


class QueueFull(Exception):
    """The bounded queue cannot take a job now; ``retry_after_s`` estimates when it could."""

    def __init__(self, message: str, retry_after_s: int):
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(eq=False)
class Job:
    """One request's prompts and the LLMs to score them for.

    Attributes
    ----------
    client : str
        Fairness key (the API key's digest, or the peer address without auth).
    prompts : list of str, length m
    entries : list of RegisteredLLM, length k, or None
        Resolved when the request arrived; None for a job that only embeds (:meth:`FairBatcher.submit_embed`).
    future : asyncio.Future
        Resolves to ``(names, P, STD)`` with P of shape (k, m) and STD its spread (k, m), or None
        when the assessor gives none; for an embed-only job, to the features X (m, d).
    """

    client: str
    prompts: list[str]
    entries: list | None
    future: asyncio.Future
    next: int = 0  # first prompt not yet handed to the encoder
    forgotten: bool = False  # cancelled and taken out of the queue
    parts: list = field(default_factory=list)  # feature blocks (rows, d) in prompt order

    @property
    def remaining(self) -> int:
        return len(self.prompts) - self.next


class FairBatcher:
    """Round-robin micro-batcher over per-client queues (see module docstring).

    Parameters
    ----------
    embed : callable
        ``prompts -> X`` of shape (m, d); called only from the single worker thread.
    score : callable
        ``(X, entries) -> (P, STD)``, each of shape (k, m) (STD may be None); same thread.
    window_ms, max_prompts, quantum, queue_max_prompts, client_max_prompts, batch_ms, trim_s
        See :class:`assessors.serving.settings.Batching`.
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], score: Callable[[np.ndarray, list], np.ndarray],
                 window_ms: float = 2.0, max_prompts: int = 64, quantum: int = 8, queue_max_prompts: int = 2048,
                 client_max_prompts: int = 512, batch_ms: float = 0.0, trim_s: float = 0.0):
        self.embed, self.score = embed, score
        self.trim_s = float(trim_s)
        self.batch_s = batch_ms / 1000.0
        self.window_s = window_ms / 1000.0
        self.max_prompts, self.quantum = int(max_prompts), int(quantum)
        self.queue_max_prompts, self.client_max_prompts = int(queue_max_prompts), int(client_max_prompts)
        self._queues: "collections.OrderedDict[str, collections.deque[Job]]" = collections.OrderedDict()
        self._pending = 0  # prompts queued and not yet handed to the encoder
        self._per_client: dict[str, int] = collections.defaultdict(int)
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.stats = {"batches": 0, "prompts_encoded": 0, "prompts_cancelled": 0, "jobs_cancelled": 0,
                      "rejected": 0, "heap_trims": 0, "heap_trim_ms": 0.0}
        self._rate = 0.0  # prompts/s of recent batches (exponential average), for Retry-After

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assessors-encoder")
        self._trimmer = HeapTrimmer(self.trim_s)
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="assessors-batcher")

    async def run_in_worker(self, fn: Callable, *args):
        """Run ``fn(*args)`` on the encoder thread (model loading, warm-up)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for q in self._queues.values():
            for job in q:
                if not job.future.done():
                    job.future.cancel()
        self._queues.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------- submit
    @property
    def pending_prompts(self) -> int:
        return self._pending

    def retry_after_s(self) -> int:
        rate = self._rate or 50.0
        return max(1, math.ceil(self._pending / rate))

    def submit_embed(self, client: str, prompts: Sequence[str]) -> asyncio.Future:
        """Queue prompts to embed only (e.g. an LLM's evidence at registration), in the same fair,
        bounded queue as scoring; the future gives X (m, d). Raises :class:`QueueFull`."""
        return self.submit(client, prompts, None)

    def submit(self, client: str, prompts: Sequence[str], entries: list | None) -> asyncio.Future:
        """Queue a job; the returned future gives ``(names, P, STD)`` (X for ``entries=None``).
        Raises :class:`QueueFull`."""
        m = len(prompts)
        if self._pending + m > self.queue_max_prompts:
            self.stats["rejected"] += 1
            raise QueueFull(f"the scoring queue is full ({self._pending} prompts waiting, limit "
                            f"{self.queue_max_prompts}); retry later", self.retry_after_s())
        if self._per_client[client] + m > self.client_max_prompts:
            self.stats["rejected"] += 1
            raise QueueFull(f"this client already has {self._per_client[client]} prompts queued (limit "
                            f"{self.client_max_prompts}); retry later", self.retry_after_s())
        job = Job(client, list(prompts), None if entries is None else list(entries),
                  asyncio.get_running_loop().create_future())
        self._queues.setdefault(client, collections.deque()).append(job)
        self._pending += m
        self._per_client[client] += m
        # the caller gave up (timeout, disconnect): free its queue room at once
        job.future.add_done_callback(lambda f: self._forget(job) if f.cancelled() else None)
        self._wake.set()
        return job.future

    # ----------------------------------------------------------------- schedule
    def _drop(self, client: str, job: Job) -> None:
        """Forget the unencoded prompts of ``job`` (finished scheduling, or cancelled)."""
        self._pending -= job.remaining
        self._per_client[client] -= job.remaining
        if self._per_client[client] <= 0:
            del self._per_client[client]

    def _forget(self, job: Job) -> None:
        """Take a cancelled job out of its queue and drop its prompts not yet encoded (idempotent)."""
        if job.forgotten:
            return
        job.forgotten = True
        q = self._queues.get(job.client)
        if q is not None and job in q:
            q.remove(job)
            if not q:
                del self._queues[job.client]
        self.stats["jobs_cancelled"] += 1
        self.stats["prompts_cancelled"] += job.remaining
        self._drop(job.client, job)
        job.next = len(job.prompts)

    def _take(self) -> list[tuple[Job, int, int]]:
        """The next batch: ``(job, start, stop)`` slices, round-robin over clients, FIFO within one.

        Each round visits the clients queued now; a client's turn takes up to ``quantum`` prompts
        from its jobs in order, and no more than an equal share of the room left in the batch, so
        a client of many one-prompt requests gets as much of a small batch as one large request.
        """
        batch: list[tuple[Job, int, int]] = []
        room = self.batch_room()
        while room > 0 and self._queues:
            order = list(self._queues)
            for i, client in enumerate(order):
                q = self._queues.get(client)
                if room <= 0 or q is None:
                    continue
                room -= self._turn(client, q, min(self.quantum, -(-room // (len(order) - i))), batch)
                if client in self._queues:  # this client's turn is over: to the back of the rotation
                    self._queues.move_to_end(client)
                    if not q:
                        del self._queues[client]
        return batch

    def batch_room(self) -> int:
        """Prompts in the next batch: ``max_prompts``, or fewer when the recent encoder rate says a full
        batch would take longer than ``batch_ms`` (at least ``quantum``): a waiting client's next
        turn then comes within about one ``batch_ms``."""
        if not self.batch_s or not self._rate:
            return self.max_prompts
        return int(min(self.max_prompts, max(self.quantum, self._rate * self.batch_s)))

    def _turn(self, client: str, q: collections.deque, turn: int, batch: list) -> int:
        """Append up to ``turn`` prompts of ``client``'s jobs ``q`` to ``batch``; return how many."""
        taken = 0
        while taken < turn and q:
            if q[0].future.cancelled():  # its done-callback has not run yet
                self._forget(q[0])
                continue
            job = q[0]
            n = min(turn - taken, job.remaining)
            batch.append((job, job.next, job.next + n))
            job.next += n
            self._pending -= n
            self._per_client[client] -= n
            taken += n
            if job.remaining == 0:
                q.popleft()
        if self._per_client.get(client, 1) <= 0:
            del self._per_client[client]
        return taken

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._queues:
                self._wake.clear()
                await self._wake.wait()
                if self.window_s and self._pending < self.max_prompts:
                    await asyncio.sleep(self.window_s)  # let concurrent requests join this batch
            batch = self._take()
            if not batch:
                continue
            t = time.perf_counter()
            try:
                done = await loop.run_in_executor(self._executor, self._run, batch)
            except Exception as e:  # noqa: BLE001 - delivered to every waiting request
                for job, _, _ in batch:
                    if not job.future.done():
                        job.future.set_exception(e)
                continue
            n = sum(b - a for _, a, b in batch)
            dt = max(time.perf_counter() - t, 1e-6)
            self._rate = n / dt if not self._rate else 0.8 * self._rate + 0.2 * n / dt
            self.stats["batches"] += 1
            for job, result in done:
                if not job.future.done():
                    job.future.set_result(result)
            if self._trimmer.due():  # after the answers went out: the trim delays the next batch only
                await loop.run_in_executor(self._executor, self._trimmer.trim)
                self.stats["heap_trims"], self.stats["heap_trim_ms"] = (self._trimmer.trims,
                                                                        round(1e3 * self._trimmer.trim_s, 1))

    # ---------------------------------------------------------- worker thread
    def _run(self, batch: list[tuple[Job, int, int]]) -> list[tuple[Job, tuple]]:
        """Embed the batch's prompts; score every job whose prompts are now all embedded."""
        live = [(job, a, b) for job, a, b in batch if not job.future.cancelled()]
        self.stats["prompts_cancelled"] += sum(b - a for job, a, b in batch if job.future.cancelled())
        if not live:
            return []
        X = self.embed([p for job, a, b in live for p in job.prompts[a:b]])
        self.stats["prompts_encoded"] += len(X)
        row = 0
        for job, a, b in live:
            job.parts.append(X[row:row + b - a])
            row += b - a
        complete = list({id(j): j for j, _, _ in live if j.next == len(j.prompts)
                         and sum(len(p) for p in j.parts) == len(j.prompts)}.values())
        return self._score_complete(complete)

    def _score_complete(self, complete: list[Job]) -> list[tuple[Job, tuple]]:
        """``(job, (names, P (k, m), STD (k, m) or None))`` for each fully embedded job."""
        # one classifier call per distinct LLM set: concurrent requests usually share it
        groups: dict[tuple[str, ...], list[Job]] = collections.defaultdict(list)
        out = []
        for job in complete:
            if job.entries is None:  # embed only
                out.append((job, np.concatenate(job.parts)))
                job.parts = []
            else:
                groups[tuple(e.name for e in job.entries)].append(job)
        for names, jobs in groups.items():
            Xg = np.concatenate([np.concatenate(j.parts) for j in jobs])
            P, STD = self.score(Xg, jobs[0].entries)
            P = np.atleast_2d(P)
            col = 0
            for j in jobs:
                m = len(j.prompts)
                out.append((j, (list(names), P[:, col:col + m], None if STD is None else STD[:, col:col + m])))
                col += m
                j.parts = []
        return out
