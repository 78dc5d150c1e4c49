"""``POST /v1/llms`` with evidence on a real uvicorn server (``predict.py mode=serve``), a latent model (slow)."""
from __future__ import annotations

import httpx
import numpy as np
import pytest

from test_server_slow import save, server  # noqa: F401 - the server fixture
from tiny_assessor import LATENT, fit_tiny

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def latent_model(data_dir, tmp_path_factory):
    from assessors.core.latent import LatentAssessor

    tiny = fit_tiny(data_dir, assessor=LatentAssessor(**LATENT))
    return tiny, save(tiny["model"], tmp_path_factory.mktemp("m") / "assessor")


def test_register_from_evidence_then_predict_over_http(server, latent_model):  # noqa: F811
    tiny, _ = latent_model
    model, res = tiny["model"], tiny["results"]
    llm, ids = tiny["test_llms"][2], tiny["test_ids"]
    ev_ids, target = ids[:30], ids[30:40]
    y = res.matrix([llm], ev_ids)[0]
    s = server(latent_model)
    s.health_until_ready()
    items = [{"prompt": p, "success": None if np.isnan(v) else int(v)} for p, v in zip(res.prompts(ev_ids), y)]
    r = httpx.post(s.base + "/v1/llms", json={"name": "ev", "evidence": items}, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["n_evidence"] == 30 and r.json()["n_reference"] == 0
    r = httpx.post(s.base + "/v1/predict", json={"prompts": res.prompts(target), "llms": ["ev"]}, timeout=60)
    assert r.status_code == 200, r.text
    got = [x["p_success"]["ev"] for x in r.json()["results"]]
    post = model.assessor.posterior(model.featurizer.transform(res.prompts(ev_ids)), y[None, :])
    want = model.assessor.predict_posterior(model.featurizer.transform(res.prompts(target)), post)[0][0]
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the generic registration is untouched: a training LLM's reference vector still registers
    r = httpx.post(s.base + "/v1/llms", json={"name": "ref", "reference": [1.0, 0.0] * (len(tiny["reference_ids"]) // 2)},
                   timeout=60)
    assert r.status_code == 201 and r.json()["n_evidence"] is None
