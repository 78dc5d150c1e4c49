"""Simulation tests of the multidimensional 2PL IRT model."""
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.exceptions import NotFittedError

from assessors.errors import DataError
from assessors.selection.irt import MultidimIRT


def draw(n=40, m=600, D=10, seed=0, missing=0.05, a_mean=0.0):
    rng = np.random.default_rng(seed)
    th = rng.normal(size=(n, D))
    a = rng.normal(a_mean, 0.4, size=(m, D))  # a_mean > 0: ability raises accuracy
    b = rng.normal(0, 1.5, size=m)
    p = 1 / (1 + np.exp(-(th @ a.T - b)))
    S = (rng.random((n, m)) < p).astype(np.float32)
    S[rng.random(S.shape) < missing] = np.nan
    return S, th, a, b, p


def test_recovers_difficulties_from_model_data():
    S, th, a, b, p = draw()
    irt = MultidimIRT(dims=10, seed=0).fit(S)
    assert irt.discrimination_.shape == (600, 10) and irt.difficulty_.shape == (600,)
    assert irt.ability_.shape == (40, 10)
    rho = spearmanr(irt.difficulty_, b)[0]
    assert rho >= 0.9, rho
    # fitted probabilities track the true ones
    assert np.corrcoef(irt.predict_success().ravel(), p.ravel())[0, 1] > 0.7


def test_ability_for_new_llm_ranks_true_abilities():
    S, th, a, b, p = draw(n=60, m=800, D=2, seed=1, missing=0.0, a_mean=0.5)
    irt = MultidimIRT(dims=2, seed=0).fit(S[:40])
    items = np.arange(0, 800, 4)
    theta = irt.ability_for(S[40:, items], items)
    assert theta.shape == (20, 2)
    # predicted accuracy on the *other* items from 200 items tracks the truth
    rest = np.setdiff1d(np.arange(800), items)
    pred = irt.predict_success(theta, rest).mean(1)
    truth = p[40:, rest].mean(1)
    assert np.abs(pred - truth).mean() < 0.05
    assert spearmanr(pred, truth)[0] > 0.9


def test_deterministic_and_missing_allowed():
    S, *_ = draw(n=20, m=100, missing=0.2)
    a1 = MultidimIRT(seed=3).fit(S).difficulty_
    a2 = MultidimIRT(seed=3).fit(S).difficulty_
    np.testing.assert_array_equal(a1, a2)


def test_bad_inputs():
    S, *_ = draw(n=10, m=50)
    bad = S.copy()
    bad[0, 0] = 0.5
    with pytest.raises(DataError, match="success: graded answers must be 0, 1 or missing .NaN.; row 0, item 0 is 0.5"):
        MultidimIRT().fit(bad)
    empty = S.copy()
    empty[3] = np.nan
    with pytest.raises(DataError, match="rows \\[3\\]"):
        MultidimIRT().fit(empty)
    with pytest.raises(NotFittedError):
        MultidimIRT().predict_success()
    irt = MultidimIRT(dims=2).fit(S)
    with pytest.raises(DataError, match="columns"):
        irt.ability_for(S[:2, :5], [0, 1, 2])
