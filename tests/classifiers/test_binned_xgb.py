"""BinnedXGBClassifier: XGBoost with its histogram bins cut on given rows, or on rows shared between fits
(BinnedRows); the generic assessor's sample of its (LLM, prompt) rows has their per-column distribution."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import xgboost
from sklearn.base import clone

from concurrent.futures import ThreadPoolExecutor

from assessors.classifiers.binned_xgb import BinnedRows, BinnedXGBClassifier
from assessors.classifiers.grid import ParamGrid
from assessors.core.generic import GenericAssessor, _bin_sample
from tests.conftest import small_prep

prep = small_prep("binned_xgb", ["bbh_navigate", "bbh_snarks"], n_train=14, n_val=4, n_test=2)

PARAMS = dict(n_estimators=20, max_depth=3, learning_rate=0.3, max_bin=16, n_jobs=1, random_state=0)


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3)).astype(np.float32)
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0.5).astype(int)


def _splits(est) -> set[float]:
    trees = est.get_booster().trees_to_dataframe()
    return set(trees.loc[trees["Feature"] != "Leaf", "Split"].round(5))


def test_without_bins_or_on_the_same_rows_it_is_xgboost():
    X, y = _data()
    plain = xgboost.XGBClassifier(**PARAMS).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(BinnedXGBClassifier(**PARAMS).fit(X, y).predict_proba(X), plain)
    # the same rows as the sample: the same cut points, the same trees
    np.testing.assert_array_equal(BinnedXGBClassifier(**PARAMS).fit(X, y, bins=BinnedRows(X)).predict_proba(X), plain)


def test_the_trees_split_at_the_samples_cut_points():
    X, y = _data()
    sample = np.linspace(0, 1, 5, dtype=np.float32)[:, None].repeat(3, axis=1)  # cuts near 0, .25, .5, .75, 1
    est = BinnedXGBClassifier(**PARAMS).fit(X, y, bins=BinnedRows(sample))
    cuts = xgboost.QuantileDMatrix(sample, max_bin=16).get_quantile_cut()[1]
    assert _splits(est) <= set(np.round(cuts, 5))
    assert not _splits(xgboost.XGBClassifier(**PARAMS).fit(X, y)) <= set(np.round(cuts, 5))
    # the sample is not kept: the fitted model pickles as an XGBClassifier does, and clones
    assert not hasattr(est, "_bins")
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(X), est.predict_proba(X))
    assert clone(est).get_params() == est.get_params()


def test_fits_sharing_bins_are_xgboosts_own_and_bin_the_rows_once():
    X, _ = _data()
    rng = np.random.default_rng(1)
    labels = [(X[:, k % 3] + 0.3 * rng.normal(size=len(X)) > 0.5).astype(int) for k in range(4)]  # one per LLM
    X_val, y_val = _data(300, seed=9)
    plain = [xgboost.XGBClassifier(**PARAMS, early_stopping_rounds=3).fit(X, y, eval_set=[(X_val, y_val)],
                                                                        verbose=False) for y in labels]
    bins = BinnedRows(X)
    with ThreadPoolExecutor(2) as pool:  # each thread relabels a binned matrix of its own
        shared = list(pool.map(lambda y: BinnedXGBClassifier(**PARAMS, early_stopping_rounds=3).fit(
            X, y, bins=bins, eval_set=[(X_val, y_val)], verbose=False), labels))
    assert list(bins._cuts) == [PARAMS["max_bin"]]  # one sketch, shared by every fit and thread
    for a, b in zip(plain, shared):
        assert a.best_iteration == b.best_iteration
        np.testing.assert_array_equal(a.predict_proba(X_val), b.predict_proba(X_val))
    # other rows are binned with the shared cut points
    est = BinnedXGBClassifier(**PARAMS).fit(X_val, y_val, bins=bins)
    assert _splits(est) <= set(np.round(bins.cuts(est).get_quantile_cut()[1].astype(float), 5))


def test_the_sample_has_the_pair_rows_column_distribution(prep):
    ref_ids = prep.inst["train"][:10]
    ref_idx = pd.Index(prep.inst["train"]).get_indexer(ref_ids)
    S = prep.S("train", "train")
    S[0, 20:40] = np.nan  # an LLM that skipped prompts: its pairs and theirs count less
    rows, _ = GenericAssessor(ParamGrid(BinnedXGBClassifier(**PARAMS)))._training_rows(prep.X["train"], S, ref_idx)
    dense = rows.to_array()
    sample, weight = _bin_sample(rows)
    assert len(sample) < len(dense) / 5
    seen = ~np.isnan(sample)
    # every column: as many weighted values, the same weighted mean and spread as over all pairs
    np.testing.assert_allclose((seen * weight[:, None]).sum(0), len(dense))
    mean = np.nansum(sample * weight[:, None], 0) / len(dense)
    np.testing.assert_allclose(mean, dense.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.nansum((sample - mean) ** 2 * weight[:, None], 0) / len(dense), dense.var(0),
                               rtol=1e-3, atol=1e-6)


def test_the_generic_assessor_cuts_the_bins_on_the_sample(prep, monkeypatch):
    ref_ids = prep.inst["train"][:10]
    ref_idx = pd.Index(prep.inst["train"]).get_indexer(ref_ids)
    seen = []
    fit = BinnedXGBClassifier.fit

    def spy(self, X, y, *, bins=None, **kw):
        seen.append((len(X), None if bins is None else len(bins.rows)))
        return fit(self, X, y, bins=bins, **kw)

    monkeypatch.setattr(BinnedXGBClassifier, "fit", spy)
    g = GenericAssessor(ParamGrid(BinnedXGBClassifier(**PARAMS))).fit(prep.X["train"], prep.S("train", "train"),
                                                                     ref_idx, validation=prep.validation(ref_ids))
    n_llms, n_prompts = prep.S("train", "train").shape
    assert seen == [(n_llms * (n_prompts - 10), n_prompts - 10 + n_llms)]
    P = g.predict_proba(prep.X["test"], prep.results.matrix(prep.llms["test"], ref_ids))
    assert P.shape == (2, len(prep.X["test"])) and np.ptp(P) > 0.1
