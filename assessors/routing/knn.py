"""k-nearest-neighbour router baseline: P(success) = LLM's success rate on the k most similar training prompts."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from assessors.features.base import unit_rows


class KNNSuccess(BaseEstimator):
    """Per-LLM success rate over the ``k`` nearest training prompts (cosine similarity).

    Parameters
    ----------
    k : int
        Neighbours (capped at the number of training prompts an LLM was evaluated on).
    prior : float
        Pseudo-count pulling each estimate towards the LLM's overall training accuracy
        (``(sum + prior * acc) / (k + prior)``), so that k=5 does not give hard 0/1 values.
    """

    def __init__(self, k: int = 20, prior: float = 1.0):
        self.k = k
        self.prior = prior

    def fit(self, X: np.ndarray, S: np.ndarray) -> "KNNSuccess":
        """X: (n, d) training prompt features; S: (n_llms, n) success with NaN = not evaluated."""
        self.X_ = unit_rows(X)
        self.S_ = np.asarray(S, dtype=np.float64)
        self.acc_ = np.nanmean(self.S_, axis=1)
        return self

    def predict_success(self, X: np.ndarray) -> np.ndarray:
        """P(success) of shape (n_llms, m)."""
        check_is_fitted(self, "X_", msg="KNNSuccess is not fitted")
        sim = unit_rows(X) @ self.X_.T  # (m, n)
        k = int(min(self.k, self.X_.shape[0]))
        nn = np.argpartition(-sim, k - 1, axis=1)[:, :k]  # (m, k)
        out = np.empty((self.S_.shape[0], len(sim)))
        for i, s in enumerate(self.S_):
            v = s[nn]  # (m, k)
            obs = np.isfinite(v)
            out[i] = (np.where(obs, v, 0).sum(1) + self.prior * self.acc_[i]) / (obs.sum(1) + self.prior)
        return out.astype(np.float32)
