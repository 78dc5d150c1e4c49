"""A real PostgreSQL (pgserver's bundled binaries) and a real ``mlflow server`` on loopback."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.processes import free_port


def wait_healthy(uri: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(uri + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"mlflow server at {uri} not healthy after {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def postgres_uri(tmp_path):
    """SQLAlchemy URI of a fresh database on a PostgreSQL server started for this test."""
    pgserver = pytest.importorskip("pgserver", reason="pip install -e '.[scale]'")
    # a short path: the server's Unix socket lives in its data directory (108-byte limit)
    server = pgserver.get_server(Path(tmp_path) / "pg", cleanup_mode="delete")
    server.psql("CREATE DATABASE mlflow;")
    yield server.get_uri("mlflow").replace("postgresql://", "postgresql+psycopg2://", 1)
    server.cleanup()


@pytest.fixture
def mlflow_server(tmp_path, postgres_uri):
    """``mlflow server`` on 127.0.0.1 with the PostgreSQL backend store; yields (uri, artifact folder)."""
    port = free_port()
    artifacts = tmp_path / "artifact-root"
    log = tmp_path / "mlflow-server.log"
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", postgres_uri,
           "--artifacts-destination", artifacts.as_uri(), "--host", "127.0.0.1", "--port", str(port),
           "--workers", "2"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MLFLOW_ENABLE_TELEMETRY": "false"})
    uri = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(uri, proc, log)
        yield uri, artifacts
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(30)
