"""Real `python train.py -m` sweeps: kill half-way and resume; the Dask launcher on a local and a running cluster."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.grid.conftest import TINY, dask_cli_cluster


def _sweep_cmd(tmp_path, data_dir, cache, *extra):
    return [sys.executable, str(ROOT / "train.py"), "-m", *TINY, f"paths.data_dir={data_dir}",
            f"paths.cache_dir={cache}", f"paths.outputs={tmp_path}/outputs", "hydra.callbacks.grid_report.enabled=false",
            *extra]


def _runs(db: Path) -> list[tuple[str, str, str]]:
    """(run_id, status, config hash) of every grid run in the SQLite store."""
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as con:
        try:
            return con.execute("SELECT r.run_uuid, r.status, t.value FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                               "WHERE t.key = 'grid.config_hash'").fetchall()
        except sqlite3.OperationalError:  # tables not created yet
            return []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_sweep_resumes_without_redoing_or_losing_jobs(tmp_path, data_dir, shared_cache, sig):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cmd = _sweep_cmd(tmp_path, data_dir, shared_cache, "hydra/launcher=basic",
                     "selector=random,kmeans_successes", "selector.size=5,10,15")  # 6 jobs
    db = tmp_path / "outputs" / "mlflow.db"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline and sum(s == "FINISHED" for _, s, _ in _runs(db)) < 2:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        time.sleep(0.5)
    os.killpg(proc.pid, sig)
    proc.wait(300)  # a SIGTERM'd job closes its MLflow run first: slow on a loaded 2-core machine
    before = {h: (rid, s) for rid, s, h in _runs(db)}
    finished_before = {h: rid for h, (rid, s) in before.items() if s == "FINISHED"}
    assert 2 <= len(finished_before) < 6, "the kill must land half-way"
    if sig == signal.SIGTERM:  # the job's handler ends its run instead of leaving it RUNNING
        assert all(s != "RUNNING" for _, s in before.values())

    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    after = _runs(db)
    finished = [(rid, h) for rid, s, h in after if s == "FINISHED"]
    assert len({h for _, h in finished}) == 6, "every combination finished"
    assert len(finished) == 6, "no finished combination was run twice"
    for h, rid in finished_before.items():  # earlier results kept, not replaced
        assert (rid, h) in finished
    assert not [r for r in after if r[1] == "RUNNING"], "no MLflow run left RUNNING"
    assert "already finished" in out.stdout + out.stderr


@pytest.mark.slow
def test_dask_launcher_runs_a_sweep_on_a_local_cluster_and_a_restart_skips_it(tmp_path, data_dir, shared_cache):
    pytest.importorskip("distributed", reason="pip install -e '.[scale]'")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cmd = _sweep_cmd(tmp_path, data_dir, shared_cache, "hydra/launcher=dask_local", "selector=random",
                     "selector.size=5,10,15")
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Dask launcher: 3 jobs on a LocalCluster (2 workers)" in out.stdout + out.stderr
    runs = _runs(tmp_path / "outputs" / "mlflow.db")
    assert sorted(s for _, s, _ in runs) == ["FINISHED"] * 3 and len({h for _, _, h in runs}) == 3
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    assert (again.stdout + again.stderr).count("already finished") == 3
    assert sorted(_runs(tmp_path / "outputs" / "mlflow.db")) == sorted(runs), "nothing re-run"


@pytest.mark.slow
def test_dask_launcher_sends_jobs_to_a_running_scheduler_given_its_address(tmp_path, data_dir, shared_cache):
    """A 'remote' cluster: scheduler and workers started by Dask's own CLI, the sweep told only the address."""
    pytest.importorskip("distributed", reason="pip install -e '.[scale]'")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    with dask_cli_cluster(tmp_path, env) as (address, _):
        cmd = _sweep_cmd(tmp_path, data_dir, shared_cache, "hydra/launcher=dask_local",
                         f"hydra.launcher.address={address}", "selector=random", "selector.size=5,10")
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-4000:]
        assert f"Dask launcher: 2 jobs on {address}" in out.stdout + out.stderr
        runs = _runs(tmp_path / "outputs" / "mlflow.db")
        assert sorted(s for _, s, _ in runs) == ["FINISHED", "FINISHED"] and len({h for _, _, h in runs}) == 2
