"""Resumable sweeps: a job's identity is a hash of the config parts that change its result.

At job start we look in the MLflow experiment for a run tagged with the same hash:
FINISHED means done (skip it and return its objective); RUNNING with a dead process on this
host means a killed earlier attempt, which is marked KILLED so that no run stays RUNNING.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

#: Config keys that determine a grid job's result (paths, tracking and hydra do not).
RESULT_KEYS = ("data", "split", "llm_split", "features", "selector", "classifier", "assessor", "seed", "grid")
#: Keys inside those that only say *where* things are cached, not what is computed.
_IGNORED_LEAVES = ("cache_dir", "root", "num_threads", "n_jobs")

TAG_HASH = "grid.config_hash"
TAG_PID = "grid.pid"
#: A combination whose selector cannot pick a reference set on the data (the value says why).
TAG_INFEASIBLE = "grid.infeasible"
TAG_HOST = "grid.host"


def _strip(node):
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in sorted(node.items()) if k not in _IGNORED_LEAVES}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def config_hash(cfg: DictConfig) -> str:
    """Stable 16-hex hash of the result-determining part of a job config."""
    part = {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
            for k in RESULT_KEYS if k in cfg}
    text = json.dumps(_strip(part), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finished_run(tracker, h: str):
    """The newest FINISHED run with hash ``h``, after ending stale RUNNING ones; None if absent.

    Only an MLflow tracker can resume; with ``tracking=none`` nothing is ever skipped.
    """
    if not hasattr(tracker, "_setup"):
        return None
    mlflow = tracker._setup()
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    exp = mlflow.get_experiment_by_name(tracker.experiment)
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`{TAG_HASH}` = '{h}'",
                              order_by=["attributes.start_time DESC"])
    host = socket.gethostname()
    for r in runs:
        if r.info.status == "RUNNING":
            pid = int(r.data.tags.get(TAG_PID, "-1"))
            if r.data.tags.get(TAG_HOST) == host and not _pid_alive(pid):
                log.warning("run %s (hash %s) was left RUNNING by dead process %d: marking it KILLED",
                            r.info.run_id, h, pid)
                client.set_terminated(r.info.run_id, status="KILLED")
    for r in runs:
        if r.info.status == "FINISHED":
            return r
    return None


def end_stale_runs(tracker) -> int:
    """Mark every RUNNING run of the experiment whose process on this host is dead as KILLED."""
    if not hasattr(tracker, "_setup"):
        return 0
    mlflow = tracker._setup()
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    exp = mlflow.get_experiment_by_name(tracker.experiment)
    host, n = socket.gethostname(), 0
    for r in client.search_runs([exp.experiment_id], filter_string="attributes.status = 'RUNNING'"):
        pid = int(r.data.tags.get(TAG_PID, "-1"))
        if r.data.tags.get(TAG_HOST) == host and not _pid_alive(pid):
            client.set_terminated(r.info.run_id, status="KILLED")
            n += 1
    return n


def job_tags(h: str) -> dict[str, str]:
    return {TAG_HASH: h, TAG_PID: str(os.getpid()), TAG_HOST: socket.gethostname()}
