"""The latent-ability assessor behind the pyfunc model, the engine and the HTTP API."""
from __future__ import annotations

import numpy as np
import pytest

API_KEY = "test-key-latent-0123456789"


@pytest.fixture
def client(tiny_latent, monkeypatch):
    from fastapi.testclient import TestClient

    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_LATENT_KEYS", API_KEY)
    app = create_app({"auth": {"api_keys_env": ["TEST_LATENT_KEYS"]}}, engine=Engine(tiny_latent["model"]))
    with TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"}) as c:
        yield c


def test_pyfunc_gives_spread_and_partial_answers_widen_the_posterior(tiny_latent):
    model, res, ref_ids = tiny_latent["model"], tiny_latent["results"], tiny_latent["reference_ids"]
    llm = tiny_latent["test_llms"][0]
    vec = res.matrix([llm], ref_ids)[0]
    prompts = res.prompts(tiny_latent["test_ids"][:20])
    import pandas as pd

    full = model.predict(None, pd.DataFrame({"prompt": prompts}), {"reference_success": vec.tolist()})
    part = np.where(np.arange(len(vec)) % 3 == 0, vec, -1.0)  # two thirds not answered
    some = model.predict(None, pd.DataFrame({"prompt": prompts}), {"reference_success": part.tolist()})
    assert list(full.columns) == ["p_success", "p_std"]
    assert full["p_success"].between(0, 1).all() and (full["p_std"] > 0).all()
    # fewer answers, wider ability posterior
    X_ref = model.featurizer.transform(res.prompts(ref_ids))
    post = model.assessor.posterior(X_ref, np.stack([vec, np.where(part < 0, np.nan, part)]))
    trace = np.trace(post.cov[0], axis1=1, axis2=2)
    assert trace[1] > trace[0]


def test_http_registration_with_partial_results_and_bad_values(client, tiny_latent):
    res, ref_ids = tiny_latent["results"], tiny_latent["reference_ids"]
    vec = res.matrix([tiny_latent["test_llms"][1]], ref_ids)[0]
    partial = {i: float(v) for i, v in list(zip(ref_ids, vec))[:10]}  # 10 of 30 reference answers
    r = client.post("/v1/llms", json={"name": "partial", "reference": partial})
    assert r.status_code == 201, r.text
    assert r.json()["n_answered"] == 10
    ps = res.prompts(tiny_latent["test_ids"][:3])
    out = client.post("/v1/predict", json={"prompts": ps, "llms": ["partial"]}).json()["results"]
    assert all(0 <= x["p_success"]["partial"] <= 1 and x["p_std"]["partial"] > 0 for x in out)
    # graded scores that are not 0/1 are refused at registration, naming the fix
    r = client.post("/v1/llms", json={"name": "soft", "reference": {ref_ids[0]: 0.5, ref_ids[1]: 1.0}})
    assert r.status_code == 422 and "0, 1 or missing" in r.text
