"""The tracking store's housekeeping: no run left RUNNING, and a fresh store created once.

Every run is tagged with the process that owns it; :func:`end_stale_runs` (called at every task
start by :meth:`assessors.tracking.MlflowTracker.start_run`, and by grid sweeps) ends RUNNING runs
of any experiment in the store whose process is gone. :func:`store_lock` serialises the creation of an
embedded SQLite store.
"""
from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)


#: Tags naming the process that owns a run: a RUNNING run whose process is gone was killed.
TAG_PID = "process.pid"
TAG_HOST = "process.host"
#: Older runs carry the grid's tags instead.
_PROCESS_TAGS = ((TAG_PID, TAG_HOST), ("grid.pid", "grid.host"))


def process_tags() -> dict[str, str]:
    """Tags identifying this process (set on every run at creation)."""
    import socket

    return {TAG_PID: str(os.getpid()), TAG_HOST: socket.gethostname()}


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (a pid we may not signal counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(run) -> bool:
    """A RUNNING MLflow run owned by a process of this host that no longer exists.

    Runs without process tags, or from another host, are never called stale: their owner may live.
    """
    import socket

    if run.info.status != "RUNNING":
        return False
    tags = run.data.tags
    for pid_tag, host_tag in _PROCESS_TAGS:
        if pid_tag in tags:
            try:
                pid = int(tags[pid_tag])
            except ValueError:
                return False
            return tags.get(host_tag) == socket.gethostname() and pid != os.getpid() and not pid_alive(pid)
    return False


def end_stale_runs(tracker, filter_string: str | None = None) -> int:
    """Mark RUNNING runs whose process died as KILLED; returns how many.

    Every task start calls this (:meth:`MlflowTracker.start_run`), so a run killed by SIGKILL or
    a power cut is closed by the next tracked run in the same store, whichever experiment either
    belongs to. ``filter_string`` narrows the search to ``tracker``'s experiment (e.g. to one grid
    combination).
    """
    if not hasattr(tracker, "_setup"):
        return 0
    mlflow = tracker._setup()
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    if filter_string:
        exp = mlflow.get_experiment_by_name(tracker.experiment)
        ids = [] if exp is None else [exp.experiment_id]
    else:
        ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY)]
    if not ids:
        return 0
    query = "attributes.status = 'RUNNING'" + (f" and {filter_string}" if filter_string else "")
    n = 0
    for r in client.search_runs(ids, filter_string=query, max_results=1000):
        if is_stale(r):
            log.warning("run %s (%s) was left RUNNING by a process that no longer exists: marking it KILLED",
                        r.info.run_id, r.info.run_name)
            client.set_terminated(r.info.run_id, status="KILLED")
            n += 1
    return n


_READY_STORES: set[str] = set()


@contextlib.contextmanager
def store_lock(tracker) -> Iterator[None]:
    """Hold a file lock beside an embedded SQLite store while it is created and migrated.

    MLflow creates and migrates a fresh SQLite store on first use; two processes doing it at once
    fail (``duplicate column name``, ``table ... already exists``). The first use in each process
    waits for the lock; later uses skip it. Server stores need no lock (the server migrates).
    """
    if tracker.tracking_uri is not None or tracker.uri in _READY_STORES:
        yield
        return
    from filelock import FileLock

    with FileLock(str(Path(tracker.db_path).resolve()) + ".lock", timeout=600):
        yield
    _READY_STORES.add(tracker.uri)


def ensure_experiment(mlflow, name: str, artifact_location: str | None) -> None:
    """Create experiment ``name`` unless it exists (another process creating it at once is fine)."""
    from mlflow.exceptions import MlflowException

    if mlflow.get_experiment_by_name(name) is not None:
        return
    try:
        mlflow.create_experiment(name, artifact_location=artifact_location)
    except MlflowException:
        if mlflow.get_experiment_by_name(name) is None:
            raise
