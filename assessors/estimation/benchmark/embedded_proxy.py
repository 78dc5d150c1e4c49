"""AIPW proxy from one boosted-tree assessor per source split: a target enters by an embedding of its answers.

The generic-assessor proxy (:mod:`~assessors.estimation.benchmark.generic_proxy`) makes the core set
its reference set, so its classifier has one column per core item and is refitted for every core.
Here an LLM is described instead by a fixed-length embedding of whatever answers it has: the ridge
coefficients of its centred answers on the items' success-pattern components (plus their mean).
The classifier reads ``[item components, LLM embedding]`` and does not depend on which items were
answered, only on how many, so one fit per source split and core size serves every trial on that
split (cached). It is trained on the source LLMs alone: each source is embedded from a random set of
as many items as a target shows the proxy (the core less AIPW's hidden fold), and its training pairs
are its other items, so an embedding never contains the label it is trained to predict. At estimate
time a target's embedding comes from its visible core answers (cross-fitting hides one fold at a time),
so the prediction for a core item never uses that item's own answer and AIPW stays design-unbiased.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from assessors.estimation.benchmark.base import cached, item_means, source_float32
from assessors.estimation.benchmark.generic_proxy import shared_patterns
from assessors.estimation.benchmark.proxy import ItemProxy
from assessors.estimation.benchmark.split_trees import factorise


class EmbeddedAssessorProxy(ItemProxy):
    """Per-item success probabilities from a classifier on ``[item components, LLM answer embedding]``.

    Instance features passed to ``fit`` are not used: the item part is the items' success-pattern
    components, which are also the embedding's basis.

    Parameters
    ----------
    classifier : classifier with ``predict_proba``
        Unfitted (cloned), e.g. ``xgboost.XGBClassifier``.
    pattern_dims : int
        SVD components of the items' success patterns over the sources (the item part and the
        embedding's basis).
    ridge : float
        Ridge penalty of the embedding.
    visible_share : float
        Share of the core a target shows the proxy (1 - 1/folds of AIPW's cross-fitting); the sources
        are embedded from that many random items.
    draws : int
        Random item sets (embeddings) per source LLM in the training data.
    visible_counts : list of int, optional
        Train one classifier for every core size: draw ``j`` embeds each source from
        ``visible_counts[j % len]`` items, and the embedding carries its number of answers (so the
        classifier can weigh it), e.g. ``[20, 40, 80, 160]`` for cores of 25-200 items under 5-fold
        cross-fitting. None: one classifier per core size, its sources embedded from
        ``visible_share`` of the core.
    max_pairs : int
        Training (embedding, item) pairs, drawn at random over the sources and draws.
    seed : int
        Seed of the item sets and pairs. Not the trial's seed: the fit depends on the source split and
        core size alone, so one fit serves every trial of that split.
    """

    def __sklearn_tags__(self):  # missing cells are left out of the embedding
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def __init__(self, classifier=None, pattern_dims: int = 32, ridge: float = 1.0, visible_share: float = 0.8,
                 draws: int = 4, max_pairs: int = 20000, seed: int = 0, visible_counts: list | None = None):
        self.classifier = classifier
        self.pattern_dims = pattern_dims
        self.ridge = ridge
        self.visible_share = visible_share
        self.draws = draws
        self.max_pairs = max_pairs
        self.seed = seed
        self.visible_counts = visible_counts

    def fit(self, source_success, features, core_index):
        super().fit(source_success, features, core_index)
        S = source_float32(source_success)
        dims = int(self.pattern_dims)
        self.X_ = shared_patterns(S, dims)
        self.item_mean_ = cached("item_means", S, (), lambda: item_means(S), disk=False)
        if self.visible_counts is None:
            n_vis = (max(2, int(round(float(self.visible_share) * self.core_index_.size))),)
        else:  # one fit for every core size of the split
            n_vis = tuple(int(c) for c in self.visible_counts)
        key = (n_vis, dims, float(self.ridge), int(self.draws), int(self.max_pairs), int(self.seed),
               repr(self.classifier))
        self.model_, self.trees_ = cached("embedded_assessor", S, key, lambda: self._fit_model(S, n_vis))
        return self

    def _fit_model(self, S: np.ndarray, n_vis: tuple):
        """The classifier fitted on source pairs (n_llms x draws embeddings, their unseen items), and its
        factorised form (:func:`~assessors.estimation.benchmark.split_trees.factorise`; None if it has none)."""
        rng = np.random.default_rng(int(self.seed))
        n, m = S.shape
        per = max(1, int(self.max_pairs) // (n * int(self.draws)))
        rows, labels = [], []
        for j in range(int(self.draws)):
            count = n_vis[j % len(n_vis)]
            for llm in range(n):
                answered = np.flatnonzero(~np.isnan(S[llm]))
                if answered.size <= count:
                    continue
                pick = rng.permutation(answered)
                seen, rest = pick[:count], pick[count:][:per]
                e = self._embed(S[llm, seen][None], seen[None])[0]
                rows.append(self._rows(e[None], rest))
                labels.append(S[llm, rest])
        clf = clone(self.classifier).fit(np.vstack(rows), np.concatenate(labels).astype(int))
        return clf, factorise(clf, self.X_, np.vstack(rows)[:4, self.X_.shape[1]:])

    def _embed(self, Y: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Embeddings of ``k`` LLMs from answers ``Y`` (k, c) on items ``cols`` (k, c), NaN answers left
        out: ridge coefficients of the centred answers on the items' components, their mean and, with
        ``visible_counts``, their number; shape (k, pattern_dims + 1) or (k, pattern_dims + 2)."""
        d = self.X_.shape[1]
        o = ~np.isnan(Y)
        r = np.where(o, Y - self.item_mean_[cols], 0.0)  # centred answers, 0 where left out
        Xd = self.X_[cols].astype(np.float64) * o[..., None]  # (k, c, d), rows of left-out answers zeroed
        XdT = Xd.transpose(0, 2, 1)
        coef = np.linalg.solve(XdT @ Xd + float(self.ridge) * np.eye(d), XdT @ r[..., None])[..., 0]
        mean = r.sum(1) / np.maximum(o.sum(1), 1)
        if self.visible_counts is None:
            return np.column_stack([coef, mean])
        return np.column_stack([coef, mean, o.sum(1)])

    def _rows(self, E: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Classifier rows (len(E) * len(items), 2 d + 1), LLM-major: item components joined to embeddings."""
        k, c = len(E), len(items)
        return np.hstack([np.tile(self.X_[items], (k, 1)), np.repeat(E.astype(np.float32), c, axis=0)])

    def predict(self, core_success):
        Y = np.atleast_2d(np.asarray(core_success, dtype=np.float64))
        E = self._embed(Y, np.broadcast_to(self.core_index_, Y.shape))
        if self.trees_ is not None:  # the classifier's numbers from its leaves, no k x n_items rows
            return np.clip(self.trees_.predict(E), 0.0, 1.0)
        m = self.X_.shape[0]
        items = np.arange(m)
        out = np.empty((Y.shape[0], m))
        step = max(1, 500_000 // m)  # targets per block: bounds the rows built at once
        for r in range(0, Y.shape[0], step):
            blk = E[r:r + step]
            out[r:r + step] = self.model_.predict_proba(self._rows(blk, items))[:, 1].reshape(len(blk), m)
        return np.clip(out, 0.0, 1.0)

