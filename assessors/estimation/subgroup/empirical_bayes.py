"""EB: empirical-Bayes combination of DT and a cross-fitted prior model, with robust EB intervals.

For each (LLM, subgroup) cell, with DT estimate ``y``, its variance ``s2`` and the cross-fitted
prior-model prediction ``m`` (SR, or the latent posterior of
:mod:`~assessors.estimation.subgroup.latent_prior`; fitted on the other fold of subgroups, as in
Fogliato et al. 2024, who follow Ignatiadis & Wager's cross-fitted EB), and within each set of cells
that shares the moments (``scope``: one LLM's subgroups in a fold, all cells of a fold, or one
subgroup's cells over all LLMs)::

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

``scope="group"`` gives each subgroup its own ``A`` and ``kappa``, from its cells over all LLMs.
How far the truth strays from the prior mean depends on the subgroup (a prior model can be sharp on
one benchmark and off on another), and a subgroup has as many cells as LLMs, where one LLM has only
as many as a fold has subgroups. With few LLMs a subgroup's moments are noisy, so each is shrunk
towards the fold's pooled moment by how much the subgroups' moments differ beyond their noise
(:func:`shrink_to_pool`, a method-of-moments hierarchical estimate): with 6 LLMs per subgroup and
subgroups that do not differ, unshrunk moments covered 0.924 in simulation. The moments still use
only each cell's DT estimate and prior, never its truth.

``scope="group_binomial"`` lets ``A`` also follow the cell's binomial variance:
``A = a_g b`` with ``b = m(1-m)`` (``m`` clipped to ``[BINOMIAL_CLIP, 1 - BINOMIAL_CLIP]``), since
the truth strays less from a prior near 0 or 1. Dividing ``eps`` by ``sqrt(b)`` and ``s2`` by ``b``
turns each cell into AKP's normal-means problem with prior variance ``a_g``, so ``a_g`` and
``kappa`` are the ``group`` moments of the rescaled cells and the intervals stay AKP's.

``kurtosis="fold"`` keeps each unit's ``A`` but takes the kurtosis of all cells of the fold around
the fold's pooled ``A`` (:func:`fold_kurtosis`). One LLM's 3 to 14 cells in a fold cannot tell a
kurtosis: AKP's floor alone is of order ``10 (s2 / A)^2`` with 3 cells, and the critical value then
nears Chebyshev's ``sqrt(s2 / (A alpha))``. Residuals standardised by their own unit's ``A`` would
understate it (with 3 cells their kurtosis cannot exceed 3). Around one pooled ``A`` the spread of
the units' ``A`` adds to the kurtosis (a scale mixture is heavier-tailed than its parts), so the
pooled value errs on the wide side when the units share one shape. Its moments are the binomial
cells' unbiased ones (:mod:`~assessors.estimation.subgroup.binomial_moments`): the normal-noise
fourth moment with an estimated ``s2`` is biased up. It uses only the counts and the prior,
never a cell's truth.

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
from assessors.estimation.subgroup.binomial_moments import central_moment
from assessors.estimation.subgroup.critical_value import cva_array
from assessors.estimation.subgroup.regression import SyntheticRegression


VARIANCES = ("add_one", "unbiased", "fixed_point")
SCOPES = ("llm", "pooled", "group", "group_binomial")
KURTOSES = ("unit", "fold")
BINOMIAL_CLIP = 0.05  # keeps A > 0 where the prior is at 0 or 1 but the truth need not be


def moment_units(scope: str, fold: np.ndarray, n_llms: int):
    """The sets of cells whose moments are estimated together: ``(rows, cols)`` index pairs.

    Parameters
    ----------
    scope : {"llm", "pooled", "group", "group_binomial"}
        ``llm``: one LLM's subgroups within a fold; the others: every cell of a fold (the
        ``group`` scopes then split the fold's moments by subgroup, :func:`group_moments`).
    fold : ndarray of shape (n_groups,)
        The prior model's cross-fitting fold of each subgroup.
    n_llms : int

    Returns
    -------
    list of (slice, ndarray of bool of shape (n_groups,))
    """
    rows = [slice(i, i + 1) for i in range(n_llms)] if scope == "llm" else [slice(None)]
    return [(r, fold == f) for f in np.unique(fold) for r in rows]


def cell_moments(eps: np.ndarray, s2: np.ndarray):
    """Per-cell unbiased terms of the prior's second and fourth moments, ``eps^2 - s2`` and
    ``eps^4 - 6 s2 eps^2 + 3 s2^2`` (normal noise); arrays of any shape, returned alike."""
    return eps ** 2 - s2, eps ** 4 - 6 * s2 * eps ** 2 + 3 * s2 ** 2


def floored_moments(mu2: float, mu4: float, v: np.ndarray, fs_correction: str = "none"):
    """``(A, A_floored, kappa)`` from moment estimates ``mu2``, ``mu4`` and the unit's variances
    ``v`` (1-d, positive), with AKP's PMT floors ``2 mean(v^2) / (n mean(v))`` for ``A`` and
    ``1 + 32 mean(v^4) / (n mean(v^2) A^2)`` for ``kappa``."""
    n = len(v)
    floor2 = 2 * np.mean(v ** 2) / (n * np.mean(v))
    floor4 = 32 * np.mean(v ** 4) / (n * np.mean(v ** 2))
    a_floored = max(mu2, floor2)
    if fs_correction == "none":
        a = max(mu2, 0.0)
    elif fs_correction == "pmt":
        a = a_floored
    else:
        raise ConfigError(f"fs_correction must be 'none' or 'pmt', got {fs_correction!r}")
    kappa = max(mu4 / a_floored ** 2, 1.0 + floor4 / a_floored ** 2)
    return a, a_floored, kappa


def eb_moments(eps: np.ndarray, s2: np.ndarray, fs_correction: str = "none", s2_floor: np.ndarray | None = None):
    """Estimate ``(A, A_floored, kappa)`` from residuals ``eps`` and variances ``s2`` (1-d arrays).

    ``A`` follows ``fs_correction``; ``A_floored`` is always at least AKP's PMT floor
    ``2 mean(v^2) / (n mean(v))`` with ``v = s2_floor`` (default ``s2``; it must be positive) and
    is what intervals use.
    """
    d2, d4 = cell_moments(eps, s2)
    return floored_moments(float(np.mean(d2)), float(np.mean(d4)), s2 if s2_floor is None else s2_floor, fs_correction)


def shrink_to_pool(d: np.ndarray) -> np.ndarray:
    """Per-subgroup means of per-cell moment terms, shrunk towards their pooled mean.

    Each column's mean has sampling variance ``v_g = var(d[:, g]) / n``; the spread of the true
    subgroup moments is ``tau2 = max(0, var_g(mean_g) - mean(v_g))`` (method of moments) and
    column ``g`` keeps the share ``tau2 / (tau2 + v_g)`` of its deviation from the pooled mean:
    all of it when subgroups differ far more than their noise, none when they do not differ.

    Parameters
    ----------
    d : ndarray of shape (n_llms, n_groups)

    Returns
    -------
    ndarray of shape (n_groups,)
    """
    n, k = d.shape
    means, pool = d.mean(0), float(d.mean())
    if k < 2 or n < 2:
        return np.full(k, pool) if n < 2 else means
    v = d.var(0, ddof=1) / n
    tau2 = max(float(np.var(means, ddof=1) - v.mean()), 0.0)
    lam = np.divide(tau2, tau2 + v, out=np.zeros(k), where=(tau2 + v) > 0)
    return pool + lam * (means - pool)


def group_moments(eps: np.ndarray, s2: np.ndarray, s2_floor: np.ndarray, fs_correction: str = "none"):
    """``(A, A_floored, kappa)`` per subgroup of one fold, each shrunk towards the fold's pooled value.

    Parameters
    ----------
    eps, s2, s2_floor : ndarray of shape (n_llms, n_groups)
        Residuals, moment variances and the (positive) variances of the PMT floors.

    Returns
    -------
    three ndarrays of shape (n_groups,)
    """
    mu2, mu4 = (shrink_to_pool(d) for d in cell_moments(eps, s2))
    out = [floored_moments(mu2[g], mu4[g], s2_floor[:, g], fs_correction) for g in range(eps.shape[1])]
    return tuple(np.array(x) for x in zip(*out))


def fold_kurtosis(successes, trials, m, fold, s2_floor, fs_correction: str = "none") -> np.ndarray:
    """One kurtosis per fold of subgroups, of all its cells around the fold's pooled ``A``.

    The moments are the binomial-unbiased ``(theta - m)^2`` and ``(theta - m)^4``
    (:func:`~assessors.estimation.subgroup.binomial_moments.central_moment`; the normal-noise terms
    of :func:`cell_moments` for a cell with fewer than 4 items), floored as in
    :func:`floored_moments` with the cells' positive variances ``s2_floor``.

    Parameters
    ----------
    successes, trials, m, s2_floor : ndarray of shape (n_llms, n_groups)
    fold : ndarray of shape (n_groups,)

    Returns
    -------
    ndarray of shape (n_llms, n_groups)
        Each cell's fold kurtosis.
    """
    eps = successes / trials - m
    d2n, d4n = cell_moments(eps, unbiased_variance(successes, trials))
    d2 = np.where(trials >= 2, central_moment(successes, trials, m, 2), d2n)
    d4 = np.where(trials >= 4, central_moment(successes, trials, m, 4), d4n)
    out = np.empty_like(eps)
    for f in np.unique(fold):
        c = fold == f
        out[:, c] = floored_moments(float(d2[:, c].mean()), float(d4[:, c].mean()), s2_floor[:, c].ravel(),
                                    fs_correction)[2]
    return out


def unbiased_variance(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """``k(n-k) / (n^2 (n-1))``, unbiased for ``theta(1-theta)/n`` (add-one's value where ``n = 1``).

    Arrays of shape (n_llms, n_groups); 0 for a cell of all successes or all failures.
    """
    n1 = np.maximum(trials - 1.0, 1.0)
    return np.where(trials > 1, successes * (trials - successes) / (trials ** 2 * n1), dt_variance(successes, trials))


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
    scope : {"llm", "pooled", "group", "group_binomial"}
        Estimate ``A`` and ``kappa`` per LLM within each fold, pooled over the LLMs of a fold, per
        subgroup pooled over LLMs, or per subgroup times ``m(1-m)`` (see the module docstring).
    fs_correction : {"none", "pmt"}
        Floor of ``A``: 0 (the paper) or AKP's posterior-mean truncation.
    kappa : float or None
        Fixed kurtosis bound (e.g. ``inf`` for the most robust intervals); None estimates it.
    kurtosis : {"unit", "fold"}
        Where an estimated kurtosis comes from: each moment unit's own cells (with ``A``), or all
        cells of a fold standardised by their unit's ``A`` (see the module docstring).
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
        a = np.empty_like(y)
        a_ci = np.empty_like(y)
        kap = np.empty_like(y)
        mc = np.clip(m, BINOMIAL_CLIP, 1 - BINOMIAL_CLIP)
        b = mc * (1 - mc) if self.scope == "group_binomial" else np.ones_like(y)  # A's scale per cell
        for rows, cols in moment_units(self.scope, reg.fold_, y.shape[0]):
            if self.scope.startswith("group"):  # one (a_g, kappa) per subgroup, times each cell's b
                bc = b[:, cols]
                a_u, a_f, k_u = group_moments(eps[:, cols] / np.sqrt(bc), s2_mom[:, cols] / bc, s2[:, cols] / bc,
                                              self.fs_correction)
                a_u, a_f = a_u * bc, a_f * bc
            else:
                e, v = eps[rows][:, cols].ravel(), s2_mom[rows][:, cols].ravel()
                a_u, a_f, k_u = eb_moments(e, v, self.fs_correction, s2[rows][:, cols].ravel())
            a[rows, cols], a_ci[rows, cols] = a_u, a_f
            kap[rows, cols] = k_u if self.kappa is None else self.kappa
        if self.kappa is None and self.kurtosis == "fold":
            kap[:] = fold_kurtosis(successes, trials, m, reg.fold_, s2, self.fs_correction)
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
        self.a_hat_, self.kappa_ = a, kap
        return est, lo, hi
