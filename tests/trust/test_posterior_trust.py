"""Trust report on the latent posterior, on LLMs simulated from the model: bands cover, misfit and
extrapolation are caught, verdicts and the fallback."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.irt_math import sigmoid
from assessors.metrics import auc
from assessors.trust.posterior_report import OUT, UNCERTAIN, posterior_trust
from assessors.trust.fallbacks import ReferenceOnlyPredictor
from tests.latent_sim import fit_simulated


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def _answers(d, k, n, rng):
    idx = np.sort(rng.choice(d["pool"], n, replace=False))
    return idx, d["S"][k, idx].astype(float)


def test_bands_cover_and_in_population_llms_are_not_flagged(sim):
    model, d = sim
    rng = np.random.default_rng(0)
    X_t = d["X"][d["target"]]
    acc_in, auc_in, out, verdicts = [], [], [], []
    for k in d["new"][:40]:
        idx, y = _answers(d, k, 60, rng)
        rep = posterior_trust(model, d["X"][idx], y, X_t, llm=str(k), seed=int(k))
        s = d["S"][k, d["target"]]
        acc_in.append(rep.accuracy_band[0] <= s.mean() <= rep.accuracy_band[1])
        p, _ = model.predict_posterior(X_t, model.posterior(d["X"][idx], y[None, :]))
        real_auc = auc(s, p[0])
        auc_in.append(rep.auc_band[0] <= real_auc <= rep.auc_band[1])
        out.append(rep.verdict == OUT)
        verdicts.append(rep.verdict)
    assert np.mean(acc_in) >= 0.8, np.mean(acc_in)
    assert np.mean(auc_in) >= 0.8, np.mean(auc_in)
    assert np.mean(out) <= 0.15, verdicts  # false alarms on LLMs from the population


def test_misfit_and_extrapolation_are_out_of_population(sim):
    model, d = sim
    rng = np.random.default_rng(1)
    X_t = d["X"][d["target"]]
    flipped = []
    for k in d["new"][:10]:
        idx, y = _answers(d, k, 80, rng)
        # answers that run against the items' difficulty: succeeds on the hard ones, fails the easy ones
        p = d["P"][k, idx]
        y_bad = (p < np.median(p)).astype(float)
        rep = posterior_trust(model, d["X"][idx], y_bad, X_t, seed=int(k))
        flipped.append(rep.verdict == OUT and "misfit" in rep.flags)
    assert np.mean(flipped) >= 0.8
    # far stronger than every training LLM: succeeds where the best training LLM rarely does
    th = d["theta"][:60].max() + 4.0
    idx = np.sort(rng.choice(d["pool"], 80, replace=False))
    y = (rng.random(len(idx)) < sigmoid(th * d["a"][idx] - d["b"][idx])).astype(float)
    rep = posterior_trust(model, d["X"][idx], y, X_t)
    assert rep.verdict == OUT and rep.message == "out of population: use the fallback"
    assert {"accuracy_above_training", "ability_beyond_training"} & set(rep.flags), rep.flags


def test_a_muted_flag_is_a_note_through_the_serving_policy(sim):
    from assessors.errors import ConfigError
    from assessors.trust.posterior_policy import PosteriorTrustPolicy

    model, d = sim
    rng = np.random.default_rng(2)
    th = d["theta"][:60].max() + 4.0  # far stronger than every training LLM: extrapolation flags
    idx = np.sort(rng.choice(d["pool"], 80, replace=False))
    y = (rng.random(len(idx)) < sigmoid(th * d["a"][idx] - d["b"][idx])).astype(float)
    X_t = d["X"][d["target"]]
    loud, fb = PosteriorTrustPolicy().assess(model, d["X"][idx], y, X_t)
    extrapolation = {"accuracy_above_training", "ability_beyond_training"}
    assert loud["verdict"] == OUT and fb is not None and extrapolation & set(loud["flags"])
    muted = sorted(extrapolation & set(loud["flags"]))
    quiet, fb = PosteriorTrustPolicy(muted_flags=muted).assess(model, d["X"][idx], y, X_t)
    assert sorted(quiet["notes"]) == muted and not set(muted) & set(quiet["flags"])
    # nothing else raised (this LLM fits the model): the verdict no longer sends it to the fallback
    assert quiet["flags"] == [] and quiet["verdict"] != OUT and fb is None and quiet["fallback"]["predictor"] == "latent"
    assert sorted(quiet["policy"]["muted_flags"]) == muted
    with pytest.raises(ConfigError, match="muted_flags"):
        PosteriorTrustPolicy(muted_flags="misfit")
    with pytest.raises(ConfigError, match="muted_flags"):
        PosteriorTrustPolicy(muted_flags=["no_such_flag"])


def test_few_answers_ask_for_more_questions(sim):
    model, d = sim
    rng = np.random.default_rng(2)
    k = d["new"][0]
    idx, y = _answers(d, k, 3, rng)
    rep = posterior_trust(model, d["X"][idx], y, d["X"][d["target"]], max_width=0.05)
    assert rep.verdict == UNCERTAIN and rep.more_questions >= 5
    assert rep.message == f"uncertain: ask {rep.more_questions} more questions"
    none = posterior_trust(model, d["X"][idx][:0], y[:0], d["X"][d["target"]])
    assert none.verdict == UNCERTAIN and "prior_only" in none.flags
    assert rep.to_dict()["message"] == rep.message


def test_fallback_ranks_from_the_llms_own_answers(sim):
    model, d = sim
    rng = np.random.default_rng(3)
    k = d["new"][5]
    idx, y = _answers(d, k, 300, rng)
    X_t = d["X"][d["target"]]
    p = ReferenceOnlyPredictor(model, d["X"][idx], y)(X_t)
    assert p.shape == (len(X_t),) and ((p > 0) & (p < 1)).all()
    assert auc(d["S"][k, d["target"]], p) > 0.6
    const = ReferenceOnlyPredictor(model, d["X"][idx][:5], np.ones(5))(X_t)
    assert np.allclose(const, const[0]) and 0.5 < const[0] < 1


def test_rank_auc_equals_the_project_auc():
    from assessors.metrics import rank_auc

    rng = np.random.default_rng(4)
    p = np.round(rng.random(200), 2)  # ties
    Y = (rng.random((5, 200)) < p).astype(float)
    np.testing.assert_allclose(rank_auc(Y, p), [auc(y, p) for y in Y])
    assert np.isnan(rank_auc(np.ones((1, 200)), p)[0])
