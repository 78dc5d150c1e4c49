"""PairLogisticRegression solves scikit-learn's problem on factored rows, on real results."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from assessors.classifiers.grid import ParamGrid
from assessors.classifiers.pair_logreg import PairLogisticRegression
from assessors.core.generic import GenericAssessor
from assessors.core.rows import PairRows, observed_pairs
from assessors.errors import DataError
from tests.conftest import small_prep

prep = small_prep("pair_logreg", ["bbh_navigate", "bbh_snarks"], n_train=20, n_val=4, n_test=4)


def _pairs(prep, mode, n_ref=12, drop=0.1, seed=0):
    """Real generic rows: success-pattern features, 12 reference items, some cells unevaluated."""
    rng = np.random.default_rng(seed)
    X, S = prep.X["train"].astype(np.float32), prep.S("train", "train").copy()
    ref = rng.choice(len(X), n_ref, replace=False)
    keep = np.setdiff1d(np.arange(len(X)), ref)
    S_keep = S[:, keep]
    S_keep[rng.random(S_keep.shape) < drop] = np.nan  # missing results must be allowed
    R = np.nan_to_num(S[:, ref], nan=0.5)
    inst = X[keep] if mode in ("embedding", "none") else X[keep] @ X[ref].T / X.shape[1]
    li, ii, y = observed_pairs(S_keep)
    return PairRows(inst, R if mode != "none" else R[:, :0], li, ii, mode), y


@pytest.mark.parametrize("mode", ["embedding", "similarity_interaction", "none"])
@pytest.mark.parametrize("penalty, solver, C", [("l2", "lbfgs", 0.05), ("l2", "lbfgs", 5.0),
                                                ("l1", "saga", 0.05), pytest.param("l1", "saga", 2.0, marks=pytest.mark.slow)])
def test_matches_sklearn_on_materialised_rows(prep, mode, penalty, solver, C):
    rows, y = _pairs(prep, mode)
    X = rows.to_array().astype(np.float64)
    ours = PairLogisticRegression(C=C, penalty=penalty, tol=1e-9, max_iter=20000).fit(rows, y)
    sk = LogisticRegression(C=C, l1_ratio=float(penalty == "l1"), solver=solver, tol=1e-9, max_iter=200000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=2e-4)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=2e-4)
    np.testing.assert_allclose(ours.predict_proba(rows), sk.predict_proba(X), atol=1e-4)
    # the factored and the materialised rows are the same matrix
    np.testing.assert_allclose(ours.decision_function(X), ours.decision_function(rows), atol=1e-9)
    if penalty == "l1":
        assert np.array_equal(ours.coef_ == 0, sk.coef_ == 0)  # the same features are dropped
    assert ours.n_iter_[0] > 0 and set(ours.predict(rows)) <= {0, 1}


def test_sample_weights_equal_repeated_rows(prep):
    rows, y = _pairs(prep, "embedding")
    X = rows.to_array()[:3000]
    y = y[:3000]
    w = np.random.default_rng(1).integers(1, 4, len(y))
    weighted = PairLogisticRegression(C=0.3, tol=1e-10).fit(X, y, sample_weight=w)
    repeated = PairLogisticRegression(C=0.3, tol=1e-10).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-5)


def test_generic_assessor_passes_factored_rows_and_agrees_with_sklearn(prep):
    X, S = prep.X["train"], prep.S("train", "train")
    ref = np.arange(0, len(X), max(1, len(X) // 15))
    val = (prep.X["val"], prep.S("val", "val"), prep.S("val", "train")[:, ref])
    ours = GenericAssessor(ParamGrid(PairLogisticRegression(tol=1e-8), {"C": [0.1, 1.0]}), "similarity_interaction")
    sk = GenericAssessor(ParamGrid(LogisticRegression(tol=1e-8, max_iter=5000), {"C": [0.1, 1.0]}), "similarity_interaction")
    ours.fit(X, S, ref, validation=val)
    sk.fit(X, S, ref, validation=val)
    R_test = prep.S("test", "train")[:, ref]
    np.testing.assert_allclose(ours.predict_proba(prep.X["test"], R_test), sk.predict_proba(prep.X["test"], R_test),
                               atol=1e-3)
    assert ours.classifier_name_.replace("PairLogisticRegression", "") == sk.classifier_name_.replace("LogisticRegression", "")


def test_bad_input_and_state():
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(NotFittedError):
        PairLogisticRegression().predict_proba(X)
    with pytest.raises(DataError, match="two classes"):
        PairLogisticRegression().fit(X, np.ones(40))
    with pytest.raises(DataError, match="one label per row"):
        PairLogisticRegression().fit(X, np.ones(39))
    with pytest.raises(ValueError, match="penalty"):
        PairLogisticRegression(penalty="elasticnet").fit(X, X[:, 0] > 0)
    with pytest.raises(ValueError, match="C must be positive"):
        PairLogisticRegression(C=0).fit(X, X[:, 0] > 0)
    import torch

    threads = torch.get_num_threads()
    fitted = PairLogisticRegression(num_threads=1).fit(X, X[:, 0] > 0)
    assert torch.get_num_threads() == threads  # pinned while fitting, restored after
    with pytest.raises(DataError, match="3"):
        fitted.predict_proba(X[:, :2])
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        PairLogisticRegression(max_iter=1, tol=1e-12).fit(X, X[:, 0] + X[:, 1] > 0)
