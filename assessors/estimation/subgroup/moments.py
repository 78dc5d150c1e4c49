"""EB's prior moments: the prior variance ``A`` and kurtosis of each set of cells (``scope``).

``scope="llm"`` (one LLM's subgroups in a fold) and ``"pooled"`` (all cells of a fold) take the
plain means of AKP's per-cell moment terms over their cells (:func:`eb_moments`).

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

``scope="factor"`` models ``A`` of the cell of LLM ``l`` in subgroup ``g`` as ``a_l c_g``
(:func:`factor_moments`): an LLM factor times a subgroup factor with mean 1 over the fold. Under
that model the mean over LLMs of the cells' ``eps^2 - s2`` in subgroup ``g`` is ``c_g`` times the
mean over the fold, so ``c_g`` is the ratio of the two; each LLM's ``a_l`` is the mean of its
cells' ``(eps^2 - s2) / mean(c)`` in the fold. Both are shrunk towards the fold's pooled value by
:func:`shrink_to_pool` with one share for all (``common=True``), which keeps the pooled mean.
Dividing ``eps`` by ``sqrt(c_g)`` and ``s2`` by ``c_g`` turns the cells into AKP's problem with
prior variance ``a_l``. The PMT floors are the fold's (the factors draw on all its cells) and the
fold kurtosis is that of the rescaled cells (:func:`fold_kurtosis` with ``scale``).
``scope="factor_binomial"`` also multiplies ``A`` by each cell's ``m(1-m)``, as ``group_binomial``.
The shared share over-shrinks LLM factors that truly differ: on BBH+MuSR (13-14 cells per LLM and
fold) the factor scopes cover less than ``llm`` (docs/results.md). ``scope="auto"``
(:mod:`~assessors.estimation.subgroup.scope_choice`) uses ``factor_binomial`` only where the observed
residuals back its subgroup factors beyond their BIC penalty.
"""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.estimation.subgroup.base import dt_variance
from assessors.estimation.subgroup.binomial_moments import central_moment

SCALE_FLOOR = 0.1  # smallest subgroup factor: keeps a subgroup whose moment is below 0 from A = 0


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


def shrink_to_pool(d: np.ndarray, common: bool = False) -> np.ndarray:
    """Per-subgroup means of per-cell moment terms, shrunk towards their pooled mean.

    Each column's mean has sampling variance ``v_g = var(d[:, g]) / n``; the spread of the true
    subgroup moments is ``tau2 = max(0, var_g(mean_g) - mean(v_g))`` (method of moments) and
    column ``g`` keeps the share ``tau2 / (tau2 + v_g)`` of its deviation from the pooled mean:
    all of it when subgroups differ far more than their noise, none when they do not differ.

    With ``common=True`` every column keeps the share ``tau2 / (tau2 + mean(v_g))``, so the shrunk
    means keep the pooled mean: columns with a larger moment are also the noisier ones, and their
    own shares would pull the mean down.

    Parameters
    ----------
    d : ndarray of shape (n_llms, n_groups)
    common : bool

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
    v = np.full(k, v.mean()) if common else v
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


def fold_kurtosis(successes, trials, m, fold, s2_floor, fs_correction: str = "none",
                  scale: np.ndarray | None = None) -> np.ndarray:
    """One kurtosis per fold of subgroups, of all its cells around the fold's pooled ``A``.

    The moments are the binomial-unbiased ``(theta - m)^2`` and ``(theta - m)^4``
    (:func:`~assessors.estimation.subgroup.binomial_moments.central_moment`; the normal-noise terms
    of :func:`cell_moments` for a cell with fewer than 4 items), floored as in
    :func:`floored_moments` with the cells' positive variances ``s2_floor``.

    Parameters
    ----------
    successes, trials, m, s2_floor : ndarray of shape (n_llms, n_groups)
    fold : ndarray of shape (n_groups,)
    scale : ndarray of shape (n_groups,) or (n_llms, n_groups), optional
        Each cell's known factor ``c`` of ``A`` (the ``factor`` scopes): the cells are rescaled to
        ``eps / sqrt(c)``, so the pooled ``A`` is ``sum d2 / sum c`` and its fourth moment
        ``sum d4 / sum c^2``. None: 1 everywhere.

    Returns
    -------
    ndarray of shape (n_llms, n_groups)
        Each cell's fold kurtosis.
    """
    eps = successes / trials - m
    d2n, d4n = cell_moments(eps, unbiased_variance(successes, trials))
    d2 = np.where(trials >= 2, central_moment(successes, trials, m, 2), d2n)
    d4 = np.where(trials >= 4, central_moment(successes, trials, m, 4), d4n)
    sc = np.broadcast_to(np.ones(eps.shape[1]) if scale is None else scale, eps.shape)
    out = np.empty_like(eps)
    for f in np.unique(fold):
        c = fold == f
        mu2, mu4 = d2[:, c].sum() / sc[:, c].sum(), d4[:, c].sum() / (sc[:, c] ** 2).sum()
        out[:, c] = floored_moments(float(mu2), float(mu4), (s2_floor[:, c] / sc[:, c]).ravel(), fs_correction)[2]
    return out


def unbiased_variance(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """``k(n-k) / (n^2 (n-1))``, unbiased for ``theta(1-theta)/n`` (add-one's value where ``n = 1``).

    Arrays of shape (n_llms, n_groups); 0 for a cell of all successes or all failures.
    """
    n1 = np.maximum(trials - 1.0, 1.0)
    return np.where(trials > 1, successes * (trials - successes) / (trials ** 2 * n1), dt_variance(successes, trials))


def factor_moments(eps: np.ndarray, s2: np.ndarray, s2_floor: np.ndarray, fold: np.ndarray,
                   fs_correction: str = "none", cell_scale: np.ndarray | None = None, shrink: bool = True):
    """``A = a_l c_g b_lg`` per cell: an LLM factor per fold times a subgroup factor (see the module
    docstring), times a known scale ``b`` of each cell.

    Parameters
    ----------
    eps, s2, s2_floor : ndarray of shape (n_llms, n_groups)
        Residuals, moment variances and the (positive) variances of the PMT floors.
    fold : ndarray of shape (n_groups,)
    fs_correction : {"none", "pmt"}
    cell_scale : ndarray of shape (n_llms, n_groups), optional
        ``b``, e.g. the prior's binomial variance ``m(1-m)`` (``scope="factor_binomial"``); None: 1.
    shrink : bool
        Shrink the factors towards the fold's pool (the estimator); False keeps each factor's own
        moment, the fit whose parameters ``scope="auto"`` counts one by one.

    Returns
    -------
    a, a_floored, kappa : ndarray of shape (n_llms, n_groups)
        Each cell's ``A``, its PMT-floored value (for intervals) and its LLM's kurtosis.
    scale : ndarray of shape (n_llms, n_groups)
        Each cell's ``c_g b_lg`` (``c`` has mean 1 over each fold before its floor), the scale by
        which :func:`fold_kurtosis` divides it.
    """
    b = np.ones_like(eps) if cell_scale is None else cell_scale
    eps, s2, s2_floor = eps / np.sqrt(b), s2 / b, s2_floor / b  # AKP's problem with A = a_l c_g
    a, a_f, kap = (np.empty_like(eps) for _ in range(3))
    scale = np.ones(eps.shape[1])
    d2, d4 = cell_moments(eps, s2)
    for f in np.unique(fold):
        cols = fold == f
        pool = float(d2[:, cols].mean())
        if pool > 0:
            c_raw = shrink_to_pool(d2[:, cols], common=True) if shrink else d2[:, cols].mean(0)
            scale[cols] = np.maximum(c_raw / pool, SCALE_FLOOR)
        c = scale[cols]
        # an LLM's 3 to 14 cells in a fold leave its factor noisy: shrink it towards the fold's, as c_g
        d_llm = (d2[:, cols] / c.mean()).T
        a_llm = shrink_to_pool(d_llm, common=True) if shrink else d_llm.mean(0)
        v = (s2_floor[:, cols] / c).ravel()  # the floors of a pooled estimate: it draws on the whole fold
        for i in range(eps.shape[0]):
            out = floored_moments(float(a_llm[i]), float(d4[i, cols].sum() / (c ** 2).sum()), v, fs_correction)
            a[i, cols], a_f[i, cols], kap[i, cols] = out[0] * c, out[1] * c, out[2]
    return a * b, a_f * b, kap, scale[None, :] * b
