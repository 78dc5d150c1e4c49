"""The recalibrated fallback: slope and offset are recovered by simulation, the model's ranking is kept,
and an LLM whose answers follow the model's ranking only weakly is served better-calibrated predictions
than the re-levelled ranking."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from assessors.irt_math import sigmoid
from assessors.metrics import auc, brier, ece
from assessors.trust.fallbacks import (DEFAULT_SLOPE_SD, FALLBACKS, MIN_SLOPE, ReleveledPredictor, fallback_predictor,
                                      fit_slope_offset)
from assessors.trust.posterior_policy import PosteriorTrustPolicy
from tests.latent_sim import fit_simulated


@pytest.mark.parametrize(("slope", "offset"), [(0.3, -1.0), (1.0, 0.5), (2.0, 2.0)])
def test_slope_and_offset_are_recovered(slope, offset):
    rng = np.random.default_rng(int(10 * slope + offset) + 7)
    z = rng.normal(0, 1.5, 5000)
    y = (rng.random(len(z)) < sigmoid(slope * z + offset)).astype(float)
    got = fit_slope_offset(z, y, slope_sd=10.0, prior_sd=10.0)
    assert got == pytest.approx((slope, offset), abs=0.15)


def test_a_reversed_ranking_is_flattened_not_reversed():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1.5, 2000)
    y = (rng.random(len(z)) < sigmoid(-z)).astype(float)  # the answers run against the model's ranking
    slope, _ = fit_slope_offset(z, y, slope_sd=10.0)
    assert slope == MIN_SLOPE


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def test_weakly_ranked_llms_are_better_calibrated(sim):
    """New LLMs whose true logit is a third of the model's (plus a shift): the recalibrated fallback keeps
    the model's AUC and lowers the ECE and Brier score of the re-levelled ranking on unseen prompts."""
    model, d = sim
    rng = np.random.default_rng(11)
    X_t = d["X"][d["target"]]
    scores = {"releveled": [], "recalibrated": []}
    for k in d["new"][:12]:
        idx = np.sort(rng.choice(d["pool"], 100, replace=False))
        rel = ReleveledPredictor(model, d["X"][idx], np.zeros(len(idx)))  # only for the model's logits
        z = rel.logit(d["X"])
        S = (rng.random(len(z)) < sigmoid(z / 3.0 + 0.5)).astype(float)
        y = S[idx]
        s = S[d["target"]]
        p_rel = ReleveledPredictor(model, d["X"][idx], y)(X_t)
        p_cal = ReleveledPredictor(model, d["X"][idx], y, slope_sd=DEFAULT_SLOPE_SD)(X_t)
        assert auc(s, p_cal) == pytest.approx(auc(s, p_rel), abs=1e-9)  # a monotone map of the same ranking
        for name, p in (("releveled", p_rel), ("recalibrated", p_cal)):
            scores[name].append((ece(s, p), brier(s, p)))
    rel, cal = (np.mean(scores[n], axis=0) for n in ("releveled", "recalibrated"))
    assert cal[0] < 0.7 * rel[0], (rel, cal)
    assert cal[1] < rel[1], (rel, cal)


def test_policy_builds_it_and_its_auc_band_is_the_models(sim):
    model, d = sim
    idx = np.arange(0, 600, 6)
    y = d["S"][d["new"][0], idx].astype(float)
    assert "recalibrated" in FALLBACKS
    pred = fallback_predictor("recalibrated", model, d["X"][idx], y)
    assert isinstance(pred, ReleveledPredictor) and pred.name == "recalibrated"
    rep = SimpleNamespace(flags=[], auc_band=(0.6, 0.7), auc_chance_low=None, expected_accuracy=0.5,
                          accuracy_band=(0.4, 0.6))
    out = PosteriorTrustPolicy().served(rep, pred, d["X"][:5], d["X"][idx], y)
    assert (out["auc_band"], out["auc_band_from"]) == ([0.6, 0.7], "posterior")


@pytest.mark.parametrize(("slope", "chosen"), [(1.0, 1.0), (1 / 3, 0.1)])
def test_slope_prior_follows_the_population(sim, slope, chosen):
    """Validation LLMs that follow the model's full spread choose a wide slope prior; LLMs that follow it only
    weakly keep the cautious default (no wider prior lowers their Brier score)."""
    from assessors.trust.posterior_eval import fit_validated, llm_outcome
    from assessors.trust.posterior_report import posterior_trust
    from assessors.trust.validated_policy import ValidatedTrustPolicy

    model, d = sim
    rng = np.random.default_rng(11)
    reps, outs = [], []
    for k in d["new"][:10]:
        idx = np.sort(rng.choice(d["pool"], 100, replace=False))
        z = ReleveledPredictor(model, d["X"][idx], np.zeros(len(idx))).logit(d["X"])  # the model's logits
        S = (rng.random(len(z)) < sigmoid(slope * z + 0.5)).astype(float)
        reps.append(posterior_trust(model, d["X"][idx], S[idx], d["X"][d["target"]], llm=str(k)))
        outs.append(llm_outcome(model, d["X"][idx], S[idx], d["X"][d["target"]], S[d["target"]], llm=str(k)))
    pol = fit_validated(ValidatedTrustPolicy(fallbacks=("releveled", "recalibrated")), reps, outs)
    assert pol.fallback_slope_sd_ == chosen, pol.slope_losses_
    assert pol.slope_losses_[f"recalibrated@{chosen:g}"] - min(pol.slope_losses_.values()) < pol.min_loss_gain
