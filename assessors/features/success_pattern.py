"""Instance features for data without prompt text: the item's success pattern over training LLMs."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from assessors.tags import with_capabilities


class SuccessPatternFeaturizer(BaseEstimator):
    """Represents instance ``j`` by column ``j`` of the training LLMs' success matrix.

    Unlike text featurizers it is fitted on results, not prompts: ``fit(S_train)`` with
    ``S_train`` of shape (n_train_llms, n_instances) and ``transform(S_train)`` returning
    (n_instances, n_train_llms) float32, NaN replaced by the LLM's mean success (so a
    missing cell says "as usual for this LLM").
    """

    def __sklearn_tags__(self):
        return with_capabilities(super().__sklearn_tags__(), uses_results=True)

    def fit(self, success: np.ndarray) -> "SuccessPatternFeaturizer":
        success = np.asarray(success, dtype=np.float32)
        self.llm_means_ = np.nan_to_num(np.nanmean(success, axis=1), nan=0.5).astype(np.float32)
        return self

    def transform(self, success: np.ndarray) -> np.ndarray:
        success = np.asarray(success, dtype=np.float32)
        filled = np.where(np.isnan(success), self.llm_means_[:, None], success)
        # centre by LLM so the pattern, not the LLM's overall level, drives similarity
        return np.ascontiguousarray((filled - self.llm_means_[:, None]).T, dtype=np.float32)

    def identity(self) -> str:
        return "SuccessPattern"
