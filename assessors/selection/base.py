"""The reference-selector contract: fit on training LLMs' results, return reference ids."""
from __future__ import annotations

import abc
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator

from assessors.errors import ConfigError, InfeasibleError


class Selector(BaseEstimator, abc.ABC):
    """Chooses a reference set of ``size`` instances from a candidate pool.

    Parameters
    ----------
    size : int
        Number of reference instances.
    seed : int
        Random seed; selection is deterministic given it.
    """

    def __init__(self, size: int = 100, seed: int = 0):
        self.size = size
        self.seed = seed

    def fit(self, success: np.ndarray, ids: Sequence[str], features: np.ndarray | None = None,
            validation: tuple | None = None) -> "Selector":
        """Select from candidates.

        Every selector takes the same arguments; one that has no use for a part of them (most
        ignore ``validation``) ignores it, so callers pass everything they have.

        Parameters
        ----------
        success : ndarray of shape (n_train_llms, n_candidates), float32 with NaN
            Training LLMs' results on the candidate instances.
        ids : sequence of str, length n_candidates
            Candidate instance ids.
        features : ndarray of shape (n_candidates, dim), optional
            Prompt features of the candidates (for embedding-space selectors).
        validation : tuple (X_val (m, dim), S_val (k, m), S_val_candidates (k, n_candidates)), optional
            Validation instances' features, validation LLMs' results on them, and the validation
            LLMs' results on the candidates (read by selectors that judge candidate sets on
            validation LLMs, e.g. random best-of-N; ignored by the others).
        """
        ids = list(ids)
        if self.size > len(ids):
            raise InfeasibleError(
                f"{type(self).__name__}: reference size {self.size} is larger than the candidate pool "
                f"({len(ids)} training instances); lower selector.size"
            )
        if self.size < 1:
            raise ConfigError(f"{type(self).__name__}: reference size must be >= 1, got {self.size}")
        idx = np.asarray(self._select(np.asarray(success, dtype=np.float32), features, validation), dtype=int)
        if len(set(idx.tolist())) != self.size:
            raise AssertionError(f"{type(self).__name__} returned {len(set(idx.tolist()))} unique ids, expected {self.size}")
        self.reference_index_ = idx
        self.reference_ids_ = [ids[i] for i in idx]
        return self

    @abc.abstractmethod
    def _select(self, success: np.ndarray, features: np.ndarray | None, validation: tuple | None) -> np.ndarray:
        """Positions (into the candidate pool) of the ``size`` chosen instances (arguments as :meth:`fit`'s)."""


class RandomSelector(Selector):
    """Uniformly random reference set (the paper's ``random`` selector)."""

    def _select(self, success, features, validation):
        rng = np.random.default_rng(self.seed)
        return np.sort(rng.choice(success.shape[1], size=self.size, replace=False))
