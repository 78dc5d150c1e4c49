"""What the Hydra entry points call: logging setup, the configured task, and one line per expected error."""
from __future__ import annotations

import logging
import os
import sys

from hydra.utils import instantiate
from omegaconf import DictConfig

from assessors.errors import AssessorsError

log = logging.getLogger(__name__)

#: Exit status of a run stopped by an expected error (a config, data, connection or size problem).
EXIT_EXPECTED = 2


def run_task(cfg: DictConfig) -> float | None:
    """Run ``cfg.task`` (a partial callable taking the config) and return its optimised metric.

    The return value is what Hydra sweepers optimise: the task's metric named by
    ``cfg.optimized_metric`` (None when it is null or unset). An expected error (:func:`expected_error`)
    of a ``train.py``/``predict.py`` run prints one line and exits with status 2; its traceback goes to
    the log file (and to the console with ``verbose=true`` or ``ASSESSORS_VERBOSE=1``). A multirun job
    or a call from Python re-raises it (a sweep records the failed job as before).
    """
    from assessors.reporting.console import set_verbose, show_project_info
    from assessors.secrets import protect_logging
    from assessors.tasks.config import sweep_jobs
    from assessors.tasks.wrapper import get_metric_value
    from assessors.threads import set_outer_jobs

    set_verbose(bool(cfg.get("verbose", False)))
    if _hydra_mode() == "MULTIRUN":
        show_project_info()  # a sweep's jobs say what they run and skip
    # MLflow's records then reach the run's log file (and the console only from ERROR up) instead of
    # its own stderr handler
    os.environ.setdefault("MLFLOW_CONFIGURE_LOGGING", "false")
    for noisy in ("sentence_transformers", "alembic", "mlflow", "lightning", "pytorch_lightning"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.captureWarnings(True)  # Python warnings of libraries: the log file, not the console
    protect_logging()  # HTTP clients quiet, URL credentials cut from every log line
    set_outer_jobs(sweep_jobs())  # a joblib sweep's jobs share the cores: each fit gets its share
    try:
        task = instantiate(cfg.task)
        return get_metric_value(task(cfg), cfg.get("optimized_metric"))
    except Exception as exc:  # noqa: BLE001 (only expected errors are handled; the rest re-raised)
        err = expected_error(exc)
        if err is None or _hydra_mode() != "RUN":
            raise
        stop(err, exc)


def expected_error(exc: BaseException) -> BaseException | None:
    """The error a user can fix behind ``exc`` (itself or a cause, e.g. inside Hydra's instantiation
    error): the project's own errors (:class:`~assessors.errors.AssessorsError`), a connection
    failure, a missing file. None for anything else (a bug: its traceback is shown)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (AssessorsError, ConnectionError, FileNotFoundError)) or _is_connection_error(exc):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _is_connection_error(exc: BaseException) -> bool:
    """HTTP clients' connection failures (httpx, openai, requests), which do not derive from ConnectionError."""
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"ConnectError", "APIConnectionError", "ConnectTimeout", "NetworkError"})


def stop(err: BaseException, exc: BaseException) -> None:
    """Log ``exc`` with its traceback (the log file; the console only when verbose), print one line
    naming ``err`` on stderr and exit with :data:`EXIT_EXPECTED`."""
    from assessors.reporting.console import FILE_ONLY, log_file, verbose

    log.error("%s: %s", type(err).__name__, err, exc_info=exc, extra={FILE_ONLY: True})
    where = log_file()
    line = " ".join(f"{type(err).__name__}: {err}".split())
    if not verbose():
        print(line + (f"  (traceback: {where}; verbose=true shows it here)" if where else ""), file=sys.stderr)
    sys.exit(EXIT_EXPECTED)


def _hydra_mode() -> str | None:
    """``RUN`` in a ``train.py``/``predict.py`` run, ``MULTIRUN`` in a sweep's job, None outside Hydra
    (a call from Python)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    mode = HydraConfig.get().mode
    return getattr(mode, "name", None if mode is None else str(mode))
