"""EB: empirical-Bayes combination of DT and a cross-fitted prior model, with robust EB intervals.

For each (LLM, subgroup) cell, with DT estimate ``y``, its variance ``s2`` and the cross-fitted
prior-model prediction ``m`` (SR, or the latent posterior of
:mod:`~assessors.estimation.subgroup.latent_prior`; fitted on the other fold of subgroups, as in
Fogliato et al. 2024, who follow Ignatiadis & Wager's cross-fitted EB), and within each set of cells
that shares the moments (``scope``: one LLM's subgroups in a fold, all cells of a fold, one
subgroup's cells over all LLMs, or an LLM factor times a subgroup factor)::

    eps   = y - m
    A     = max(0, mean(eps^2 - s2))                    # prior variance of theta around m
    kappa = mean(eps^4 - 6 s2 eps^2 + 3 s2^2) / A^2     # its kurtosis (AKP's moment estimator)
    w     = A / (A + s2)
    theta_eb = m + w * eps
    CI    = theta_eb ± cva(s2 / A, kappa) * w * sqrt(s2) # Armstrong, Kolesár & Plagborg-Møller (2022)

``fs_correction="pmt"`` replaces the 0 floor of ``A`` (and the 1 floor of ``kappa``) by AKP's
posterior-mean-truncation floors (the ``ebci`` default). With ``"none"`` (the paper's formula)
the point estimate uses ``A`` as above; because ``cva`` is undefined at ``A = 0`` the *interval*
then uses the PMT floor wherever ``A`` falls below it.

The moments of each ``scope`` and ``kurtosis`` are in :mod:`~assessors.estimation.subgroup.moments`.

``s2`` is where binomial cells differ from AKP's normal means. ``variance="add_one"`` (the paper's)
takes DT's add-one variance everywhere. Near 0 or 1 it overstates the noise of the cell (an LLM
that scores 0 has variance 0, not ``1/(n(n+2))``), so ``A`` is biased down and EB pulls exact zeros
towards a prior that is off. ``variance="unbiased"`` estimates the moments with
``k(n-k) / (n^2 (n-1))``, whose mean is ``theta(1-theta)/n`` for every ``theta``, so ``A`` is
unbiased; weights and intervals keep the add-one variance. ``variance="fixed_point"`` also gives
each cell's *weight* the binomial variance at its own EB estimate, ``t(1-t)/n`` with
``t = m + w(t) eps`` (the fixed point of the weight equation, iterated from the add-one variance),
so a cell at 0 whose LLM's other cells back a small ``A`` stays near 0. Its *interval* keeps the
add-one variance: with the cell's own fixed-point variance the intervals under-cover (0.83 in a
simulation with LLMs near 0), because that variance is small exactly where ``y`` is at 0 by
chance. ``tests/estimation/subgroup/test_estimators.py`` checks the coverage of all three.
"""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.estimation.subgroup.base import SubgroupEstimator, dt_variance
from assessors.estimation.subgroup.critical_value import cva_array
from assessors.estimation.subgroup.moments import (eb_moments, factor_moments, fold_kurtosis, group_moments,
                                                   moment_units, unbiased_variance)
from assessors.estimation.subgroup.regression import SyntheticRegression
from assessors.estimation.subgroup.scope_choice import AUTO_SCOPES, n_variance_params, scope_score


VARIANCES = ("add_one", "unbiased", "fixed_point")
SCOPES = ("llm", "pooled", "group", "group_binomial", "factor", "factor_binomial", "auto")
KURTOSES = ("unit", "fold")
BINOMIAL_CLIP = 0.05  # keeps A > 0 where the prior is at 0 or 1 but the truth need not be


def binomial_scale(m: np.ndarray) -> np.ndarray:
    """``m(1-m)`` with ``m`` clipped to ``[BINOMIAL_CLIP, 1 - BINOMIAL_CLIP]``: how far the truth can
    stray from a prior mean ``m`` (any shape), the cell scale of the ``*_binomial`` scopes."""
    mc = np.clip(m, BINOMIAL_CLIP, 1 - BINOMIAL_CLIP)
    return mc * (1 - mc)


def fixed_point_variance(y: np.ndarray, m: np.ndarray, a: np.ndarray, trials: np.ndarray, start: np.ndarray,
                         iters: int = 50) -> np.ndarray:
    """Binomial variance at the cell's own EB estimate: ``s2 = t(1-t)/n``, ``t = m + A/(A+s2) (y-m)``.

    Iterated from ``start`` (the add-one variance); all arrays of shape (n_llms, n_groups). The map
    is monotone in ``s2`` and settles in a few dozen steps. A cell whose ``t`` reaches 0 or 1 gets
    variance 0, so EB keeps an exact 0 (or 1) when the LLM's other cells back it.
    """
    s2 = start
    for _ in range(iters):
        w = np.divide(a, a + s2, out=np.ones_like(s2), where=(a + s2) > 0)
        t = np.clip(m + w * (y - m), 0.0, 1.0)
        s2 = t * (1.0 - t) / trials
    return s2


class EmpiricalBayes(SubgroupEstimator):
    """Empirical-Bayes subgroup accuracy with robust EBCIs.

    Parameters
    ----------
    regressor : SubgroupEstimator with ``fold_``
        The prior model, cross-fitted over subgroups; its folds are the EB folds (``n_folds=2`` in
        the paper). :class:`SyntheticRegression` (the paper's SR, the default) or
        :class:`~assessors.estimation.subgroup.latent_prior.LatentPrior` (the latent posterior,
        which needs ``answers`` in :meth:`fit`).
    alpha : float
        Non-coverage level of the intervals.
    scope : {"llm", "pooled", "group", "group_binomial", "factor", "factor_binomial", "auto"}
        Estimate ``A`` and ``kappa`` per LLM within each fold, pooled over the LLMs of a fold, per
        subgroup pooled over LLMs, per subgroup times ``m(1-m)``, or ``A`` as an LLM factor times a
        subgroup factor (times ``m(1-m)``) (:mod:`~assessors.estimation.subgroup.moments`); ``auto``
        picks ``llm`` or ``factor_binomial`` in each fit by the BIC of the observed residuals
        (:mod:`~assessors.estimation.subgroup.scope_choice`).
    fs_correction : {"none", "pmt"}
        Floor of ``A``: 0 (the paper) or AKP's posterior-mean truncation.
    kappa : float or None
        Fixed kurtosis bound (e.g. ``inf`` for the most robust intervals); None estimates it.
    kurtosis : {"unit", "fold"}
        Where an estimated kurtosis comes from: each moment unit's own cells (with ``A``), or all
        cells of a fold around its pooled ``A`` (:func:`~assessors.estimation.subgroup.moments.fold_kurtosis`).
    clip_intervals : bool
        Intersect intervals with [0, 1] (accuracies cannot leave it; coverage can only improve).
    variance : {"add_one", "unbiased", "fixed_point"}
        The cells' sampling variance: DT's add-one variance (the paper's), unbiased moments, or
        unbiased moments and weights at each cell's binomial variance at its EB estimate (see the
        module docstring).
    cache_dir : str or None
        Where the critical-value table is cached (``paths.cache_dir``); None: the default cache.

    Attributes
    ----------
    estimate_, lower_, upper_ : ndarray of shape (n_llms, n_groups)
    direct_, regression_, variance_, weight_ : ndarray of shape (n_llms, n_groups)
        DT estimate, cross-fitted prior-model estimate, DT (add-one) variance and EB weight on DT.
    a_hat_, kappa_ : ndarray of shape (n_llms, n_groups)
        The ``A`` and kurtosis used for each cell.
    group_scale_ : ndarray of shape (n_llms, n_groups)
        The factor of ``A`` besides the LLM's: ``c_g`` (``scope="factor"``), ``c_g m(1-m)``
        (``factor_binomial``); 1 for the other scopes.
    scope_ : str
        The scope used (``scope``, or the one ``auto`` picked).
    scope_scores_ : dict of str -> float
        Each scope's BIC-penalised log-likelihood of the residuals (the one scope unless ``auto``).
    """

    def __init__(self, regressor: SubgroupEstimator | None = None, alpha: float = 0.05, scope: str = "llm",
                 fs_correction: str = "none", kappa: float | None = None, clip_intervals: bool = True,
                 variance: str = "add_one", kurtosis: str = "unit", cache_dir: str | None = None):
        self.regressor = regressor
        self.variance = variance
        self.alpha = alpha
        self.scope = scope
        self.fs_correction = fs_correction
        self.kappa = kappa
        self.kurtosis = kurtosis
        self.clip_intervals = clip_intervals
        self.cache_dir = cache_dir

    def _unit_moments(self, scope, eps, s2_mom, s2, m, fold):
        """``(A, A_floored, kappa)`` of each cell from its moment unit (the scopes but ``factor``);
        arrays of shape (n_llms, n_groups) like the inputs."""
        a, a_ci, kap = (np.empty_like(eps) for _ in range(3))
        b = binomial_scale(m) if scope == "group_binomial" else np.ones_like(eps)  # A's scale per cell
        for rows, cols in moment_units(scope, fold, eps.shape[0]):
            if scope.startswith("group"):  # one (a_g, kappa) per subgroup, times each cell's b
                bc = b[:, cols]
                a_u, a_f, k_u = group_moments(eps[:, cols] / np.sqrt(bc), s2_mom[:, cols] / bc, s2[:, cols] / bc,
                                              self.fs_correction)
                a_u, a_f = a_u * bc, a_f * bc
            else:
                e, v = eps[rows][:, cols].ravel(), s2_mom[rows][:, cols].ravel()
                a_u, a_f, k_u = eb_moments(e, v, self.fs_correction, s2[rows][:, cols].ravel())
            a[rows, cols], a_ci[rows, cols], kap[rows, cols] = a_u, a_f, k_u
        return a, a_ci, kap

    def _scope_moments(self, scope, eps, s2_mom, s2, m, fold):
        """``(A, A_floored, kappa, scale)`` of each cell under one (non-auto) scope; arrays of shape
        (n_llms, n_groups)."""
        if scope.startswith("factor"):
            return factor_moments(eps, s2_mom, s2, fold, self.fs_correction,
                                  binomial_scale(m) if scope == "factor_binomial" else None)
        return (*self._unit_moments(scope, eps, s2_mom, s2, m, fold), np.ones_like(eps))

    def _scored_variance(self, scope, a, eps, s2_mom, s2, m, fold):
        """The ``A`` by which ``scope="auto"`` scores a scope, of shape (n_llms, n_groups): the
        scope's own, but the factor scopes' with unshrunk factors, whose parameters the nominal
        count of :func:`~assessors.estimation.subgroup.scope_choice.n_variance_params` describes."""
        if not scope.startswith("factor"):
            return a
        return factor_moments(eps, s2_mom, s2, fold, self.fs_correction,
                              binomial_scale(m) if scope == "factor_binomial" else None, shrink=False)[0]

    def _fit(self, successes, trials, group_features, assessor_mean, answers=None):
        if self.scope not in SCOPES:
            raise ConfigError(f"scope must be one of {SCOPES}, got {self.scope!r}")
        if self.variance not in VARIANCES:
            raise ConfigError(f"variance must be one of {VARIANCES}, got {self.variance!r}")
        if self.kurtosis not in KURTOSES:
            raise ConfigError(f"kurtosis must be one of {KURTOSES}, got {self.kurtosis!r}")
        from sklearn.base import clone

        reg = clone(self.regressor) if self.regressor is not None else SyntheticRegression()
        reg.fit(successes, trials, group_features, assessor_mean, answers)
        self.regressor_ = reg
        y = successes / trials
        m = reg.estimate_
        s2 = dt_variance(successes, trials)
        # moments need a variance whose mean is the cell's true noise; the add-one one overstates it near 0/1
        s2_mom = s2 if self.variance == "add_one" else unbiased_variance(successes, trials)
        eps = y - m
        scopes = AUTO_SCOPES if self.scope == "auto" else (self.scope,)
        fits = {sc: self._scope_moments(sc, eps, s2_mom, s2, m, reg.fold_) for sc in scopes}
        self.scope_scores_ = {sc: scope_score(eps, s2, self._scored_variance(sc, fits[sc][0], eps, s2_mom, s2, m, reg.fold_),
                                              n_variance_params(sc, y.shape[0], reg.fold_)) for sc in scopes}
        self.scope_ = max(scopes, key=lambda sc: self.scope_scores_[sc])  # the first on a tie
        a, a_ci, kap, scale = fits[self.scope_]
        if self.kappa is not None:
            kap = np.full_like(y, self.kappa)
        elif self.kurtosis == "fold":
            kap = fold_kurtosis(successes, trials, m, reg.fold_, s2, self.fs_correction, scale)
        s2_w = fixed_point_variance(y, m, a, trials, s2) if self.variance == "fixed_point" else s2
        w = np.divide(a, a + s2_w, out=np.ones_like(s2), where=(a + s2_w) > 0)
        est = m + w * eps
        w_ci = a_ci / (a_ci + s2)
        cv = cva_array((s2 / a_ci).ravel(), kap.ravel(), self.alpha, cache_dir=self.cache_dir).reshape(y.shape)
        half = cv * w_ci * np.sqrt(s2)
        lo, hi = est - half, est + half
        if self.clip_intervals:
            lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
        self.direct_, self.regression_, self.variance_, self.weight_ = y, m, s2, w
        self.a_hat_, self.kappa_, self.group_scale_ = a, kap, scale
        return est, lo, hi
