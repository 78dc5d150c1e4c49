"""Fixtures for fault injection and secret sweeps: tiny real train.py runs in subprocesses.

Embeddings come from a small OpenAI-compatible HTTP server on loopback (tests/features'
FakeOpenAI: real sockets, the real ``openai`` client), which counts the texts it embeds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).resolve().parent / "runner.py"

TINY = [
    "data.subtasks=[bbh_navigate,bbh_snarks]",
    "features=openai", "features.model=fake-embed", "features.dimensions=16", "features.batch_size=32",
    "features.show_progress=false", "features.base_url_env=EMBED_URL", "features.api_key_env=EMBED_KEY",
    "features.max_retries=0",
    "classifier.param_grid.n_estimators=[30]", "paper_generic_classifier.param_grid.n_estimators=[30]", "classifier.param_grid.max_depth=[2,3]",
    "specific.classifiers.xgboost.param_grid.n_estimators=[20]",
    "selector.size=20", "llm_split.n_train=20", "llm_split.n_val=4", "llm_split.n_test=4",
    "compare.reference_only=false", "compare.random_selector=false", "compare.all_train_data=false",
]


@pytest.fixture
def embed_server():
    from tests.features.test_openai import FakeOpenAI

    srv = FakeOpenAI()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def n_embedded(srv) -> int:
    """Texts the server has embedded so far."""
    return sum(len(r["input"]) for r in srv.requests)


@pytest.fixture
def train_run(tmp_path, data_dir):
    """``train_run(*overrides, env=..., fault=None)`` -> CompletedProcess of runner.py (train.py)."""

    def run(*overrides, env=None, fault=None, shard_size=None, timeout=600):
        full = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg", **(env or {})}
        full.pop("FAULT", None)
        if fault:
            full["FAULT"] = fault
        if shard_size:
            full["FAULT_SHARD_SIZE"] = str(shard_size)
        args = [f"paths.data_dir={data_dir}", f"paths.outputs={tmp_path / 'outputs'}",
                f"paths.cache_dir={tmp_path / 'cache'}", *overrides]
        return subprocess.run([sys.executable, str(RUNNER), *args], env=full, capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)

    return run


def run_statuses(outputs: Path) -> list[str]:
    """Statuses of every MLflow run in the embedded store under ``outputs``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    exps = [e.experiment_id for e in client.search_experiments()]
    return [r.info.status for r in client.search_runs(exps)]
