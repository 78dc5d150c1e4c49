"""Per-item proxies for AIPW: predict a target LLM's success on every item from its core results.

A proxy is fitted on the source LLMs only; at estimate time it sees the target's results on
(part of) the core set, with NaN for cells it must not use (cross-fitting hides one fold at a
time), and returns a success probability for every benchmark item. Plugging in another model is
one small subclass of :class:`ItemProxy`.
"""
from __future__ import annotations

import abc

import numpy as np
from sklearn.base import BaseEstimator


class ItemProxy(BaseEstimator, abc.ABC):
    """Maps a target's (partial) core results to per-item success predictions."""

    def fit(self, source_success: np.ndarray, features: np.ndarray | None, core_index: np.ndarray) -> "ItemProxy":
        """Fit on sources.

        Parameters
        ----------
        source_success : ndarray of shape (n_source_llms, n_items), NaN already imputed
        features : ndarray of shape (n_items, d) or None
        core_index : ndarray of shape (n_core,)
        """
        self.core_index_ = np.asarray(core_index, dtype=int)
        return self

    @abc.abstractmethod
    def predict(self, core_success: np.ndarray) -> np.ndarray:
        """Predictions of shape (k, n_items) in [0, 1] from ``core_success`` (k, n_core), NaN = hidden."""


class RidgeProxy(ItemProxy):
    """Ridge regression per target, as in Zhang et al. (2025).

    Each item is described by the source LLMs' results on it; for each target a ridge
    regression (with intercept) is fitted from the features of its visible core items to its
    results there, then applied to every item. Solved in the dual (n_core x n_core), batched over
    targets that share the same visible cells.

    Parameters
    ----------
    alpha : float
        Ridge penalty (the paper uses 10).
    """

    def __init__(self, alpha: float = 10.0):
        self.alpha = alpha

    def fit(self, source_success, features, core_index):
        super().fit(source_success, features, core_index)
        self.X_ = np.asarray(source_success, dtype=np.float64).T  # (n_items, n_src)
        return self

    def _solve(self, cols: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Predictions (k, n_items) from visible core positions ``cols`` and labels Y (k, len(cols))."""
        Xc = self.X_[self.core_index_[cols]]
        mx = Xc.mean(0)
        my = Y.mean(1, keepdims=True)
        Xc = Xc - mx
        K = Xc @ Xc.T + self.alpha * np.eye(len(cols))
        dual = np.linalg.solve(K, (Y - my).T)  # (n_vis, k)
        return (((self.X_ - mx) @ (Xc.T @ dual)).T + my).clip(0.0, 1.0)

    def predict(self, core_success):
        Y = np.atleast_2d(core_success)
        vis = ~np.isnan(Y)
        out = np.empty((Y.shape[0], self.X_.shape[0]))
        # group targets by visibility pattern (usually one group: the cross-fitting fold)
        if (vis == vis[:1]).all():
            return self._solve(np.flatnonzero(vis[0]), Y[:, vis[0]]) if len(Y) else out
        patterns, inverse = np.unique(vis, axis=0, return_inverse=True)
        for p, pat in enumerate(patterns):
            rows = np.flatnonzero(inverse.ravel() == p)
            cols = np.flatnonzero(pat)
            out[rows] = self._solve(cols, Y[np.ix_(rows, cols)])
        return out
