"""Adaptive onboarding over HTTP (``/v1/llms/{name}/next`` and ``/answers``), the trust report v2 in the
API, and the fallback its verdict applies, on small real fits."""
from __future__ import annotations

import numpy as np
import pytest

from client_helpers import wait_ready

API_KEY = "test-key-onboard-0123456789"


def make_client(model, monkeypatch, adaptive=None, fallback=True, pool=None, onboarding=None, engine=None):
    from fastapi.testclient import TestClient

    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app
    from assessors.trust.posterior_policy import make_trust_fn

    monkeypatch.setenv("TEST_ONBOARD_KEYS", API_KEY)
    engine = engine or Engine(model, trust_fn=make_trust_fn(model, fallback=fallback))
    app = create_app({"auth": {"api_keys_env": ["TEST_ONBOARD_KEYS"]}, "adaptive": adaptive or {},
                      "onboarding": {"pool": [str(p) for p in pool or ()], **(onboarding or {})}}, engine=engine)
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"})


@pytest.fixture
def client(tiny_latent, monkeypatch):
    with make_client(tiny_latent["model"], monkeypatch, adaptive={"budget": 9}) as c:
        yield c


def test_next_and_answers_update_the_posterior_until_the_budget(client, tiny_latent):
    res, ref_ids = tiny_latent["results"], tiny_latent["reference_ids"]
    llm = tiny_latent["test_llms"][2]
    truth = dict(zip(ref_ids, res.matrix([llm], ref_ids)[0].tolist()))
    assert client.post("/v1/llms/newcomer/next", json={"n": 3}).status_code == 404  # not registered, no start
    r = client.post("/v1/llms/newcomer/next", json={"n": 3, "start": True})
    assert r.status_code == 200, r.text
    first = r.json()
    assert len(set(first["ids"])) == 3 and set(first["ids"]) <= set(ref_ids)
    assert first["posterior"]["n_answered"] == 0 and not first["stop"]["met"]
    # asking again without answering proposes the same prompts (selection is a function of the answers)
    assert client.post("/v1/llms/newcomer/next", json={"n": 3, "start": True}).json()["ids"] == first["ids"]
    widths, asked, body = [first["posterior"]["width"]], list(first["ids"]), None
    ids = first["ids"]
    while True:
        r = client.post("/v1/llms/newcomer/answers", json={"answers": {i: truth[i] for i in ids}, "create": True})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["llm"]["n_answered"] == len(asked) == body["posterior"]["n_answered"]
        assert body["llm"]["trust"]["version"] == 2 and body["llm"]["trust"]["llm"] == "newcomer"
        widths.append(body["posterior"]["width"])
        if body["stop"]["met"]:
            break
        nxt = client.post("/v1/llms/newcomer/next", json={"n": 3}).json()
        ids = nxt["ids"]
        assert ids and not set(ids) & set(asked)
        asked += ids
    assert len(asked) == 9 and "budget" in body["stop"]["reason"]
    assert widths[-1] < widths[0]  # 9 answers narrow the band of the expected accuracy
    # the answers are the LLM's reference vector: scoring uses them at once
    out = client.post("/v1/predict", json={"prompts": res.prompts(tiny_latent["test_ids"][:2]), "llms": ["newcomer"]})
    assert out.status_code == 200 and all(0 <= x["p_success"]["newcomer"] <= 1 for x in out.json()["results"])
    tr = client.get("/v1/llms/newcomer/trust")
    assert tr.status_code == 200, tr.text
    rep = tr.json()
    assert rep["trust"]["n_answered"] == 9
    assert rep["trust"]["message"].split(":")[0] in ("ok", "uncertain", "out of population")
    assert rep["predictor"] == ("recalibrated" if rep["trust"]["verdict"] == "out of population" else "assessor")


def test_candidates_restrict_the_choice_and_bad_input_is_a_4xx(client, tiny_latent):
    ref_ids = tiny_latent["reference_ids"]
    r = client.post("/v1/llms/cand/next", json={"n": 2, "start": True, "candidates": ref_ids[5:9]})
    assert r.status_code == 200 and set(r.json()["ids"]) <= set(ref_ids[5:9])
    r = client.post("/v1/llms/cand/next", json={"n": 2, "start": True, "candidates": ["no-such-id", ref_ids[0]]})
    assert r.status_code == 422 and "no-such-id" in r.json()["error"]["message"]
    assert client.post("/v1/llms/cand/answers", json={"answers": {ref_ids[0]: 1}}).status_code == 404
    r = client.post("/v1/llms/cand/answers", json={"answers": {"bogus": 1}, "create": True})
    assert r.status_code == 422 and "bogus" in r.text
    r = client.post("/v1/llms/cand/answers", json={"answers": {ref_ids[0]: 0.5}, "create": True})
    assert r.status_code == 422 and "0, 1 or missing" in r.text
    assert client.post("/v1/llms/cand/next", json={"n": 0, "start": True}).status_code == 422
    # every candidate answered: nothing left to propose
    client.post("/v1/llms/cand/answers", json={"answers": {i: 1 for i in ref_ids[5:7]}, "create": True})
    r = client.post("/v1/llms/cand/next", json={"n": 2, "candidates": ref_ids[5:7]})
    assert r.status_code == 200 and r.json()["ids"] == []
    assert client.get("/v1/llms/nobody/trust").status_code == 404


def test_an_assessor_without_a_posterior_is_409(tiny, monkeypatch):
    with _generic_client(tiny, monkeypatch) as c:
        r = c.post(f"/v1/llms/{tiny['test_llms'][0]}/next", json={"n": 1})
        assert r.status_code == 409 and r.json()["error"]["type"] == "no_posterior"


def _generic_client(tiny, monkeypatch):
    from fastapi.testclient import TestClient

    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_ONBOARD_KEYS", API_KEY)
    engine = Engine(tiny["model"])
    engine.register_known(tiny["model"].llms[:1])
    app = create_app({"auth": {"api_keys_env": ["TEST_ONBOARD_KEYS"]}}, engine=engine)
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"})


# ------------------------------------------------------------------------------ the degenerate case
@pytest.mark.parametrize("fallback", [True, False])
def test_degenerate_population_is_out_of_population_and_served_by_the_fallback(degenerate, monkeypatch, fallback):
    from assessors.metrics import auc

    d = degenerate
    res, ref_ids = d["results"], d["reference_ids"]
    prompts = res.prompts(d["test_ids"])
    with make_client(d["model"], monkeypatch, fallback=fallback) as c:
        verdicts, auc_served, err_served, err_latent = [], [], [], []
        for llm in d["new"]:
            vec = res.matrix([llm], ref_ids)[0]
            r = c.post("/v1/llms", json={"name": llm, "reference": vec.tolist()})
            assert r.status_code == 201, r.text
            info = r.json()
            verdicts.append(info["trust"]["message"])
            applied = info["trust"]["verdict"] == "out of population" and fallback
            assert info["predictor"] == ("recalibrated" if applied else "assessor")
            assert info["trust"]["fallback"]["applied"] is applied
            out = c.post("/v1/predict", json={"prompts": prompts[:200], "llms": [llm]})
            assert out.status_code == 200, out.text
            body = out.json()
            p = np.array([x["p_success"][llm] for x in body["results"]])
            if applied:
                assert body["predictors"] == {llm: "recalibrated"}
                assert all(x["p_std"][llm] is None for x in body["results"])
            else:
                assert body["predictors"] is None
            y = res.matrix([llm], d["test_ids"][:200])[0]
            auc_served.append(auc(y, p))
            m = d["model"]
            p_latent = m.assessor.predict_proba(m.featurizer.transform(prompts[:200]), vec)
            err_served.append(abs(p.mean() - y.mean()))
            err_latent.append(abs(p_latent.mean() - y.mean()))
            if applied:  # the re-levelled fallback keeps the latent ranking
                assert auc(y, p) == pytest.approx(auc(y, p_latent), abs=0.02)
    assert sum(v == "out of population: use the fallback" for v in verdicts) >= 4, verdicts
    assert np.isfinite(auc_served).all()
    if fallback:
        # item parameters learned from LLMs that fail everything put a strong LLM's accuracy near 0; the
        # fallback re-levels the latent ranking to its own answers (see docs/adaptive_onboarding.md)
        assert np.mean(err_served) < 0.5 * np.mean(err_latent), (err_served, err_latent)


def test_the_http_sequence_is_the_selectors_own(tiny_latent, monkeypatch):
    """One question per round over HTTP asks exactly what AdaptiveSelector.simulate asks offline."""
    from assessors.onboarding.reference_set import ReferenceSetOnboarding

    model, res, ref_ids = tiny_latent["model"], tiny_latent["results"], tiny_latent["reference_ids"]
    truth = res.matrix([tiny_latent["test_llms"][3]], ref_ids)[0]
    sel = ReferenceSetOnboarding(model.assessor, ref_ids, {"budget": 6}).selector
    offline, _ = sel.simulate(lambda j: float(truth[j]), n_max=6)
    asked = []
    with make_client(model, monkeypatch, adaptive={"budget": 6}) as c:
        for step in range(6):
            ids = c.post("/v1/llms/seq/next", json={"n": 1, "start": step == 0}).json()["ids"]
            asked += ids
            r = c.post("/v1/llms/seq/answers", json={"answers": {ids[0]: float(truth[ref_ids.index(ids[0])])},
                                                     "create": True})
            assert r.status_code == 200, r.text
    assert asked == [ref_ids[j] for j in offline]
    assert r.json()["stop"]["met"]


def test_explore_answers_give_the_design_estimate_in_the_posterior(tiny_latent, monkeypatch):
    """With ``explore`` the random prompts' answers give the design-unbiased estimate the API reports."""
    res, ref_ids = tiny_latent["results"], tiny_latent["reference_ids"]
    truth = dict(zip(ref_ids, res.matrix([tiny_latent["test_llms"][1]], ref_ids)[0].tolist()))
    adaptive = {"budget": 8, "explore": 0.5, "estimator": "design"}
    with make_client(tiny_latent["model"], monkeypatch, adaptive=adaptive) as c:
        ids = c.post("/v1/llms/explorer/next", json={"n": 2, "start": True}).json()["ids"]
        for _ in range(4):  # the client asks what was proposed, in that order
            body = c.post("/v1/llms/explorer/answers", json={"answers": {i: truth[i] for i in ids}, "create": True}).json()
            ids = c.post("/v1/llms/explorer/next", json={"n": 2}).json()["ids"]
    post = body["posterior"]
    assert post["n_answered"] == 8 and post["n_random"] == 4 and post["estimator"] == "design"
    assert post["expected_accuracy"] == post["design_accuracy"] != post["model_accuracy"]
    assert post["design_low"] <= post["design_accuracy"] <= post["design_high"]


# ------------------------------------------------------------------------------ a candidate pool
N_POOL = 60


@pytest.fixture
def pool_files(tiny_latent, tmp_path):
    """Two real prompt files (CSV and JSONL) of held-out prompts, none a reference prompt, read back
    through the project's loader (ids, prompts) as the server reads them."""
    from assessors.data.prompts import read_prompt_files

    res, ref = tiny_latent["results"], set(tiny_latent["reference_ids"])
    ids = [i for i in tiny_latent["test_ids"] if i not in ref][:N_POOL]
    df = res.instances.loc[ids, ["prompt", "target", "subgroup"]].rename_axis("instance_id").reset_index()
    df.iloc[:40].to_csv(tmp_path / "pool_a.csv", index=False)
    df.iloc[40:].to_json(tmp_path / "pool_b.jsonl", orient="records", lines=True)
    files = [tmp_path / "pool_a.csv", tmp_path / "pool_b.jsonl"]
    pool = read_prompt_files(files, required=())
    assert list(pool["instance_id"]) == ids
    return {"files": files, "ids": ids, "text": dict(zip(pool["instance_id"], pool["prompt"]))}


def _pool_selector(model, pool_files, adaptive):
    """The selector predict.py mode=onboard fits on this pool (features from the model's featurizer)."""
    from assessors.onboarding.adaptive import AdaptiveSelector

    texts = [pool_files["text"][i] for i in pool_files["ids"]]
    return AdaptiveSelector(**adaptive).fit(model.assessor, model.featurizer.transform(texts))


def test_pool_next_and_answers_follow_the_selector_and_describe_the_llm_by_evidence(tiny_latent, pool_files,
                                                                                    monkeypatch):
    """Over a pool, /next proposes unanswered pool prompts with their text, exactly the offline
    selector's sequence, and the answers are the LLM's evidence: its posterior and predictions follow."""
    model, res = tiny_latent["model"], tiny_latent["results"]
    llm, ids = tiny_latent["test_llms"][3], pool_files["ids"]
    truth = dict(zip(ids, res.matrix([llm], ids)[0].tolist()))
    adaptive = {"budget": 8, "strata": 6}
    offline, _ = _pool_selector(model, pool_files, adaptive).simulate(lambda j: float(truth[ids[j]]), n_max=8)
    asked, body, embedded = [], None, []
    with make_client(model, monkeypatch, adaptive=adaptive, pool=pool_files["files"]) as c:
        engine = c.app.state.engine
        embed = engine.embed
        c.get("/v1/llms")  # start-up done: the pool is featurized
        monkeypatch.setattr(engine, "embed", lambda prompts: embedded.append(len(prompts)) or embed(prompts))
        for step in range(8):
            r = c.post("/v1/llms/pooled/next", json={"n": 1, "start": step == 0})
            assert r.status_code == 200, r.text
            nxt = r.json()
            assert nxt["prompts"] == {i: pool_files["text"][i] for i in nxt["ids"]}  # the client can ask them
            assert nxt["posterior"]["n_answered"] == step and not set(nxt["ids"]) & set(asked)
            asked += nxt["ids"]
            r = c.post("/v1/llms/pooled/answers", json={"answers": {i: truth[i] for i in nxt["ids"]}, "create": True})
            assert r.status_code == 200, r.text
            body = r.json()
        assert asked == [ids[j] for j in offline]
        assert embedded == []  # no request re-embedded the pool (nor any answered prompt)
        assert body["stop"]["met"] and "budget" in body["stop"]["reason"]
        assert body["llm"]["n_evidence"] == 8 == body["posterior"]["n_answered"] and body["llm"]["n_reference"] == 0
        assert body["llm"]["trust"]["version"] == 2 and body["llm"]["trust"]["n_answered"] == 8
        # predictions are the posterior of the answered pool prompts
        target = tiny_latent["test_ids"][-10:]
        out = c.post("/v1/predict", json={"prompts": res.prompts(target), "llms": ["pooled"]})
        assert out.status_code == 200, out.text
        got = np.array([x["p_success"]["pooled"] for x in out.json()["results"]])
        post = model.assessor.posterior(model.featurizer.transform([pool_files["text"][i] for i in asked]),
                                        np.array([[truth[i] for i in asked]]))
        X_t = model.featurizer.transform(res.prompts(target))
        want = (model.assessor.predict_posterior(X_t, post)[0][0] if body["llm"]["predictor"] == "assessor"
                else c.app.state.engine.registry.get("pooled").predictor(X_t))
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_without_a_pool_next_gives_no_prompt_text(client):
    r = client.post("/v1/llms/plain/next", json={"n": 2, "start": True})
    assert r.status_code == 200 and r.json()["prompts"] is None and len(r.json()["ids"]) == 2


def test_pool_resumes_mixes_reference_answers_and_names_unknown_ids(tiny_latent, pool_files, monkeypatch):
    model, res, ref_ids = tiny_latent["model"], tiny_latent["results"], tiny_latent["reference_ids"]
    llm, ids = tiny_latent["test_llms"][2], pool_files["ids"]
    truth = dict(zip(ids + ref_ids, res.matrix([llm], ids + ref_ids)[0].tolist()))
    with make_client(model, monkeypatch, adaptive={"budget": 20}, pool=pool_files["files"]) as c:
        first = c.post("/v1/llms/mix/next", json={"n": 3, "start": True}).json()["ids"]
        # answers on pool and reference prompts together; both enter the evidence
        r = c.post("/v1/llms/mix/answers", json={"answers": {**{i: truth[i] for i in first}, ref_ids[0]: truth[ref_ids[0]]},
                                                 "create": True})
        assert r.status_code == 200, r.text
        assert r.json()["llm"]["n_evidence"] == 4 == r.json()["posterior"]["n_answered"]
        # resumed: the next prompts continue from the answered ones, the same when asked twice
        again = [c.post("/v1/llms/mix/next", json={"n": 3}).json()["ids"] for _ in range(2)]
        assert again[0] == again[1] and len(again[0]) == 3 and not set(again[0]) & set(first)
        # unknown ids are a 422 naming them (nothing registered); candidates must be pool ids
        r = c.post("/v1/llms/mix/answers", json={"answers": {"no-such-id": 1, ids[-1]: 1}})
        assert r.status_code == 422 and "no-such-id" in r.json()["error"]["message"]
        assert c.get("/v1/llms/mix").json()["n_evidence"] == 4
        r = c.post("/v1/llms/mix/next", json={"n": 1, "candidates": [ref_ids[1]]})
        assert r.status_code == 422 and ref_ids[1] in r.json()["error"]["message"]
        r = c.post("/v1/llms/mix/next", json={"n": 2, "candidates": ids[50:52]})
        assert r.status_code == 200 and sorted(r.json()["ids"]) == sorted(ids[50:52])
        assert c.post("/v1/llms/nobody/next", json={"n": 1}).status_code == 404
        assert c.post("/v1/llms/nobody/answers", json={"answers": {ids[0]: 1}}).status_code == 404
        # an LLM registered from reference results continues over the pool: its answers carry over as evidence
        vec = res.matrix([llm], ref_ids)[0].tolist()[:10] + [None] * (len(ref_ids) - 10)
        assert c.post("/v1/llms", json={"name": "refd", "reference": vec}).status_code == 201
        nxt = c.post("/v1/llms/refd/next", json={"n": 2}).json()
        assert nxt["posterior"]["n_answered"] == 10 and set(nxt["ids"]) <= set(ids)
        r = c.post("/v1/llms/refd/answers", json={"answers": {i: truth[i] for i in nxt["ids"]}})
        assert r.status_code == 200 and r.json()["llm"]["n_evidence"] == 12 and r.json()["llm"]["n_reference"] == 0


def test_pool_accepts_an_llm_registered_from_evidence(tiny_latent, pool_files, monkeypatch):
    """What POST /v1/llms registered from evidence (prompts without ids) is kept and extended by /answers."""
    model, res, ids = tiny_latent["model"], tiny_latent["results"], pool_files["ids"]
    y = res.matrix([tiny_latent["test_llms"][1]], ids)[0]
    items = [{"prompt": pool_files["text"][i], "success": int(v)} for i, v in zip(ids[:5], y[:5])]
    with make_client(model, monkeypatch, pool=pool_files["files"]) as c:
        c.app.state.settings.limits.max_prompt_chars = 20_000
        r = c.post("/v1/llms", json={"name": "ev", "evidence": items})
        assert r.status_code == 201, r.text
        nxt = c.post("/v1/llms/ev/next", json={"n": 2}).json()
        assert nxt["posterior"]["n_answered"] == 5 and len(nxt["ids"]) == 2
        r = c.post("/v1/llms/ev/answers", json={"answers": {i: 1 for i in nxt["ids"]}})
        assert r.status_code == 200, r.text
        assert r.json()["llm"]["n_evidence"] == 7


def _started(c) -> str:
    """Wait for the start-up to end; ``ready`` or ``failed``."""
    import time

    deadline = time.monotonic() + 60
    while (status := c.get("/health").json()["status"]) == "starting" and time.monotonic() < deadline:
        time.sleep(0.05)
    return status


def test_a_pool_the_model_cannot_use_fails_start_up(tiny_latent, pool_files, monkeypatch, tmp_path):
    from assessors.errors import DataError

    model = tiny_latent["model"]
    monkeypatch.setattr(type(model.featurizer), "transform", lambda self, X: np.full((len(X), 4), np.nan))
    with make_client(model, monkeypatch, pool=pool_files["files"]) as c:
        assert _started(c) == "failed"
        err = c.app.state.startup_error
        assert isinstance(err, DataError) and "none of its 60 prompts can be featurized" in str(err)
        # a failed start-up is never served (no silent fall-back to the reference set)
        assert c.post("/v1/llms/x/next", json={"n": 1, "start": True}).status_code == 503
    monkeypatch.undo()
    with make_client(model, monkeypatch, pool=[tmp_path / "missing.csv"]) as c:
        assert _started(c) == "failed"
        assert "missing.csv: prompts file not found" in str(c.app.state.startup_error)


def test_a_pool_needs_a_latent_assessor(tiny, pool_files, monkeypatch):
    from fastapi.testclient import TestClient

    from assessors.errors import NoPosteriorError
    from assessors.routing.engine import Engine
    from assessors.serving.app import create_app

    app = create_app({"auth": {"enabled": False}, "onboarding": {"pool": [str(f) for f in pool_files["files"]]}},
                     engine=Engine(tiny["model"]))
    with TestClient(app, raise_server_exceptions=False) as c:
        assert _started(c) == "failed"
        assert isinstance(app.state.startup_error, NoPosteriorError)
        assert "server.onboarding.pool" in str(app.state.startup_error)


# ------------------------------------------------------------------------------ the trust report's target
def _reference_report(tiny_latent, llm: str, target=None) -> tuple[list, dict]:
    """An LLM's reference vector (its first 20 answers, the rest missing) and its report about ``target``
    (features; None: the reference prompts), computed outside the server."""
    from assessors.trust.posterior_policy import make_trust_fn

    model, ref_ids = tiny_latent["model"], tiny_latent["reference_ids"]
    vec = tiny_latent["results"].matrix([llm], ref_ids)[0].tolist()[:20] + [None] * (len(ref_ids) - 20)
    report, _ = make_trust_fn(model, target=target)(np.array(vec, dtype=float))
    return vec, report


def test_with_a_pool_the_trust_report_is_about_the_pool(tiny_latent, pool_files, monkeypatch):
    """With a candidate pool the report's expected accuracy and AUC are about the pool's prompts (the
    LLMs registered before start-up are re-reported); the report and /health name the target."""
    from assessors.routing.engine import Engine
    from assessors.trust.posterior_policy import make_trust_fn

    model, llm = tiny_latent["model"], tiny_latent["test_llms"][0]
    X_pool = model.featurizer.transform([pool_files["text"][i] for i in pool_files["ids"]])
    vec, want = _reference_report(tiny_latent, llm, target=X_pool)
    _, on_reference = _reference_report(tiny_latent, llm)
    assert abs(want["expected_accuracy"] - on_reference["expected_accuracy"]) > 1e-3  # the pool is other prompts
    engine = Engine(model, trust_fn=make_trust_fn(model))
    engine.registry.register("early", np.array(vec, dtype=float))  # before the pool is ready
    n_ref = len(tiny_latent["reference_ids"])
    assert engine.registry.get("early").trust["target"] == {"source": "reference", "n_prompts": n_ref}
    with make_client(model, monkeypatch, pool=pool_files["files"], engine=engine) as c:
        assert wait_ready(c)["trust_target"] == {"source": "pool", "n_prompts": N_POOL}
        r = c.post("/v1/llms", json={"name": "late", "reference": vec})
        assert r.status_code == 201, r.text
        for name in ("early", "late"):
            rep = c.get(f"/v1/llms/{name}/trust").json()["trust"]
            assert rep["target"] == {"source": "pool", "n_prompts": N_POOL} and rep["llm"] == name
            np.testing.assert_allclose([rep["expected_accuracy"], *rep["accuracy_band"], rep["expected_auc"]],
                                       [want["expected_accuracy"], *want["accuracy_band"], want["expected_auc"]],
                                       rtol=1e-6)
            assert rep["verdict"] == want["verdict"]
        # evidence from /answers is reported about the pool too
        r = c.post("/v1/llms/late/answers", json={"answers": {pool_files["ids"][0]: 1}})
        assert r.status_code == 200 and r.json()["llm"]["trust"]["target"]["source"] == "pool"


def test_a_large_pool_is_subsampled_for_the_trust_report(tiny_latent, pool_files, monkeypatch):
    """``server.onboarding.trust_target_max`` caps the report's target at a seeded subsample of the pool."""
    vec, _ = _reference_report(tiny_latent, tiny_latent["test_llms"][0])
    reports = []
    for _ in range(2):
        with make_client(tiny_latent["model"], monkeypatch, pool=pool_files["files"],
                         onboarding={"trust_target_max": 25}) as c:
            want = {"source": "pool", "n_prompts": 25, "n_available": N_POOL}
            assert wait_ready(c)["trust_target"] == want
            r = c.post("/v1/llms", json={"name": "capped", "reference": vec})
            assert r.status_code == 201 and r.json()["trust"]["target"] == want
            reports.append(r.json()["trust"])
    assert reports[0]["expected_accuracy"] == reports[1]["expected_accuracy"]  # the same subsample each start


def test_without_a_pool_the_trust_report_is_about_the_reference_prompts(client, tiny_latent):
    vec, want = _reference_report(tiny_latent, tiny_latent["test_llms"][0])
    on_reference = {"source": "reference", "n_prompts": len(tiny_latent["reference_ids"])}
    assert wait_ready(client)["trust_target"] == on_reference
    r = client.post("/v1/llms", json={"name": "plain", "reference": vec})
    assert r.status_code == 201, r.text
    rep = r.json()["trust"]
    assert rep["target"] == on_reference
    assert rep["expected_accuracy"] == pytest.approx(want["expected_accuracy"], rel=1e-6)


def test_a_trust_target_must_have_the_models_features(tiny_latent):
    from assessors.errors import DataError
    from assessors.trust.posterior_policy import make_trust_fn

    with pytest.raises(DataError, match="expected features of shape"):
        make_trust_fn(tiny_latent["model"], target=np.zeros((5, 3), np.float32))
