"""``scope="auto"``: pick EB's prior-variance model from the observed cells by penalised likelihood.

Each candidate scope (:data:`AUTO_SCOPES`) gives every cell a prior variance ``A`` around its prior
mean ``m``. Under the EB model a cell's residual ``eps = y - m`` is the prior deviation plus
sampling noise, so ``eps ~ N(0, A + s2)`` approximately, with ``s2`` DT's (add-one, positive)
variance. The scope whose ``A`` gives the observed residuals the highest Gaussian log-likelihood,
less ``log(n_cells) / 2`` per variance parameter (BIC), is used for all cells of that fit. The
score uses only the sampled counts and the cross-fitted prior, never a cell's truth.

The parameter counts are the nominal ones: one ``A`` per LLM and fold (``llm``), one per fold
(``pooled``), one per subgroup (``group``, ``group_binomial``), and an LLM factor per fold plus a
subgroup factor with mean 1 per fold (``factor``, ``factor_binomial``). A factor scope is scored
with its factors unshrunk, the fit those counts describe; ``factor_binomial`` then nests ``llm``
and wins when its subgroup factors (and ``m(1-m)``) explain the residuals beyond their penalty.
Scored by its shrunk factors with a shrunk mean's effective count ``1 + lam (k - 1)`` instead,
it won every draw of ``tests/estimation/subgroup/test_auto_scope.py``'s LLM world, where its
intervals cover less on the LLMs far from the pool (0.83 on the worst LLM against 0.89 with
``llm``). BIC rather than AIC: in a seed-1 diagnostic on BBH+MuSR (docs/results.md) AIC picked
``factor_binomial`` in 2 of 4 repeats, where its intervals are known to under-cover.
"""
from __future__ import annotations

import numpy as np

#: Candidate scopes of ``scope="auto"``, in order of preference on a tie.
AUTO_SCOPES = ("llm", "factor_binomial")


def gaussian_loglik(eps: np.ndarray, var: np.ndarray) -> float:
    """Sum over cells of ``log N(eps; 0, var)``; arrays of shape (n_llms, n_groups), ``var > 0``."""
    return float(-0.5 * np.sum(np.log(2 * np.pi * var) + eps ** 2 / var))


def n_variance_params(scope: str, n_llms: int, fold: np.ndarray) -> int:
    """Nominal number of prior-variance parameters a scope fits.

    Parameters
    ----------
    scope : str
        One of :data:`~assessors.estimation.subgroup.empirical_bayes.SCOPES` but ``auto``.
    n_llms : int
    fold : ndarray of shape (n_groups,)
        Each subgroup's cross-fitting fold.
    """
    n_folds, n_groups = len(np.unique(fold)), len(fold)
    if scope == "llm":
        return n_llms * n_folds
    if scope == "pooled":
        return n_folds
    if scope.startswith("group"):
        return n_groups
    return n_llms * n_folds + n_groups - n_folds  # factor scopes: c_g has mean 1 in each fold


def scope_score(eps: np.ndarray, s2: np.ndarray, a: np.ndarray, n_params: int) -> float:
    """BIC-penalised log-likelihood ``log L - k log(n) / 2`` of residuals ``eps`` under ``N(0, a + s2)``,
    with ``n`` the number of cells.

    Parameters
    ----------
    eps, s2, a : ndarray of shape (n_llms, n_groups)
        Residuals, DT's positive variances and the scope's prior variances.
    n_params : int
        The scope's number of variance parameters (:func:`n_variance_params`).
    """
    return gaussian_loglik(eps, a + s2) - 0.5 * n_params * np.log(eps.size)
