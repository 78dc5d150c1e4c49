"""Neighbour profiles: what they hold, that a training prompt is not its own neighbour, and what they
buy the latent assessor on prompts whose difficulty no small network reads from their features."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from assessors.core.item_profiles import NeighbourProfiles
from assessors.core.latent import LatentAssessor
from assessors.core.latent_stream import StreamingLatentAssessor
from assessors.errors import ConfigError
from assessors.irt_math import sigmoid
from assessors.metrics import auc


def clustered(n_clusters=30, per=30, d=24, spread=0.15, seed=0):
    """Prompts around cluster centres; returns features (n, d) and cluster labels (n,)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d))
    lab = np.repeat(np.arange(n_clusters), per)
    X = centres[lab] + spread * rng.standard_normal((len(lab), d))
    return X.astype(np.float32), lab


def test_profiles_are_the_neighbours_mean_answers_without_the_prompt_itself():
    rng = np.random.default_rng(0)
    X, lab = clustered(n_clusters=10, per=12, d=8)
    A = (rng.random((len(X), 6)) < 0.5).astype(np.float32)      # prompt-major, 6 training LLMs
    A[0, 2] = np.nan
    prof = NeighbourProfiles(k=4).fit(X, A)
    P = prof(X)
    assert P.shape == (len(X), 6) and prof.inputs(X).shape == (len(X), 8 + 6)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    for i in (0, 5, 37):
        sim = unit @ unit[i]
        sim[i] = -np.inf                                          # not its own neighbour
        nb = np.argsort(-sim)[:4]
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(P[i], np.where(np.isnan(np.nanmean(A[nb], 0)), prof.fill_,
                                                      np.nanmean(A[nb], 0)), atol=1e-6)
    # uint8 answers (255 = missing) give the same profiles; a new prompt may use every training prompt
    U = np.where(np.isnan(A), 255, A).astype(np.uint8)
    np.testing.assert_allclose(NeighbourProfiles(k=4).fit(X, U)(X), P, atol=1e-6)
    new = X[:3] + 0.5
    assert prof(new).shape == (3, 6)


def test_many_llms_are_reduced_to_principal_components():
    rng = np.random.default_rng(1)
    X, _ = clustered(n_clusters=5, per=20, d=6)
    A = (rng.random((len(X), 40)) < 0.5).astype(np.float32)
    prof = NeighbourProfiles(k=3, max_dims=8).fit(X, A)
    assert prof.n_dims == 8 and prof.inputs(X[:7]).shape == (7, 6 + 8)


def simulate_clustered_difficulty(n_llms=100, seed=0):
    """Difficulty = a smooth part of the features + a random effect per cluster of prompts (100
    clusters: more than a 4-unit item network can fit from the features); 1-D abilities."""
    rng = np.random.default_rng(seed)
    X, lab = clustered(n_clusters=100, per=12, d=24, seed=seed)
    b = 0.5 * X[:, 0] + 1.2 * rng.standard_normal(lab.max() + 1)[lab]
    theta = rng.standard_normal(n_llms)
    S = (rng.random((n_llms, len(X))) < sigmoid(theta[:, None] - b[None, :])).astype(np.float32)
    return X, S


def test_latent_assessor_ranks_new_prompts_better_with_neighbour_profiles():
    X, S = simulate_clustered_difficulty()
    perm = np.random.default_rng(3).permutation(len(X))
    tr_p, va_p, te_p = perm[:800], perm[800:900], perm[900:]
    tr_l, va_l, te_l = np.arange(50), np.arange(50, 60), np.arange(60, 100)
    ref = np.arange(0, 800, 8)
    val = (X[va_p], S[np.ix_(va_l, va_p)], S[np.ix_(va_l, tr_p)][:, ref])
    kw = dict(dims=1, hidden_sizes=(4,), dropout=0.0, n_members=1, max_epochs=40, patience=4, residual=False,
              residual_dims=4, num_threads=1)
    R = S[np.ix_(te_l, tr_p)][:, ref]
    scores = {}
    for k in (0, 5):
        model = LatentAssessor(item_neighbours=k, **kw).fit(X[tr_p], S[np.ix_(tr_l, tr_p)], ref, validation=val)
        P = model.predict_proba(X[te_p], R)
        scores[k] = np.mean([auc(S[l, te_p], P[i]) for i, l in enumerate(te_l)])
        if k:
            again = pickle.loads(pickle.dumps(model))
            np.testing.assert_allclose(again.predict_proba(X[te_p], R), P, atol=1e-6)
        else:
            assert model.profiles_ is None
    assert scores[5] > scores[0] + 0.01, scores


def test_a_model_pickled_before_the_profiles_loads_and_predicts_as_before():
    X, S = simulate_clustered_difficulty(n_llms=40)
    ref = np.arange(0, 600, 10)
    kw = dict(dims=1, hidden_sizes=(4,), dropout=0.0, n_members=1, max_epochs=5, patience=2, residual=False,
              residual_dims=4, num_threads=1)
    model = LatentAssessor(item_neighbours=0, **kw).fit(X[:600], S[:30, :600], ref)
    R, X_new = S[30:, :600][:, ref], X[600:]
    expected = model.predict_proba(X_new, R)
    old = pickle.loads(pickle.dumps(model))
    del old.__dict__["profiles_"], old.__dict__["item_neighbours"]  # the state of an older model
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.get_params()["item_neighbours"] == 0
    np.testing.assert_allclose(loaded.predict_proba(X_new, R), expected, atol=1e-6)


def test_the_streamed_fit_says_profiles_need_answers_in_memory():
    X, S = simulate_clustered_difficulty(n_llms=20)
    with pytest.raises(ConfigError, match="item_neighbours"):
        StreamingLatentAssessor(item_neighbours=5, max_epochs=1).fit(X[:100], S[:, :100], np.arange(10))


def test_profiles_of_a_query_set_are_computed_once_and_not_pickled():
    rng = np.random.default_rng(4)
    X, _ = clustered(n_clusters=5, per=20, d=6)
    prof = NeighbourProfiles(k=3).fit(X, (rng.random((len(X), 5)) < 0.5).astype(np.float32))
    first = prof(X[:30])
    assert prof(X[:30].copy()) is first and not first.flags.writeable   # same prompts: the cached profiles
    assert prof(X[:31]) is not first
    for i in range(NeighbourProfiles.CACHE_SIZE + 1):                   # a bounded cache
        prof(X[i:i + 10])
    assert len(prof._memo) == NeighbourProfiles.CACHE_SIZE
    again = pickle.loads(pickle.dumps(prof))
    assert "_memo" not in again.__dict__
    np.testing.assert_array_equal(again(X[:30]), first)
