"""The factorised tree prediction of the generic-assessor proxy equals the classifier's own."""
from __future__ import annotations

import numpy as np
import pytest
from xgboost import XGBClassifier

from assessors.classifiers.grid import ParamGrid
from assessors.core.generic import GenericAssessor
from assessors.estimation.benchmark.generic_proxy import GenericAssessorProxy
from assessors.estimation.benchmark.split_trees import split_trees


def _xgb_assessor(**kw):
    return GenericAssessor(ParamGrid(XGBClassifier(tree_method="hist", n_estimators=30, max_depth=3,
                                                   learning_rate=0.2, n_jobs=1, random_state=0, **kw)))


def _row_by_row(proxy, R):
    """The proxy's predictions through the classifier on materialised rows."""
    trees, proxy.trees_ = proxy.trees_, None
    try:
        return proxy.predict(R)
    finally:
        proxy.trees_ = trees


@pytest.mark.parametrize("pattern_dims", [16, None])
def test_factorised_prediction_equals_the_classifier_on_a_real_matrix(data_dir, pattern_dims):
    from assessors.data.loaders.score_matrix import load_score_matrix

    S = load_score_matrix("musr", root=data_dir).success.astype(np.float64)[:, :300]
    rng = np.random.default_rng(0)
    if pattern_dims is None:  # raw success patterns with holes: the trees' missing-value branches
        S[rng.random(S.shape) < 0.05] = np.nan
    core = np.sort(rng.choice(S.shape[1], 40, replace=False))
    proxy = GenericAssessorProxy(_xgb_assessor(), max_pairs=20_000, pattern_dims=pattern_dims).fit(S[:150], None, core)
    assert proxy.trees_ is not None
    R = S[300:340][:, core].copy()
    R[:, ::4] = np.nan  # a cross-fitting fold hidden: filled with the sources' means
    fast, slow = proxy.predict(R), _row_by_row(proxy, R)
    assert fast.shape == slow.shape == (40, S.shape[1])
    np.testing.assert_allclose(fast, slow, atol=1e-5)
    assert np.ptp(fast, axis=1).min() > 0.1  # the predictions vary over items: not a trivially equal constant


def test_other_classifiers_and_modes_predict_row_by_row():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    S = (rng.random((30, 120)) < 0.6).astype(np.float64)
    core = np.arange(0, 120, 6)
    logreg = GenericAssessorProxy(GenericAssessor(ParamGrid(LogisticRegression(max_iter=300)))).fit(S, None, core)
    assert logreg.trees_ is None and logreg.predict(S[:3, core]).shape == (3, 120)
    inter = GenericAssessor(_xgb_assessor().classifier, instance_features="similarity_interaction")
    inter.fit(S.T.astype(np.float32), S, core)  # an item part that depends on the target: not factorisable
    assert split_trees(inter, S.T) is None


def test_pair_rows_are_what_the_classifier_scores():
    rng = np.random.default_rng(2)
    S = (rng.random((30, 120)) < 0.6).astype(np.float64)
    core = np.arange(0, 120, 6)
    g = _xgb_assessor().fit(S.T.astype(np.float32), S, core)
    R = S[:3, core].copy()
    R[0, :5] = np.nan  # filled with the training LLMs' mean on those reference prompts
    rows = g.pair_rows(S.T, R)
    assert rows.mode == "embedding" and rows.shape == (3 * 120, 30 + core.size)
    np.testing.assert_array_equal(rows.ref, g.fill_reference(R))
    np.testing.assert_allclose(rows.ref[0, :5], S[:, core[:5]].mean(0), atol=1e-6)
    p = g.classifier_.predict_proba(rows.to_array())[:, 1].reshape(3, 120)
    np.testing.assert_allclose(p, g.predict_proba(S.T, R), atol=1e-6)
