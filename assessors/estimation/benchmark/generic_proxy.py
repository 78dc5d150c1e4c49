"""AIPW proxy from the generic assessor (``assessors.core.generic.GenericAssessor``)."""
from __future__ import annotations

import numpy as np

from assessors.estimation.benchmark.proxy import ItemProxy


class GenericAssessorProxy(ItemProxy):
    """Per-item success probabilities from a generic assessor fitted on the source LLMs.

    The assessor's reference set is the core set; a target is described by its core results
    (hidden cells are NaN, which the assessor fills with the sources' mean on that item).
    Instance features are the prompt features when given, else each item's success pattern over
    the source LLMs (for data without text).

    Parameters
    ----------
    assessor : GenericAssessor
        An unfitted generic assessor (cloned at fit).
    """

    def __init__(self, assessor=None):
        self.assessor = assessor

    def fit(self, source_success, features, core_index):
        from sklearn.base import clone

        super().fit(source_success, features, core_index)
        S = np.asarray(source_success, dtype=np.float32)
        self.X_ = (np.asarray(features, dtype=np.float32) if features is not None else S.T.copy())
        self.model_ = clone(self.assessor).fit(self.X_, S, self.core_index_)
        return self

    def predict(self, core_success):
        R = np.atleast_2d(np.asarray(core_success, dtype=np.float32))
        return np.clip(np.asarray(self.model_.predict_proba(self.X_, R), dtype=np.float64), 0.0, 1.0)
