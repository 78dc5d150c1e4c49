"""What the Hydra entry points call: logging setup and the configured task."""
from __future__ import annotations

import logging

from hydra.utils import instantiate
from omegaconf import DictConfig

log = logging.getLogger(__name__)


def run_task(cfg: DictConfig) -> float | None:
    """Run ``cfg.task`` (a partial callable taking the config) and return its objective.

    The return value is what Hydra sweepers optimise: the task's ``objective`` metric.
    """
    from assessors.secrets import protect_logging

    for noisy in ("sentence_transformers", "alembic", "mlflow", "lightning", "pytorch_lightning"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    protect_logging()  # HTTP clients quiet, URL credentials cut from every log line
    task = instantiate(cfg.task)
    metrics = task(cfg) or {}
    obj = metrics.get("objective")
    return None if obj is None else float(obj)
