"""Adaptive onboarding through the real openai client against an in-process endpoint (httpx
MockTransport): journal, resume of the same sequence, a journal from another model or pool, an
endpoint that stops answering, and ``predict.py mode=onboard`` wiring."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from assessors.core.latent import LatentAssessor
from assessors.errors import DataError, OfflineError
from assessors.features.ngrams import UnigramFeaturizer
from assessors.irt_math import sigmoid
from assessors.onboarding.adaptive import AdaptiveSelector
from assessors.onboarding.adaptive_run import AdaptiveOnboarding
from assessors.onboarding.client import Onboarder
from assessors.onboarding.grader_map import GraderMap
from assessors.onboarding.graders import ExactMatch

from test_onboarding_client import FakeEndpoint

FAST = dict(dims=1, hidden_sizes=(16,), dropout=0.0, lr=0.01, weight_decay=1e-4, n_members=1, batch_prompts=32,
            max_epochs=30, patience=4, residual=False, residual_dims=4, num_threads=1)
WORDS = [f"w{i}" for i in range(12)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Prompts made of words; a latent model fitted on LLMs simulated over their unigram features."""
    rng = np.random.default_rng(0)
    prompts = [" ".join(rng.choice(WORDS, size=6)) + f" q{i}" for i in range(150)]
    feat = UnigramFeaturizer(max_features=12, cache_dir=str(tmp_path_factory.mktemp("cache"))).fit(prompts)
    X = feat.transform(prompts)
    Xs = (X - X.mean(0)) / (X.std(0) + 1e-9)
    u, v = rng.standard_normal(X.shape[1]) / 3, rng.standard_normal(X.shape[1]) / 2
    a, b = np.log1p(np.exp(Xs @ u)) + 0.5, Xs @ v
    theta = rng.standard_normal(41)
    S = (rng.random((41, len(prompts))) < sigmoid(np.outer(theta, a) - b)).astype(np.float32)
    model = LatentAssessor(**FAST).fit(X, S[:40], np.arange(0, 150, 10))
    new_llm = S[40]
    pool = pd.DataFrame({"instance_id": [f"q{i}" for i in range(150)], "prompt": prompts,
                         "target": "yes", "subgroup": "sim"})
    answers = {p: ("yes" if s else "no") for p, s in zip(prompts, new_llm)}
    return model, feat, pool, answers


def _runner(model, feat, budget, model_name="sim-llm", seed=0):
    ob = Onboarder(base_url="http://fake/v1", model=model_name, graders=GraderMap(graders={}, default=ExactMatch()),
                   concurrency=1, max_retries=0, logprobs=False, show_progress=False)
    sel = AdaptiveSelector(criterion="mixed", budget=budget, seed=seed)
    return AdaptiveOnboarding(ob, sel, model, feat, assessor_id="m1")


def test_adaptive_onboarding_journals_and_resumes_the_same_sequence(setup, tmp_path):
    model, feat, pool, answers = setup
    ep = FakeEndpoint(answers)
    first = _runner(model, feat, 4).run(pool, tmp_path, http_client=ep.client())
    assert first["n_asked"] == 4 and first["n_queried"] == 4 and len(ep.seen) == 4
    assert 0 <= first["expected_accuracy_band_90"][0] <= first["expected_accuracy"] <= first["expected_accuracy_band_90"][1]
    seq4 = pd.read_csv(tmp_path / "answers.csv")
    # the answers are the endpoint's, graded
    for iid, s in zip(seq4["instance_id"], seq4["success"]):
        assert s == (answers[pool.set_index("instance_id").at[iid, "prompt"]] == "yes")
    # a larger budget later: the journal is replayed (no re-query) and the sequence continues
    more = _runner(model, feat, 8).run(pool, tmp_path, http_client=ep.client())
    seq8 = pd.read_csv(tmp_path / "answers.csv")
    assert more["n_queried"] == 4 and len(ep.seen) == 8
    assert seq8["instance_id"].tolist()[:4] == seq4["instance_id"].tolist()
    # the same 8 from scratch in a fresh directory
    fresh = FakeEndpoint(answers)
    _runner(model, feat, 8).run(pool, tmp_path / "fresh", http_client=fresh.client())
    assert pd.read_csv(tmp_path / "fresh" / "answers.csv")["instance_id"].tolist() == seq8["instance_id"].tolist()
    state = json.loads((tmp_path / "adaptive.json").read_text())
    assert len(state["history"]) == 8 and state["stop_reason"].startswith("budget")


def test_a_journal_from_another_model_or_pool_is_an_error(setup, tmp_path):
    model, feat, pool, answers = setup
    ep = FakeEndpoint(answers)
    _runner(model, feat, 3).run(pool, tmp_path, http_client=ep.client())
    before = (tmp_path / "journal.jsonl").read_bytes()
    with pytest.raises(DataError, match="another onboarding.*model"):
        _runner(model, feat, 3, model_name="other").run(pool, tmp_path, http_client=ep.client())
    with pytest.raises(DataError, match="another onboarding.*pool"):
        _runner(model, feat, 3).run(pool.iloc[:-1], tmp_path, http_client=ep.client())
    with pytest.raises(DataError, match="another onboarding.*selector"):
        _runner(model, feat, 3, seed=5).run(pool, tmp_path, http_client=ep.client())
    assert (tmp_path / "journal.jsonl").read_bytes() == before  # nothing lost, nothing queried


def test_an_endpoint_that_stops_answering_keeps_the_answers(setup, tmp_path):
    model, feat, pool, answers = setup
    ep = FakeEndpoint(answers)
    _runner(model, feat, 3).run(pool, tmp_path, http_client=ep.client())
    ep.fail = set(pool["prompt"])  # the endpoint now returns 500 on everything
    with pytest.raises(OfflineError, match="in a row got no answer.*rerun to resume"):
        _runner(model, feat, 10).run(pool, tmp_path, http_client=ep.client())
    ep.fail = set()
    out = _runner(model, feat, 10).run(pool, tmp_path, http_client=ep.client())
    assert out["n_answered"] == 10
    # a dead endpoint from the first question is an error at once
    dead = FakeEndpoint(answers, fail=set(pool["prompt"]))
    with pytest.raises(OfflineError):
        _runner(model, feat, 5).run(pool, tmp_path / "dead", http_client=dead.client())


def test_the_onboarding_directory_describes_the_llm_for_scoring(setup, tmp_path):
    """adaptive.json records the pool files; read_onboarded gives back the answers on those prompts."""
    from assessors.data.evidence_files import read_onboarded
    from assessors.data.prompts import read_prompt_files

    model, feat, pool, answers = setup
    pool.to_csv(tmp_path / "pool.csv", index=False)
    df = read_prompt_files([tmp_path / "pool.csv"])  # as predict.py mode=onboard reads onboard.prompts
    out = _runner(model, feat, 5).run(df, tmp_path / "out", http_client=FakeEndpoint(answers).client(),
                                      pool_files=[str(tmp_path / "pool.csv")])
    ids, texts, y, files = read_onboarded(tmp_path / "out")
    seq = pd.read_csv(tmp_path / "out" / "answers.csv", dtype={"instance_id": str})
    assert out["n_asked"] == 5 and ids == seq["instance_id"].tolist() and files == [str(tmp_path / "pool.csv")]
    np.testing.assert_array_equal(y, seq["success"].to_numpy(dtype=float))
    prompt = pool.set_index("instance_id")["prompt"]
    assert texts == [prompt[i] for i in ids] and y.tolist() == [float(answers[t] == "yes") for t in texts]


@pytest.mark.slow
def test_predict_scores_an_llm_from_its_onboarding_directory(data_dir, tmp_path):
    """Real BBH prompt files and a latent model saved as an MLflow model: an adaptive run (fake endpoint)
    writes its directory, and ``predict.py mode=score 'llms=[{name, onboarded: <dir>}]'`` scores from it."""
    import os

    import mlflow.pyfunc

    from assessors.data.prompts import read_prompt_files
    from test_adaptive_llama import _fit_tiny_latent, _prompt_files, _score_onboarded

    model_dir = tmp_path / "model"
    _fit_tiny_latent(data_dir, model_dir)
    model = mlflow.pyfunc.load_model(str(model_dir)).unwrap_python_model()
    files = _prompt_files(data_dir, tmp_path)
    pool = read_prompt_files(files)
    rng = np.random.default_rng(1)
    answers = {p: (t if rng.random() < 0.6 else "nope") for p, t in zip(pool["prompt"], pool["target"])}
    out = tmp_path / "onboard"
    run = _runner(model.assessor, model.featurizer, 8).run(pool, out, http_client=FakeEndpoint(answers).client(),
                                                           pool_files=files)
    assert run["n_answered"] == 8
    _score_onboarded(model_dir, files, out, tmp_path, dict(os.environ, PYTHONUNBUFFERED="1"))
