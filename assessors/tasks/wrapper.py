"""The one wrapper every task runs in: a tracked, timed run, and the metric sweeps optimise.

As lightning-hydra-template's ``task_wrapper`` and ``get_metric_value``: a task is a function
``task(cfg, run) -> dict of metrics``; :func:`task_wrapper` opens the configured tracking run around
it (``cfg.tracking``, run name ``cfg.run_name`` or the task's own), logs its wall time as
``time/task_s``, and ends the run FAILED on an exception or KILLED on Ctrl-C / SIGTERM. Every table,
text and figure the task logs is also written to the run folder (:class:`RunFolderCopy`), with or
without tracking, and the headline of its Markdown report is printed. :func:`get_metric_value` picks
``cfg.optimized_metric`` out of the returned metrics for Hydra sweepers.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from assessors.errors import ConfigError
from assessors.tasks.config import plain, tracker_from_cfg
from assessors.tracking import RunLogger

log = logging.getLogger(__name__)

Task = Callable[[Any, RunLogger], dict]

#: The paper's generic assessor (``assessor=paper_generic``): its method name and config node in ``train.py``.
PAPER = "paper_generic"
#: What the tables and metrics call an assessor, by the module of its ``_target_`` where the two differ.
METHOD_NAMES = {"generic": PAPER}


def method_name(cfg) -> str | None:
    """The configured assessor's name in tables, metrics and run names (``latent``, ``paper_generic``,
    ``latent_stream``): the module of ``cfg.assessor._target_`` (None without an assessor)."""
    node = cfg.get("assessor") if cfg is not None else None
    target = node.get("_target_") if node is not None else None
    if not target:
        return None
    module = str(target).rsplit(".", 2)[-2]
    return METHOD_NAMES.get(module, module)


def _choice(cfg, group: str) -> str | None:
    """The option chosen for config group ``group`` (Hydra's record; None outside a Hydra run)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return HydraConfig.get().runtime.choices.get(group)


def run_name(cfg, name: str) -> str:
    """``<task> <assessor> <data> <split> s<seed>``, e.g. ``train latent open_llm_leaderboard_v2 random s0``:
    what ran, so that runs of one experiment can be told apart by name."""
    data = _choice(cfg, "data") or (str(cfg.data.get("_target_", "")).rsplit(".", 1)[-1].removeprefix("load_")
                                    if cfg.get("data") is not None else None)
    parts = [cfg.get("run_name") or name, method_name(cfg), data, _choice(cfg, "split"),
             f"s{cfg.seed}" if cfg.get("seed") is not None else None]
    return " ".join(str(p) for p in parts if p)


def run_folder() -> Path | None:
    """Hydra's output folder of this run (None outside a Hydra run)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return Path(HydraConfig.get().runtime.output_dir)


class RunFolderCopy:
    """A run that also writes every table, text, dict and figure it logs under ``folder``.

    Everything else goes to the wrapped run unchanged; ``written`` lists the files, in order.
    """

    def __init__(self, run: RunLogger, folder: Path | None) -> None:
        self._run, self.folder, self.written = run, folder, []

    def __getattr__(self, attr):
        return getattr(self._run, attr)

    def _path(self, path: str) -> Path | None:
        if self.folder is None:
            return None
        out = self.folder / path
        out.parent.mkdir(parents=True, exist_ok=True)
        self.written.append(out)
        return out

    def log_table(self, df, path: str) -> None:
        self._run.log_table(df, path)
        out = self._path(path)
        if out is not None:
            (df.to_csv(out, index=True) if out.suffix == ".csv" else df.to_parquet(out))

    def log_text(self, text: str, path: str) -> None:
        from assessors.secrets import redact_text

        self._run.log_text(text, path)
        out = self._path(path)
        if out is not None:
            out.write_text(redact_text(text))

    def log_dict(self, data: dict, path: str) -> None:
        from assessors.secrets import redact

        self._run.log_dict(data, path)
        out = self._path(path)
        if out is not None:
            out.write_text(json.dumps(redact(data), indent=1, default=str))

    def log_figure(self, fig, path: str) -> None:
        out = self._path(path)
        if out is None:
            self._run.log_figure(fig, path)
            return
        # rendered once, into the run folder; the tracked run copies that file
        fig.savefig(out)
        self._run.log_figure_file(fig, str(out), path)


def report_headline(text: str, max_lines: int = 30) -> str:
    """The head of a Markdown report: up to the end of its first table (at most ``max_lines`` lines)."""
    lines, out, in_table = text.splitlines(), [], False
    for line in lines[:max_lines]:
        if in_table and not line.startswith("|"):
            break
        in_table = in_table or line.startswith("|")
        out.append(line)
    return "\n".join(out).rstrip()


def log_the_log(run: RunLogger) -> None:
    """Log the run's log file (the full text of every warning the console shortened) as ``logs/<name>``."""
    from assessors.reporting.console import log_file

    path = log_file()
    if path is not None and path.exists():
        run.log_artifact(str(path), "logs")


def print_reports(folder: RunFolderCopy) -> None:
    """Print the headline of each Markdown report the task wrote and where the report is."""
    for path in folder.written:
        if path.name.endswith("report.md"):
            print(f"\n{report_headline(path.read_text())}\n\nFull report: {path}")
    from assessors.reporting.console import log_file, warnings_shown

    log, n = log_file(), warnings_shown()
    if folder.written:
        print(f"Run folder: {folder.folder} ({len(folder.written)} tables, texts and figures"
              + (f"; {log.name}: the full log" if log is not None else "") + ")")
    if n and log is not None:
        print(f"{n} warning(s) above, shortened; full text in {log}")


def task_wrapper(name: str, tags: Callable[[Any], Mapping[str, str]] | None = None,
                 describe: bool = False) -> Callable[[Task], Callable]:
    """Decorate ``task(cfg, run) -> metrics`` into ``task(cfg) -> metrics`` inside a tracking run.

    Parameters
    ----------
    name : str
        Run name when the config sets no ``run_name``.
    tags : callable, optional
        ``cfg -> tags`` set on the run when it opens (e.g. a grid job's config hash).
    describe : bool
        Name the run after what ran (:func:`run_name`: assessor, data, split, seed).
    """
    def decorate(task: Task) -> Callable:
        @functools.wraps(task)
        def wrapped(cfg) -> dict:
            tracker = tracker_from_cfg(cfg)
            t0 = time.perf_counter()
            params = plain(cfg, resolve=False)  # unresolved: a logged ${oc.env:...} names the variable, not its value
            title = run_name(cfg, name) if describe else (cfg.get("run_name") or name)
            with tracker.start_run(title, params, tags=dict(tags(cfg)) if tags else None) as tracked:
                run = RunFolderCopy(tracked, run_folder())
                try:
                    metrics = task(cfg, run)
                except KeyboardInterrupt:
                    # Ctrl-C and SIGTERM (tracking.sigterm_as_interrupt): the user stopped it, not a bug
                    run.end("KILLED")
                    raise
                run.log_metrics({"time/task_s": time.perf_counter() - t0})
                log_the_log(tracked)
            print_reports(run)
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
