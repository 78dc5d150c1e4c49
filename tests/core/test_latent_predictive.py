"""Slicing and joining latent posteriors: one LLM's rows predict exactly what the whole posterior predicts for it."""
from __future__ import annotations

import numpy as np

from assessors.core.latent_predictive import LatentPosterior
from tests.latent_sim import fit_simulated


def test_take_keeps_each_llms_posterior_and_residual():
    model, sim = fit_simulated()
    # the residual's rows must follow their LLM too: switched on for every LLM (these answers fit the model)
    model.set_params(residual=True, residual_min_gain=-1e9)
    new, X = sim["new"][:8], sim["X"]
    post = model.posterior(X[sim["pool"]], sim["S"][np.ix_(new, sim["pool"])])
    assert post.residual.tau.all()
    P, STD = model.predict_posterior(X[sim["target"]], post)
    rows = [5, 0, 5]
    part = post.take(rows)
    assert len(part) == 3 and list(part.evidence) == [post.evidence[i] for i in rows]
    p, std = model.predict_posterior(X[sim["target"]], part)
    np.testing.assert_allclose(p, P[rows], atol=1e-6)
    np.testing.assert_allclose(std, STD[rows], atol=1e-6)


def test_concat_joins_posteriors_with_and_without_a_residual():
    model, sim = fit_simulated()
    model.set_params(residual=True, residual_min_gain=-1e9)
    X, new = sim["X"], sim["new"][:6]
    with_res = model.posterior(X[sim["pool"]], sim["S"][np.ix_(new, sim["pool"])])
    model.set_params(residual=False)
    without = model.posterior(X[sim["pool"][:50]], sim["S"][np.ix_(new[:2], sim["pool"][:50])])
    assert without.residual is None and with_res.residual.tau.all()
    joined = LatentPosterior.concat([without, with_res.take([4, 1])])
    T = X[sim["target"]]
    p, std = model.predict_posterior(T, joined)
    for rows, post in (([0, 1], without), ([2, 3], with_res.take([4, 1]))):
        q, s = model.predict_posterior(T, post)
        np.testing.assert_allclose(p[rows], q, atol=1e-6)
        np.testing.assert_allclose(std[rows], s, atol=1e-6)
