"""The one wrapper every task runs in: a tracked, timed run, and the metric sweeps optimise.

As lightning-hydra-template's ``task_wrapper`` and ``get_metric_value``: a task is a function
``task(cfg, run) -> dict of metrics``; :func:`task_wrapper` opens the configured tracking run around
it (``cfg.tracking``, run name ``cfg.run_name`` or the task's own), logs its wall time as
``time/task_s``, and ends the run FAILED on an exception or KILLED on Ctrl-C / SIGTERM.
:func:`get_metric_value` picks ``cfg.optimized_metric`` out of the returned metrics for Hydra
sweepers.
"""
from __future__ import annotations

import functools
import logging
import math
import time
from typing import Any, Callable, Mapping

from assessors.errors import ConfigError
from assessors.tasks.config import plain, tracker_from_cfg
from assessors.tracking import RunLogger

log = logging.getLogger(__name__)

Task = Callable[[Any, RunLogger], dict]


def task_wrapper(name: str, tags: Callable[[Any], Mapping[str, str]] | None = None) -> Callable[[Task], Callable]:
    """Decorate ``task(cfg, run) -> metrics`` into ``task(cfg) -> metrics`` inside a tracking run.

    Parameters
    ----------
    name : str
        Run name when the config sets no ``run_name``.
    tags : callable, optional
        ``cfg -> tags`` set on the run when it opens (e.g. a grid job's config hash).
    """
    def decorate(task: Task) -> Callable:
        @functools.wraps(task)
        def wrapped(cfg) -> dict:
            tracker = tracker_from_cfg(cfg)
            t0 = time.perf_counter()
            params = plain(cfg, resolve=False)  # unresolved: a logged ${oc.env:...} names the variable, not its value
            with tracker.start_run(cfg.get("run_name") or name, params, tags=dict(tags(cfg)) if tags else None) as run:
                try:
                    metrics = task(cfg, run)
                except KeyboardInterrupt:
                    # Ctrl-C and SIGTERM (tracking.sigterm_as_interrupt): the user stopped it, not a bug
                    run.end("KILLED")
                    raise
                run.log_metrics({"time/task_s": time.perf_counter() - t0})
            log.info("%s finished in %.1fs", name, time.perf_counter() - t0)
            return metrics

        return wrapped

    return decorate


def get_metric_value(metrics: Mapping[str, Any] | None, metric_name: str | None) -> float | None:
    """The value of ``metric_name`` in a task's metrics (None when no metric is optimised).

    Raises
    ------
    ConfigError
        ``metric_name`` is not among the metrics the task returned.
    """
    if metric_name is None:
        return None
    metrics = metrics or {}
    if metric_name not in metrics:
        numeric = sorted(k for k, v in metrics.items() if isinstance(v, (int, float)))
        raise ConfigError(f"optimized_metric={metric_name!r} is not a metric of this task; it returned "
                          f"{numeric[:30]}{' ...' if len(numeric) > 30 else ''}: set optimized_metric to one of them")
    value = float(metrics[metric_name])
    if math.isnan(value):
        log.warning("optimized metric %s is NaN", metric_name)
    return value
