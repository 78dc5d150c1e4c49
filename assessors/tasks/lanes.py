"""Two lanes of a task at once, in threads of this process: one function and a list of tasks.

``train.py``'s configured assessor (its fit, trust parts and serving) runs mostly on one thread, and
the baseline columns need only the prepared data and the reference set: run side by side, the
second core stops idling, and once the assessor's lane is done its thread takes baseline columns too.
Threads, not processes: XGBoost, BLAS and torch release the GIL, and a thread dies with the process
(a spawned worker once outlived a SIGKILLed ``train.py``, holding its pipes).
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

from assessors.threads import current_budget, thread_limits

log = logging.getLogger(__name__)

T = TypeVar("T")
V = TypeVar("V")


def run_lanes(main: Callable[[], T], side: Callable[[], Iterable[Callable[[], V]]], overlap: bool = True
              ) -> tuple[T, list[V]]:
    """``(main(), [task() for task in side()])``, the side lane's tasks shared by two threads.

    A worker thread runs the side lane's tasks one after another while ``main`` runs here; once ``main``
    is done this thread takes the next task too, so that neither core idles while tasks are left.

    Parameters
    ----------
    main : callable
        Runs in the calling thread (its progress and logs stay where they were).
    side : callable returning an iterable of callables
        The side lane's tasks (each called without arguments, in either thread), taken in order as
        a thread comes free: put the longest first. Before taking a task a thread checks whether
        a lane failed, and stops there.
    overlap : bool
        False: ``main()`` then the tasks, in this thread (one core, or debugging).

    Both threads run with this thread's budget (:func:`~assessors.threads.current_budget`): open the
    call inside :func:`~assessors.threads.lane_limits`, which sets the process-wide pools once; the worker
    sets its own OpenMP thread count (:func:`~assessors.threads.thread_limits`).

    Returns
    -------
    (main's result, the tasks' results in the order of the tasks)

    Raises
    ------
    Whatever a lane raised, once both threads have stopped (no thread outlives the call): ``main``'s
    error when the worker is done with its current task, a task's error when both threads are.
    """
    if not overlap:
        return main(), [task() for task in side()]
    tasks, results, stop, lock = enumerate(side()), {}, threading.Event(), threading.Lock()

    def pull() -> None:
        while not stop.is_set():  # a lane failed: the rest of the tasks would be thrown away
            with lock:  # one generator, two threads
                k, task = next(tasks, (None, None))
            if task is None:
                return
            try:
                results[k] = task()
            except BaseException:
                stop.set()
                raise

    def worker(budget: int | None) -> None:
        with thread_limits(budget):
            pull()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lane") as pool:
        future = pool.submit(worker, current_budget())
        try:
            result = main()
            pull()
        except BaseException:
            stop.set()
            if future.exception() is not None:  # waits for the worker's current task
                log.error("the side lane failed too: %r", future.exception())
            raise
        future.result()
    return result, [results[k] for k in sorted(results)]
