"""``server.onboarding.pool: training``: the server's candidate pool is the model's training prompts, read
from the data dir and featurized at start-up like a pool of named files; a missing data dir or a
model without the record fails start-up (``/health`` failed, 503), and ``[]`` keeps the reference set."""
from __future__ import annotations

import copy
import time

import pytest

API_KEY = "test-key-training-pool-0123456789"


@pytest.fixture(scope="module")
def with_record(tiny_latent):
    """The tiny latent model carrying the provenance of its training prompts (the 450 non-test ids)."""
    from assessors.data.training_prompts import training_prompts_record

    res, test = tiny_latent["results"], set(tiny_latent["test_ids"])
    train = [i for i in res.instance_ids if i not in test]
    model = copy.copy(tiny_latent["model"])
    model.training_prompts = training_prompts_record(res, train)
    return {"model": model, "train": train}


def _client(model, monkeypatch, pool, data_dir, cache_dir=None):
    from fastapi.testclient import TestClient

    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app
    from assessors.trust.posterior_policy import make_trust_fn

    monkeypatch.setenv("TEST_TRAINING_POOL_KEYS", API_KEY)
    app = create_app({"auth": {"api_keys_env": ["TEST_TRAINING_POOL_KEYS"]}, "adaptive": {"budget": 12},
                      "onboarding": {"pool": pool}, "data_dir": None if data_dir is None else str(data_dir),
                      "cache_dir": None if cache_dir is None else str(cache_dir)},
                     engine=Engine(model, trust_fn=make_trust_fn(model)))
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"})


def _health(c) -> tuple[int, dict]:
    """``/health`` once start-up has ended (ready or failed)."""
    deadline = time.monotonic() + 60
    while (r := c.get("/health")).json()["status"] == "starting" and time.monotonic() < deadline:
        time.sleep(0.05)
    return r.status_code, r.json()


def test_the_training_pool_is_read_from_the_data_dir(with_record, tiny_latent, data_dir, monkeypatch):
    res = tiny_latent["results"]
    llm, train = tiny_latent["test_llms"][1], with_record["train"]
    with _client(with_record["model"], monkeypatch, "training", data_dir) as c:
        code, health = _health(c)
        assert code == 200, health
        assert health["onboarding_pool"] == {"source": "the model's training prompts (open_llm_leaderboard_v2), "
                                                       "3 file(s)", "n_prompts": len(train)}
        assert sorted(c.app.state.pool_onboarding.ids) == sorted(train)
        nxt = c.post("/v1/llms/fresh/next", json={"n": 3, "start": True}).json()
        assert len(nxt["ids"]) == 3 and set(nxt["ids"]) <= set(train)
        assert nxt["prompts"] == dict(zip(nxt["ids"], res.prompts(nxt["ids"])))
        truth = dict(zip(nxt["ids"], res.matrix([llm], nxt["ids"])[0].tolist()))
        r = c.post("/v1/llms/fresh/answers", json={"answers": truth, "create": True})
        assert r.status_code == 200 and r.json()["llm"]["n_evidence"] == 3


def test_an_empty_pool_keeps_the_reference_set(with_record, tiny_latent, data_dir, monkeypatch, tmp_path):
    # the record alone changes nothing: [] is the reference set, and no data dir is needed
    with _client(with_record["model"], monkeypatch, [], tmp_path / "no-data") as c:
        code, health = _health(c)
        assert code == 200 and "onboarding_pool" not in health
        nxt = c.post("/v1/llms/plain/next", json={"n": 2, "start": True}).json()
        assert nxt["prompts"] is None and set(nxt["ids"]) <= set(tiny_latent["reference_ids"])


def test_a_missing_data_dir_fails_start_up(with_record, monkeypatch, tmp_path):
    from assessors.errors import DataError

    with _client(with_record["model"], monkeypatch, "training", tmp_path / "no-data", tmp_path / "cache") as c:
        code, health = _health(c)
        assert (code, health["status"]) == (503, "failed")
        err = c.app.state.startup_error
        assert isinstance(err, DataError) and "Set ASSESSORS_DATA_DIR" in str(err)
        assert "list prompt files in server.onboarding.pool" in str(err)
        # a failed start-up is never served (no silent fall-back to the reference set)
        assert c.post("/v1/llms/x/next", json={"n": 1, "start": True}).status_code == 503


def test_a_model_without_the_record_fails_start_up(tiny_latent, data_dir, monkeypatch):
    from assessors.errors import ConfigError

    old = copy.copy(tiny_latent["model"])
    old.__dict__.pop("training_prompts", None)  # a model saved before the record existed
    with _client(old, monkeypatch, "training", data_dir) as c:
        code, health = _health(c)
        assert (code, health["status"]) == (503, "failed")
        err = c.app.state.startup_error
        assert isinstance(err, ConfigError) and "records no training prompts" in str(err)


def test_a_model_trained_on_data_without_a_pool_fails_start_up_saying_why(tiny_latent, data_dir, monkeypatch):
    from assessors.data.loaders.routerbench import load_routerbench
    from assessors.data.training_prompts import training_prompts_record
    from assessors.errors import ConfigError

    rb = load_routerbench(root=data_dir, datasets=["winograde"], splits=["test"], responses=False, download=False)
    model = copy.copy(tiny_latent["model"])
    model.training_prompts = training_prompts_record(rb, rb.instance_ids)  # routerbench: no gold answer
    with _client(model, monkeypatch, "training", data_dir) as c:
        code, health = _health(c)
        assert (code, health["status"]) == (503, "failed")
        err = c.app.state.startup_error
        assert isinstance(err, ConfigError) and "routerbench: " in str(err) and "no gold answer" in str(err)
        assert "list prompt files in server.onboarding.pool" in str(err)


def test_predict_config_passes_the_setting_and_the_data_dir(compose, data_dir):
    from assessors.tasks.serve import server_settings

    s = server_settings(compose(["mode=serve", "server.onboarding.pool=training"], config_name="predict"))
    assert s.onboarding.pool == "training" and s.data_dir == str(data_dir)
    s = server_settings(compose(["mode=serve", "server.onboarding.pool=my.csv"], config_name="predict"))
    assert s.onboarding.pool == ["my.csv"]
    s = server_settings(compose(["mode=serve", "server.onboarding.pool=[training]"], config_name="predict"))
    assert s.onboarding.pool == "training"
    assert server_settings(compose(["mode=serve"], config_name="predict")).onboarding.pool == []


@pytest.fixture(scope="module")
def saved_with_record(with_record, tiny_latent, tmp_path_factory):
    import mlflow.pyfunc

    from assessors.core.pyfunc import PIP_REQUIREMENTS

    path = tmp_path_factory.mktemp("training_pool") / "assessor"
    mlflow.pyfunc.save_model(str(path), python_model=with_record["model"], pip_requirements=PIP_REQUIREMENTS)
    return tiny_latent, path


@pytest.mark.slow
def test_a_real_server_onboards_from_the_training_prompts(saved_with_record, with_record, data_dir, tmp_path):
    """``predict.py mode=serve server.onboarding.pool=training``: the data dir reaches the server from
    ``paths.data_dir``; without the data the start-up fails and every request is a 503."""
    import httpx

    from test_server_slow import Server

    srv = Server(saved_with_record, tmp_path, ["server.onboarding.pool=training", f"paths.data_dir={data_dir}"])
    try:
        srv.health_until_ready()
        health = httpx.get(srv.base + "/health", timeout=5).json()
        assert health["onboarding_pool"]["n_prompts"] == len(with_record["train"])
        assert health["onboarding_pool"]["source"].startswith("the model's training prompts")
        nxt = httpx.post(srv.base + "/v1/llms/new/next", json={"n": 2, "start": True}, timeout=30).json()
        assert set(nxt["ids"]) <= set(with_record["train"]) and set(nxt["prompts"]) == set(nxt["ids"])
    finally:
        srv.stop()
    bad = tmp_path / "bad"
    bad.mkdir()
    srv = Server(saved_with_record, bad, ["server.onboarding.pool=training", f"paths.data_dir={tmp_path / 'none'}",
                                          f"paths.cache_dir={tmp_path / 'cache'}"])
    try:
        deadline, r, status = time.monotonic() + 300, None, None
        while time.monotonic() < deadline and status != "failed":
            try:
                r = httpx.get(srv.base + "/health", timeout=5)
                status = r.json()["status"]
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        assert r is not None and (r.status_code, status) == (503, "failed"), srv.log.read_text()[-3000:]
        assert httpx.post(srv.base + "/v1/llms/x/next", json={"n": 1, "start": True}, timeout=5).status_code == 503
        assert "Set ASSESSORS_DATA_DIR" in srv.log.read_text()
    finally:
        srv.stop()


def test_the_pool_is_embedded_once_through_the_disk_cache(with_record, data_dir, monkeypatch, tmp_path):
    """With ``cache_dir`` (``paths.cache_dir``) the pool's vectors are stored on disk: a restart computes none."""
    import numpy as np

    model = with_record["model"]
    cls, calls = type(model.featurizer), []
    real = cls._transform
    monkeypatch.setattr(cls, "_transform", lambda self, texts: calls.extend(texts) or real(self, texts))
    pools = []
    for _ in range(2):
        calls.clear()
        with _client(model, monkeypatch, "training", data_dir, cache_dir=tmp_path) as c:
            code, health = _health(c)
            assert code == 200, health
            pools.append(c.app.state.pool_onboarding)
        pool_texts = set(pools[-1].texts.values())
        pools[-1].n_computed = sum(t in pool_texts for t in calls)  # not the warm-up encode
    assert pools[0].n_computed == len(with_record["train"]) and pools[1].n_computed == 0
    assert (tmp_path / "embeddings").is_dir()
    np.testing.assert_array_equal(pools[0].X_pool, pools[1].X_pool)
    texts = [pools[0].texts[i] for i in pools[0].ids]
    np.testing.assert_allclose(pools[1].X_pool, real(model.featurizer, texts), atol=1e-6)
