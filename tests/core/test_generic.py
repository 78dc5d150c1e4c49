"""The generic assessor's row construction on real results (Open LLM Leaderboard v2)."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from assessors.classifiers.grid import ParamGrid
from assessors.core.generic import GenericAssessor
from assessors.core.rows import collapse_pairs, observed_pairs
from tests.conftest import small_prep

prep = small_prep("generic", ["bbh_navigate", "bbh_snarks", "bbh_web_of_lies"], n_train=30, n_val=6, n_test=6)


def test_collapse_pairs_counts_every_pair_once():
    inst = np.array([0, 0, 0, 2, 2, 5])
    y = np.array([1, 0, 1, 1, 1, 0])
    idx, lab, w = collapse_pairs(inst, y)
    got = sorted(zip(idx.tolist(), lab.tolist(), w.tolist()))
    assert got == [(0, 0.0, 1.0), (0, 1.0, 2.0), (2, 1.0, 2.0), (5, 0.0, 1.0)]
    assert w.sum() == len(inst)


def test_all_train_baseline_on_collapsed_rows_is_the_pairwise_fit(prep):
    """Without a reference vector, weighted per-instance rows give the same model as all pairs."""
    X, S = prep.X["train"], prep.S("train", "train")
    lr = LogisticRegression(C=0.5, tol=1e-10, max_iter=5000)
    base = GenericAssessor(ParamGrid(lr), use_reference=False).fit(X, S, np.array([], dtype=int))
    li, ii, y = observed_pairs(S)
    assert len(y) > 20 * len(X)  # the collapse is worth it: many LLMs per instance
    pairwise = LogisticRegression(C=0.5, tol=1e-10, max_iter=5000).fit(X[ii], y)
    # Compared by their predictions: with collinear float32 features lbfgs stops at different
    # coefficients on the two (equivalent) problems, but the fitted probabilities agree. Unweighted
    # rows would change the effective regularisation ~n_llms-fold, far outside this tolerance.
    np.testing.assert_allclose(base.classifier_.predict_proba(X)[:, 1], pairwise.predict_proba(X)[:, 1], atol=2e-3)
    P = base.predict_proba(prep.X["test"], np.zeros((3, 0), np.float32))
    assert P.shape == (3, len(prep.X["test"]))
    np.testing.assert_array_equal(P[0], P[2])  # one prediction for every LLM
    np.testing.assert_allclose(P[0], pairwise.predict_proba(prep.X["test"])[:, 1], atol=2e-3)
    assert np.ptp(P[0]) > 0.1


def test_collapsed_rows_reproduce_xgboost_without_row_subsampling(prep):
    """Subsampling collapsed rows would drop whole instances, so the baseline fits without it."""
    from xgboost import XGBClassifier

    X, S = prep.X["train"], prep.S("train", "train")
    xgb = XGBClassifier(n_estimators=60, max_depth=3, learning_rate=0.1, subsample=0.8, n_jobs=1, random_state=0)
    base = GenericAssessor(ParamGrid(xgb), use_reference=False).fit(X, S, np.array([], dtype=int))
    assert base.classifier_.get_params()["subsample"] == 1.0
    _, ii, y = observed_pairs(S)
    pairwise = XGBClassifier(**{**xgb.get_params(), "subsample": 1.0}).fit(X[ii], y)
    p_col = base.predict_proba(prep.X["test"], np.zeros((1, 0), np.float32))[0]
    p_pair = pairwise.predict_proba(prep.X["test"])[:, 1]
    # the same gradients and hessians, so the same trees up to float summation order
    np.testing.assert_allclose(p_col, p_pair, atol=2e-3)
    assert np.ptp(p_col) > 0.1


def test_collapsed_rows_fit_on_one_thread_with_the_same_trees(prep):
    """A few thousand collapsed rows are too few for a second thread: the baseline fits them on one,
    and its predictions are those of the fit with the configured two."""
    from xgboost import XGBClassifier

    from assessors.threads import SMALL_FIT_ROWS

    X, S = prep.X["train"], prep.S("train", "train")
    xgb = XGBClassifier(n_estimators=40, max_depth=3, subsample=1.0, n_jobs=2, random_state=0)
    base = GenericAssessor(ParamGrid(xgb), use_reference=False).fit(X, S, np.array([], dtype=int))
    assert len(X) * 2 < SMALL_FIT_ROWS and base.classifier_.get_params()["n_jobs"] == 1
    _, ii, y = observed_pairs(S)
    idx, lab, w = collapse_pairs(ii, y)
    two = XGBClassifier(**xgb.get_params()).fit(X[idx], lab, sample_weight=w)
    np.testing.assert_array_equal(base.predict_proba(prep.X["test"], np.zeros((1, 0), np.float32))[0],
                                  two.predict_proba(prep.X["test"])[:, 1].astype(np.float32))


def test_collapsed_candidates_fit_at_once_on_the_threads_left_idle(prep, monkeypatch):
    """Two threads and rows too few to share: each candidate fits on one thread, both at once, with the
    choice and predictions of fitting them one after the other."""
    from xgboost import XGBClassifier

    X, S = prep.X["train"], prep.S("train", "train")
    val = (prep.X["val"], prep.S("val", "val"), np.zeros((len(prep.llms["val"]), 0), np.float32))
    jobs = []
    fit_candidates = GenericAssessor._fit_candidates
    monkeypatch.setattr(GenericAssessor, "_fit_candidates",
                        lambda self, *a: jobs.append(a[-1]) or fit_candidates(self, *a))
    fits = {}
    for n in (1, 2):
        grid = ParamGrid(XGBClassifier(n_estimators=30, subsample=1.0, n_jobs=n, random_state=0), {"max_depth": [2, 4]})
        fits[n] = GenericAssessor(grid, use_reference=False).fit(X, S, np.array([], dtype=int), validation=val)
    assert jobs == [1, 2]
    assert fits[1].classifier_name_ == fits[2].classifier_name_ and fits[1].selection_.equals(fits[2].selection_)
    R = np.zeros((1, 0), np.float32)
    np.testing.assert_array_equal(fits[1].predict_proba(prep.X["test"], R), fits[2].predict_proba(prep.X["test"], R))
