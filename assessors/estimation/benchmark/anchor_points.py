"""Anchor Points (Vivek et al. 2024): k-medoids on the items' correlations over source LLMs."""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate, cached, fixed_or_trial, impute_rows


def standardised_items(S: np.ndarray) -> np.ndarray:
    """Items (columns) centred and scaled to unit mean square over the source LLMs, 0 for a constant item.

    Returns
    -------
    ndarray of shape (n_llms, n_items), float32
        ``Z[:, i] @ Z[:, j] / n_llms`` is the Pearson correlation of items ``i`` and ``j``.
    """
    Z = np.asarray(S, dtype=np.float32)
    Z = Z - Z.mean(0)
    sd = np.sqrt((Z * Z).mean(0))
    return np.divide(Z, sd, out=np.zeros_like(Z), where=sd > 1e-6)  # a constant item correlates 0 with all


def _correlations(Z: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Correlations (len(rows), n_items) of the items at ``rows`` (None: all) with every item of
    the standardised ``Z``, in one float32 product; an item's correlation with itself is 1."""
    c = (Z if rows is None else Z[:, rows]).T @ Z
    c /= np.float32(len(Z))
    np.clip(c, -1.0, 1.0, out=c)
    if rows is None:
        np.fill_diagonal(c, 1.0)
    else:
        c[np.arange(len(rows)), rows] = 1.0
    return c


def item_correlations(S: np.ndarray) -> np.ndarray:
    """Pearson correlation between items (columns) over source LLMs, 0 for a constant item.

    Returns
    -------
    ndarray of shape (n_items, n_items), float32
        Single precision and built from standardised columns in one product, with no float64
        temporary: MMLU-Pro's matrix takes 0.58 GB so, against 1.2 GB per copy in float64.
    """
    return _correlations(standardised_items(S), None)


class AnchorPoints(BenchmarkEstimator):
    """Core = k-medoids (FasterPAM, ``kmedoids`` package) medoids of ``1 - corr`` between items.

    Parameters
    ----------
    variant : {"weighted", "predictor"}
        ``weighted``: accuracy is the medoids' results weighted by their cluster sizes (each item
        joins the medoid it correlates with most). ``predictor``: every other item is predicted
        from the anchor that explains it best on the sources (largest r^2) by a linear fit, and
        the benchmark mean averages these predictions with the observed anchor results (the
        reference averages over the non-anchor items only).
    max_iter : int
        FasterPAM iterations.
    max_items : int or None
        On a benchmark with more items, the medoids are searched among a seeded random sample of
        this many items (CLARA, Kaufman & Rousseeuw 1990): FasterPAM's cost grows with the square
        of the items, 30-75 s a fit on MMLU-Pro's 12,032 against about 1 s on 2,000. Every item
        still joins its nearest medoid (the weights and the predictor's fits use all items).
        ``None`` searches all items, as the reference implementation.
    refine_iter : int
        After a sample search, alternating k-medoids steps over all items (0: none).
    core_seed : int or None
        Seed of the medoid search (its start and item sample). A fixed seed makes the core a
        function of the source split and core size alone, searched once for all trials on that
        split (cached); ``None`` uses the trial's ``seed``.
    """

    selects_core = True

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, variant: str = "weighted",
                 max_iter: int = 100, max_items: int | None = 2000, refine_iter: int = 5,
                 core_seed: int | None = None):
        super().__init__(core_size, seed, alpha)
        self.variant = variant
        self.max_iter = max_iter
        self.max_items = max_items
        self.refine_iter = refine_iter
        self.core_seed = core_seed

    def _select_core(self, S, features, rng):
        if self.variant not in ("weighted", "predictor"):
            raise ConfigError(f"AnchorPoints: variant must be 'weighted' or 'predictor', got {self.variant!r}")
        if self.max_items is not None and int(self.max_items) < self.core_size:
            raise ConfigError(f"AnchorPoints: max_items={self.max_items} < core_size={self.core_size}; "
                              "raise max_items or set it to null")
        seed = fixed_or_trial(self.core_seed, self.seed)
        key = (self.variant, int(self.core_size), int(self.max_iter), self.max_items, int(self.refine_iter), seed)
        # the medoids depend on the source split, these parameters and the seed alone
        core, self._corr_core = cached("anchor_core", S, key, lambda: self._medoids(S, seed))
        return core

    def _medoids(self, S: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The core (n_core,) searched with ``seed`` on the imputed sources ``S`` (n_llms, n_items),
        and its correlations with every item (n_core, n_items)."""
        import kmedoids

        m = S.shape[1]
        rng = np.random.default_rng(seed)
        if self.max_items is None or m <= int(self.max_items):
            # every item is a candidate: the full matrix, shared by both variants and all core sizes
            cand, corr = np.arange(m), cached("item_corr", S, (), lambda: item_correlations(S), disk=False)
        else:
            cand = np.sort(rng.choice(m, size=int(self.max_items), replace=False))
            Z = cached("item_z", S, (), lambda: standardised_items(S), disk=False)
            corr = cached("item_corr_sample", S, (int(self.max_items), seed),
                          lambda: _correlations(Z[:, cand]), disk=False)
        diss = np.abs(corr) if self.variant == "predictor" else corr.copy()
        np.subtract(1.0, diss, out=diss)  # one (n_cand, n_cand) temporary, not two
        res = kmedoids.fasterpam(diss, self.core_size, max_iter=self.max_iter, init="random",
                                 random_state=seed, n_cpu=1)
        core = np.unique(cand[np.asarray(res.medoids, dtype=int)])
        if cand.size == m:
            return core, corr[core]  # the core's correlations with every item: rows of the full matrix
        return self._refine(Z, core)

    def _refine(self, Z: np.ndarray, core: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Medoids found on a sample, improved on all items by up to ``refine_iter`` alternating steps
        (every item joins its nearest medoid, each cluster's medoid moves to the member with the least
        summed dissimilarity to the others); each step lowers the all-item k-medoids loss or stops.

        Returns the core (n_core,) and its correlations with every item (n_core, n_items)."""
        corr_core = _correlations(Z, core)
        for _ in range(int(self.refine_iter)):
            member = np.argmax(self._similarity(corr_core), axis=0)
            member[core] = np.arange(core.size)  # a medoid belongs to its own cluster
            new = core.copy()
            for j in range(core.size):
                cluster = np.flatnonzero(member == j)
                within = self._similarity(_correlations(Z[:, cluster]))
                new[j] = cluster[np.argmax(within.sum(1))]  # least summed 1 - similarity
            if np.array_equal(np.sort(new), core):
                break
            core = np.sort(new)
            corr_core = _correlations(Z, core)
        return core, corr_core

    def _similarity(self, corr: np.ndarray) -> np.ndarray:
        """``1 - dissimilarity`` of the variant: |corr| for the predictor, corr for the weighted one."""
        return np.abs(corr) if self.variant == "predictor" else corr

    def _fit(self, S, filled, features, rng):
        corr_core, core = self._corr_core, self.core_index_  # read only: it may be cached
        del self._corr_core  # not fitted state
        m = filled.shape[1]
        if self.variant == "weighted":
            member = np.argmax(corr_core, axis=0)
            member[core] = np.arange(core.size)  # a medoid belongs to its own cluster
            self.weights_ = np.bincount(member, minlength=core.size) / m
            return
        floaters = np.setdiff1d(np.arange(m), core)
        nearest = np.argmax(corr_core[:, floaters] ** 2, axis=0)  # min residual = max r^2
        a = filled[:, core[nearest]]
        f = filled[:, floaters]
        am, fm = a.mean(0), f.mean(0)
        va = ((a - am) ** 2).sum(0)
        slope = np.divide(((a - am) * (f - fm)).sum(0), va, out=np.zeros_like(va), where=va > 1e-12)
        self.floaters_, self.nearest_ = floaters, nearest
        self.slope_, self.bias_ = slope, fm - slope * am

    def _estimate(self, Y):
        Y = impute_rows(Y)
        if self.variant == "weighted":
            return Estimate(Y @ self.weights_)
        pred = (Y[:, self.nearest_] * self.slope_ + self.bias_).clip(0, 1)
        return Estimate((Y.sum(1) + pred.sum(1)) / self.n_items_)
