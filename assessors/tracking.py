"""Experiment tracking (``conf/tracking/``): MLflow with an embedded SQLite store by default.

Every task runs inside ``with tracker.start_run(name, params) as run:`` (``params``: the config as
plain containers, logged flattened). The run object logs
metrics, figures, tables and text; on an exception (including Ctrl-C) the MLflow run ends
as FAILED, never left RUNNING.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from assessors.tracking_store import (TAG_HOST, TAG_PID, end_stale_runs, ensure_experiment, is_stale,  # noqa: F401
                                      pid_alive, process_tags, store_lock)

log = logging.getLogger(__name__)


def flatten_config(cfg: dict | list, prefix: str = "") -> dict[str, str]:
    """Flatten a config (plain containers, interpolations unresolved) to ``{"a.b.c": "value"}``
    with secrets redacted.

    Keys that name secrets (``api_key``, ``token``, ...) are replaced by ``"***"``, except
    ``*_env`` keys, which only hold the *name* of an environment variable; credentials in URLs
    are removed (:func:`assessors.secrets.redact`).
    """
    from assessors.secrets import redact

    if not prefix:
        if not isinstance(cfg, (dict, list)):
            raise TypeError(f"flatten_config takes plain containers, got {type(cfg).__name__}: convert the config "
                            "first (OmegaConf.to_container(cfg, resolve=False))")
        cfg = redact(cfg)
    out: dict[str, str] = {}
    if isinstance(cfg, dict):
        for k, v in cfg.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, (dict, list)) and v and not (isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v)):
                out.update(flatten_config(v, key))
            else:
                out[key] = json.dumps(v) if isinstance(v, list) else str(v)
    elif isinstance(cfg, list):
        for i, v in enumerate(cfg):
            out.update(flatten_config(v, f"{prefix}.{i}"))
    return out


def git_commit() -> str:
    try:
        root = Path(__file__).resolve().parent.parent
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class RunLogger:
    """What a task logs to. The base class records to memory (used by tests and ``none``)."""

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}
        self.params: dict[str, str] = {}
        self.tags: dict[str, str] = {}
        self.artifacts: dict[str, Any] = {}
        self.run_id: str | None = None
        self.status: str | None = None  # set when ended early (end())

    def log_params(self, params: dict[str, Any]) -> None:
        self.params.update({k: str(v) for k, v in params.items()})

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.metrics.update({k: float(v) for k, v in metrics.items()})

    def set_tags(self, tags: dict[str, str]) -> None:
        self.tags.update(tags)

    def log_figure(self, fig, path: str) -> None:
        self.artifacts[path] = fig

    def log_figure_file(self, fig, local_path: str, path: str) -> None:
        """Log ``fig``, already saved at ``local_path``, as ``path`` (rendered once, not again)."""
        self.artifacts[path] = fig

    def log_table(self, df: pd.DataFrame, path: str) -> None:
        self.artifacts[path] = df

    def log_text(self, text: str, path: str) -> None:
        self.artifacts[path] = text

    def log_dict(self, data: dict, path: str) -> None:
        self.artifacts[path] = data

    def log_artifact(self, local_path: str, artifact_path: str | None = None) -> None:
        self.artifacts[artifact_path or os.path.basename(local_path)] = local_path

    def log_model(self, python_model, name: str, **kwargs) -> str | None:
        self.artifacts[name] = python_model
        return None

    def end(self, status: str) -> None:
        """End the run now with ``status`` (``KILLED``, ``FAILED``); the run context then leaves it so."""
        self.status = status

    @property
    def location(self) -> str:
        return "(not tracked)"


class NullTracker:
    """Tracker that keeps everything in memory (``tracking=none``)."""

    @contextlib.contextmanager
    def start_run(self, run_name: str, params: dict | None = None, tags: dict | None = None) -> Iterator[RunLogger]:
        run = RunLogger()
        if params is not None:
            run.log_params(flatten_config(params))
        yield run


class MlflowRun(RunLogger):
    """A live MLflow run."""

    def __init__(self, mlflow_module, run, tracker: "MlflowTracker") -> None:
        super().__init__()
        self._mlflow = mlflow_module
        self.run_id = run.info.run_id
        self.experiment_id = run.info.experiment_id
        self._tracker = tracker

    def log_params(self, params):
        params = _redacted(params)
        super().log_params(params)
        # MLflow caps a param value at 6000 characters and one batch at 100 params
        items = [(k[:250], str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self._mlflow.log_params(dict(items[i:i + 100]))

    def log_metrics(self, metrics, step=None):
        super().log_metrics(metrics, step)
        clean = {re.sub(r"[^\w\-. /]", "_", k): float(v) for k, v in metrics.items() if v == v}  # drop NaN
        if clean:
            self._mlflow.log_metrics(clean, step=step)

    def set_tags(self, tags):
        tags = _redacted(tags)
        super().set_tags(tags)
        self._mlflow.set_tags(tags)

    def log_figure(self, fig, path):
        self._mlflow.log_figure(fig, path)

    def log_figure_file(self, fig, local_path, path):
        if Path(local_path).name != Path(path).name:  # the artifact takes the name of the file copied
            return self.log_figure(fig, path)
        self._mlflow.log_artifact(str(local_path), str(Path(path).parent) if str(Path(path).parent) != "." else None)

    def log_table(self, df, path):
        with tempfile.TemporaryDirectory() as d:
            local = Path(d) / Path(path).name
            (df.to_csv(local, index=True) if local.suffix == ".csv" else df.to_parquet(local))
            self._mlflow.log_artifact(str(local), str(Path(path).parent) if str(Path(path).parent) != "." else None)

    def log_text(self, text, path):
        from assessors.secrets import redact_text

        self._mlflow.log_text(redact_text(text), path)

    def log_dict(self, data, path):
        from assessors.secrets import redact

        self._mlflow.log_dict(redact(data), path)

    def log_artifact(self, local_path, artifact_path=None):
        self._mlflow.log_artifact(local_path, artifact_path)

    def log_model(self, python_model, name, **kwargs):
        info = self._mlflow.pyfunc.log_model(name=name, python_model=python_model, **kwargs)
        return info.model_uri

    def end(self, status):
        super().end(status)
        self._mlflow.end_run(status)  # mlflow's context manager leaves an ended run alone

    @property
    def location(self) -> str:
        from assessors.secrets import redact_text

        # printed and logged: a server URI may carry a password
        return redact_text(f"run {self.run_id} in experiment {self._tracker.experiment!r} at {self._tracker.uri} "
                           f"(open with: {self._tracker.ui_command()})")


class MlflowTracker:
    """MLflow tracking; embedded SQLite by default, any tracking URI for a server.

    Parameters
    ----------
    tracking_uri : str or None
        None for the embedded store ``sqlite:///<db_path>``; otherwise e.g. ``http://host:5000``.
    db_path, artifact_root : str
        SQLite file and artifact directory of the embedded store.
    experiment : str
        MLflow experiment name.
    log_model : bool
        Whether tasks log fitted models as pyfunc models.
    """

    def __init__(self, tracking_uri: str | None = None, db_path: str = "outputs/mlflow.db",
                 artifact_root: str = "outputs/mlartifacts", experiment: str = "assessors", log_model: bool = True):
        self.tracking_uri = tracking_uri
        self.db_path = db_path
        self.artifact_root = artifact_root
        self.experiment = experiment
        self.log_model = log_model

    @property
    def uri(self) -> str:
        return self.tracking_uri or f"sqlite:///{Path(self.db_path).resolve()}"

    def ui_command(self) -> str:
        return f"mlflow ui --backend-store-uri {self.uri}"

    def _setup(self):
        import mlflow

        # mlflow logs noisy alembic migrations when it creates a SQLite store
        logging.getLogger("alembic").setLevel(logging.WARNING)
        if self.tracking_uri is None:
            Path(self.db_path).parent.mkdir(parents=True, exist_ok=True)
        else:
            from assessors.tracking_server import bound_client_retries, check_reachable

            check_reachable(self.tracking_uri)  # fail now, naming the URI, not after minutes of retries
            bound_client_retries()  # and, if it goes down later, after seconds
        mlflow.set_tracking_uri(self.uri)
        with store_lock(self):
            ensure_experiment(mlflow, self.experiment,
                              None if self.tracking_uri else Path(self.artifact_root).resolve().as_uri())
        mlflow.set_experiment(self.experiment)
        return mlflow

    @contextlib.contextmanager
    def start_run(self, run_name: str, params: dict | None = None, tags: dict | None = None) -> Iterator[MlflowRun]:
        """Open a run named ``run_name``; ``params`` (the config as plain containers, interpolations
        unresolved) are logged flattened and redacted (:func:`flatten_config`)."""
        mlflow = self._setup()
        end_stale_runs(self)
        # mlflow's own context manager ends the run FAILED on any exception, KeyboardInterrupt
        # included; SIGTERM (kill, job schedulers) is turned into one so it is covered too. SIGKILL
        # cannot be caught: the process tags let the next start end such a run (end_stale_runs)
        with sigterm_as_interrupt(), mlflow.start_run(run_name=run_name, tags=process_tags()) as active:
            run = MlflowRun(mlflow, active, self)
            run.set_tags({"git_commit": git_commit(), **(tags or {})})
            if params is not None:
                run.log_params(flatten_config(params))
            yield run


@contextlib.contextmanager
def sigterm_as_interrupt():
    """SIGTERM -> KeyboardInterrupt, so an MLflow run ends KILLED/FAILED instead of RUNNING."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. some launchers): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _redacted(items: dict) -> dict:
    """Params or tags with secrets removed (key-like names masked, URL credentials cut)."""
    from assessors.secrets import redact

    return {k: redact(v if isinstance(v, str) else str(v), k) for k, v in items.items()}
