"""Two lanes of a task at once, in threads of this process: one function and one stream of results.

``train.py``'s configured assessor (its fit, trust parts and serving) runs mostly on one thread, and
the baseline columns need only the prepared data and the reference set: run side by side, the
second core stops idling. Threads, not processes: XGBoost, BLAS and torch release the GIL, and a
thread dies with the process (a spawned worker once outlived a SIGKILLed ``train.py``, holding its pipes).
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
V = TypeVar("V")


def run_lanes(main: Callable[[], T], side: Callable[[], Iterable[V]], overlap: bool = True) -> tuple[T, list[V]]:
    """``(main(), list(side()))``, with ``side`` drained in a worker thread while ``main`` runs here.

    Parameters
    ----------
    main : callable
        Runs in the calling thread (its progress and logs stay where they were).
    side : callable returning an iterable
        Its items are produced in one worker thread; between two items the worker checks whether
        ``main`` failed, and stops there.
    overlap : bool
        False: ``main()`` then ``list(side())``, in this thread (one core, or debugging).

    Returns
    -------
    (main's result, side's items in order)

    Raises
    ------
    Whatever a lane raised, once both lanes have stopped (no thread outlives the call): ``main``'s
    error as soon as the side lane reaches its next item, the side lane's error when ``main`` is done.
    """
    if not overlap:
        return main(), list(side())
    stop = threading.Event()

    def drain() -> list[V]:
        items, it = [], iter(side())
        while not stop.is_set():  # main failed: the rest of this lane would be thrown away
            try:
                items.append(next(it))
            except StopIteration:
                break
        return items

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lane") as pool:
        future = pool.submit(drain)
        try:
            result = main()
        except BaseException:
            stop.set()
            if future.exception() is not None:  # waits for the side lane's current item
                log.error("the side lane failed too: %r", future.exception())
            raise
        return result, future.result()
