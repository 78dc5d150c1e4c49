"""PCA (low-rank) imputation of the target's unseen items (Zhang et al. 2025, Algorithm 1)."""
from __future__ import annotations

import numpy as np

from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate, cached, impute_rows


def _svd(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Item means (n_items,) and every principal axis, ``vt`` of shape (min(n, n_items), n_items):
    the rank-r components are its first r rows, so one SVD serves every rank."""
    mu = S.mean(0)
    _, _, vt = np.linalg.svd(S - mu, full_matrices=False)
    return mu, vt


def _impute_mean(mu, V, core, Y, ridge) -> np.ndarray:
    """Full-benchmark means (k,) with unseen items filled from the rank-r reconstruction."""
    Vc = V[core]
    z = np.linalg.solve(Vc.T @ Vc + ridge * np.eye(V.shape[1]), Vc.T @ (Y - mu[core]).T)  # (r, k)
    full = (mu[:, None] + V @ z).clip(0, 1).T
    full[:, core] = Y
    return full.mean(1)


class PCAImpute(BenchmarkEstimator):
    """Random core set; unseen items imputed by a low-rank (PCA) model of the source LLMs.

    The components are fitted on the sources only and each target's scores are the (slightly
    ridge-regularised) least-squares fit to its core results; this is the fixed point of the
    paper's EM-style PCA imputation when the targets do not move the components (they are few).

    Parameters
    ----------
    n_components : int, optional
        Rank; None selects it from ``candidates`` on 25% held-out source LLMs, as in the paper.
    candidates : tuple of int
    ridge : float
        Penalty on the target's component scores (stabilises rank close to the core size).
    """

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, n_components: int | None = None,
                 candidates: tuple = (2, 5, 10, 20), ridge: float = 1e-2):
        super().__init__(core_size, seed, alpha)
        self.n_components = n_components
        self.candidates = candidates
        self.ridge = ridge

    def _fit(self, S, filled, features, rng):
        n = filled.shape[0]
        cap = max(1, min(n - 1, self.core_index_.size))
        if self.n_components is not None:
            r = min(int(self.n_components), cap)
        else:
            order = rng.permutation(n)
            val, tr = order[int(0.75 * n):], order[: int(0.75 * n)]
            best, r = np.inf, 1
            # the same held-out sources for every core size of a trial: one SVD serves them all
            mu, vt = cached("pca_train_svd", filled, tuple(tr.tolist()), lambda: _svd(filled[tr]), disk=False)
            for c in self.candidates:
                c = min(c, cap, len(tr) - 1)
                pred = _impute_mean(mu, vt[:c].T, self.core_index_, filled[val][:, self.core_index_], self.ridge)
                gap = np.abs(pred - filled[val].mean(1)).mean()
                if gap < best:
                    best, r = gap, c
        self.n_components_ = r
        mu, vt = cached("pca_svd", filled, (), lambda: _svd(filled))  # every rank and core size of a split
        self.mu_, self.V_ = mu, vt[:r].T  # (n_items,), (n_items, r)

    def _estimate(self, Y):
        return Estimate(_impute_mean(self.mu_, self.V_, self.core_index_, impute_rows(Y), self.ridge))
