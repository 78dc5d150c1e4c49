"""Factor-analysis selector: instances that load most on each (varimax-rotated) factor.

Candidates are the *variables* of the factor analysis and the coordinates of the feature
space are its *observations* (success vectors: the training LLMs; embeddings: the embedding
dimensions; IRT: the item parameters), so every candidate gets one loading per factor.

Steps (the paper's recipe):

1. fit with many factors (``max_factors``, capped by the rank of the data);
2. keep the ``k`` factors whose correlation-matrix eigenvalue exceeds 1 (Kaiser);
3. refit with ``k`` factors and varimax rotation;
4. give each factor ``size // k`` instances with the largest |loading|, and the remaining
   ``size % k`` one each to the factors explaining the most variance (footnote of the
   paper); with more factors than ``size``, the ``size`` strongest factors get one each.
   Picks go round-robin over factors, so an instance loading high on two factors is taken
   once and the second factor moves on to its next-best instance.

Why not ``factor_analyzer.FactorAnalyzer.fit``: with thousands of candidates as variables
its minres/ML fits optimise one uniqueness per variable with finite-difference gradients,
and even ``method="principal"`` builds the full p x p correlation matrix and loops over
``pearsonr``, which takes minutes for 50 LLMs x thousands of candidates. Principal-factor
loadings and the correlation eigenvalues come exactly from a thin SVD of the standardised
data (n_obs x p), which takes well under a second; the varimax rotation is
``factor_analyzer.rotator.Rotator``. ``tests/selection`` checks the loadings against
``FactorAnalyzer(method="principal")`` on small data.
"""
from __future__ import annotations

import logging

import numpy as np

from assessors.errors import ConfigError, DataError
from assessors.selection.base import Selector
from assessors.selection.cache import array_digest, memo
from assessors.selection.feature_spaces import FeatureSpace

log = logging.getLogger(__name__)


def principal_factors(data: np.ndarray, n_factors: int) -> tuple[np.ndarray, np.ndarray]:
    """Principal-factor loadings and the correlation matrix's eigenvalues.

    Parameters
    ----------
    data : ndarray of shape (n_obs, n_vars)
        Observations x variables; no constant column.
    n_factors : int

    Returns
    -------
    loadings : ndarray of shape (n_vars, n_factors)
        Correlation of each variable with each principal factor.
    eigenvalues : ndarray of shape (min(n_obs, n_vars),)
        Non-zero spectrum of the variables' correlation matrix, descending (the rest is 0).
    """
    X = np.asarray(data, dtype=np.float64)
    Z = (X - X.mean(0)) / X.std(0)
    n = Z.shape[0]
    _, s, Vt = np.linalg.svd(Z, full_matrices=False)
    eig = s ** 2 / n  # corr = Z.T Z / n shares its non-zero eigenvalues with Z Z.T / n
    k = min(n_factors, len(s))
    loadings = Vt[:k].T * np.sqrt(eig[:k])[None, :]
    # sign convention of factor_analyzer: each factor's loadings sum to >= 0
    signs = np.sign(loadings.sum(0))
    signs[signs == 0] = 1
    return loadings * signs, eig


class FactorAnalysisSelector(Selector):
    """Largest-|loading| instances per Kaiser-retained, varimax-rotated factor.

    Parameters
    ----------
    size : int
    seed : int
        Only breaks exact ties in |loading| (the fit itself is deterministic).
    space : FeatureSpace
        Embeddings, success vectors or IRT item parameters.
    max_factors : int
        Factors of the first fit, before Kaiser's rule.
    cache_dir : str or None
        Memo of the rotated loadings, shared by jobs that differ only in ``size``.

    Attributes
    ----------
    n_factors_ : int
        Factors kept by Kaiser's rule.
    eigenvalues_ : ndarray
    loadings_ : ndarray of shape (n_usable_candidates, n_factors_)
    """

    def __init__(self, size: int = 100, seed: int = 0, space: FeatureSpace | None = None, max_factors: int = 100,
                 cache_dir: str | None = None):
        super().__init__(size=size, seed=seed)
        self.space = space
        self.max_factors = max_factors
        self.cache_dir = cache_dir

    def _select(self, success, features, validation):
        if self.space is None:
            raise ConfigError("FactorAnalysisSelector needs a feature space (selector.space)")
        Z = self.space.transform(success, features)  # (n_candidates, d)
        obs = Z.T  # observations x variables (= candidates)
        usable = np.flatnonzero(obs.std(0) > 1e-12)
        if len(usable) < self.size:
            raise DataError(
                f"FactorAnalysisSelector: only {len(usable)} of {Z.shape[0]} candidates vary in "
                f"{type(self.space).__name__} (the rest are constant, e.g. solved by every training LLM); "
                f"cannot pick {self.size}; lower selector.size")
        if obs.shape[0] < 3:
            raise DataError(f"FactorAnalysisSelector: the space has only {obs.shape[0]} coordinates; need >= 3")

        def fit():
            from factor_analyzer.rotator import Rotator
            from threadpoolctl import threadpool_limits

            # varimax is hundreds of tiny matmuls: BLAS threads only contend (one thread is an order
            # of magnitude faster on a loaded 2-core machine)
            with threadpool_limits(1):
                return _fit(obs[:, usable])

        def _fit(data):
            from factor_analyzer.rotator import Rotator

            _, eig = principal_factors(data, self.max_factors)  # step 1: many factors
            k = max(1, int((eig[:self.max_factors] > 1.0).sum()))  # step 2: Kaiser
            loadings, _ = principal_factors(data, k)  # step 3: refit with k factors...
            if k > 1:
                loadings = Rotator(method="varimax").fit_transform(loadings)  # ...and varimax
            return {"loadings": loadings, "eigenvalues": eig}

        key = array_digest(obs, [self.max_factors, type(self.space).__name__])
        fitted = memo(self.cache_dir, "fa_loadings", key, fit)
        L, self.eigenvalues_ = fitted["loadings"], fitted["eigenvalues"]
        self.n_factors_ = L.shape[1]
        self.loadings_ = L
        log.info("factor analysis: %d factors kept by Kaiser's rule (of %d candidates)", self.n_factors_, len(usable))
        return usable[allocate_by_loading(np.abs(L), self.size, self.seed)]


def factor_quotas(variance: np.ndarray, size: int) -> np.ndarray:
    """Instances per factor: ``size // k`` each, the remainder to the highest-variance factors.

    Parameters
    ----------
    variance : ndarray of shape (k,)
        Variance explained by each factor (sum of squared loadings).
    size : int

    Returns
    -------
    ndarray of shape (k,) of int summing to ``size``.
    """
    k = len(variance)
    order = np.argsort(-variance, kind="stable")
    quota = np.zeros(k, dtype=int)
    if k > size:
        quota[order[:size]] = 1
        return quota
    quota[:] = size // k
    quota[order[: size % k]] += 1
    return quota


def allocate_by_loading(absL: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    """Round-robin picks of the largest-|loading| unused instances per factor.

    Parameters
    ----------
    absL : ndarray of shape (n, k)
        Absolute loadings.
    size : int
    seed : int
        Breaks exact ties reproducibly.

    Returns
    -------
    ndarray of shape (size,) of distinct row positions, sorted.
    """
    n, k = absL.shape
    quota = factor_quotas((absL ** 2).sum(0), size)
    jitter = np.random.default_rng(seed).random(n) * 1e-12  # ties only
    ranking = [np.argsort(-(absL[:, f] + jitter), kind="stable") for f in range(k)]
    pos = np.zeros(k, dtype=int)
    taken = np.zeros(n, dtype=bool)
    picked: list[int] = []
    order = np.argsort(-quota, kind="stable")
    while len(picked) < size:
        for f in order:
            if quota[f] == 0 or len(picked) == size:
                continue
            while taken[ranking[f][pos[f]]]:
                pos[f] += 1
            i = ranking[f][pos[f]]
            taken[i] = True
            picked.append(int(i))
            quota[f] -= 1
    return np.sort(np.asarray(picked))
