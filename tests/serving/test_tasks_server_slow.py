"""``POST /v1/tasks/calibrate`` on a real uvicorn server (``predict.py mode=serve``): the adapted model is
logged to the server's MLflow store (``paths.outputs``) and registered (slow)."""
from __future__ import annotations

import httpx
import pytest

from test_server_slow import save, server  # noqa: F401 - the server fixture
from test_tasks_api import N_CAL, N_LLMS, task  # noqa: F401 - the task fixture
from tiny_assessor import LATENT, fit_tiny

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def latent_model(data_dir, tmp_path_factory):
    from assessors.core.latent import LatentAssessor

    tiny = fit_tiny(data_dir, assessor=LatentAssessor(**LATENT))
    return tiny, save(tiny["model"], tmp_path_factory.mktemp("m") / "assessor")


def test_calibrate_a_task_over_http_and_load_the_registered_version(server, latent_model, task, tmp_path):  # noqa: F811
    import mlflow
    import pandas as pd

    s = server(latent_model, f"paths.outputs={tmp_path / 'outputs'}")
    s.health_until_ready()
    body = {"prompts": task["prompts"], "answers": task["answers"], "register_as": "http-task"}
    r = httpx.post(s.base + "/v1/tasks/calibrate", json=body, timeout=300)
    assert r.status_code == 201, r.text
    out = r.json()
    assert (out["calibrated"], out["calibration_llms"]) == (N_CAL, N_LLMS)
    assert out["registered"] == {"name": "http-task", "version": 1}
    bad = {**body, "answers": [{**task["answers"][0], "llm": "nobody"}] + task["answers"][1:]}
    r = httpx.post(s.base + "/v1/tasks/calibrate", json=bad, timeout=60)
    assert r.status_code == 422 and "answers [0] (1 of 360) name LLMs" in r.json()["error"]["message"]
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    loaded = mlflow.pyfunc.load_model("models:/http-task/1")
    p = loaded.predict(pd.DataFrame({"prompt": [x["prompt"] for x in task["prompts"][:5]]}),
                       params={"llm": task["llms"][0]})
    assert p["p_success"].between(0, 1).all()
