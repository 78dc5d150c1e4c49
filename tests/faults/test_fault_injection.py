"""SIGKILL at four points of a real train.py run; the rerun succeeds, reuses finished work and
leaves no MLflow run RUNNING.

Each fault is a real SIGKILL the process sends itself at a chosen call (tests/faults/runner.py),
so the kill lands at the same point on every run however loaded the machine is.
"""
from __future__ import annotations

import pytest

from tests.faults.conftest import TINY, n_embedded, run_statuses

pytestmark = pytest.mark.slow

SHARD = 100  # texts per cache shard in these runs (the 428 prompts make 5 shards)


def _env(srv):
    return {"EMBED_URL": srv.url, "EMBED_KEY": "sk-local"}


@pytest.mark.parametrize("fault, shards_before_kill", [
    ("embed:3", 2),   # during the third shard: two shards finished
    ("fit:2", 5),     # during the second XGBoost fit (the paper column's is the first, then the specific column's)
    ("mlflow:2", 5),  # during the second artifact upload of the run's report
    ("model:1", 5),   # while the pyfunc model is being pickled
])
def test_sigkill_then_rerun(embed_server, train_run, tmp_path, fault, shards_before_kill):
    killed = train_run(*TINY, env=_env(embed_server), fault=fault, shard_size=SHARD)
    assert killed.returncode == -9, killed.stderr[-3000:]
    shards = list((tmp_path / "cache").rglob("*.npz"))
    assert len(shards) == shards_before_kill
    assert run_statuses(tmp_path / "outputs") == ["RUNNING"]  # what a SIGKILL leaves behind
    embedded_before = n_embedded(embed_server)

    rerun = train_run(*TINY, env=_env(embed_server), shard_size=SHARD)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    re_embedded = n_embedded(embed_server) - embedded_before
    n_texts = 428
    assert re_embedded == n_texts - SHARD * shards_before_kill if shards_before_kill < 5 else re_embedded == 0
    assert sorted(run_statuses(tmp_path / "outputs")) == ["FINISHED", "KILLED"]
    print(f"FAULT {fault}: killed run -> KILLED; rerun FINISHED; re-embedded {re_embedded} of {n_texts} texts "
          f"({len(shards)} shards reused)")
