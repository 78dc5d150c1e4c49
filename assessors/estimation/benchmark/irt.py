"""tinyBenchmarks p-IRT and gp-IRT (Polo et al. 2024) on the shared multidimensional 2PL model."""
from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from assessors.errors import ConfigError
from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate, cached, fixed_or_trial, impute_rows
from assessors.selection.irt import MultidimIRT


class TinyBenchmarksIRT(BenchmarkEstimator):
    """IRT anchor items (k-means on item parameters) and the p-IRT / gp-IRT estimators.

    * Core: k-means (k = ``core_size``) on ``[discrimination, difficulty]`` of an IRT model fitted on
      the source LLMs; the item nearest each centroid is an anchor, weighted by its cluster size.
    * p-IRT: the target's ability is fitted on the anchors with items fixed; the estimate is
      ``(n/N) mean(anchors) + (1 - n/N) mean(P(correct) on the other items)``.
    * gp-IRT: ``(1 - lam) p-IRT + lam weighted-anchor mean``, with ``lam = b^2 / (v + b^2)``; ``b`` is the
      IRT's mean error on held-out source LLMs (every 5th; abilities from even items, error on odd
      items, from a second IRT fit without them) and ``v`` the anchor estimator's variance proxy,
      as in the reference implementation.

    Both IRT fits depend only on the source split and ``irt_seed`` and are cached across core sizes
    and, where trials share a source split, across trials; the anchors (k-means, the larger part of
    a fit once the IRT is cached) are cached too, so p-IRT and gp-IRT share them, and with a fixed
    ``core_seed`` the trials of one source split share them as well.

    Parameters
    ----------
    variant : {"gpirt", "pirt"}
    dims : int
        IRT dimension (10, as tinyBenchmarks).
    irt_params : dict, optional
        Extra ``MultidimIRT`` parameters.
    irt_seed : int or None
        Seed of the IRT fits. A fixed seed makes the fits a function of the source split alone,
        fitted once for all trials on it; ``None`` uses the trial's ``seed`` (a refit per trial).
    core_seed : int or None
        Seed of the anchors' k-means. A fixed seed makes the anchors a function of the source split
        and core size alone, chosen once for all trials on that split (which then differ only in
        their split, not in the k-means start); ``None`` uses the trial's ``seed``.
    """

    selects_core = True
    selects_on_raw = True  # the IRT fit handles NaN itself

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, variant: str = "gpirt",
                 dims: int = 10, irt_params: dict | None = None, irt_seed: int | None = 0,
                 core_seed: int | None = None):
        super().__init__(core_size, seed, alpha)
        self.variant = variant
        self.dims = dims
        self.irt_params = irt_params
        self.irt_seed = irt_seed
        self.core_seed = core_seed

    def _irt_seed(self) -> int:
        return fixed_or_trial(self.irt_seed, self.seed)

    def _core_seed(self) -> int:
        return fixed_or_trial(self.core_seed, self.seed)

    def _irt_key(self) -> tuple:
        """What an IRT fit depends on besides its data."""
        return (self.dims, tuple(sorted((self.irt_params or {}).items())), self._irt_seed())

    def _irt(self, S: np.ndarray, tag: str) -> MultidimIRT:
        params = dict(self.irt_params or {})
        seed = self._irt_seed()
        return cached(tag, S, self._irt_key(), lambda: MultidimIRT(dims=self.dims, seed=seed, **params).fit(S))

    def _select_core(self, S, features, rng):
        if self.variant not in ("gpirt", "pirt"):
            raise ConfigError(f"TinyBenchmarksIRT: variant must be 'gpirt' or 'pirt', got {self.variant!r}")
        self.irt_ = self._irt(S, "irt_full")
        # p-IRT and gp-IRT pick the same anchors (same fit, size and seed): computed once, for both
        key = self._irt_key() + (int(self.core_size), self._core_seed())
        core, self.anchor_weights_ = cached("irt_anchors", S, key, lambda: self._anchors(self.irt_.item_parameters()))
        return core

    def _anchors(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Anchor items (sorted positions) and their weights (cluster shares) from item parameters X
        of shape (n_items, dims + 1)."""
        km = KMeans(n_clusters=self.core_size, n_init=1, random_state=self._core_seed()).fit(X)
        d2 = ((X[:, None, :] - km.cluster_centers_[None]) ** 2).sum(-1) if X.shape[0] * self.core_size < 5e6 \
            else None
        if d2 is None:
            from sklearn.metrics import pairwise_distances_argmin

            anchors = pairwise_distances_argmin(km.cluster_centers_, X)
        else:
            anchors = d2.argmin(0)
        sizes = np.bincount(km.labels_, minlength=self.core_size).astype(np.float64)
        core = np.unique(anchors)
        w = np.zeros(core.size)
        np.add.at(w, np.searchsorted(core, anchors), sizes)
        return core, w / X.shape[0]

    def _fit(self, S, filled, features, rng):
        self.lam_ = 0.0
        if self.variant != "gpirt":
            return
        n = S.shape[0]
        val = np.arange(0, n, 5)
        tr = np.setdiff1d(np.arange(n), val)

        def lam_error():
            irt = self._irt(S[tr], "irt_train")
            seen, unseen = np.arange(0, S.shape[1], 2), np.arange(1, S.shape[1], 2)
            th = irt.ability_for(S[val][:, seen], seen)
            pred = irt.predict_success(th, unseen).mean(1)
            return float(np.abs(pred - np.nanmean(S[val][:, unseen], axis=1)).mean())

        b = cached("gpirt_b", S, self._irt_key(), lam_error)
        v = np.nanvar(S, axis=1).mean() / (4 * self.core_index_.size)
        self.lam_ = b ** 2 / (v + b ** 2)

    def _estimate(self, Y):
        core, N = self.core_index_, self.n_items_
        th = self.irt_.ability_for(Y, core)
        rest = np.setdiff1d(np.arange(N), core)
        n = core.size
        pirt = (n / N) * np.nanmean(Y, axis=1) + (1 - n / N) * self.irt_.predict_success(th, rest).mean(1)
        if self.variant == "pirt":
            return Estimate(pirt)
        anchor = impute_rows(Y) @ self.anchor_weights_
        return Estimate((1 - self.lam_) * pirt + self.lam_ * anchor)
