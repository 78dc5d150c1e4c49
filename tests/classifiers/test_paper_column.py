"""The paper_generic column of ``train.py`` fits the depth-6 point of the paper's XGBoost grid, stopping
its trees on the validation LLMs; the paper's own presets keep the whole grid and every tree."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import OmegaConf

from assessors.selection.base import RandomSelector
from tests.conftest import small_prep

prep = small_prep("paper_column", ["bbh_navigate", "bbh_snarks"], n_train=14, n_val=4, n_test=2)


def _plain(node):
    return OmegaConf.to_container(node, resolve=True)


def test_the_column_is_the_papers_xgboost_at_depth_6(compose):
    cfg = compose()
    column, paper = _plain(cfg.paper_generic.classifier), _plain(cfg.classifier)
    assert column["param_grid"] == {**paper["param_grid"], "max_depth": [6]} and paper["param_grid"]["max_depth"] == [3, 6]
    # everything but the grid's depths, the early stopping and where the bins are cut is the paper's classifier
    assert column["estimator"] == {**paper["estimator"], "early_stopping_rounds": 10,
                                   "_target_": "assessors.classifiers.binned_xgb.BinnedXGBClassifier"}
    assert "early_stopping_rounds" not in paper["estimator"] and paper["estimator"]["_target_"] == "xgboost.XGBClassifier"
    names = [name for name, _ in instantiate(cfg.paper_generic).classifier.candidates()]
    assert names == ["BinnedXGBClassifier(max_depth=6, n_estimators=150)"]


def test_the_papers_presets_and_the_classifier_override_keep_their_grids(compose):
    for overrides in (["assessor=paper_generic"], ["experiment=paper_in_distribution"]):
        assert _plain(compose(overrides).assessor.classifier.param_grid)["max_depth"] == [3, 6], overrides
    cfg = compose(["classifier=logreg_l2"])
    # classifier= is the configured assessor's (and the all-train-data baseline's) classifier, not the column's
    assert "C" in _plain(cfg.classifier.param_grid) and _plain(cfg.paper_generic.classifier.param_grid)["max_depth"] == [6]


def _column(compose, n_estimators: int):
    cfg = compose([f"paper_generic_classifier.param_grid.n_estimators=[{n_estimators}]", "paper_generic_classifier.estimator.n_jobs=1"])
    return instantiate(cfg.paper_generic)


def test_the_column_stops_where_the_validation_llms_log_loss_is_lowest(compose, prep):
    ref_ids = RandomSelector(size=20, seed=0).fit(prep.S("train", "train"), prep.inst["train"]).reference_ids_
    ref_idx = pd.Index(prep.inst["train"]).get_indexer(ref_ids)
    X, S, val = prep.X["train"], prep.S("train", "train"), prep.validation(ref_ids)
    stopped = _column(compose, 300).fit(X, S, ref_idx, validation=val)
    est = stopped.classifier_
    loss = np.asarray(est.evals_result()["validation_0"]["logloss"])
    # the kept trees are those of the lowest validation log loss; fitting ended 10 trees after it (or at the cap)
    assert est.best_iteration == int(np.argmin(loss))
    assert len(loss) == min(300, est.best_iteration + 11) and len(loss) < 300
    # it predicts with the kept trees, not the 10 fitted after them
    R_test = prep.results.matrix(prep.llms["test"], ref_ids)
    rows = stopped.pair_rows(prep.X["test"], R_test).to_array()
    kept = stopped.predict_proba(prep.X["test"], R_test).ravel()
    cut = est.predict_proba(rows, iteration_range=(0, est.best_iteration + 1))[:, 1]
    np.testing.assert_allclose(kept, cut, rtol=1e-6)
    # without validation LLMs there is nothing to stop on: every tree, as the paper's grid fits them
    every = _column(compose, 40).fit(X, S, ref_idx, validation=None).classifier_
    assert every.get_booster().num_boosted_rounds() == 40 and every.early_stopping_rounds is None
