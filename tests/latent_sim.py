"""LLMs simulated from the latent model and a latent assessor fitted on some of them (shared by tests)."""
from __future__ import annotations

import copy
from functools import lru_cache

import numpy as np

from assessors.core.latent import LatentAssessor
from assessors.irt_math import sigmoid

FAST = dict(dims=1, hidden_sizes=(16,), dropout=0.0, lr=0.01, weight_decay=1e-4, n_members=1, batch_prompts=64,
            max_epochs=40, patience=4, residual=False, residual_dims=4, num_threads=1)


def fit_simulated(seed: int = 1, n_prompts: int = 900, d: int = 6):
    """60 training and 15 validation LLMs fit the model; 65 new LLMs keep their true probabilities.

    Difficulties span a wide range, so most prompts are uninformative for a given LLM. Returns the
    model and a dict with features ``X``, answers ``S``, true probabilities ``P``, abilities
    ``theta``, item parameters ``a``, ``b`` and index arrays ``new``, ``pool`` (training prompts),
    ``target`` (held-out prompts).
    """
    # fitted once per test session and arguments; every caller gets its own copy (tests change params)
    return copy.deepcopy(_fit_simulated(seed, n_prompts, d))


@lru_cache(maxsize=None)
def _fit_simulated(seed: int, n_prompts: int, d: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_prompts, d)).astype(np.float32)
    u, v = rng.standard_normal(d) / np.sqrt(d), rng.standard_normal(d) / np.sqrt(d)
    a = np.log1p(np.exp(1.5 * X @ u)) + 0.5
    b = 2.0 * X @ v
    theta = rng.standard_normal(140)
    P = sigmoid(np.outer(theta, a) - b)
    S = (rng.random(P.shape) < P).astype(np.float32)
    tr_llm, va_llm, new = np.arange(60), np.arange(60, 75), np.arange(75, 140)
    pool, target = np.arange(600), np.arange(600, n_prompts)
    ref = np.arange(0, 600, 10)
    val = (X[target[:100]], S[np.ix_(va_llm, target[:100])], S[np.ix_(va_llm, pool)][:, ref])
    model = LatentAssessor(**FAST).fit(X[pool], S[np.ix_(tr_llm, pool)], ref, validation=val)
    return model, dict(X=X, S=S, P=P, theta=theta, a=a, b=b, new=new, pool=pool, target=target)
