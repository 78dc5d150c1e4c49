"""Fixtures: a tiny real assessor (fitted once) and apps built around it."""
from __future__ import annotations

import pytest

from client_helpers import API_KEY, wait_ready
from tiny_assessor import fit_degenerate, fit_tiny


@pytest.fixture(scope="session")
def tiny(data_dir):
    return fit_tiny(data_dir)


@pytest.fixture(scope="session")
def tiny_latent(data_dir):
    """The tiny assessor with a small latent-ability model in place of XGBoost."""
    from assessors.core.latent import LatentAssessor

    return fit_tiny(data_dir, assessor=LatentAssessor(dims=2, hidden_sizes=(16,), n_members=1, max_epochs=10, patience=3,
                                             residual_dims=8, num_threads=1))


@pytest.fixture(scope="session")
def degenerate(data_dir):
    return fit_degenerate(data_dir)


@pytest.fixture
def engine(tiny):
    """A fresh engine (own registry) with 3 held-out LLMs registered from their reference results."""
    from assessors.routing.engine import Engine
    from assessors.routing.threshold import ThresholdRouter

    eng = Engine(tiny["model"], router=ThresholdRouter(threshold=0.6))
    res = tiny["results"]
    for k, llm in enumerate(tiny["test_llms"][:3]):
        eng.registry.register(llm, res.matrix([llm], tiny["reference_ids"])[0], cost={"per_item": [0.01, 0.002, 0.03][k]})
    return eng


@pytest.fixture
def client(engine, monkeypatch):
    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_ASSESSORS_KEYS", API_KEY)
    settings = {"auth": {"api_keys_env": ["TEST_ASSESSORS_KEYS"]},
                "limits": {"max_batch": 8, "max_prompt_chars": 5000, "max_body_bytes": 50_000, "max_registered": 5}}
    app = create_app(settings, engine=engine)
    with TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"}) as c:
        wait_ready(c)
        yield c
