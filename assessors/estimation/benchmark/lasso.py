"""Lasso: the core set is the support of a sparse linear model of full accuracy (Zhang et al. 2025)."""
from __future__ import annotations

import numpy as np
from sklearn.linear_model import lasso_path

from assessors.errors import DataError
from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate, cached, impute_rows


class LassoCore(BenchmarkEstimator):
    """Lasso from item results to full accuracy on the source LLMs; its non-zero items form the core.

    The penalty is the largest-support one with at most ``core_size`` non-zero coefficients on a
    log-spaced grid (the paper searches ``logspace(-4, 1, 1000)`` one fit at a time; we walk one
    warm-started lasso path, cached per source split). With ``n`` source LLMs the lasso selects at
    most about ``n`` items, so the actual core (``core_index_``) may be smaller than ``core_size``.

    Parameters
    ----------
    n_alphas : int
        Grid size of the path.
    """

    selects_core = True

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, n_alphas: int = 200):
        super().__init__(core_size, seed, alpha)
        self.n_alphas = n_alphas

    def _select_core(self, S, features, rng):
        acc = S.mean(1)
        mx, my = S.mean(0), acc.mean()

        def path():
            alphas = np.logspace(-4, 1, self.n_alphas)[::-1]
            _, coefs, _ = lasso_path(S - mx, acc - my, alphas=alphas, max_iter=5000, tol=1e-4)
            return coefs  # (n_items, n_alphas), from sparse to dense

        coefs = cached("lasso_path", S, (self.n_alphas,), path)
        nnz = (coefs != 0).sum(0)
        ok = np.flatnonzero((nnz <= self.core_size) & (nnz > 0))
        if not ok.size:
            raise DataError("LassoCore: no penalty on the grid gives a non-empty support; the source "
                            "LLMs' accuracies may be constant")
        j = ok[np.argmax(nnz[ok])]
        core = np.flatnonzero(coefs[:, j])
        self.coef_ = coefs[core, j]
        self.intercept_ = my - mx[core] @ self.coef_
        return core

    def _estimate(self, Y):
        return Estimate(impute_rows(Y) @ self.coef_ + self.intercept_)
