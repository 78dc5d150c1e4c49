"""Clustering selector: KMeans with ``size`` clusters, the instance nearest each centroid."""
from __future__ import annotations

import logging

import numpy as np
from sklearn.cluster import KMeans

from assessors.errors import ConfigError, DataError
from assessors.selection.base import Selector
from assessors.selection.feature_spaces import FeatureSpace

log = logging.getLogger(__name__)


class KMeansSelector(Selector):
    """One reference instance per KMeans cluster: the candidate nearest its centroid.

    Parameters
    ----------
    size : int
        Number of clusters = reference instances.
    seed : int
        KMeans initialisation seed; the selection is deterministic given it.
    space : FeatureSpace
        Where candidates are clustered (embeddings, success vectors, IRT item parameters).
    n_init : int
        KMeans restarts (the best inertia is kept).
    max_iter : int
        Lloyd iterations per restart.
    """

    def __init__(self, size: int = 100, seed: int = 0, space: FeatureSpace | None = None, n_init: int = 1,
                 max_iter: int = 100):
        super().__init__(size=size, seed=seed)
        self.space = space
        self.n_init = n_init
        self.max_iter = max_iter

    def _select(self, success, features, validation):
        if self.space is None:
            raise ConfigError("KMeansSelector needs a feature space (selector.space)")
        Z = self.space.transform(success, features)
        # KMeans cannot make more distinct clusters than distinct points; say so instead of
        # returning duplicates (e.g. binary success vectors of few LLMs collide a lot).
        n_distinct = len(np.unique(Z, axis=0))
        if n_distinct < self.size:
            raise DataError(
                f"KMeansSelector: only {n_distinct} distinct candidates in {type(self.space).__name__} "
                f"for {self.size} clusters; lower selector.size or use another space")
        km = KMeans(n_clusters=self.size, random_state=self.seed, n_init=self.n_init, max_iter=self.max_iter).fit(Z)
        self.inertia_ = float(km.inertia_)
        return nearest_unique(Z, km.cluster_centers_)


def nearest_unique(Z: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """For each centre, the nearest point not already taken by an earlier centre.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    centers : ndarray of shape (k, d), k <= n

    Returns
    -------
    ndarray of shape (k,) of distinct positions into ``Z``.
    """
    # squared distances without the (n, k, d) broadcast: |z|^2 - 2 z.c + |c|^2
    d2 = (Z ** 2).sum(1)[:, None] - 2 * Z @ centers.T + (centers ** 2).sum(1)[None, :]
    taken = np.zeros(len(Z), dtype=bool)
    out = np.empty(len(centers), dtype=int)
    # centres whose nearest point is closest go first, so ties are resolved in favour of tight clusters
    for c in np.argsort(d2.min(axis=0), kind="stable"):
        order = np.argsort(d2[:, c], kind="stable")
        pick = order[~taken[order]][0]
        taken[pick] = True
        out[c] = pick
    return np.sort(out)
