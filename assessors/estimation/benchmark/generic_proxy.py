"""AIPW proxy from the generic assessor (``assessors.core.generic.GenericAssessor``)."""
from __future__ import annotations

import numpy as np

from assessors.estimation.benchmark.base import cached, source_float32
from assessors.estimation.benchmark.proxy import ItemProxy
from assessors.estimation.benchmark.split_trees import split_trees


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
    max_pairs : int, optional
        Cap on training (LLM, item) pairs: when ``n_sources x n_items`` exceeds it, the
        assessor trains on a seeded random subset of source LLMs (at least ``min_llms``). The
        success-pattern features still use every source LLM. If ``min_llms`` sources over all
        items still exceed the cap, a random item subset (always with the core items) is used.
        This bounds the per-trial cost, which a full fit on the 400-LLM leaderboards makes large.
    pattern_dims : int, optional
        Compress success-pattern features to this many SVD components (``None`` keeps all).
    min_llms : int
        Lower bound on the subsampled source LLMs.
    seed : int
    factorised : bool
        Predict an XGBoost assessor's every (target, item) pair by one product over its trees'
        leaves (:mod:`~assessors.estimation.benchmark.split_trees`): the classifier's own numbers
        without building the ``k x n_items`` rows. False (or another classifier) predicts row by row.
    """

    def __sklearn_tags__(self):  # the generic assessor drops NaN labels and fills NaN reference cells
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def __init__(self, assessor=None, max_pairs: int | None = None, pattern_dims: int | None = None,
                 min_llms: int = 16, seed: int = 0, factorised: bool = True):
        self.assessor = assessor
        self.max_pairs = max_pairs
        self.pattern_dims = pattern_dims
        self.min_llms = min_llms
        self.seed = seed
        self.factorised = factorised

    def fit(self, source_success, features, core_index):
        from sklearn.base import clone

        super().fit(source_success, features, core_index)
        S = source_float32(source_success)
        if features is not None:
            self.X_ = np.asarray(features, dtype=np.float32)
        else:  # a function of the source split alone: one SVD serves its every trial, size and fold
            dims = None if self.pattern_dims is None else int(self.pattern_dims)
            self.X_ = shared_patterns(S, dims)
        rng = np.random.default_rng(self.seed)
        rows, items = np.arange(len(S)), np.arange(S.shape[1])
        if self.max_pairs and S.size > self.max_pairs:
            k = max(int(self.min_llms), int(self.max_pairs) // S.shape[1])
            if k < len(S):
                rows = np.sort(rng.choice(len(S), k, replace=False))
            if rows.size * items.size > self.max_pairs:
                # even min_llms sources over every item is too many pairs (e.g. MMLU-Pro's 12k
                # items): train on a random item subset, always keeping the core items
                rest = np.setdiff1d(items, self.core_index_)
                n_keep = max(int(self.max_pairs) // rows.size - self.core_index_.size, 1)
                items = np.union1d(self.core_index_, rng.choice(rest, min(n_keep, rest.size), replace=False))
        self.train_llms_, self.train_items_ = rows, items
        core = np.searchsorted(items, self.core_index_)
        self.model_ = clone(self.assessor).fit(self.X_[items], S[np.ix_(rows, items)], core)
        self.trees_ = split_trees(self.model_, self.X_, S[rows[:4]][:, self.core_index_]) if self.factorised else None
        return self

    def predict(self, core_success):
        R = np.atleast_2d(np.asarray(core_success, dtype=np.float32))
        if self.trees_ is not None:  # the same probabilities without building k x n_items rows
            P = self.trees_.predict(self.model_.fill_reference(R))
        else:
            P = self.model_.predict_proba(self.X_, R)
        return np.clip(np.asarray(P, dtype=np.float64), 0.0, 1.0)


def shared_patterns(S: np.ndarray, dims: int | None) -> np.ndarray:
    """:func:`success_patterns`, read-only and memoised per source split (in this process: cheaper to
    recompute than to store on disk), for every proxy that reads them."""
    return cached("item_patterns", S, (dims,), lambda: success_patterns(S, dims, read_only=True), disk=False)


def success_patterns(S: np.ndarray, dims: int | None, read_only: bool = False) -> np.ndarray:
    """Items' success patterns over the sources, shape (n_items, n_sources or dims); ``read_only``
    for a cached array that later fits share."""
    P = _compressed(S.T.copy(), dims)
    P.setflags(write=not read_only)
    return P


def _compressed(P: np.ndarray, dims: int | None) -> np.ndarray:
    """Patterns P of shape (n_items, n_sources) as they are, or as ``dims`` SVD components."""
    if dims is None or dims >= min(P.shape):
        return P
    # NaN cells -> item mean, then a rank-`dims` projection: keeps the dominant ability axes
    # (the patterns are close to low rank) at a fraction of the tree-building cost
    mean = np.nanmean(P, axis=1, keepdims=True)
    P = np.where(np.isnan(P), np.nan_to_num(mean, nan=0.5), P)
    P = P - P.mean(axis=0, keepdims=True)
    U, s, _ = np.linalg.svd(P, full_matrices=False)
    return (U[:, :dims] * s[:dims]).astype(np.float32)
