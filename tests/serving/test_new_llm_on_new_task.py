"""A new LLM on a new task (real data): a BBH subtask the latent model never saw is calibrated on known
LLMs' real answers, then new LLMs' few real answers on the task enter their posterior (and the residual's
choice) on the adapted model, and their trust report about the task says whether the prediction is usable.

In Python, and through the server: ``POST /v1/tasks/calibrate``, then a server on the adapted model with
the task as its candidate pool (``/v1/llms/{name}/answers``, ``/trust``, ``/v1/predict``).
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from client_helpers import API_KEY, wait_ready

# trains a small latent model on MiniLM features of 8 BBH subtasks, then calibrates and logs (about 30-60 s)
pytestmark = pytest.mark.slow

TRAIN = ["bbh_navigate", "bbh_sports_understanding", "bbh_web_of_lies", "bbh_causal_judgement",
         "bbh_date_understanding", "bbh_disambiguation_qa", "bbh_hyperbaton", "bbh_snarks"]
TASK = "bbh_boolean_expressions"
N_CAL, N_ASK = 30, 20


@pytest.fixture(scope="module")
def case(data_dir, shared_cache):
    """The model (training subtasks only, with its prompt-side OOD signal), the task's features, 45 known
    LLMs' answers on 30 of its prompts, and 20 new LLMs' answers on the task."""
    from assessors.core.latent import LatentAssessor
    from assessors.core.pyfunc import AssessorModel
    from assessors.data.loaders.open_llm_leaderboard_v2 import load_open_llm_leaderboard_v2
    from assessors.features.sentence_transformer import SentenceTransformerFeaturizer
    from assessors.trust.prompt_ood import PromptOOD

    res = load_open_llm_leaderboard_v2(root=data_dir, subtasks=TRAIN + [TASK], download=False)
    feat = SentenceTransformerFeaturizer(cache_dir=str(shared_cache / "embeddings"), show_progress=False)
    sub = res.instances["subgroup"].astype(str)
    task_ids = [i for i in res.instance_ids if sub[i] == TASK]
    other = [i for i in res.instance_ids if sub[i] != TASK]
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(other))
    train_ids, val_ids = [other[i] for i in perm[:1400]], [other[i] for i in perm[1400:1700]]
    order = rng.permutation(len(res.llms))
    known, new = [res.llms[i] for i in order[:45]], [res.llms[i] for i in order[45:65]]
    X, X_task = feat.transform(res.prompts(train_ids)), feat.transform(res.prompts(task_ids))
    S = res.matrix(known, train_ids)
    ref = np.sort(rng.choice(len(train_ids), 50, replace=False))
    latent = LatentAssessor(dims=2, hidden_sizes=(32,), n_members=1, max_epochs=30, patience=5, residual_dims=8,
                            num_threads=1, seed=0).fit(X, S, ref)
    ood = PromptOOD().fit(X, feat.transform(res.prompts(val_ids)))
    model = AssessorModel(latent, feat, [train_ids[i] for i in ref], S[:, ref], known,
                          known_states=latent.describe_known(X, S), prompt_ood=ood)
    cal = np.sort(rng.choice(len(task_ids), N_CAL, replace=False))
    rest = np.setdiff1d(np.arange(len(task_ids)), cal)
    ask, target = rest[:N_ASK], rest[N_ASK:]
    return {"res": res, "model": model, "task_ids": task_ids, "X": X_task, "known": known, "new": new,
            "S_known": res.matrix(known, task_ids), "S_new": res.matrix(new, task_ids), "cal": cal, "ask": ask,
            "target": target}


def served(model, assessor, case):
    """Per new LLM: the trust report about the task's target prompts from its answers on ``ask``, and the
    AUC of what it is served there (the latent prediction from its posterior, or the fallback)."""
    from assessors.core.evidence import Evidence
    from assessors.metrics import per_llm_auc
    from assessors.trust.posterior_policy import PosteriorTrustPolicy, policy_options

    X, ask, target = case["X"], case["ask"], case["target"]
    policy = PosteriorTrustPolicy(**policy_options(model))
    reports, P, residual = [], [], []
    for k, llm in enumerate(case["new"]):
        y = case["S_new"][k, ask]
        post = assessor.evidence_posterior(Evidence(X[ask], y))
        residual.append(post.residual is not None)
        rep, fallback = policy.assess(assessor, X[ask], y, X[target], llm=llm)
        reports.append(rep)
        P.append(fallback(X[target]) if fallback is not None else assessor.predict_posterior(X[target], post)[0][0])
    auc = float(np.nanmean(per_llm_auc(case["S_new"][:, target], np.asarray(P))))
    return reports, auc, residual


def test_new_llms_on_a_calibrated_task_get_usable_predictions(case):
    from assessors.core.pyfunc import AssessorModel
    from assessors.metrics import per_llm_auc
    from assessors.onboarding.task_onboarding import adapted_prompt_ood, calibrate_model

    model, X, cal = case["model"], case["X"], case["cal"]
    Y = np.full(case["S_known"].shape, np.nan)
    Y[:, cal] = case["S_known"][:, cal]
    tc = calibrate_model(model, X, list(range(len(case["known"]))), Y)
    assert tc.report()["calibrated"] == N_CAL
    adapted = AssessorModel(tc.model_, model.featurizer, model.reference_ids, model.reference_success, model.llms,
                            known_states=model.known_states, prompt_ood=adapted_prompt_ood(model.prompt_ood, X[cal]))
    before, auc_before, _ = served(model, model.assessor, case)
    after, auc_after, residual = served(adapted, tc.model_, case)
    # trained: the task is unlike every training prompt, so every report sends the LLM to the OOD fallback
    assert all("prompts_out_of_distribution" in r["flags"] for r in before)
    assert {r["fallback"]["predictor"] for r in before} == {"reference_only"}
    # calibrated: the task is known; the reports judge the latent prediction from the LLM's own answers
    assert not any("prompts_out_of_distribution" in r["flags"] for r in after)
    verdicts = Counter(r["verdict"] for r in after)
    assert verdicts["ok"] + verdicts["uncertain"] >= 0.8 * len(after), verdicts
    assert all(residual)  # the residual was weighed on every new LLM's answers (switched on only by evidence)
    # what is served on the rest of the task ranks it better than the trained model's latent prediction and
    # than the fallback the trained model's reports chose
    latent_before = float(np.nanmean(per_llm_auc(case["S_new"][:, case["target"]], _latent_auc(model.assessor, case))))
    print(f"served AUC trained {auc_before:.3f} (its latent prediction {latent_before:.3f}), calibrated {auc_after:.3f}; "
          f"verdicts {dict(verdicts)}; residual on: trained {_residual_on(model.assessor, case)}, calibrated "
          f"{_residual_on(tc.model_, case)} of {len(case['new'])}")
    assert auc_after > max(auc_before, latent_before + 0.1, 0.55), (auc_after, auc_before, latent_before)


def _residual_on(assessor, case) -> int:
    """New LLMs whose answers on the task switched the residual on."""
    from assessors.core.evidence import Evidence

    X, ask = case["X"], case["ask"]
    posts = [assessor.evidence_posterior(Evidence(X[ask], case["S_new"][k, ask])) for k in range(len(case["new"]))]
    return sum(p.residual is not None and bool(np.any(p.residual.tau)) for p in posts)


def _latent_auc(assessor, case):
    """The trained model's latent prediction on the task (no fallback), per new LLM from its answers."""
    from assessors.core.evidence import Evidence

    X, ask, target = case["X"], case["ask"], case["target"]
    return np.asarray([assessor.predict_posterior(X[target], assessor.evidence_posterior(
        Evidence(X[ask], case["S_new"][k, ask])))[0][0] for k in range(len(case["new"]))])


def test_through_the_server_calibrate_then_onboard_the_new_llm_on_the_task(case, data_dir, tmp_path, monkeypatch):
    import mlflow
    from fastapi.testclient import TestClient

    from assessors.routing.setup import build_engine
    from assessors.serving.app import create_app

    monkeypatch.setenv("TEST_ASSESSORS_KEYS", API_KEY)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    pool = data_dir / "open_llm_leaderboard_v2" / "prompts" / f"{TASK}_prompts.csv"

    def app(model, **settings):
        engine = build_engine(None, model=model, trust={"enabled": True})
        base = {"auth": {"api_keys_env": ["TEST_ASSESSORS_KEYS"]}, "tracking_uri": store, "model_uri": "runs:/x/assessor"}
        return TestClient(create_app({**base, **settings}, engine=engine), raise_server_exceptions=False,
                          headers={"Authorization": f"Bearer {API_KEY}"})

    ids, texts = case["task_ids"], case["res"].prompts(case["task_ids"])
    answers = [{"llm": llm, "instance_id": ids[j], "success": float(case["S_known"][k, j])}
               for k, llm in enumerate(case["known"]) for j in case["cal"]]
    with app(case["model"]) as c:
        wait_ready(c)
        r = c.post("/v1/tasks/calibrate", json={"prompts": [{"instance_id": i, "prompt": p} for i, p in zip(ids, texts)],
                                                 "answers": answers, "register_as": "bool-task"})
        assert r.status_code == 201, r.text
        assert r.json()["calibrated"] == N_CAL and r.json()["serve"].endswith("model_uri=models:/bool-task/1")
    mlflow.set_tracking_uri(store)
    adapted = mlflow.pyfunc.load_model("models:/bool-task/1").unwrap_python_model()
    with app(adapted, onboarding={"pool": [str(pool)]}) as c:
        wait_ready(c)
        llm, y = case["new"][0], case["S_new"][0, case["ask"]]
        r = c.post(f"/v1/llms/{llm}/answers", json={"create": True, "answers": {
            ids[j]: (None if np.isnan(v) else float(v)) for j, v in zip(case["ask"], y)}})
        assert r.status_code == 200, r.text
        trust = c.get(f"/v1/llms/{llm}/trust").json()
        assert trust["trust"]["target"]["source"] == "pool" and trust["trust"]["target"]["n_prompts"] == len(ids)
        assert "prompts_out_of_distribution" not in trust["trust"]["flags"]
        assert trust["trust"]["verdict"] in ("ok", "uncertain") and trust["predictor"] == "assessor"
        target = [texts[j] for j in case["target"][:20]]
        got = [x["p_success"][llm] for x in c.post("/v1/predict", json={"prompts": target, "llms": [llm]}).json()["results"]]
    from assessors.core.evidence import Evidence

    X = case["X"]
    post = adapted.assessor.evidence_posterior(Evidence(X[case["ask"]], y))
    want = adapted.assessor.predict_posterior(X[case["target"][:20]], post)[0][0]
    np.testing.assert_allclose(got, want, atol=1e-4)
