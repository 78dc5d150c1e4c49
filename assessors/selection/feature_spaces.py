"""Spaces in which clustering and factor-analysis selectors look at candidate instances.

Each space maps the training LLMs' results (and the prompt features) to one vector per
candidate instance: ``space.transform(success, features) -> (n_candidates, d)``. They are
built from ``conf/selector/*.yaml`` as the ``space`` of a selector.
"""
from __future__ import annotations

import abc
import logging

import numpy as np
from sklearn.base import BaseEstimator

from assessors.errors import ConfigError, DataError
from assessors.selection.cache import array_digest, memo

log = logging.getLogger(__name__)


class FeatureSpace(BaseEstimator, abc.ABC):
    """Maps candidates to vectors; stateless apart from an optional disk memo."""

    @abc.abstractmethod
    def transform(self, success: np.ndarray, features: np.ndarray | None) -> np.ndarray:
        """Vectors of shape (n_candidates, d), float64, finite.

        Parameters
        ----------
        success : ndarray of shape (n_train_llms, n_candidates), NaN = not evaluated
        features : ndarray of shape (n_candidates, dim) or None
        """


class EmbeddingSpace(FeatureSpace):
    """The prompt features themselves (MiniLM embeddings under the default config)."""

    def transform(self, success, features):
        if features is None:
            raise ConfigError("EmbeddingSpace needs prompt features, but the selector got features=None")
        X = np.asarray(features, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != success.shape[1]:
            raise DataError(f"features have shape {X.shape}; expected ({success.shape[1]}, dim) to match the candidates")
        if not np.isfinite(X).all():
            r, c = np.argwhere(~np.isfinite(X))[0]
            raise DataError(f"EmbeddingSpace: non-finite feature at candidate row {r}, column {c}")
        return X


class SuccessSpace(FeatureSpace):
    """Column ``j`` of the success matrix: how each training LLM fared on candidate ``j``.

    A missing cell takes that LLM's mean success, so it says "as usual for this LLM".
    """

    def transform(self, success, features):
        S = np.asarray(success, dtype=np.float64)
        llm_mean = np.nan_to_num(np.nanmean(np.where(np.isnan(S).all(1, keepdims=True), 0.5, S), axis=1), nan=0.5)
        return np.where(np.isnan(S), llm_mean[:, None], S).T.copy()


class IRTSpace(FeatureSpace):
    """Item parameters ``[discrimination (dims), difficulty]`` of a multidimensional 2PL IRT.

    Parameters
    ----------
    dims : int
        IRT dimension (tinyBenchmarks: 10).
    standardize : bool
        Scale each column to unit variance, so the difficulty (whose scale is about
        ``dims`` times a discrimination's) does not dominate Euclidean distances.
    max_iter : int
        L-BFGS iterations of the IRT fit.
    seed : int
    cache_dir : str or None
        Where fitted item parameters are memoised (one IRT fit per training matrix per sweep).
    """

    def __init__(self, dims: int = 10, standardize: bool = True, max_iter: int = 100, seed: int = 0,
                 cache_dir: str | None = None):
        self.dims = dims
        self.standardize = standardize
        self.max_iter = max_iter
        self.seed = seed
        self.cache_dir = cache_dir

    def transform(self, success, features):
        from assessors.selection.irt import MultidimIRT

        S = np.asarray(success, dtype=np.float32)
        empty = np.flatnonzero(np.isnan(S).all(0))
        if empty.size:
            raise DataError(f"IRTSpace: candidate columns {empty[:5].tolist()} have no training-LLM result")

        def fit():
            irt = MultidimIRT(dims=self.dims, max_iter=self.max_iter, seed=self.seed).fit(S)
            log.info("IRT item parameters: %d items x %d dims (%d L-BFGS iterations)", S.shape[1], self.dims, irt.n_iter_)
            return {"items": irt.item_parameters()}

        key = array_digest(S, [self.dims, self.max_iter, self.seed])
        P = np.asarray(memo(self.cache_dir, "irt_items", key, fit)["items"], dtype=np.float64)
        if self.standardize:
            sd = P.std(axis=0)
            P = (P - P.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        return P
