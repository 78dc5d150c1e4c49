"""Capability tags: declared through ``__sklearn_tags__``, read through one helper, kept by clone."""
from __future__ import annotations

import pytest
import xgboost
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils import get_tags

from assessors.classifiers.mlp import MLPClassifier
from assessors.classifiers.pair_logreg import PairLogisticRegression
from assessors.tags import capability


@pytest.mark.parametrize("est,name,expected", [
    (MLPClassifier(), "accepts_row_source", True),
    (PairLogisticRegression(), "accepts_row_source", True),
    (LogisticRegression(), "accepts_row_source", False),
    (xgboost.XGBClassifier(), "accepts_row_source", False),
    (object(), "accepts_row_source", False),
])
def test_capability_reads_the_declared_tag(est, name, expected):
    assert capability(est, name) is expected
    if hasattr(est, "get_params"):
        assert capability(clone(est), name) is expected


def test_a_proxy_that_handles_missing_cells_says_so_with_the_standard_tag():
    from assessors.estimation.benchmark.generic_proxy import GenericAssessorProxy
    from assessors.estimation.benchmark.proxy import RidgeProxy

    assert get_tags(GenericAssessorProxy()).input_tags.allow_nan
    assert not get_tags(RidgeProxy()).input_tags.allow_nan


def test_scikit_learn_tags_are_kept_and_unknown_names_refused():
    tags = get_tags(MLPClassifier())
    assert tags.estimator_type == "classifier" and tags.classifier_tags is not None
    with pytest.raises(ValueError, match="unknown capability"):
        capability(MLPClassifier(), "accepts_row_sources")


@pytest.mark.parametrize("name", ["has_posterior", "uses_results", "learns_from_texts", "uses_validation"])
def test_what_a_whole_role_has_is_protocol_not_a_flag(name):
    """Assessor families, featurizers and selectors answer through their protocols (the assessor
    protocol, ``Featurizer.reads``, ``Selector.fit(..., validation)``): no flag to branch on."""
    with pytest.raises(ValueError, match="unknown capability"):
        capability(MLPClassifier(), name)
