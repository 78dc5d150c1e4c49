"""Shared XGBoost bins: the LLMs a specific assessor describes on the same prompts share their histogram
bins, and each is fitted as without them, in threads too."""
from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.linear_model import LogisticRegression
from xgboost import XGBClassifier

from assessors.classifiers.binned_xgb import BinnedXGBClassifier
from assessors.classifiers.grid import ParamGrid
from assessors.core.evidence import Evidence
from assessors.core.specific import SpecificAssessor
from tests.conftest import small_prep

prep = small_prep("specific_bins", ["bbh_navigate", "bbh_snarks", "bbh_web_of_lies"], n_train=20, n_val=4, n_test=6)

XGB = dict(tree_method="hist", max_bin=16, n_estimators=20, subsample=0.8, colsample_bytree=0.8, random_state=0,
           n_jobs=1)


def _grids(xgb_class):
    return {"lr": ParamGrid(LogisticRegression(max_iter=500), {"C": [0.1]}),
            "xgb": ParamGrid(xgb_class(**XGB), {"max_depth": [2, 3]})}


def _describe(spec, prep, llm: str, unanswered=()):
    row = prep.results.success[prep.results.llm_index([llm])[0]]
    y = row[prep.results.instance_index(prep.inst["train"])].astype(np.float64)
    y[list(unanswered)] = np.nan
    y_val = row[prep.results.instance_index(prep.inst["val"])]
    return spec.describe(Evidence(prep.X["train"], y), Evidence(prep.X["val"], y_val))


def test_llms_on_the_same_prompts_share_bins_and_get_xgboosts_own_fits(prep):
    llms = prep.llms["test"]
    plain = [_describe(SpecificAssessor(_grids(XGBClassifier)), prep, llm) for llm in llms]
    spec = SpecificAssessor(_grids(BinnedXGBClassifier))
    with ThreadPoolExecutor(2) as pool:  # two threads: each relabels a binned matrix of its own
        shared = list(pool.map(lambda llm: _describe(spec, prep, llm), llms))
    assert spec._bins[0] is prep.X["train"] and len(spec._bins[1]._cuts) == 1  # one sketch for every LLM
    picked_xgb = 0
    for a, b in zip(plain, shared):
        assert a.classifier_name_ == b.classifier_name_.replace("Binned", "") and a.val_auc_ == b.val_auc_
        np.testing.assert_array_equal(a.predict_proba(prep.X["test"]), b.predict_proba(prep.X["test"]))
        picked_xgb += a.classifier_name_.startswith("XGB")
    assert picked_xgb  # the comparison covers a fit on the shared bins, not only the regression
    # the bins are a cache of the assessor, not part of it or of an LLM's classifier
    again = pickle.loads(pickle.dumps(spec))
    assert not hasattr(again, "_bins") and again.get_params().keys() == spec.get_params().keys()
    b = pickle.loads(pickle.dumps(shared[0]))
    np.testing.assert_array_equal(b.predict_proba(prep.X["test"]), shared[0].predict_proba(prep.X["test"]))


def test_an_llm_with_unanswered_prompts_bins_its_own(prep):
    spec = SpecificAssessor(_grids(BinnedXGBClassifier))
    llm = prep.llms["test"][0]
    a = _describe(SpecificAssessor(_grids(XGBClassifier)), prep, llm, unanswered=[0, 5])
    b = _describe(spec, prep, llm, unanswered=[0, 5])
    assert not hasattr(spec, "_bins")  # fewer prompts than the matrix: nothing shared
    np.testing.assert_array_equal(a.predict_proba(prep.X["test"]), b.predict_proba(prep.X["test"]))


def test_the_reference_only_llms_share_the_reference_prompts_bins(prep):
    ref = np.arange(12)
    S = prep.S("train", "train")
    spec = SpecificAssessor(_grids(BinnedXGBClassifier), cv=2).fit(prep.X["train"], S, ref)
    plain = SpecificAssessor(_grids(XGBClassifier), cv=2).fit(prep.X["train"], S, ref)
    R = np.nan_to_num(S[:2, ref])
    np.testing.assert_array_equal(spec.predict_proba(prep.X["test"], R), plain.predict_proba(prep.X["test"], R))
    assert spec._bins[0] is spec.reference_features_
