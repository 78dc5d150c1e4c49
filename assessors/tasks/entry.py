"""What the Hydra entry points call: logging setup and the configured task."""
from __future__ import annotations

import logging

from hydra.utils import instantiate
from omegaconf import DictConfig

log = logging.getLogger(__name__)


def run_task(cfg: DictConfig) -> float | None:
    """Run ``cfg.task`` (a partial callable taking the config) and return its optimised metric.

    The return value is what Hydra sweepers optimise: the task's metric named by
    ``cfg.optimized_metric`` (None when it is null or unset).
    """
    from assessors.secrets import protect_logging
    from assessors.tasks.config import sweep_jobs
    from assessors.tasks.wrapper import get_metric_value
    from assessors.threads import set_outer_jobs

    for noisy in ("sentence_transformers", "alembic", "mlflow", "lightning", "pytorch_lightning"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    protect_logging()  # HTTP clients quiet, URL credentials cut from every log line
    set_outer_jobs(sweep_jobs())  # a joblib sweep's jobs share the cores: each fit gets its share
    task = instantiate(cfg.task)
    return get_metric_value(task(cfg), cfg.get("optimized_metric"))
