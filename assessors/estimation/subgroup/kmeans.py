"""Subgroups for benchmarks that have none: k-means on prompt embeddings, k by silhouette,
small clusters merged into their nearest neighbour (as Fogliato et al. 2024 do)."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from assessors.errors import DataError


class KMeansSubgroups(BaseEstimator):
    """Cluster prompts into subgroups.

    Parameters
    ----------
    k_min, k_max : int
        Range of cluster counts tried; the one with the best silhouette score wins.
    min_size : int
        Clusters with fewer members are merged into the cluster with the nearest centroid,
        repeatedly, smallest first.
    silhouette_sample : int or None
        Points used to compute silhouette scores (None: all).
    random_state : int

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Subgroup index per prompt, 0..n_subgroups_-1.
    k_ : int
        Chosen k before merging; ``scores_`` maps each k to its silhouette score.
    """

    def __init__(self, k_min: int = 2, k_max: int = 30, min_size: int = 20,
                 silhouette_sample: int | None = 2000, random_state: int = 0):
        self.k_min = k_min
        self.k_max = k_max
        self.min_size = min_size
        self.silhouette_sample = silhouette_sample
        self.random_state = random_state

    def fit(self, embeddings: np.ndarray, y=None) -> "KMeansSubgroups":
        """Cluster ``embeddings`` of shape (n_prompts, d)."""
        X = np.asarray(embeddings, dtype=float)
        if X.ndim != 2 or len(X) < max(3, self.k_min + 1):
            raise DataError(f"KMeansSubgroups needs a 2-d array with more than {self.k_min} rows, got {X.shape}")
        self.scores_, fits = {}, {}
        for k in range(self.k_min, min(self.k_max, len(X) - 1) + 1):
            km = KMeans(n_clusters=k, n_init=4, random_state=self.random_state).fit(X)
            if len(np.unique(km.labels_)) < 2:
                continue
            self.scores_[k] = float(silhouette_score(X, km.labels_, sample_size=self.silhouette_sample,
                                                     random_state=self.random_state))
            fits[k] = km
        if not fits:
            raise DataError("KMeansSubgroups: no k produced two or more clusters")
        self.k_ = max(self.scores_, key=self.scores_.get)
        labels = fits[self.k_].labels_.copy()
        self.labels_ = self._merge_small(X, labels)
        return self

    def _merge_small(self, X, labels):
        while True:
            ids, counts = np.unique(labels, return_counts=True)
            if len(ids) <= 1 or counts.min() >= self.min_size:
                break
            small = ids[np.argmin(counts)]
            cents = {i: X[labels == i].mean(0) for i in ids}
            others = [i for i in ids if i != small]
            target = min(others, key=lambda i: np.sum((cents[i] - cents[small]) ** 2))
            labels[labels == small] = target
        _, labels = np.unique(labels, return_inverse=True)  # relabel 0..K-1
        return labels
