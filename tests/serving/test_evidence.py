"""A new LLM from any evidence: graded answers on prompts outside the reference set, through the
registry, the engine, ``predict.py mode=score|route`` and ``POST /v1/llms`` (tiny real latent model)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assessors.core.evidence import Evidence
from assessors.data.evidence_files import pool_fingerprint
from assessors.errors import ConfigError, DataError, NoPosteriorError

API_KEY = "test-key-evidence-0123456789"
N_EVIDENCE, N_TARGET = 40, 15


def direct(model, res, evidence_ids, y, target_ids):
    """What the latent assessor gives when called by hand: ``posterior`` then ``predict_posterior``."""
    X_ev = model.featurizer.transform(res.prompts(evidence_ids))
    post = model.assessor.posterior(X_ev, np.asarray(y, dtype=np.float64)[None, :])
    return post, model.assessor.predict_posterior(model.featurizer.transform(res.prompts(target_ids)), post)


@pytest.fixture(scope="module")
def case(tiny_latent):
    """A held-out LLM's real answers on test prompts (none of them a reference prompt) and other target prompts."""
    res, ref = tiny_latent["results"], set(tiny_latent["reference_ids"])
    ids = [i for i in tiny_latent["test_ids"] if i not in ref]
    llm = tiny_latent["test_llms"][1]
    ev_ids, target = ids[:N_EVIDENCE], ids[N_EVIDENCE:N_EVIDENCE + N_TARGET]
    return {"llm": llm, "ev_ids": ev_ids, "y": res.matrix([llm], ev_ids)[0], "target": target}


def write_pool(tmp_path, res, ids, name="pool.csv"):
    """A prompt file with a subgroup column, so its ids stay the data's ids."""
    df = res.instances.loc[ids, ["prompt", "target", "subgroup"]].rename_axis("instance_id").reset_index()
    df.to_csv(tmp_path / name, index=False)
    return tmp_path / name


def write_answers(tmp_path, ids, y, name="answers.csv"):
    pd.DataFrame({"order": range(len(ids)), "instance_id": ids, "success": y}).to_csv(tmp_path / name, index=False)
    return tmp_path / name


# --------------------------------------------------------------------- registry and engine
def test_engine_scores_an_llm_from_evidence_as_its_posterior(tiny_latent, case):
    from assessors.routing.setup import build_engine

    model, res = tiny_latent["model"], tiny_latent["results"]
    engine = build_engine(None, model=model, trust={"enabled": True, "fallback": False})
    X_ev = engine.embed(res.prompts(case["ev_ids"]))
    entry = engine.registry.register("ev", evidence=Evidence(X_ev, case["y"], tuple(case["ev_ids"])))
    ref_vec = res.matrix([case["llm"]], tiny_latent["reference_ids"])[0]
    engine.registry.register("ref", ref_vec)
    post, (p, std) = direct(model, res, case["ev_ids"], case["y"], case["target"])
    np.testing.assert_allclose(entry.posterior.theta, post.theta, atol=1e-9)
    np.testing.assert_allclose(entry.posterior.cov, post.cov, atol=1e-9)
    names, P, STD = engine.predict_with_spread(res.prompts(case["target"]), ["ref", "ev"])
    np.testing.assert_allclose(P[1], p[0], atol=1e-6)
    np.testing.assert_allclose(STD[1], std[0], atol=1e-6)
    # the reference LLM in the same request is scored as before, from its reference answers
    X_t = model.featurizer.transform(res.prompts(case["target"]))
    np.testing.assert_allclose(P[0], model.assessor.predict_proba(X_t, ref_vec), atol=1e-6)
    assert not np.allclose(P[0], P[1])
    s = entry.summary()
    assert (s["n_reference"], s["n_evidence"], s["n_answered"]) == (0, N_EVIDENCE, int(np.isfinite(case["y"]).sum()))
    assert s["evidence_accuracy"] == pytest.approx(np.nanmean(case["y"])) and s["reference_accuracy"] is None
    # the posterior trust report works from evidence: its answered items are the evidence
    assert entry.trust["version"] == 2 and entry.trust["n_answered"] == s["n_answered"] and entry.trust["llm"] == "ev"


def test_a_known_llm_is_scored_from_all_its_training_answers(tiny_latent, case):
    """The engine and the pyfunc model score an LLM the model trained on from its posterior over all its
    training answers (shipped with the model), not from its 30 reference answers."""
    from assessors.routing.setup import build_engine

    model, res = tiny_latent["model"], tiny_latent["results"]
    engine = build_engine(None, model=model, known_llms="all", trust={"enabled": False})
    X_t = model.featurizer.transform(res.prompts(case["target"]))
    names, P, STD = engine.predict_with_spread(res.prompts(case["target"]), model.llms)
    for i, name in enumerate(model.llms):
        p, std = model.assessor.predict_posterior(X_t, model.known_llm_state(name))
        np.testing.assert_allclose(P[i], p[0], atol=1e-6)
        np.testing.assert_allclose(STD[i], std[0], atol=1e-6)
    out = model.predict(None, pd.DataFrame({"prompt": res.prompts(case["target"])}), {"llm": model.llms[3]})
    np.testing.assert_allclose(out["p_success"], P[3], atol=1e-6)
    # not the reference conditioning any more (that a posterior from more answers gets the level right is
    # simulated in tests/routing/test_predict_all.py)
    assert not np.allclose(P, model.assessor.predict_proba(X_t, model.reference_success), atol=1e-3)


def test_registry_evidence_errors_and_trust_that_needs_reference_answers(tiny, tiny_latent, case):
    from assessors.routing.engine import registry_for

    X = np.zeros((3, tiny["model"].assessor.reference_features_.shape[1]), np.float32)  # no reference prompt
    with pytest.raises(NoPosteriorError, match="assessor=latent"):
        registry_for(tiny["model"]).register("g", evidence=Evidence(X, [0, 1, 1]))
    reg = registry_for(tiny_latent["model"], trust_fn=lambda r: {"accuracy": float(np.nanmean(r))})
    with pytest.raises(DataError, match="0, 1 or missing"):
        Evidence(X, [0, 0.5, 1])
    with pytest.raises(DataError, match="either reference results or evidence, not both"):
        reg.register("x", [1.0] * len(tiny_latent["reference_ids"]), evidence=Evidence(X, [0, 1, 1]))
    with pytest.raises(DataError, match="only 0 of 3 evidence items answered"):
        reg.register("x", evidence=Evidence(X, [np.nan] * 3))
    X_ev = tiny_latent["model"].featurizer.transform(tiny_latent["results"].prompts(case["ev_ids"]))
    e = reg.register("x", evidence=Evidence(X_ev, case["y"]))
    # a trust report computed from reference vectors says so instead of failing
    assert e.trust["available"] is False and "reference set" in e.trust["reason"]
    with pytest.raises(DataError, match="described by evidence"):
        reg.reference_matrix([e])


# ------------------------------------------------------------------------- predict.py
def _cfg(compose, tmp_path, prompts_file, llms, mode="score", extra=()):
    return compose([f"prompts={prompts_file}", f"out={tmp_path / 'out.csv'}", f"mode={mode}", "trust.enabled=false",
                    f"llms={llms}", *extra], config_name="predict")


@pytest.fixture
def files(tiny_latent, case, tmp_path):
    res = tiny_latent["results"]
    targets = tmp_path / "targets.csv"
    pd.DataFrame({"id": case["target"], "prompt": res.prompts(case["target"])}).to_csv(targets, index=False)
    # the pool: the evidence prompts and others, in two files
    pool = [write_pool(tmp_path, res, case["ev_ids"][:25], "pool_a.csv"),
            write_pool(tmp_path, res, case["ev_ids"][25:] + tiny_latent["test_ids"][-30:], "pool_b.csv")]
    return {"targets": targets, "pool": pool, "answers": write_answers(tmp_path, case["ev_ids"], case["y"])}


def test_score_and_route_with_answers_on_any_prompts(compose, tiny_latent, case, files, tmp_path):
    from assessors.tasks.route import run as route
    from assessors.tasks.score import run as score

    model, res = tiny_latent["model"], tiny_latent["results"]
    pool = ",".join(map(str, files["pool"]))
    llms = f"[{{name: ev, answers: {files['answers']}, prompts: [{pool}]}}]"
    summary = score(_cfg(compose, tmp_path, files["targets"], llms), model=model)
    df = pd.read_csv(tmp_path / "out.csv", dtype={"id": str})
    _, (p, std) = direct(model, res, case["ev_ids"], case["y"], case["target"])
    assert summary["llms"] == ["ev"] and df["id"].tolist() == case["target"]
    np.testing.assert_allclose(df["p_success"], p[0], atol=1e-6)
    np.testing.assert_allclose(df["p_std"], std[0], atol=1e-6)
    ref = tmp_path / "ref.csv"
    pd.DataFrame({"reference_id": tiny_latent["reference_ids"],
                  "success": res.matrix([case["llm"]], tiny_latent["reference_ids"])[0]}).to_csv(ref, index=False)
    llms2 = (f"[{{name: ev, answers: {files['answers']}, prompts: [{pool}], cost: {{per_item: 0.01}}}}, "
             f"{{name: by_ref, reference: {ref}, cost: {{per_item: 0.02}}}}]")
    out = route(_cfg(compose, tmp_path, files["targets"], llms2, mode="route", extra=["router=threshold"]), model=model)
    routes = pd.read_csv(tmp_path / "out.csv")
    assert len(routes) == N_TARGET and out["n_prompts"] == N_TARGET
    np.testing.assert_allclose(routes["p_success[ev]"], p[0], atol=1e-6)


def test_score_from_an_adaptive_onboarding_directory(compose, tiny_latent, case, files, tmp_path):
    from assessors.data.prompts import read_prompt_files
    from assessors.tasks.score import run as score

    model, res = tiny_latent["model"], tiny_latent["results"]
    out_dir = tmp_path / "onboarded"
    out_dir.mkdir()
    asked = case["ev_ids"][::2]  # half the pool's prompts were asked
    y = res.matrix([case["llm"]], asked)[0]
    write_answers(out_dir, asked, y)
    pool = read_prompt_files(files["pool"]).set_index("instance_id")
    manifest = {"pinned": {"pool": pool_fingerprint(pool)}, "pool_files": [str(f) for f in files["pool"]]}
    (out_dir / "adaptive.json").write_text(json.dumps(manifest))
    score(_cfg(compose, tmp_path, files["targets"], f"[{{name: onb, onboarded: {out_dir}}}]"), model=model)
    _, (p, _) = direct(model, res, asked, y, case["target"])
    np.testing.assert_allclose(pd.read_csv(tmp_path / "out.csv")["p_success"], p[0], atol=1e-6)
    # the pool files changed since: refused, naming the way out
    pd.read_csv(files["pool"][0]).iloc[:-1].to_csv(files["pool"][0], index=False)
    with pytest.raises(DataError, match="changed since the onboarding.*pass answers"):
        score(_cfg(compose, tmp_path, files["targets"], f"[{{name: onb, onboarded: {out_dir}}}]"), model=model)
    manifest.pop("pool_files")
    (out_dir / "adaptive.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="records no candidate pool files"):
        score(_cfg(compose, tmp_path, files["targets"], f"[{{name: onb, onboarded: {out_dir}}}]"), model=model)


def test_predict_evidence_errors_name_the_fix(compose, tiny, tiny_latent, case, files, tmp_path):
    from assessors.tasks.score import run as score

    pool = ",".join(map(str, files["pool"]))

    def run(llms, model=tiny_latent["model"]):
        return score(_cfg(compose, tmp_path, files["targets"], llms), model=model)

    ok = f"[{{name: ev, answers: {files['answers']}, prompts: [{pool}]}}]"
    with pytest.raises(NoPosteriorError, match="assessor=latent"):
        run(ok, model=tiny["model"])
    with pytest.raises(DataError, match="not in the prompt files.*pass the files the answers were made from"):
        run(f"[{{name: ev, answers: {files['answers']}, prompts: [{files['pool'][0]}]}}]")
    bad = write_answers(tmp_path, case["ev_ids"][:3], [0, 0.5, 1], "bad.csv")
    with pytest.raises(DataError, match="0, 1 or missing.*Threshold"):
        run(f"[{{name: ev, answers: {bad}, prompts: [{pool}]}}]")
    with pytest.raises(ConfigError, match="needs 'prompts"):
        run(f"[{{name: ev, answers: {files['answers']}}}]")
    with pytest.raises(ConfigError, match="not \\['reference', 'answers'\\]"):
        run(f"[{{name: ev, reference: {files['answers']}, answers: {files['answers']}, prompts: [{pool}]}}]")
    with pytest.raises(DataError, match="no adaptive.json"):
        run(f"[{{name: ev, onboarded: {tmp_path}}}]")


# ------------------------------------------------------------------------------- HTTP
def _client(engine, monkeypatch, limits=None):
    from fastapi.testclient import TestClient

    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_EVIDENCE_KEYS", API_KEY)
    app = create_app({"auth": {"api_keys_env": ["TEST_EVIDENCE_KEYS"]}, "limits": limits or {}}, engine=engine)
    return TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {API_KEY}"})


def test_http_registration_from_evidence(tiny_latent, case, monkeypatch):
    from assessors.routing.setup import build_engine

    model, res = tiny_latent["model"], tiny_latent["results"]
    engine = build_engine(None, model=model, trust={"enabled": True})
    items = [{"prompt": p, "success": None if np.isnan(v) else int(v)}
             for p, v in zip(res.prompts(case["ev_ids"]), case["y"])]
    with _client(engine, monkeypatch, {"max_batch": 64, "max_prompt_chars": 20_000}) as c:
        r = c.post("/v1/llms", json={"name": "ev", "evidence": items, "cost": {"per_item": 0.01}})
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["n_evidence"] == N_EVIDENCE and body["n_reference"] == 0
        assert body["trust"]["version"] == 2 and body["trust"]["llm"] == "ev"
        out = c.post("/v1/predict", json={"prompts": res.prompts(case["target"]), "llms": ["ev"]})
        assert out.status_code == 200, out.text
        got = np.array([x["p_success"]["ev"] for x in out.json()["results"]])
        p = direct(model, res, case["ev_ids"], case["y"], case["target"])[1][0][0]
        if body["predictor"] == "assessor":
            np.testing.assert_allclose(got, p, atol=1e-6)
        else:  # the trust verdict switched it to its fallback: that one scores it
            np.testing.assert_allclose(got, engine.registry.get("ev").predictor(
                model.featurizer.transform(res.prompts(case["target"]))), atol=1e-6)
        r = c.post("/v1/llms", json={"name": "ev", "evidence": items})
        assert r.status_code == 409 and "overwrite=true" in r.text
        # /next and /answers work on reference answers: an evidence LLM gets a 409 naming the way out
        r = c.post("/v1/llms/ev/next", json={"n": 1})
        assert r.status_code == 409 and r.json()["error"]["type"] == "registered_from_evidence"
        # limits of the scoring endpoints
        r = c.post("/v1/llms", json={"name": "big", "evidence": items * 2})
        assert r.status_code == 413 and "batch limit" in r.text
        r = c.post("/v1/llms", json={"name": "long", "evidence": [{"prompt": "x" * 20_001, "success": 1}]})
        assert r.status_code == 413 and "limit is 20000" in r.text
        r = c.post("/v1/llms", json={"name": "soft", "evidence": [{"prompt": "a", "success": 0.5}]})
        assert r.status_code == 422 and "0, 1 or missing" in r.text
        r = c.post("/v1/llms", json={"name": "both", "evidence": items[:2], "reference": [1.0]})
        assert r.status_code == 422 and "not both" in r.text
        r = c.post("/v1/llms", json={"name": "none"})
        assert r.status_code == 422 and "not neither" in r.text
        assert [x["name"] for x in c.get("/v1/llms").json()["llms"]] == ["ev"]


def test_http_evidence_needs_a_latent_assessor(tiny, monkeypatch):
    from assessors.routing.engine import Engine

    with _client(Engine(tiny["model"]), monkeypatch) as c:
        r = c.post("/v1/llms", json={"name": "g", "evidence": [{"prompt": "Is 7 prime?", "success": 1}]})
        assert r.status_code == 409 and r.json()["error"]["type"] == "no_posterior"
        assert "assessor=latent" in r.json()["error"]["message"]
