"""How many threads each fit gets: decided here, from the cores and the parallel work around it.

Oversubscription is the failure this module prevents: XGBoost at 2 threads inside each of 2 worker
threads (or 2 sweep processes) on 2 cores ran small fits many times slower than at 1 thread
(``benchmarks/thread_budget.py``). Every task asks :func:`fit_threads` for the number of threads of
one fit, builds its estimators through :func:`budgeted` (``n_jobs`` of XGBoost and scikit-learn,
``num_threads`` of torch components) and runs inside :func:`thread_limits` (BLAS and OpenMP pools
via threadpoolctl, and torch).

Blocks in parallel threads of one process (``train.py``'s lanes) run inside one :func:`lane_limits`
block, opened by the caller before the threads start: the process-wide pools (BLAS, torch) are set
once, for every thread, and a :func:`thread_limits` block inside it sets only what is per thread (the
OpenMP thread count of the calling thread); XGBoost takes its threads from its parameters.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any, Mapping, Sequence

#: Config keys that set a component's thread count (XGBoost/scikit-learn, torch, LightGBM style).
THREAD_KEYS = ("n_jobs", "num_threads", "nthread")

#: Fewer training rows than this and a tree-by-tree fit (XGBoost) gets one thread: the work between two
#: OpenMP barriers is too small to share, and on shared cores the second thread's spinning at them made a
#: fit on 7,132 rows (the "all train data" baseline's collapsed rows) 3-5x slower in wall time than one
#: thread, with identical predictions (``benchmarks/small_fit_threads.py``). A round bound above that shape.
SMALL_FIT_ROWS = 10_000

_local = threading.local()  # .active: budgets of this thread's enclosing thread_limits blocks (innermost last)
_shared: list[int] = []  # the budget of the open lane_limits block, every thread's ceiling
_outer = [1]  # processes running at once beside this one (set_outer_jobs)


def set_outer_jobs(n: int) -> None:
    """Declare that ``n`` processes (a sweep's parallel jobs, this one included) share the cores.

    The task layer sets it from the launcher's ``n_jobs`` when a task starts; 1 (the default) is a
    process alone on its cores.
    """
    _outer[0] = max(1, int(n))


def available_cores() -> int:
    """Cores this process may use: its CPU affinity, shared with the processes launched beside it.

    ``OMP_NUM_THREADS`` caps it when set (Ray sets it to a task's CPUs; users and schedulers set
    it); a sweep of parallel jobs (:func:`set_outer_jobs`) divides the cores among them.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    omp = os.environ.get("OMP_NUM_THREADS", "")
    if omp.isdigit() and int(omp) > 0:
        cores = min(cores, int(omp))
    return max(1, cores // _outer[0])


def fit_threads(parallel: int = 1, threads: int | None = None) -> int:
    """Threads for each of ``parallel`` fits running at once in this process.

    ``threads`` (the ``threads`` setting, an int) fixes the answer; None or 0 divides
    :func:`available_cores`.
    """
    if threads:
        return max(1, int(threads))
    return max(1, available_cores() // max(1, int(parallel)))


def threads_for_rows(n_rows: int, threads: int | None) -> int | None:
    """``threads`` for a fit on ``n_rows`` rows, or 1 below :data:`SMALL_FIT_ROWS` (None stays None)."""
    return 1 if threads is not None and n_rows < SMALL_FIT_ROWS else threads


def _capped(value: Any, n: int) -> int:
    """``value`` capped at ``n``; unset (None) or negative (joblib's "all cores") gives ``n``."""
    return int(n) if value is None or int(value) <= 0 else min(int(value), int(n))


def budgeted(node: Mapping | None, n: int) -> dict | None:
    """A copy of a component config with every thread setting (:data:`THREAD_KEYS`) capped at ``n``.

    An unset setting (null, or a negative "all cores") becomes ``n``; an explicit one keeps the
    smaller of its value and ``n``. The budget is a ceiling, not a target: a component that asks
    for one thread (the latent assessor's tiny training steps) keeps it, because its OpenMP threads
    spin at every barrier, and with two of them on two busy cores a fit took 5-8x the CPU time and
    wall time of one thread.

    Any mapping is accepted (nested mappings and sequences are walked); the copy is made of plain
    dicts and lists, so ``node`` itself is left alone. ``None`` is returned unchanged.
    """
    if node is None:
        return None

    def walk(x):
        if isinstance(x, Mapping):
            return {k: (_capped(v, n) if k in THREAD_KEYS else walk(v)) for k, v in x.items()}
        if isinstance(x, Sequence) and not isinstance(x, (str, bytes)):
            return [walk(v) for v in x]
        return x

    return walk(node)


def _active() -> list[int]:
    """This thread's stack of :func:`thread_limits` budgets (innermost last)."""
    if not hasattr(_local, "active"):
        _local.active = []
    return _local.active


def current_budget() -> int | None:
    """The thread budget of this thread's innermost :func:`thread_limits` block, capped by the open
    :func:`lane_limits` block's (which alone applies to a thread outside any block); None outside both."""
    active = _active()
    if not _shared:
        return active[-1] if active else None
    return min(active[-1], _shared[-1]) if active else _shared[-1]


@contextlib.contextmanager
def thread_limits(n: int | None):
    """Run the block with BLAS/OpenMP pools (threadpoolctl) and torch limited to ``n`` threads.

    None leaves everything alone. torch is limited only if already imported; torch components
    imported later pick the budget up through :func:`torch_threads`. Inside a :func:`lane_limits`
    block (blocks in parallel threads) the budget is capped at the lanes' and only this thread's
    OpenMP thread count is set: the process-wide pools stay as :func:`lane_limits` set them.
    """
    if not n:
        yield
        return
    from threadpoolctl import threadpool_limits

    active = _active()
    if _shared:
        n = min(int(n), _shared[-1])
        limits = threadpool_limits(limits=n, user_api="openmp")  # per thread: omp_set_num_threads
    else:
        limits = _process_limits(int(n))
    active.append(int(n))
    try:
        with limits:
            yield
    finally:
        active.pop()


@contextlib.contextmanager
def lane_limits(n: int | None):
    """Run the block with every thread of the process limited to ``n`` threads: for lanes in parallel threads.

    Opened once, by the thread that starts the lanes, before they start: the process-wide pools (BLAS
    via threadpoolctl, torch) are set to ``n`` here and restored at the end, and no :func:`thread_limits`
    block inside changes them; each lane thread sets its own OpenMP thread count by opening a
    :func:`thread_limits` block (a new thread starts at OpenMP's default). None leaves everything alone.

    Raises
    ------
    RuntimeError
        If a :func:`lane_limits` block is open already (they do not nest).
    """
    if not n:
        yield
        return
    if _shared:
        raise RuntimeError("lane_limits blocks do not nest")
    with _process_limits(int(n)):
        _shared.append(int(n))
        try:
            yield
        finally:
            _shared.pop()


@contextlib.contextmanager
def _process_limits(n: int):
    """BLAS and OpenMP pools (threadpoolctl; OpenMP's of the calling thread) and torch (if imported) at ``n``."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n), (_set_torch_threads(n) if "torch" in sys.modules else contextlib.nullcontext()):
        yield


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run the block with ``torch.set_num_threads(n)``; None or 0 uses the active budget, if any.

    The setting is process-wide: inside a :func:`lane_limits` block (blocks in parallel threads) it
    is left as that block set it. torch is imported here, not at module import, so callers that never
    pin threads stay light.
    """
    if _shared:
        yield
        return
    with _set_torch_threads(n or current_budget()):
        yield


@contextlib.contextmanager
def _set_torch_threads(n: int | None):
    """``torch.set_num_threads(n)`` for the block (None or 0: unchanged), restored after it."""
    import torch

    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
