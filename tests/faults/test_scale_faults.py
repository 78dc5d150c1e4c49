"""Faults on the scale path, with real peers: a Dask worker killed mid-job, the tracking server lost mid-run."""
from __future__ import annotations

import contextlib
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
from tests.grid.test_sweeps import _runs, _sweep_cmd
from tests.tracking.conftest import free_port, postgres_uri, wait_healthy  # noqa: F401 (fixture)

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def _running_pids(db: Path) -> list[int]:
    """Process ids (tag ``assessors.pid``) of the RUNNING runs in the SQLite store."""
    from assessors.tracking_store import TAG_PID

    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as con:
        try:
            rows = con.execute("SELECT t.value FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                               "WHERE r.status = 'RUNNING' AND t.key = ?", (TAG_PID,)).fetchall()
        except sqlite3.OperationalError:
            return []
    return [int(v) for (v,) in rows]


@pytest.mark.slow
def test_a_dask_worker_killed_mid_job_loses_and_duplicates_nothing(tmp_path, data_dir, shared_cache):
    """SIGKILL the worker process running a job: Dask re-runs the job on a restarted worker, the dead
    attempt's run is closed as KILLED, and every combination has exactly one FINISHED run."""
    pytest.importorskip("distributed", reason="pip install -e '.[scale]'")
    with dask_cli_cluster(tmp_path, ENV) as (address, procs):
        cmd = _sweep_cmd(tmp_path, data_dir, shared_cache, "hydra/launcher=dask_local",
                         f"hydra.launcher.address={address}", "selector=random", "selector.size=5,10,15")
        sweep = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        procs.append(sweep)
        db = tmp_path / "outputs" / "mlflow.db"
        deadline = time.time() + 600
        while time.time() < deadline and not _running_pids(db):
            assert sweep.poll() is None, sweep.stdout.read()[-4000:]
            time.sleep(0.2)
        victim = _running_pids(db)[0]
        os.kill(victim, signal.SIGKILL)  # the worker process itself, mid-job (its nanny starts a new one)
        out, _ = sweep.communicate(timeout=900)
        assert sweep.returncode == 0, out[-4000:]
        runs = _runs(db)
        finished = [h for _, s, h in runs if s == "FINISHED"]
        assert len(finished) == 3 and len(set(finished)) == 3, runs  # nothing lost, nothing twice
        with sqlite3.connect(db) as con:  # every run, tagged with a combination or not yet
            status = [s for (s,) in con.execute("SELECT status FROM runs")]
        assert "RUNNING" not in status, "the dead attempt's run is closed"
        assert status.count("KILLED") == 1 and len(status) == 4, (status, out[-3000:])


def _start_mlflow(backend: str, artifacts: Path, port: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", backend, "--artifacts-destination",
           artifacts.as_uri(), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with open(log, "a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MLFLOW_ENABLE_TELEMETRY": "false"})
    wait_healthy(f"http://127.0.0.1:{port}", proc, log)
    return proc


@pytest.mark.slow
def test_tracking_server_lost_mid_run_ends_the_job_and_a_restart_resumes(tmp_path, data_dir, shared_cache,
                                                                         postgres_uri):  # noqa: F811
    """The server dies while a run logs to it: the sweep exits with an error within seconds of
    MLflow's capped retries (no hang). With the server back, the same sweep closes the orphaned
    run and finishes the rest, each combination FINISHED once."""
    from mlflow.tracking import MlflowClient

    port, artifacts, log = free_port(), tmp_path / "artifacts", tmp_path / "mlflow.log"
    uri = f"http://127.0.0.1:{port}"
    server = _start_mlflow(postgres_uri, artifacts, port, log)
    try:
        cmd = _sweep_cmd(tmp_path, data_dir, shared_cache, "hydra/launcher=basic", "tracking=server",
                         f"tracking.tracking_uri={uri}", "selector=random", "selector.size=5,10,15,20")
        sweep = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        client = MlflowClient(uri)

        def runs():
            exp = client.get_experiment_by_name("paper_grid")
            return client.search_runs([exp.experiment_id]) if exp else []

        deadline = time.time() + 600
        while time.time() < deadline:  # one run finished and the next one running
            assert sweep.poll() is None, sweep.stdout.read()[-4000:]
            status = [r.info.status for r in runs()]
            if "FINISHED" in status and "RUNNING" in status:
                break
            time.sleep(0.3)
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(30)
        t0 = time.time()
        out, _ = sweep.communicate(timeout=240)  # a hang fails here
        assert sweep.returncode != 0
        assert time.time() - t0 < 180, "MLflow's retries must be capped"
        assert "Traceback" in out or "Error" in out

        server = _start_mlflow(postgres_uri, artifacts, port, log)
        again = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
        assert again.returncode == 0, again.stderr[-4000:]
        final = runs()
        hashes = [r.data.tags["grid.config_hash"] for r in final if r.info.status == "FINISHED"]
        assert len(hashes) == 4 and len(set(hashes)) == 4, [(r.info.status, r.data.tags.get("grid.size")) for r in final]
        assert not [r for r in final if r.info.status == "RUNNING"], "the orphaned run is closed"
    finally:
        for proc in (server, locals().get("sweep")):
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
