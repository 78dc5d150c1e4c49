"""Resumable sweeps: a job's identity is a hash of the config parts that change its result.

At job start we look in the MLflow experiment for a run tagged with the same hash:
FINISHED means done (skip it and return its objective); RUNNING with a dead process on this
host means a killed earlier attempt, which :func:`assessors.tracking_store.end_stale_runs` (the rule
every task start applies) marks KILLED so that no run stays RUNNING.
"""
from __future__ import annotations

import hashlib
import json
import logging

from typing import Any, Mapping, Sequence

from assessors.tracking_store import TAG_HOST, TAG_PID, end_stale_runs, process_tags  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)

#: Config keys that determine a grid job's result (paths, tracking and hydra do not).
RESULT_KEYS = ("data", "split", "llm_split", "features", "selector", "classifier", "assessor", "seed", "grid")
#: Keys inside those that only say *where* things are cached, not what is computed.
_IGNORED_LEAVES = ("cache_dir", "root", "num_threads", "n_jobs")

TAG_HASH = "grid.config_hash"
#: A combination whose selector cannot pick a reference set on the data (the value says why).
TAG_INFEASIBLE = "grid.infeasible"


def _strip(node: Any) -> Any:
    """``node`` as plain dicts and lists (values resolved by reading them) without the ignored leaves."""
    if isinstance(node, Mapping):
        return {k: _strip(v) for k, v in sorted(node.items()) if k not in _IGNORED_LEAVES}
    if isinstance(node, Sequence) and not isinstance(node, (str, bytes)):
        return [_strip(v) for v in node]
    return node


def config_hash(cfg: Mapping) -> str:
    """Stable 16-hex hash of the result-determining part (:data:`RESULT_KEYS`) of a job's settings,
    any mapping of plain values or nested mappings and sequences."""
    part = {k: cfg[k] for k in RESULT_KEYS if k in cfg}
    text = json.dumps(_strip(part), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def finished_run(tracker, h: str):
    """The newest FINISHED run with hash ``h``, after ending stale RUNNING ones; None if absent.

    Only an MLflow tracker can resume; with ``tracking=none`` nothing is ever skipped.
    """
    if not hasattr(tracker, "_setup"):
        return None
    end_stale_runs(tracker, f"tags.`{TAG_HASH}` = '{h}'")
    mlflow = tracker._setup()
    from mlflow.tracking import MlflowClient

    exp = mlflow.get_experiment_by_name(tracker.experiment)
    runs = MlflowClient().search_runs([exp.experiment_id], filter_string=f"tags.`{TAG_HASH}` = '{h}'",
                                      order_by=["attributes.start_time DESC"])
    for r in runs:
        if r.info.status == "FINISHED":
            return r
    return None


def job_tags(h: str) -> dict[str, str]:
    """Tags of a grid job's run (the process tags are set on every run by the tracker)."""
    return {TAG_HASH: h, **process_tags()}
