"""Every endpoint through TestClient, with a real (tiny) assessor: happy paths, bad input, auth."""
from __future__ import annotations

import numpy as np
import pytest

from client_helpers import API_KEY, wait_ready


def prompts(tiny, n=3):
    return tiny["results"].prompts(tiny["test_ids"][:n])


def test_health_needs_no_key_and_reports_model(client, engine):
    r = client.get("/health", headers={"Authorization": ""})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ready" and body["n_llms"] == 3 and body["n_reference"] == len(engine.reference_ids)
    assert body["router"] == {"policy": "ThresholdRouter", "knob": "threshold", "value": 0.6}
    assert body["queue"]["pending_prompts"] == 0 and body["queue"]["rejected"] == 0


def test_openapi_lists_endpoints(client):
    spec = client.get("/openapi.json").json()
    for path in ["/v1/predict", "/v1/route", "/v1/llms", "/health", "/v1/chat/completions"]:
        assert path in spec["paths"]


def test_predict_matches_engine(client, engine, tiny):
    ps = prompts(tiny)
    r = client.post("/v1/predict", json={"prompts": ps})
    assert r.status_code == 200, r.text
    body = r.json()
    names, P = engine.predict(ps)
    assert body["llms"] == names
    got = np.array([[res["p_success"][n] for res in body["results"]] for n in names])
    np.testing.assert_allclose(got, P, atol=1e-6)
    assert ((got > 0) & (got < 1)).all()


def test_predict_subset_and_unknown_llm_404(client, tiny):
    llm = tiny["test_llms"][1]
    r = client.post("/v1/predict", json={"prompts": prompts(tiny, 1), "llms": [llm]})
    assert r.status_code == 200 and r.json()["llms"] == [llm]
    r = client.post("/v1/predict", json={"prompts": prompts(tiny, 1), "llms": ["no-such-llm"]})
    assert r.status_code == 404
    assert r.json()["error"]["type"] == "unknown_llm" and "no-such-llm" in r.json()["error"]["message"]


def test_route_decisions_follow_threshold_policy(client, tiny):
    r = client.post("/v1/route", json={"prompts": prompts(tiny, 5)})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["decisions"]) == 5
    for d in body["decisions"]:
        ok = {n: d["cost"][n] for n, p in d["p_success"].items() if p >= 0.6}
        if ok:  # cheapest LLM above the threshold
            assert d["llm"] == min(ok, key=ok.get)
        else:   # none reaches it: the most likely one
            assert d["llm"] == max(d["p_success"], key=d["p_success"].get)
        assert d["expected_cost"] == pytest.approx(d["cost"][d["llm"]])


@pytest.mark.parametrize("body,where", [
    ({}, "prompts"),
    ({"prompts": []}, "prompts"),
    ({"prompts": "not a list"}, "prompts"),
    ({"prompts": [1, 2]}, "prompts"),
    ({"prompts": ["a"], "llms": []}, "llms"),
    ({"prompts": ["a"], "unexpected": 1}, "unexpected"),
])
def test_bad_bodies_get_422_with_message_and_no_trace(client, body, where):
    for path in ("/v1/predict", "/v1/route"):
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, body, r.text)
        err = r.json()["error"]
        assert err["type"] == "validation_error" and where in err["message"]
        assert "Traceback" not in r.text


def test_malformed_json_is_422(client):
    r = client.post("/v1/predict", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422


def test_limits_batch_prompt_length_and_body_size(client):
    r = client.post("/v1/route", json={"prompts": ["x"] * 9})
    assert r.status_code == 413 and "batch limit of 8" in r.json()["error"]["message"]
    r = client.post("/v1/predict", json={"prompts": ["y" * 5001]})
    assert r.status_code == 413 and "prompts[0]" in r.json()["error"]["message"]
    r = client.post("/v1/predict", json={"prompts": ["z" * 4000] * 20})  # > 50 kB body
    assert r.status_code == 413 and "exceeds 50000 bytes" in r.json()["error"]["message"]


@pytest.mark.parametrize("headers", [
    {"Authorization": ""},
    {"Authorization": "Bearer wrong-key-0123456789abcdef"},
    {"Authorization": f"Basic {API_KEY}"},
    {"Authorization": "", "X-API-Key": API_KEY[:-1]},
])
def test_auth_failures_401(client, headers):
    for method, path, body in [("post", "/v1/predict", {"prompts": ["a"]}), ("post", "/v1/route", {"prompts": ["a"]}),
                               ("get", "/v1/llms", None), ("post", "/v1/llms", {"name": "x", "reference": []}),
                               ("post", "/v1/chat/completions", {"model": "router", "messages": []})]:
        r = getattr(client, method)(path, json=body, headers=headers) if body is not None else \
            getattr(client, method)(path, headers=headers)
        assert r.status_code == 401, (path, headers, r.text)
        assert r.json()["error"]["type"] == "unauthorized" and r.headers["WWW-Authenticate"] == "Bearer"


def test_x_api_key_header_accepted(client):
    r = client.get("/v1/llms", headers={"Authorization": "", "X-API-Key": API_KEY})
    assert r.status_code == 200


def test_register_then_route_to_new_llm_without_retraining(client, engine, tiny):
    res, ref_ids = tiny["results"], tiny["reference_ids"]
    llm = tiny["test_llms"][3]
    vec = res.matrix([llm], ref_ids)[0]
    body = {"name": "newcomer", "reference": {i: float(v) for i, v in zip(ref_ids, vec)}, "cost": {"per_item": 0.0}}
    r = client.post("/v1/llms", json=body)
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["n_answered"] == len(ref_ids) and info["reference_accuracy"] == pytest.approx(float(vec.mean()))
    assert info["trust"] is None  # no trust report configured
    assert "newcomer" in [x["name"] for x in client.get("/v1/llms").json()["llms"]]
    assert client.get("/v1/llms/newcomer").json()["name"] == "newcomer"
    # same predictions as the assessor given that reference vector directly
    ps = prompts(tiny, 4)
    got = [x["p_success"]["newcomer"] for x in client.post("/v1/predict", json={"prompts": ps, "llms": ["newcomer"]}).json()["results"]]
    want = tiny["model"].assessor.predict_proba(tiny["model"].featurizer.transform(ps), vec)
    np.testing.assert_allclose(got, want, atol=1e-6)
    # free LLM: with threshold 0 the router sends everything to it
    engine.router.set_params(threshold=0.0)
    d = client.post("/v1/route", json={"prompts": ps}).json()["decisions"]
    assert all(x["llm"] == "newcomer" for x in d)
    # conflict without overwrite, fine with it
    assert client.post("/v1/llms", json=body).status_code == 409
    assert client.post("/v1/llms", json={**body, "overwrite": True}).status_code == 201


@pytest.mark.parametrize("reference,status,fragment", [
    ({"not-a-reference-id": 1.0}, 422, "not reference ids"),
    ([1.0, 0.0], 422, "expected one per reference id"),
    ("list-in-order", 422, "must be in [0, 1]"),
    ({}, 422, "at least 1 needed"),
])
def test_register_bad_reference(client, tiny, reference, status, fragment):
    if reference == "list-in-order":
        reference = [2.0] + [0.0] * (len(tiny["reference_ids"]) - 1)
    r = client.post("/v1/llms", json={"name": "bad", "reference": reference})
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"]["message"]


def test_register_bad_name_and_cost(client, tiny):
    ref = [1.0] * len(tiny["reference_ids"])
    assert client.post("/v1/llms", json={"name": "has space", "reference": ref}).status_code == 422
    assert client.post("/v1/llms", json={"name": "ok", "reference": ref, "cost": {"per_item": -1}}).status_code == 422


def test_registry_limit(client, tiny):
    ref = [1.0] * len(tiny["reference_ids"])
    codes = [client.post("/v1/llms", json={"name": f"n{i}", "reference": ref}).status_code for i in range(3)]
    assert codes == [201, 201, 413]  # 3 registered + 2 = the limit of 5


def test_unknown_llm_get_404(client):
    assert client.get("/v1/llms/nope").status_code == 404


def test_chat_requires_router_model_and_upstreams(client, tiny):
    msgs = [{"role": "user", "content": "hi"}]
    r = client.post("/v1/chat/completions", json={"model": "gpt-x", "messages": msgs})
    assert r.status_code == 404
    r = client.post("/v1/chat/completions", json={"model": "router", "messages": msgs})
    assert r.status_code == 503 and r.json()["error"]["type"] == "no_upstream"
    r = client.post("/v1/chat/completions", json={"model": "router", "messages": msgs, "stream": True})
    assert r.status_code == 400


def test_unhandled_error_is_500_without_trace(client, engine, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(engine, "score_with_spread", boom)  # what /v1/predict calls
    r = client.post("/v1/predict", json={"prompts": ["a"]})
    assert r.status_code == 500
    assert "secret" not in r.text and "Traceback" not in r.text


def test_timeout_is_504(engine, monkeypatch):
    import time

    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    app = create_app({"host": "127.0.0.1", "auth": {"enabled": False}, "limits": {"request_timeout_s": 0.2}}, engine=engine)
    with TestClient(app) as c:
        wait_ready(c)  # warm-up done before the slow-down
        monkeypatch.setattr(engine, "score_with_spread", lambda *a, **k: time.sleep(2))
        r = c.post("/v1/predict", json={"prompts": ["a"]})
    assert r.status_code == 504 and r.json()["error"]["type"] == "timeout"


def test_auth_off_only_on_loopback(engine, monkeypatch):
    from assessors.errors import ConfigError
    from assessors.serving.app import create_app

    create_app({"host": "127.0.0.1", "auth": {"enabled": False}}, engine=engine)
    with pytest.raises(ConfigError, match="loopback"):
        create_app({"host": "0.0.0.0", "auth": {"enabled": False}}, engine=engine)
    monkeypatch.delenv("ASSESSORS_API_KEYS", raising=False)
    with pytest.raises(ConfigError, match="holds an API key"):
        create_app({"host": "0.0.0.0"}, engine=engine)
    monkeypatch.setenv("ASSESSORS_API_KEYS", "short")
    with pytest.raises(ConfigError, match="at least 16"):
        create_app({"host": "0.0.0.0"}, engine=engine)


def test_chat_upstream_down_is_502(engine):
    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    name = engine.registry.names()[0]
    app = create_app({"host": "127.0.0.1", "auth": {"enabled": False},
                      "upstreams": {name: {"base_url": "http://127.0.0.1:9/v1", "model": "x", "timeout_s": 2,
                                           "max_retries": 0}}}, engine=engine)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.post("/v1/chat/completions", json={"model": "router", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 502 and r.json()["error"]["type"] == "upstream_unreachable"
    msg = r.json()["error"]["message"]
    assert msg.startswith(f"upstream {name!r} (http://127.0.0.1:9/v1) is unreachable") and "request_timeout_s" not in msg


def test_registration_returns_trust_report_with_default_hook(tiny, monkeypatch):
    """conf/predict.yaml's default trust hook: every registration carries a trust report."""
    from fastapi.testclient import TestClient

    from assessors.routing.setup import trust_hook
    from assessors.routing.engine import Engine
    from assessors.routing.registry import LLMRegistry
    from assessors.serving.app import create_app

    model = tiny["model"]  # the paper's generic assessor: the same report as every family
    eng = Engine(model, LLMRegistry(model.reference_ids, trust_fn=trust_hook(model, {"enabled": True})))
    monkeypatch.setenv("TEST_ASSESSORS_KEYS", API_KEY)
    app = create_app({"auth": {"api_keys_env": ["TEST_ASSESSORS_KEYS"]}}, engine=eng)
    ref_ids = tiny["reference_ids"]
    vec = np.asarray(model.reference_success[0], dtype=float)  # a training LLM's own results: in population
    with TestClient(app, headers={"Authorization": f"Bearer {API_KEY}"}) as c:
        r = c.post("/v1/llms", json={"name": "twin", "reference": {i: float(v) for i, v in zip(ref_ids, vec)}})
        assert r.status_code == 201, r.text
        trust = r.json()["trust"]
        assert trust["n_answered"] == int(np.isfinite(vec).sum()) and trust["fallback"]["predictor"] == "generic"
        lo, hi = trust["accuracy_range_training"]
        assert lo <= trust["expected_accuracy"] <= hi and "accuracy_above_training" not in trust["flags"]
        zeros = c.post("/v1/llms", json={"name": "zeros", "reference": [0.0] * len(ref_ids)}).json()["trust"]
        assert zeros["verdict"] != "ok" and zeros["expected_accuracy"] < trust["expected_accuracy"], zeros
        listed = {x["name"]: x for x in c.get("/v1/llms").json()["llms"]}
        assert listed["twin"]["trust"]["verdict"] == trust["verdict"]
    assert trust_hook(model, None) is None and trust_hook(model, {"enabled": False}) is None


def test_chat_stalled_upstream_is_504_naming_it(engine):
    """An upstream that accepts the connection but never answers: 504 after its own timeout_s."""
    import socket

    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    with socket.socket() as listener:  # accepts (the kernel completes the handshake) and never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        name = engine.registry.names()[0]
        app = create_app({"host": "127.0.0.1", "auth": {"enabled": False},
                          "upstreams": {name: {"base_url": url, "model": "x", "timeout_s": 0.5, "max_retries": 0}}},
                         engine=engine)
        with TestClient(app, raise_server_exceptions=False) as c:
            wait_ready(c)
            r = c.post("/v1/chat/completions", json={"model": "router", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 504 and r.json()["error"]["type"] == "upstream_timeout"
    msg = r.json()["error"]["message"]
    assert f"upstream {name!r}" in msg and "timeout_s=0.5" in msg and "request_timeout_s" not in msg


def test_upstream_defaults_suit_an_interactive_call():
    from assessors.serving.settings import Upstream

    up = Upstream(base_url="http://127.0.0.1:8080/v1", model="m")
    # a dead host is reported within seconds, not minutes
    assert up.connect_timeout_s * (up.max_retries + 1) <= 10 and up.timeout_s <= 30


def test_server_precision_reaches_sentence_transformer_encoders_only(tiny):
    import copy

    from pydantic import ValidationError

    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer, encoder_precision
    from assessors.routing.setup import build_engine
    from assessors.serving.settings import ServerSettings

    assert ServerSettings().precision == "auto"
    with pytest.raises(ValidationError, match="precision"):
        ServerSettings(precision="fp16")
    model = copy.copy(tiny["model"])
    model.featurizer = SentenceTransformerFeaturizer()  # never encodes here: only the setting is checked
    build_engine(None, model=model, precision="bfloat16")
    assert model.featurizer.precision == "bfloat16" and encoder_precision(model.featurizer) == "bfloat16"
    build_engine(None, model=model, precision=None)  # null keeps what the model has
    assert model.featurizer.precision == "bfloat16"
    # a featurizer without the option is left alone, and reports none
    plain = build_engine(None, model=copy.copy(tiny["model"]), precision="bfloat16").model.featurizer
    assert "precision" not in plain.get_params() and encoder_precision(plain) is None
