"""Model selection without a usable validation score warns and names what it fell back to."""
from __future__ import annotations

import logging

import numpy as np
from sklearn.linear_model import LogisticRegression

from assessors.classifiers.grid import ParamGrid
from assessors.core.generic import GenericAssessor
from assessors.core.specific import LLMClassifier


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 4)).astype(np.float32)
    S = (rng.random((10, 80)) < 1 / (1 + np.exp(-X[:, 0]))).astype(np.float32)
    return X, S


def test_generic_warns_when_every_validation_llm_is_constant(caplog):
    X, S = _data()
    grid = ParamGrid(LogisticRegression(max_iter=500), {"C": [0.01, 10.0]})
    constant = (X[:20], np.zeros((3, 20), np.float32), np.zeros((3, 5), np.float32))
    with caplog.at_level(logging.WARNING):
        g = GenericAssessor(grid).fit(X, S, np.arange(5), validation=constant)
    assert g.classifier_name_ == "LogisticRegression(C=0.01)" and g.selection_ is None
    assert "no usable validation score" in caplog.text and "LogisticRegression(C=0.01)" in caplog.text
    caplog.clear()
    varied = (X[:20], S[:3, :20], S[:3, :5])
    with caplog.at_level(logging.WARNING):
        GenericAssessor(grid).fit(X, S, np.arange(5), validation=varied)
    assert "no usable validation score" not in caplog.text


def test_specific_warns_when_no_candidate_can_be_scored(caplog):
    X, _ = _data()
    y = np.zeros(80, np.float32)
    y[:1] = 1  # one positive: no stratified CV, and the validation labels are constant
    spec = LLMClassifier({"lr": ParamGrid(LogisticRegression(max_iter=500), {"C": [0.1, 1.0]})})
    with caplog.at_level(logging.WARNING):
        spec.fit(X, y, X[:10], np.zeros(10, np.float32))
    assert np.isnan(spec.val_auc_) and "fell back to the first candidate" in caplog.text
    assert spec.classifier_name_ in caplog.text
