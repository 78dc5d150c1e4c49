"""``POST /v1/tasks/calibrate`` at the ASGI level: a real new BBH subtask calibrated on the tiny latent
model's training LLMs' real answers, logged and registered in a real MLflow store, and every kind of
bad input refused with a 4xx naming its rows."""
from __future__ import annotations

import numpy as np
import pytest

from client_helpers import API_KEY, wait_ready

TASK = "bbh_boolean_expressions"
N_CAL, N_LLMS = 30, 12


@pytest.fixture(scope="module")
def task(data_dir, tiny_latent):
    """The held-out subtask's prompts and 12 training LLMs' real answers on its first 30 prompts."""
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=[TASK], download=False)
    ids = list(res.instance_ids)
    llms = tiny_latent["train_llms"][:N_LLMS]
    S = res.matrix(llms, ids[:N_CAL])
    answers = [{"llm": llm, "instance_id": i, "success": float(S[a, b])}
               for a, llm in enumerate(llms) for b, i in enumerate(ids[:N_CAL])]
    prompts = [{"instance_id": i, "prompt": p} for i, p in zip(ids, res.prompts(ids))]
    return {"results": res, "ids": ids, "llms": llms, "prompts": prompts, "answers": answers}


def make_client(model, tmp_path, monkeypatch, tracking=True):
    from fastapi.testclient import TestClient

    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_ASSESSORS_KEYS", API_KEY)
    settings = {"auth": {"api_keys_env": ["TEST_ASSESSORS_KEYS"]}, "model_uri": "runs:/tiny/assessor",
                "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}" if tracking else None,
                "limits": {"max_body_bytes": 2_000_000}}
    app = create_app(settings, engine=Engine(model))
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"})


@pytest.fixture
def client(tiny_latent, tmp_path, monkeypatch):
    with make_client(tiny_latent["model"], tmp_path, monkeypatch) as c:
        wait_ready(c)
        yield c


def error(r, status: int) -> str:
    assert r.status_code == status, r.text
    return r.json()["error"]["message"]


@pytest.mark.slow  # logs and registers a model in a fresh MLflow store (about 5-10 s)
def test_calibrates_logs_registers_and_serves_the_adapted_model(client, task, tiny_latent, monkeypatch, tmp_path):
    import mlflow
    import pandas as pd

    body = {"prompts": task["prompts"], "answers": task["answers"], "register_as": "tiny-task"}
    r = client.post("/v1/tasks/calibrate", json=body)
    assert r.status_code == 201, r.text
    out = r.json()
    n = len(task["ids"])
    assert (out["task_prompts"], out["calibration_llms"], out["answers"]) == (n, N_LLMS, N_LLMS * N_CAL)
    assert (out["calibrated"], out["from_task"], out["prior_only"]) == (N_CAL, n - N_CAL, 0)
    assert out["registered"] == {"name": "tiny-task", "version": 1}
    assert out["serve"] == "python predict.py mode=serve model_uri=models:/tiny-task/1"
    status = {it["instance_id"]: it["status"] for it in out["items"]}
    assert {status[i] for i in task["ids"][:N_CAL]} == {"calibrated"}
    # the same answers once more: the next version of the registered model
    assert client.post("/v1/tasks/calibrate", json=body).json()["registered"]["version"] == 2
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    loaded = mlflow.pyfunc.load_model("models:/tiny-task/1")
    texts = task["results"].prompts(task["ids"][N_CAL:N_CAL + 30])
    llm = task["llms"][0]
    new = loaded.predict(pd.DataFrame({"prompt": texts}), params={"llm": llm})["p_success"].to_numpy()
    old = tiny_latent["model"].predict(None, pd.DataFrame({"prompt": texts}), {"llm": llm})["p_success"].to_numpy()
    assert np.abs(new - old).max() > 1e-3  # the task's prompts moved
    # served: a server on the adapted model scores the task with it
    with make_client(loaded.unwrap_python_model(), tmp_path, monkeypatch) as c2:
        wait_ready(c2)
        from assessors.routing.engine import Engine  # noqa: F401  (the engine of make_client)

        c2.app.state.engine.register_known([llm])
        served = c2.post("/v1/predict", json={"prompts": texts, "llms": [llm]}).json()
        p = np.array([res["p_success"][llm] for res in served["results"]])
        np.testing.assert_allclose(p, new, atol=1e-5)


def test_bad_input_is_a_4xx_naming_the_rows(client, task):
    good = {"prompts": task["prompts"], "answers": task["answers"]}

    def post(**change):
        return client.post("/v1/tasks/calibrate", json={**good, **change})

    answers = [dict(a) for a in task["answers"]]
    answers[2]["llm"] = answers[5]["llm"] = "no-such-llm"
    msg = error(post(answers=answers), 422)
    assert "answers [2, 5] (2 of 360) name LLMs this model was not trained on" in msg and "drop those rows" in msg
    answers = [dict(a) for a in task["answers"]]
    answers[4]["success"] = 0.7
    msg = error(post(answers=answers), 422)
    assert "answers [4]" in msg and "other than 0, 1 or missing" in msg and "threshold" in msg
    answers[4]["success"] = "yes"  # not a number at all: the schema names the row
    assert "answers.4.success" in error(post(answers=answers), 422)
    answers = [dict(a) for a in task["answers"]]
    answers[0]["instance_id"] = "bbh_navigate/0"
    assert "answers [0]" in error(post(answers=answers), 422)
    assert "answers [360]" in error(post(answers=task["answers"] + task["answers"][:1]), 422)
    prompts = [dict(p) for p in task["prompts"]]
    prompts[3]["prompt"] = prompts[7]["prompt"] = "  \n"
    msg = error(post(prompts=prompts), 422)
    assert "prompts [3, 7] (2 of 250) have a blank prompt" in msg
    # too few answers: 3 LLMs answer each prompt, fewer than min_answers = 5
    few = [a for a in task["answers"] if a["llm"] in task["llms"][:3]]
    msg = error(post(answers=few), 422)
    assert "too few answers: no prompt has 5 (prompts [0, 1, 2," in msg and "lower min_answers" in msg
    assert "answers: List should have at least 1 item" in error(post(answers=[]), 422)
    # unknown fields and a non-latent model are refused as well
    assert error(post(min_answer=3), 422).startswith("invalid request")


def test_a_model_without_a_posterior_or_a_store_is_a_409(tiny, tiny_latent, task, tmp_path, monkeypatch):
    body = {"prompts": task["prompts"][:40], "answers": task["answers"]}
    body["answers"] = [a for a in task["answers"] if a["instance_id"] in {p["instance_id"] for p in body["prompts"]}]
    with make_client(tiny["model"], tmp_path, monkeypatch) as c:
        wait_ready(c)
        r = c.post("/v1/tasks/calibrate", json=body)
        assert "assessor=latent" in error(r, 409) and r.json()["error"]["type"] == "no_posterior"
    with make_client(tiny_latent["model"], tmp_path, monkeypatch, tracking=False) as c:
        wait_ready(c)
        r = c.post("/v1/tasks/calibrate", json=body)
        assert "no MLflow store" in error(r, 409)


def test_limits_and_keys_apply(client, task):
    from fastapi.testclient import TestClient

    client.app.state.settings.limits.max_task_prompts = 10
    assert "250 prompts exceed the task limit of 10" in error(
        client.post("/v1/tasks/calibrate", json={"prompts": task["prompts"], "answers": task["answers"]}), 413)
    with TestClient(client.app, raise_server_exceptions=False) as anon:
        assert anon.post("/v1/tasks/calibrate", json={}).status_code == 401
    spec = client.get("/openapi.json").json()["paths"]["/v1/tasks/calibrate"]["post"]
    assert {"201", "409", "413", "422"} <= set(spec["responses"])
