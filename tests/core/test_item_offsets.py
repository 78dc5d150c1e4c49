"""Neighbour difficulty offsets: recovery and shrinkage on simulated prompts, and their use by the latent assessor."""
from __future__ import annotations

import pickle

import numpy as np

from assessors.core.item_offsets import NeighbourOffsets, member_offsets
from assessors.core.latent import LatentAssessor
from assessors.core.posterior import sigmoid
from assessors.metrics import auc


def clustered(n_clusters=30, per=30, d=24, spread=0.15, seed=0):
    """Prompts around cluster centres; returns features (n, d) and cluster labels (n,)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d))
    lab = np.repeat(np.arange(n_clusters), per)
    X = centres[lab] + spread * rng.standard_normal((len(lab), d))
    return X.astype(np.float32), lab


def test_offsets_shared_by_neighbours_are_carried_over_and_noise_is_shrunk_away():
    rng = np.random.default_rng(1)
    X, lab = clustered()
    effect = rng.standard_normal((2, lab.max() + 1))              # two members, one offset per cluster
    tr = rng.permutation(len(X))
    tr, te = tr[:600], tr[600:]
    shared = effect[:, lab] + 0.3 * rng.standard_normal((2, len(X)))
    no = NeighbourOffsets(k=10).fit(X[tr], shared[:, tr])
    assert no.shrink_.shape == (2,) and np.all(no.shrink_ > 0.85)
    pred = no(X[te])
    assert pred.shape == (2, len(te))
    for m in range(2):
        assert np.corrcoef(pred[m], effect[m, lab[te]])[0, 1] > 0.95

    noise = rng.standard_normal((2, len(X)))                      # offsets no neighbour can predict
    nn = NeighbourOffsets(k=10).fit(X[tr], noise[:, tr])
    assert np.all(nn.shrink_ < 0.3)
    assert np.abs(nn(X[te])).mean() < 0.15
    assert NeighbourOffsets(k=10).fit(X[tr], noise[:, tr])(X[:0]).shape == (2, 0)


def test_member_offsets_reads_float_and_uint8_answers_alike():
    rng = np.random.default_rng(2)
    X, _ = clustered(n_clusters=5, per=20, d=6)
    S = (rng.random((len(X), 12)) < 0.5).astype(np.float32)        # prompt-major
    S[3, 4] = np.nan
    members = [{"weights": _zero_net(6, 2), "theta": rng.standard_normal((12, 2))}]
    U = np.where(np.isnan(S), 255, S).astype(np.uint8)
    a, b = member_offsets(members, X, S, block=7), member_offsets(members, X, U, block=64)
    np.testing.assert_allclose(a, b, atol=1e-5)
    # zero network: the offset is minus the shrunk logit of each prompt's success rate
    rate = np.nanmean(S, 1)
    assert np.corrcoef(a[0], rate)[0, 1] > 0.99


def _zero_net(d: int, dims: int) -> dict:
    """Weights (the :func:`~assessors.core.latent_net.weights_of` layout) of an item network that
    outputs a = 0, b = 0 for every prompt."""
    zeros = np.zeros
    return {"mean": zeros(d, np.float32), "std": np.ones(d, np.float32), "dims": dims,
            "layers": [(zeros((4, d), np.float32), zeros(4, np.float32)),
                       (zeros((dims + 1, 4), np.float32), zeros(dims + 1, np.float32))]}


def simulate_clustered_difficulty(n_llms=100, seed=0):
    """Difficulty = a smooth part of the features + a random effect per cluster of prompts (100
    clusters: more than a 4-unit item network can fit, what neighbours carry); 1-D abilities."""
    rng = np.random.default_rng(seed)
    X, lab = clustered(n_clusters=100, per=12, d=24, seed=seed)
    b = 0.5 * X[:, 0] + 1.2 * rng.standard_normal(lab.max() + 1)[lab]
    theta = rng.standard_normal(n_llms)
    S = (rng.random((n_llms, len(X))) < sigmoid(theta[:, None] - b[None, :])).astype(np.float32)
    return X, S


def test_latent_assessor_ranks_new_prompts_better_with_neighbour_offsets():
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
    for k in (0, 10):
        model = LatentAssessor(item_neighbours=k, **kw).fit(X[tr_p], S[np.ix_(tr_l, tr_p)], ref, validation=val)
        P = model.predict_proba(X[te_p], R)
        scores[k] = np.mean([auc(S[l, te_p], P[i]) for i, l in enumerate(te_l)])
        if k:
            assert model.offsets_.shrink_[0] > 0.5
            again = pickle.loads(pickle.dumps(model))
            np.testing.assert_allclose(again.predict_proba(X[te_p], R), P, atol=1e-6)
        else:
            assert model.offsets_ is None
    assert scores[10] > scores[0] + 0.01, scores


def test_a_model_pickled_before_the_offsets_loads_and_predicts_as_before():
    X, S = simulate_clustered_difficulty(n_llms=40)
    ref = np.arange(0, 600, 10)
    kw = dict(dims=1, hidden_sizes=(4,), dropout=0.0, n_members=1, max_epochs=5, patience=2, residual=False,
              residual_dims=4, num_threads=1)
    model = LatentAssessor(item_neighbours=0, **kw).fit(X[:600], S[:30, :600], ref)
    R, X_new = S[30:, :600][:, ref], X[600:]
    expected = model.predict_proba(X_new, R)
    old = pickle.loads(pickle.dumps(model))
    del old.__dict__["offsets_"], old.__dict__["item_neighbours"]  # the state of an older model
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.get_params()["item_neighbours"] == 0
    np.testing.assert_allclose(loaded.predict_proba(X_new, R), expected, atol=1e-6)
