"""Tracking store robustness: stale RUNNING runs of dead processes are ended; concurrent first runs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from assessors.tracking import MlflowTracker
from assessors.tracking_store import TAG_HOST, TAG_PID, process_tags

ROOT = Path(__file__).resolve().parent.parent
DEAD = 2 ** 22 + 12345  # beyond the default pid_max: no such process


def test_any_task_start_ends_runs_of_dead_processes(tmp_path):
    import socket

    tracker = MlflowTracker(experiment="e", db_path=str(tmp_path / "m.db"), artifact_root=str(tmp_path / "a"))
    mlflow = tracker._setup()
    exp = mlflow.get_experiment_by_name("e").experiment_id
    client = MlflowClient()
    dead = client.create_run(exp, tags={TAG_PID: str(DEAD), TAG_HOST: socket.gethostname()}).info.run_id
    legacy = client.create_run(exp, tags={"grid.pid": str(DEAD), "grid.host": socket.gethostname()}).info.run_id
    alive = client.create_run(exp, tags={TAG_PID: "1", TAG_HOST: socket.gethostname()}).info.run_id
    other_host = client.create_run(exp, tags={TAG_PID: str(DEAD), TAG_HOST: "elsewhere"}).info.run_id
    untagged = client.create_run(exp).info.run_id
    with tracker.start_run("next") as run:
        assert client.get_run(run.run_id).data.tags[TAG_PID] == process_tags()[TAG_PID]
    status = {r: client.get_run(r).info.status for r in (dead, legacy, alive, other_host, untagged)}
    assert status == {dead: "KILLED", legacy: "KILLED", alive: "RUNNING", other_host: "RUNNING",
                      untagged: "RUNNING"}


FIRST_RUN = """
import sys
from assessors.tracking import MlflowTracker
out = sys.argv[1]
t = MlflowTracker(experiment="race", db_path=out + "/mlflow.db", artifact_root=out + "/mlartifacts")
with t.start_run(sys.argv[2]) as run:
    run.log_metrics({"x": 1.0})
    run.log_params({"who": sys.argv[2]})
"""


@pytest.mark.slow
def test_concurrent_first_runs_into_a_fresh_store(tmp_path):
    """Three processes start their first run into the same fresh outputs/ at once: all succeed."""
    script = tmp_path / "first.py"
    script.write_text(FIRST_RUN)
    out = tmp_path / "outputs"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, str(script), str(out), f"p{i}"], env=env, stderr=subprocess.PIPE,
                              text=True) for i in range(3)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], "\n".join(e[-2000:] for e in errors)
    client = MlflowClient(tracking_uri=f"sqlite:///{out / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("race").experiment_id])
    assert sorted(r.data.params["who"] for r in runs) == ["p0", "p1", "p2"]
    assert all(r.info.status == "FINISHED" for r in runs)


def test_a_start_in_one_experiment_ends_dead_runs_of_another(tmp_path):
    """A run SIGKILLed in experiment "a" is closed by the next tracked start in experiment "b" of the same store."""
    import socket

    store = dict(db_path=str(tmp_path / "m.db"), artifact_root=str(tmp_path / "a"))
    mlflow = MlflowTracker(experiment="a", **store)._setup()
    client = MlflowClient()
    exp_a = mlflow.get_experiment_by_name("a").experiment_id
    dead = client.create_run(exp_a, tags={TAG_PID: str(DEAD), TAG_HOST: socket.gethostname()}).info.run_id
    alive = client.create_run(exp_a, tags={TAG_PID: "1", TAG_HOST: socket.gethostname()}).info.run_id
    with MlflowTracker(experiment="b", **store).start_run("next"):
        pass
    assert client.get_run(dead).info.status == "KILLED"
    assert client.get_run(alive).info.status == "RUNNING"
