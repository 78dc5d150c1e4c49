"""Robust empirical-Bayes critical value ``cva`` (Armstrong, Kolesár & Plagborg-Møller, 2022).

The robust EBCI for the EB estimate ``theta_eb = sr + w (dt - sr)`` with ``w = A / (A + s2)`` is

    theta_eb ± cva_alpha(m2 = s2 / A, kappa) * w * sqrt(s2),

where ``cva`` is the (1 - alpha) quantile of ``|b + Z|`` maximised over all distributions of the
normalised bias ``b`` with ``E[b^2] = m2`` and ``E[b^4] / E[b^2]^2 <= kappa``.

The maintained ``multiple-inference`` package (1.2.0, the latest) ports ``cva`` but cannot be
imported with scipy >= 1.12 (it imports the removed ``scipy.misc.derivative``), so the value is
computed here with scipy, following AKP's characterisation of the worst case: with
``t = b^2`` and ``r(t, chi) = P(|sqrt(t) + Z| > chi)``,

* if only ``E[t] = m2`` is imposed (``kappa = inf``) the worst non-coverage is the least concave
  majorant of ``r(., chi)`` at ``m2``: ``r(m2)`` when ``m2 >= t0`` and the chord from
  ``(0, r(0))`` to the tangency point ``(t0, r(t0))`` otherwise;
* if that two-point distribution violates the kurtosis bound, the worst case is a two-point
  distribution on which both moment constraints bind, a one-parameter family searched
  numerically.

``cva`` is then the root in ``chi`` of ``rho(m2, kappa, chi) = alpha``.
``tests/estimation/subgroup/test_critical_value.py`` checks it against reference values of the
authors' R package ``ebci`` (its test-suite ``tests/testthat/test-cv.R``). Because a harness needs
thousands of critical values per repeat, :func:`cva_array` interpolates a lazily built table
(linear in ``log m2``, kurtosis rounded *up* to a grid point, which is conservative because
``cva`` is non-decreasing in ``kappa``).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import math
from pathlib import Path

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.special import ndtr
from scipy.stats import ncx2, norm

from assessors.data.download import default_cache_dir
from assessors.errors import ConfigError
from assessors.io import atomic_open

log = logging.getLogger(__name__)

#: Kurtosis grid for the table; values between grid points are rounded up (conservative).
KAPPA_GRID = np.concatenate([[1.0], np.round(np.geomspace(1.1, 300.0, 45), 4), [np.inf]])
#: log-spaced m2 grid of the table; outside it values are computed exactly.
M2_GRID = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 97)])


@functools.lru_cache(maxsize=100_000)
def cva(m2: float, kappa: float = np.inf, alpha: float = 0.05) -> float:
    """Robust EBCI critical value.

    Parameters
    ----------
    m2 : float
        Second moment of the normalised bias; for EB shrinkage ``m2 = sigma^2 / mu2``.
    kappa : float
        Kurtosis bound (``>= 1``; ``np.inf`` imposes none).
    alpha : float
        Non-coverage level.

    Returns
    -------
    float
        ``cva_alpha(m2, kappa)``; equals ``norm.ppf(1 - alpha / 2)`` at ``m2 = 0``.
    """
    m2, kappa, alpha = float(m2), float(kappa), float(alpha)
    if not (0 < alpha < 1):
        raise ConfigError(f"cva: alpha must be in (0, 1), got {alpha}")
    if m2 < 0 or math.isnan(m2):
        raise ValueError(f"cva: m2 must be >= 0, got {m2}")
    if kappa < 1:
        raise ValueError(f"cva: kurtosis must be >= 1, got {kappa}")
    if m2 == 0:
        return float(norm.ppf(1 - alpha / 2))
    if m2 > 1e6:
        # Shrinkage weight below 1e-6: use the Chebyshev bound, always valid and sharp as m2 grows.
        return math.sqrt((1 + m2) / alpha)
    # kappa = 1 forces a point mass at |b| = sqrt(m2): the folded non-central chi-square quantile.
    lower = float(np.sqrt(ncx2.ppf(1 - alpha, df=1, nc=m2))) if m2 < 1e4 else math.sqrt(m2) + norm.ppf(1 - alpha)
    if kappa == 1:
        return lower
    # Chebyshev: P(|b + Z| > chi) <= (1 + m2) / chi^2, attained in the limit as m2 grows.
    upper = math.sqrt((1 + m2) / alpha)
    f = lambda chi: rho(m2, kappa, chi) - alpha  # noqa: E731
    if f(upper) > 0:  # numerical slack at the Chebyshev bound
        return upper
    if f(lower) <= 0:
        return lower
    return float(brentq(f, lower, upper, xtol=1e-10, rtol=1e-12))


def _r(t, chi):
    """Non-coverage ``P(|sqrt(t) + Z| > chi)`` for Z ~ N(0, 1); vectorised over ``t``."""
    s = np.sqrt(t)
    # scipy.special.ndtr, not norm.cdf: the root searches call this tens of thousands of times.
    return ndtr(-s - chi) + ndtr(s - chi)


def _r1(t, chi):
    """Derivative of :func:`_r` in ``t`` (limit ``chi * phi(chi)`` at t = 0)."""
    t = np.asarray(t, dtype=float)
    s = np.sqrt(np.maximum(t, 1e-300))
    out = (_phi(s - chi) - _phi(s + chi)) / (2 * s)
    return np.where(t < 1e-10, chi * _phi(chi), out)


def _phi(x):
    return np.exp(-0.5 * np.square(x)) / math.sqrt(2 * math.pi)


def tangency_point(chi: float) -> float:
    """``t0``: where the tangent from ``(0, r(0))`` touches ``r(., chi)``; 0 when r is concave (chi^2 < 3)."""
    if chi ** 2 < 3:
        return 0.0
    # Grid in sqrt(t), which keeps resolution where r bends (sqrt(t) near chi) for any chi.
    t = np.linspace(0.0, chi + 9.0, 301)[1:] ** 2
    h = _r(t, chi) - _r(0.0, chi) - t * _r1(t, chi)
    # h decreases while r is convex and increases once r is concave: the root follows its minimum.
    i = int(np.argmin(h))
    j = i + int(np.argmax(h[i:] > 0))
    if h[j] <= 0:
        return float(t[-1])
    a = t[j - 1] if j > i else t[i]
    hf = lambda x: _r(x, chi) - _r(0.0, chi) - x * _r1(x, chi)  # noqa: E731
    return float(brentq(hf, a, t[j], xtol=1e-12))


def rho(m2: float, kappa: float, chi: float) -> float:
    """Worst-case non-coverage of ``theta_eb ± chi * w * sigma`` over normalised-bias laws with
    ``E[b^2] = m2`` and ``E[b^4] <= kappa * m2^2``."""
    t0 = tangency_point(chi)
    if m2 >= t0:
        return float(_r(m2, chi))
    r0 = float(_r(0.0, chi))
    rho_inf = r0 + m2 * (float(_r(t0, chi)) - r0) / t0
    # Least-favourable law for kappa = inf: mass m2/t0 at t0, rest at 0; its kurtosis is t0/m2.
    if t0 <= kappa * m2:
        return rho_inf
    var = (kappa - 1.0) * m2 ** 2

    def two_point(x0):
        x1 = m2 + var / (m2 - x0)
        p = (x1 - m2) / (x1 - x0)
        return p * _r(x0, chi) + (1 - p) * _r(x1, chi)

    # Both constraints bind: support {x0, x1} with x0 in [0, m2); scan then refine.
    x0 = m2 * (1.0 - np.concatenate([[1.0], np.geomspace(1.0, 1e-9, 200)[1:]]))
    vals = two_point(x0)
    i = int(np.argmax(vals))
    lo, hi = x0[max(i - 1, 0)], x0[min(i + 1, len(x0) - 1)]
    best = float(vals[i])
    if hi > lo:
        res = minimize_scalar(lambda x: -two_point(x), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-10 * max(m2, 1e-12)})
        best = max(best, float(-res.fun))
    return best


@functools.lru_cache(maxsize=512)
def _table_row(kappa: float, alpha: float, cache_dir: str | None = None) -> np.ndarray:
    """cva over :data:`M2_GRID`, cached on disk under ``<cache_dir>/cva_table`` (a row takes
    seconds; a run needs dozens). ``cache_dir`` None means :func:`~assessors.data.download.default_cache_dir`."""
    key = hashlib.sha1(np.concatenate([M2_GRID, [kappa, alpha]]).tobytes()).hexdigest()[:16]
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    path = root / "cva_table" / f"{key}.npy"
    if path.exists():
        row = np.load(path, allow_pickle=False)
        if row.shape == M2_GRID.shape:
            return row
    row = np.array([cva(m, kappa, alpha) for m in M2_GRID])
    try:  # atomic: another process may be filling the same cache
        with atomic_open(path) as fh:
            np.save(fh, row)
    except OSError as err:  # an unwritable cache costs time (the row is recomputed next run), not the result
        log.warning("cannot cache critical values at %s (%s); they will be recomputed next time", path, err)
    return row


def _round_up_kappa(kappa: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(KAPPA_GRID, kappa - 1e-12, side="left")
    return KAPPA_GRID[np.minimum(idx, len(KAPPA_GRID) - 1)]


def cva_array(m2: np.ndarray, kappa: np.ndarray | float, alpha: float = 0.05, exact: bool = False,
              cache_dir: str | None = None) -> np.ndarray:
    """Vectorised :func:`cva` by table interpolation.

    Parameters
    ----------
    m2 : array of shape (n,)
        Normalised-bias second moments (``>= 0``; ``inf`` gives ``inf``).
    kappa : float or array of shape (n,)
        Kurtosis bounds (``>= 1``).
    alpha : float
    exact : bool
        Compute every value exactly instead (slow; for checks).
    cache_dir : str, optional
        Cache root (``paths.cache_dir``); the table rows are kept in its ``cva_table/``.
        None means :func:`~assessors.data.download.default_cache_dir`.

    Returns
    -------
    numpy.ndarray of shape (n,)
        Critical values; with ``exact=False`` kurtosis is rounded up to :data:`KAPPA_GRID` and
        ``m2`` interpolated linearly in ``log m2`` inside :data:`M2_GRID` (relative error below
        ~1e-3 in the tests), exact outside it.
    """
    m2 = np.atleast_1d(np.asarray(m2, dtype=float))
    kappa = np.broadcast_to(np.asarray(kappa, dtype=float), m2.shape)
    if np.any(kappa < 1) or np.any(np.isnan(kappa)):
        raise ValueError("cva_array: kurtosis values must be >= 1")
    if np.any(m2 < 0) or np.any(np.isnan(m2)):
        raise ValueError("cva_array: m2 values must be >= 0")
    out = np.full(m2.shape, np.inf)
    finite = np.isfinite(m2)
    if exact:
        out[finite] = [cva(m, k, alpha) for m, k in zip(m2[finite], kappa[finite])]
        return out
    kap = _round_up_kappa(kappa)
    lo, hi = M2_GRID[1], M2_GRID[-1]
    log_grid = np.log(M2_GRID[1:])
    for k in np.unique(kap[finite]):
        sel = finite & (kap == k)
        row = _table_row(float(k), float(alpha), None if cache_dir is None else str(cache_dir))
        vals = m2[sel]
        res = np.empty(vals.shape)
        inside = (vals >= lo) & (vals <= hi)
        res[inside] = np.interp(np.log(vals[inside]), log_grid, row[1:])
        small = vals < lo
        # Below the first grid point interpolate linearly in m2 from the exact value at 0.
        res[small] = row[0] + (row[1] - row[0]) * vals[small] / lo
        big = vals > hi
        res[big] = [cva(v, k, alpha) for v in vals[big]]
        out[sel] = res
    return out
