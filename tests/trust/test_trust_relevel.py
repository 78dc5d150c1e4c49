"""The re-levelled fallback: the offset is recovered by simulation, the latent ranking is kept and
the level moves to the LLM's answers."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.irt_math import sigmoid
from assessors.metrics import auc
from assessors.trust.fallbacks import ReleveledPredictor, fit_slope_offset
from tests.latent_sim import fit_simulated


@pytest.mark.parametrize("delta", [-3.0, 0.0, 1.5, 5.0])
def test_offset_is_recovered(delta):
    rng = np.random.default_rng(int(delta * 10) + 50)
    z = rng.normal(0, 1.5, 4000)
    y = (rng.random(len(z)) < sigmoid(z + delta)).astype(float)
    assert fit_slope_offset(z, y, prior_sd=10.0)[1] == pytest.approx(delta, abs=0.15)


def test_prior_shrinks_the_offset_with_few_answers():
    z = np.zeros(5)
    y = np.ones(5)  # all right: the unpenalised offset is infinite
    d = fit_slope_offset(z, y, prior_sd=1.0)[1]
    assert 0 < d < 3 and np.isfinite(d)


@pytest.fixture(scope="module")
def sim():
    return fit_simulated()


def test_relevel_keeps_the_ranking_and_fixes_the_level(sim):
    model, d = sim
    rng = np.random.default_rng(3)
    X_t = d["X"][d["target"]]
    gaps_before, gaps_after = [], []
    for k in d["new"][:8]:
        idx = np.sort(rng.choice(d["pool"], 100, replace=False))
        logit = np.log(d["P"][k]) - np.log1p(-d["P"][k])
        S = (rng.random(len(logit)) < sigmoid(logit + 2.5)).astype(float)  # far better than the model says
        y = S[idx]
        pred = ReleveledPredictor(model, d["X"][idx], y)
        p_lat, _ = model.predict_posterior(X_t, pred.state_)
        p_rel = pred(X_t)
        s = S[d["target"]]
        assert auc(s, p_rel) == pytest.approx(auc(s, p_lat[0]), abs=1e-9)  # a monotone shift
        gaps_before.append(abs(p_lat[0].mean() - s.mean()))
        gaps_after.append(abs(p_rel.mean() - s.mean()))
    assert np.mean(gaps_after) < 0.5 * np.mean(gaps_before), (gaps_before, gaps_after)
    assert np.mean(gaps_after) < 0.08
