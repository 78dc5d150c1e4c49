"""Shared XGBoost bins: every LLM's specific assessor is fitted as without them, in threads too."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.linear_model import LogisticRegression
from xgboost import XGBClassifier

from assessors.classifiers.grid import ParamGrid
from assessors.core.evidence import Evidence
from assessors.core.specific import SharedBins, SpecificAssessor
from tests.conftest import small_prep

prep = small_prep("specific_bins", ["bbh_navigate", "bbh_snarks", "bbh_web_of_lies"], n_train=20, n_val=4, n_test=6)

GRIDS = {"lr": ParamGrid(LogisticRegression(max_iter=500), {"C": [0.1]}),
         "xgb": ParamGrid(XGBClassifier(tree_method="hist", max_bin=16, n_estimators=20, subsample=0.8,
                                        colsample_bytree=0.8, random_state=0, n_jobs=1), {"max_depth": [2, 3]})}


def _describe(prep, llm: str, bins=None, unanswered=()):
    row = prep.results.success[prep.results.llm_index([llm])[0]]
    y = row[prep.results.instance_index(prep.inst["train"])].astype(np.float64)
    y[list(unanswered)] = np.nan
    y_val = row[prep.results.instance_index(prep.inst["val"])]
    return SpecificAssessor(GRIDS).describe(Evidence(prep.X["train"], y), Evidence(prep.X["val"], y_val), bins=bins)


def test_shared_bins_give_the_fits_of_xgboosts_own(prep):
    llms = prep.llms["test"]
    plain = [_describe(prep, llm) for llm in llms]
    bins = SharedBins(prep.X["train"])
    with ThreadPoolExecutor(2) as pool:  # two threads: each relabels a matrix of its own
        shared = list(pool.map(lambda llm: _describe(prep, llm, bins), llms))
    assert len(bins._first) == 1  # one sketch for every LLM and thread
    picked_xgb = 0
    for a, b in zip(plain, shared):
        assert a.classifier_name_ == b.classifier_name_ and a.val_auc_ == b.val_auc_
        np.testing.assert_array_equal(a.predict_proba(prep.X["test"]), b.predict_proba(prep.X["test"]))
        picked_xgb += a.classifier_name_.startswith("XGB")
    assert picked_xgb  # the comparison covers a fit on the shared bins, not only the regression


def test_an_llm_with_unanswered_prompts_bins_its_own(prep):
    bins = SharedBins(prep.X["train"])
    llm = prep.llms["test"][0]
    a, b = _describe(prep, llm, unanswered=[0, 5]), _describe(prep, llm, bins, unanswered=[0, 5])
    assert not bins._first  # fewer prompts than the bins': never used
    np.testing.assert_array_equal(a.predict_proba(prep.X["test"]), b.predict_proba(prep.X["test"]))
