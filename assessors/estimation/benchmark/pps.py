"""AIPW on a core drawn with unequal inclusion probabilities from the latent model (Pareto piPS).

Design, fixed from the source LLMs before any target answer. The latent model's population success
probabilities give each item the Bernoulli variance ``v_j`` a target like the sources would leave
around a correct proxy (:meth:`LatentProxy.population_moments`). The AIPW estimate's variance is a
sum of such per-item residual variances, and for a Horvitz-Thompson estimator it is smallest with
inclusion probabilities proportional to the residual's standard deviation. Item ``j`` is therefore
drawn with probability

    pi_j = n * s_j / sum(s),   s_j = (1 - uniform_share) sqrt(v_j) / mean(sqrt(v)) + uniform_share,

capped at 1 (a capped item is always drawn and the rest re-scaled). ``uniform_share`` mixes in the
uniform design: an item the sources all pass or all fail has ``v_j`` near 0, and a target unlike
the sources (stronger, in extrapolation) may still miss or solve it, so no ``pi_j`` may be tiny.
The ``n`` items are drawn by Pareto sampling (Rosen 1997): ``U_j`` uniform, the ``n`` smallest
``U_j (1 - pi_j) / ((1 - U_j) pi_j)``; a fixed-size design whose inclusion probabilities are
``pi_j`` up to ``O(1/n)``.

Estimator (difference estimator, Horvitz-Thompson on the residuals). With the cross-fitted proxy
``f`` as in :class:`~assessors.estimation.benchmark.aipw.AIPW` and residuals ``r = y - lam f``::

    mu = (sum_core y + lam sum_rest f + sum_core r (1 - pi) / pi) / N

Its error is the Horvitz-Thompson error of the residual total, so it is design-unbiased whatever the
proxy; with equal ``pi = n / N`` it is AIPW's estimate. The variance is Hajek's approximation for
fixed-size high-entropy designs, ``n/(n-1) sum_core (1 - pi)(z - A)^2`` with ``z = r / pi`` and
``A`` the ``(1 - pi)``-weighted mean of ``z`` (with equal ``pi``, AIPW's finite-population formula).
``lam`` minimises it (weighted least squares, clipped to [0, 1]).

``weighting="hajek"`` replaces the residual term by ``(N - n)`` times the residuals' ``(1 - pi)/pi``-
weighted core mean: the number of unseen items is known, so only their mean residual is estimated.
A residual with a non-zero mean (a ``lam`` below 1, or a biased proxy) then adds no variance through
the random sum of ``(1 - pi)/pi`` over the core, which it does in the Horvitz-Thompson form; the price
is a bias of order ``1/n`` (a ratio estimator), and the variance is the linearised one (``r`` centred
at that mean). With equal ``pi`` both forms are AIPW's. As in AIPW, ``2 pseudo_counts``
variance-only pseudo items (half successes, at the core's mean proxy value and mean ``pi``) keep a
core with equal residuals from a zero-width interval, and the quantile is Student's t.
"""
from __future__ import annotations

import numpy as np

from assessors.errors import ConfigError
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.estimation.benchmark.stratified import LatentDesignAIPW, design_moments


def inclusion_probabilities(size: np.ndarray, n: int) -> np.ndarray:
    """``n`` times ``size`` (N,) normalised, with every value above 1 capped and the rest re-scaled to
    keep the sum ``n``. Shape (N,)."""
    size = np.asarray(size, dtype=np.float64)
    pi = np.zeros_like(size)
    sure = np.zeros(size.size, dtype=bool)
    while True:
        left = n - sure.sum()
        pi[~sure] = left * size[~sure] / size[~sure].sum()
        pi[sure] = 1.0
        over = (pi > 1.0) & ~sure
        if not over.any():
            return pi
        sure |= over


def pareto_sample(pi: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of ``n`` items drawn by Pareto piPS with target inclusion probabilities ``pi`` (N,)."""
    u = rng.random(pi.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(pi >= 1.0, -1.0, u * (1 - pi) / ((1 - u) * pi))
    return np.sort(np.argsort(q, kind="stable")[:n])


class PPSAIPW(LatentDesignAIPW):
    """AIPW with the latent posterior as proxy on a core drawn proportional to the predicted residual sd.

    Parameters
    ----------
    proxy : LatentProxy or list of ItemProxy, optional
        Proxy and design model, as in :class:`~assessors.estimation.benchmark.stratified.StratifiedAIPW`.
    uniform_share : float in [0, 1]
        Share of the uniform design in the item sizes (1: uniform sampling, AIPW's design).
    weighting : {"ht", "hajek"}
        How the core residuals stand for the unseen items' (see the module docstring).

    Attributes
    ----------
    inclusion_ : ndarray of shape (n_items,)
        Every item's inclusion probability ``pi_j``.
    """

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, proxy: LatentProxy | None = None,
                 folds: int = 5, power_tuning: bool = True, pseudo_counts: float = 2.0, uniform_share: float = 0.25,
                 weighting: str = "ht"):
        super().__init__(core_size, seed, alpha, proxy, folds, power_tuning, "finite_population", pseudo_counts)
        self.uniform_share = uniform_share
        self.weighting = weighting

    def _select_core(self, S, features, rng):
        if not 0.0 <= float(self.uniform_share) <= 1.0:
            raise ConfigError(f"PPSAIPW: uniform_share must be in [0, 1], got {self.uniform_share!r}")
        if self.weighting not in ("ht", "hajek"):
            raise ConfigError(f"PPSAIPW: weighting must be 'ht' or 'hajek', got {self.weighting!r}")
        _, var = design_moments(self, S, features)
        sd = np.sqrt(var)
        g = float(self.uniform_share)
        size = (1 - g) * sd / max(sd.mean(), 1e-12) + g
        self.inclusion_ = inclusion_probabilities(size, self.core_size)
        return pareto_sample(self.inclusion_, self.core_size, rng)

    def _estimate(self, Y):
        f_lab, f_all = self.proxy_predictions(Y)
        N = self.n_items_
        obs = ~np.isnan(Y)
        n = obs.sum(1).astype(np.float64)
        pi = np.broadcast_to(self.inclusion_[self.core_index_], Y.shape)
        w = np.where(obs, 1 - pi, 0.0)  # Hajek's weights; 0 for certainty items and missing cells
        y, f = np.where(obs, Y, 0.0), np.where(obs, f_lab, 0.0)
        if self.weighting == "hajek":  # residuals around their (1 - pi)/pi-weighted core mean
            d = np.where(obs, (1 - pi) / pi, 0.0)
            dsum = np.maximum(d.sum(1, keepdims=True), 1e-12)
            y_c, f_c = y - (d * y).sum(1, keepdims=True) / dsum, f - (d * f).sum(1, keepdims=True) / dsum
        else:
            d, y_c, f_c = None, y, f
        a, c = np.where(obs, y_c, 0.0) / pi, np.where(obs, f_c, 0.0) / pi
        wsum = np.maximum(w.sum(1), 1e-12)
        ac = a - (w * a).sum(1, keepdims=True) / wsum[:, None]
        cc = c - (w * c).sum(1, keepdims=True) / wsum[:, None]
        lam = self._power_lambda((w * ac * cc).sum(1), (w * cc * cc).sum(1))
        r = np.where(obs, y - lam[:, None] * f, 0.0)
        seen_f = np.where(obs, f_all[:, self.core_index_], 0.0).sum(1)
        if d is None:  # Horvitz-Thompson: each core residual stands for (1 - pi)/pi unseen items
            offset, rest_r = np.zeros_like(n), (r * (1 - pi) / pi).sum(1)
        else:  # Hajek: the unseen items' count is known, their mean residual is estimated
            offset = (d * r).sum(1) / np.maximum(d.sum(1), 1e-12)
            rest_r = (N - n) * offset
        point = (y.sum(1) + lam * (f_all.sum(1) - seen_f) + rest_r) / N
        # Hajek's variance of the residuals' total (linearised for the Hajek mean), pooled with 2k
        # pseudo items (half successes)
        r = np.where(obs, r - offset[:, None], 0.0)
        k = float(self.pseudo_counts)
        z = r / pi
        pbar = np.where(obs, pi, 0.0).sum(1) / np.maximum(n, 1)
        fbar = f.sum(1) / np.maximum(n, 1)
        zp = np.stack([1 - lam * fbar - offset, -lam * fbar - offset]) / pbar  # (2, k) the pseudo items' z
        wp = k * (1 - pbar)
        A = ((w * z).sum(1) + wp * zp.sum(0)) / np.maximum(wsum + 2 * wp, 1e-12)
        ss = (w * (z - A[:, None]) ** 2).sum(1) + wp * ((zp - A) ** 2).sum(0)
        var = n / np.maximum(n + 2 * k - 1, 1) * ss / N ** 2
        return self._t_interval(Y, point, np.sqrt(var), np.maximum(n - len(self.proxies_), 1))
