"""Synthetic selection data: LLMs x items drawn from a 2-factor logistic model, with features."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def synth():
    """(success (30, 200) with a few NaN, ids, features (200, 8))."""
    rng = np.random.default_rng(0)
    n_llms, n_items = 30, 200
    ability = rng.normal(size=(n_llms, 2))
    group = rng.integers(0, 2, n_items)
    disc = np.where(group[:, None] == np.arange(2)[None, :], 2.0, 0.1)
    diff = rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(ability @ disc.T - diff)))
    success = (rng.random((n_llms, n_items)) < p).astype(np.float32)
    success[rng.random(success.shape) < 0.02] = np.nan
    features = np.hstack([disc + rng.normal(0, 0.1, disc.shape), diff[:, None], rng.normal(size=(n_items, 5))])
    ids = [f"i{j}" for j in range(n_items)]
    return success, ids, features.astype(np.float32)
