"""Tiny grid configs: 3 BBH subtasks, success-pattern features, one logistic regression."""
from __future__ import annotations

import pytest

TINY = ["experiment=paper_in_distribution", "data.subtasks=[bbh_navigate,bbh_snarks,bbh_web_of_lies]",
        "features=success_pattern", "classifier=logreg_l2", "classifier.param_grid.C=[1.0]",
        "assessor.instance_features=embedding", "~specific.classifiers.xgboost",
        "specific.classifiers.logreg_l2.param_grid.C=[1.0]", "specific.cv=2"]


@pytest.fixture
def tiny(compose):
    def _tiny(*extra):
        return compose(TINY + list(extra))

    return _tiny
