"""Instance features for data without prompt text: the item's success pattern over training LLMs."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.utils.validation import check_is_fitted

from assessors.features.base import Featurizer


class SuccessPatternFeaturizer(Featurizer):
    """Represents instance ``j`` by column ``j`` of the training LLMs' success matrix.

    It reads results, not prompts (:attr:`reads` is ``"results"``): ``fit(S_train)`` with
    ``S_train`` of shape (n_train_llms, n_instances) and ``transform(S)`` of the same LLMs on any
    instances returning (n_instances, n_train_llms) float32, NaN replaced by the LLM's mean success
    over the fitted instances (so a missing cell says "as usual for this LLM"). It takes no
    parameters and caches nothing (the features are a view of the results).
    """

    reads = "results"

    def __init__(self):  # no parameters, and no embedding cache: nothing to compute twice
        pass

    def inputs(self, results, ids: Sequence[str], train_llms: Sequence[str] | None = None) -> np.ndarray:
        """The training LLMs' results on ``ids``: ndarray of shape (len(train_llms), len(ids))."""
        return results.matrix(list(train_llms or []), list(ids))

    def fit(self, success: np.ndarray, y=None) -> "SuccessPatternFeaturizer":
        success = np.asarray(success, dtype=np.float32)
        self.llm_means_ = np.nan_to_num(np.nanmean(success, axis=1), nan=0.5).astype(np.float32)
        return self

    def transform(self, success: np.ndarray) -> np.ndarray:
        return self._transform(success)

    def _transform(self, success: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "llm_means_")
        success = np.asarray(success, dtype=np.float32)
        filled = np.where(np.isnan(success), self.llm_means_[:, None], success)
        # centre by LLM so the pattern, not the LLM's overall level, drives similarity
        return np.ascontiguousarray((filled - self.llm_means_[:, None]).T, dtype=np.float32)

    def identity(self) -> str:
        return "SuccessPattern"
