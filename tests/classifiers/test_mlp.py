import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score

from assessors.classifiers.mlp import MLPClassifier
from assessors.errors import DataError

# Small and single-threaded: the test machine is shared; a fit takes about a second.
FAST = dict(hidden_sizes=(32,), batch_size=128, max_epochs=12, num_threads=1, lr=3e-3)


def logistic_problem(n=3000, d=8, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32) * 5 + 3  # off-centre, wide: standardisation matters
    w = rng.normal(size=d)
    logit = scale * ((X - 3) / 5) @ w
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return X, y, logit


class CountingRows:
    """A lazy row source: builds rows on request, records every request, refuses materialisation."""

    def __init__(self, X):
        self._X, self.calls = X, []
        self.shape = X.shape

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        idx = np.asarray(idx)
        assert idx.ndim == 1, "row sources are indexed by 1-D index arrays"
        self.calls.append(len(idx))
        return self._X[idx]

    def __array__(self, *a, **k):
        raise AssertionError("the classifier tried to materialise the row source")


@pytest.fixture(scope="module")
def noisy():
    X, y, logit = logistic_problem()
    m = MLPClassifier(**FAST).fit(X[:2000], y[:2000])
    return m, X, y, logit


def test_learns_a_separable_problem():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1200, 4)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] > 0).astype(np.float32)
    m = MLPClassifier(**FAST).fit(X[:800], y[:800])
    assert roc_auc_score(y[800:], m.predict_proba(X[800:])[:, 1]) > 0.98
    assert (m.predict(X[800:]) == y[800:]).mean() > 0.9


def test_noisy_logistic_close_to_the_oracle(noisy):
    m, X, y, logit = noisy
    p = m.predict_proba(X[2000:])
    oracle = roc_auc_score(y[2000:], logit[2000:])
    got = roc_auc_score(y[2000:], p[:, 1])
    assert oracle > 0.8 and got > oracle - 0.03, (got, oracle)
    # probabilities are calibrated-ish, not just ranked: mean prediction near the base rate
    assert abs(p[:, 1].mean() - y[2000:].mean()) < 0.05


def test_sklearn_conventions(noisy):
    m, X, _, _ = noisy
    p = m.predict_proba(X[:7])
    assert p.shape == (7, 2) and np.allclose(p.sum(1), 1) and ((p >= 0) & (p <= 1)).all()
    assert list(m.classes_) == [0.0, 1.0] and m.n_features_in_ == 8
    assert np.allclose(1 / (1 + np.exp(-m.decision_function(X[:7]))), p[:, 1], atol=1e-6)
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "state_dict_")
    assert m.best_epoch_ is not None and 0 <= m.best_epoch_ <= m.n_epochs_


def test_row_source_is_drawn_lazily_in_batches_and_matches_the_array():
    X, y, _ = logistic_problem(n=1500, seed=5)
    rows = CountingRows(X)
    m_rows = MLPClassifier(**dict(FAST, max_epochs=3), validation_fraction=None).fit(rows, y)
    train_calls = [c for c in rows.calls]
    # one pass for standardisation stats (1 chunk here), then 3 epochs of ceil(1500/128)=12 batches
    assert len(train_calls) == 1 + 3 * 12
    assert max(train_calls[1:]) == 128
    rows.calls.clear()
    p_rows = m_rows.predict_proba(rows)[:, 1]
    assert rows.calls  # prediction also goes through X[idx]
    m_arr = MLPClassifier(**dict(FAST, max_epochs=3), validation_fraction=None).fit(X, y)
    np.testing.assert_allclose(p_rows, m_arr.predict_proba(X)[:, 1], rtol=1e-5, atol=1e-6)


def test_deterministic_given_seed():
    X, y, _ = logistic_problem(n=800, seed=2)
    kw = dict(FAST, max_epochs=3)
    state = np.random.get_state()
    a = MLPClassifier(**kw, seed=7).fit(X, y).predict_proba(X)
    b = MLPClassifier(**kw, seed=7).fit(X, y).predict_proba(X)
    c = MLPClassifier(**kw, seed=8).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-4
    assert np.array_equal(np.random.get_state()[1], state[1])  # global RNG untouched


def test_pickle_round_trip(noisy):
    m, X, _, _ = noisy
    blob = pickle.dumps(m)
    m2 = pickle.loads(blob)
    assert "_net" not in m2.__dict__  # rebuilt lazily from state_dict_
    np.testing.assert_array_equal(m.predict_proba(X[:50]), m2.predict_proba(X[:50]))


def test_without_validation_runs_all_epochs():
    X, y, _ = logistic_problem(n=400, seed=4)
    m = MLPClassifier(**dict(FAST, max_epochs=2), validation_fraction=None).fit(X, y)
    assert m.n_epochs_ == 2 and m.best_epoch_ is None


def test_bad_input_errors(noisy):
    m, X, y, _ = noisy
    with pytest.raises(NotFittedError):
        MLPClassifier().predict_proba(X)
    with pytest.raises(DataError, match="0/1"):
        MLPClassifier(**FAST).fit(X[:10], np.full(10, 2.0))
    with pytest.raises(DataError, match="single class"):
        MLPClassifier(**FAST).fit(X[:10], np.ones(10))
    with pytest.raises(DataError, match="rows but y"):
        MLPClassifier(**FAST).fit(X[:10], y[:9])
    Xn = X[:100].copy()
    Xn[17, 3] = np.nan
    with pytest.raises(DataError, match="row 17, column 3"):
        MLPClassifier(**FAST, validation_fraction=None).fit(Xn, y[:100])
    with pytest.raises(DataError, match="features"):
        m.predict_proba(X[:5, :3])


def test_holdout_by_instance_keeps_every_instance_on_one_side():
    from assessors.classifiers.mlp import holdout_split

    groups = np.repeat(np.arange(200), 7)  # 200 instances x 7 LLMs, as generic pair rows come
    val, train = holdout_split(len(groups), 0.1, np.random.default_rng(0), groups)
    assert not set(groups[val]) & set(groups[train])
    assert len(set(groups[val])) == 20 and len(val) + len(train) == len(groups)
    # without groups: random rows, so nearly every held-out instance is also trained on
    val, train = holdout_split(len(groups), 0.1, np.random.default_rng(0))
    assert len(val) == 140 and len(set(groups[val]) & set(groups[train])) > 100
    assert len(holdout_split(50, 0.0, np.random.default_rng(0))[0]) == 0
