"""Prompt-side out-of-distribution signal: how far the target prompts are from the training prompts.

A prompt's distance is its mean cosine distance to its nearest training prompts, thresholded at a quantile of
the distances of the *validation* prompts (held out from training, drawn from the same population). When too
many target prompts lie beyond it, the latent item parameters are extrapolated to prompts unlike any they were
learned from, which posterior checks on the LLM's answers cannot see. The signal also holds the fallback for
such prompts (``population``).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from assessors.errors import DataError
from assessors.memo import ArrayMemo
from assessors.trust.target import subsample


class PromptOOD(BaseEstimator):
    """kNN distance of prompts to the training prompts, thresholded at a validation-prompt quantile.

    Parameters
    ----------
    n_neighbors : int
        Training prompts averaged into a prompt's distance.
    quantile : float
        Quantile of the validation prompts' distances used as the per-prompt threshold.
    max_share : float
        Share of target prompts beyond the threshold above which the target set is out of
        distribution (in distribution: about ``1 - quantile``).
    max_train : int, optional
        Index a seeded random subsample of at most this many training prompts (the index is stored
        with the model, and every query scans it); None: all.
    seed : int
        Seed of that subsample.
    population : PopulationDifficulty, optional
        Unfitted; fitted on every training prompt when :meth:`fit` is given the training LLMs' success
        (None: no population fallback).
    """

    def __init__(self, n_neighbors: int = 5, quantile: float = 0.95, max_share: float = 0.5,
                 max_train: int | None = 20000, seed: int = 0, population=None):
        self.n_neighbors = n_neighbors
        self.quantile = quantile
        self.max_share = max_share
        self.max_train = max_train
        self.seed = seed
        self.population = population

    def fit(self, X_train, X_val, S_train=None) -> "PromptOOD":
        """Index the training prompts ``X_train`` (n, d); calibrate on validation prompts ``X_val`` (m, d).

        ``S_train`` (n_llms, n): the training LLMs' success on ``X_train`` (0/1, NaN), for ``population_``.
        """
        X_train, X_val = np.asarray(X_train, dtype=np.float32), np.asarray(X_val, dtype=np.float32)
        if len(X_train) < self.n_neighbors or not len(X_val):
            raise DataError(f"PromptOOD needs at least {self.n_neighbors} training prompts and one validation "
                            f"prompt; got {len(X_train)} and {len(X_val)}")
        self.population_ = None
        if self.population is not None and S_train is not None:
            self.population_ = clone(self.population).fit(X_train, S_train)
        keep = subsample(len(X_train), self.max_train, self.seed)
        X_train = X_train if keep is None else X_train[keep]
        # the index is stored in half precision (it is most of the signal's share of a pickled model); the
        # threshold is computed on the rounded index, so a fitted and a loaded signal give the same distances
        self.index_ = X_train.astype(np.float16)
        self._nn = None  # the search and the distances of an earlier fit
        self.threshold_ = float(np.quantile(self.distance(X_val), self.quantile))
        self.n_val_ = len(X_val)
        return self

    def distance(self, X) -> np.ndarray:
        """Mean cosine distance (m,) of each prompt to its nearest training prompts (the last few
        query sets' distances are kept: a served model asks about the same target prompts for every LLM)."""
        check_is_fitted(self, "index_")
        if getattr(self, "_nn", None) is None:  # built on first use, and again after unpickling: not pickled
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(n_neighbors=self.n_neighbors, metric="cosine", algorithm="brute").fit(
                self.index_.astype(np.float32))
            self._memo = ArrayMemo(4)
        return self._memo.get(X, lambda X: self._nn.kneighbors(np.asarray(X, dtype=np.float32))[0].mean(1))

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_nn", None)  # the float32 copy of the index: rebuilt from index_ on first use
        return state

    def __setstate__(self, state):
        if "nn_" in state and "index_" not in state:  # pickled before the half-precision index
            state["index_"] = np.asarray(state.pop("nn_")._fit_X, dtype=np.float16)
        super().__setstate__(state)

    def share(self, X) -> float:
        """Share of the prompts ``X`` (m, d) farther from the training prompts than the threshold."""
        check_is_fitted(self, "threshold_")
        return float(np.mean(self.distance(X) > self.threshold_)) if len(X) else float("nan")

    def summary(self) -> dict:
        """What a report says of the signal in force: ``threshold``, ``max_share``, ``n_train`` (JSON-safe)."""
        check_is_fitted(self, "threshold_")
        return {"threshold": self.threshold_, "max_share": float(self.max_share), "n_train": len(self.index_),
                "population": getattr(self, "population_", None) is not None}
