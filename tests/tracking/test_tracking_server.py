"""tracking=server: a tiny concurrent sweep against mlflow server + PostgreSQL; a server that is down."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assessors.errors import TrackingError
from assessors.tracking import MlflowTracker
from tests.conftest import ROOT
from tests.grid.conftest import TINY
from tests.tracking.conftest import free_port


def test_server_down_at_start_fails_at_once_naming_the_uri():
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    tracker = MlflowTracker(tracking_uri=uri, experiment="down")
    t0 = time.perf_counter()
    with pytest.raises(TrackingError, match=f"MLflow tracking server {uri} is not reachable.*tracking=mlflow"):
        with tracker.start_run("never"):
            pass
    assert time.perf_counter() - t0 < 10, "must not sit in MLflow's retry backoff"


def test_train_py_with_the_server_down_exits_with_the_uri(tmp_path, data_dir):
    uri = f"http://127.0.0.1:{free_port()}"
    out = subprocess.run([sys.executable, str(ROOT / "train.py"), "tracking=server", f"tracking.tracking_uri={uri}",
                          "data.subtasks=[bbh_navigate]", "features=success_pattern", f"paths.data_dir={data_dir}",
                          f"paths.outputs={tmp_path}/outputs"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode != 0
    assert f"MLflow tracking server {uri} is not reachable" in out.stderr


@pytest.mark.slow
def test_concurrent_sweep_logs_every_run_and_artifact_to_the_server(tmp_path, data_dir, shared_cache, mlflow_server):
    from mlflow.tracking import MlflowClient

    uri, artifact_root = mlflow_server
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", *TINY, f"paths.data_dir={data_dir}",
           f"paths.cache_dir={shared_cache}", f"paths.outputs={tmp_path}/outputs", "hydra.callbacks.grid_report.enabled=false",
           "hydra/launcher=joblib_local", "hydra.launcher.n_jobs=2", "tracking=server", f"tracking.tracking_uri={uri}",
           "selector=random,kmeans_successes", "selector.size=5,10"]  # 4 jobs, 2 at a time
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    assert not (tmp_path / "outputs" / "mlflow.db").exists(), "nothing may go to the embedded store"

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("paper_grid")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    assert len({r.data.tags["grid.config_hash"] for r in runs}) == 4
    assert {(r.data.tags["grid.selector"], r.data.tags["grid.size"]) for r in runs} == {
        (s, n) for s in ("random", "kmeans_successes") for n in ("5", "10")}
    starts = sorted((r.info.start_time, r.info.end_time) for r in runs)
    assert any(b[0] < a[1] for a, b in zip(starts, starts[1:])), "two jobs ran at the same time"
    for r in runs:
        top = {a.path for a in client.list_artifacts(r.info.run_id)}
        grid = {a.path for a in client.list_artifacts(r.info.run_id, "grid")}
        assert "reference_ids.json" in top and {"grid/auc_per_llm.csv", "grid/job_config.yaml"} <= grid
        local = client.download_artifacts(r.info.run_id, "reference_ids.json", str(tmp_path))
        ids = json.loads(Path(local).read_text())["reference_ids"]
        assert len(ids) == int(r.data.tags["grid.size"])
        assert r.data.metrics["val_auc_mean"] > 0.5
    # the server wrote them under its artifact root, one folder per run
    for r in runs:
        assert list(artifact_root.rglob(f"{r.info.run_id}/artifacts/reference_ids.json"))

    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    assert (again.stdout + again.stderr).count("already finished") == 4
    after = client.search_runs([exp.experiment_id])
    assert len(after) == 4 and not [r for r in after if r.info.status == "RUNNING"]
