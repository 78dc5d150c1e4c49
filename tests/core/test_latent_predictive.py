"""Slicing a latent posterior: one LLM's rows predict exactly what the whole posterior predicts for it."""
from __future__ import annotations

import numpy as np

from tests.latent_sim import fit_simulated


def test_take_keeps_each_llms_posterior_and_residual():
    model, sim = fit_simulated()
    model.set_params(residual=True)  # the residual's rows must follow their LLM too
    new, X = sim["new"][:8], sim["X"]
    post = model.posterior(X[sim["pool"]], sim["S"][np.ix_(new, sim["pool"])])
    assert post.residual is not None
    P, STD = model.predict_posterior(X[sim["target"]], post)
    rows = [5, 0, 5]
    part = post.take(rows)
    assert len(part) == 3 and list(part.evidence) == [post.evidence[i] for i in rows]
    p, std = model.predict_posterior(X[sim["target"]], part)
    np.testing.assert_allclose(p, P[rows], atol=1e-6)
    np.testing.assert_allclose(std, STD[rows], atol=1e-6)
