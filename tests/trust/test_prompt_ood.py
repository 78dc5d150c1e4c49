"""Prompt-side out-of-distribution signal: calibrated on validation prompts, it flags prompts from
elsewhere and about 1 - quantile of prompts from the training population."""
from __future__ import annotations

import numpy as np
import pytest

from assessors.errors import DataError
from assessors.trust.prompt_ood import PromptOOD


def _cloud(rng, n, centre, d=16):
    return centre + 0.3 * rng.standard_normal((n, d))


def test_in_distribution_share_is_about_one_minus_quantile_and_shifted_prompts_are_flagged():
    rng = np.random.default_rng(0)
    c = np.zeros(16)
    c[0] = 1.0
    other = np.zeros(16)
    other[1] = 1.0
    ood = PromptOOD(quantile=0.95, max_share=0.5).fit(_cloud(rng, 2000, c), _cloud(rng, 400, c))
    shares = [ood.share(_cloud(rng, 300, c)) for _ in range(10)]
    assert np.mean(shares) == pytest.approx(0.05, abs=0.03)
    assert not ood.share(_cloud(rng, 300, c)) > ood.max_share
    assert ood.share(_cloud(rng, 300, other)) > 0.9
    assert ood.share(_cloud(rng, 300, other)) > ood.max_share
    # a target set half from elsewhere: beyond the threshold in about that share
    mixed = np.vstack([_cloud(rng, 150, c), _cloud(rng, 150, other)])
    assert ood.share(mixed) == pytest.approx(0.5, abs=0.1)


def test_too_few_training_prompts_is_a_clear_error():
    with pytest.raises(DataError, match="at least 5 training prompts"):
        PromptOOD().fit(np.ones((3, 4)), np.ones((2, 4)))


def test_a_large_training_set_is_subsampled_for_the_index():
    rng = np.random.default_rng(1)
    c = np.zeros(16)
    c[0] = 1.0
    X = _cloud(rng, 3000, c)
    ood = PromptOOD(max_train=500, seed=3).fit(X, _cloud(rng, 300, c))
    assert ood.summary()["n_train"] == 500
    assert ood.share(_cloud(rng, 300, c)) == pytest.approx(0.05, abs=0.04)  # calibrated on the same index
    assert PromptOOD(max_train=None).fit(X, X[:10]).summary()["n_train"] == 3000


def test_the_pickled_signal_keeps_a_half_precision_index_and_the_same_distances():
    import pickle

    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(4)
    c = np.zeros(16)
    c[0] = 1.0
    X = _cloud(rng, 2000, c)
    ood = PromptOOD(max_train=None).fit(X, _cloud(rng, 200, c))
    Q = np.vstack([_cloud(rng, 50, c), _cloud(rng, 50, -c)])
    before = ood.distance(Q).copy()
    blob = pickle.dumps(ood)
    assert len(blob) < 2000 * 16 * 2 + 20000  # float16, and no float32 copy of the index
    again = pickle.loads(blob)
    assert again.index_.dtype == np.float16 and "_nn" not in again.__dict__
    assert np.array_equal(again.distance(Q), before) and again.threshold_ == ood.threshold_
    # a signal pickled with a float32 search object reads back as one with the half-precision index
    state = ood.__getstate__()
    state.pop("index_")
    state["nn_"] = NearestNeighbors(n_neighbors=5, metric="cosine", algorithm="brute").fit(X)
    old = PromptOOD.__new__(PromptOOD)
    old.__setstate__(state)
    assert old.summary()["n_train"] == 2000
    assert np.allclose(old.distance(Q), ood.distance(Q), atol=1e-3)
