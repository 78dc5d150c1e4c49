"""Purely model-based benchmark accuracy from the latent posterior, with a band for its error.

The target's observed core answers count as they are; every other item (outside the core, or
missing in it) contributes its posterior-predictive success probability. The posterior's own
spread of the realised accuracy, when abilities follow the target's Laplace posterior and the unseen
items' outcomes the resulting probabilities, has variance ``Var_theta(sum p_i(theta)) +
E_theta[sum p_i (1 - p_i)]`` over the ``m`` unseen items. It takes the item parameters fitted on
the source LLMs as known and the model as right, so it leaves out the model's own error:

* ``band="calibrated"`` (default): the error is learned on the source LLMs. They are split into
  ``calibration_folds`` folds (fixed per source split); the latent model is refitted without each
  fold (one cached item fit per fold, shared by every trial and size on the split) and predicts the
  held-out sources' accuracy from their answers on the trial's core, as for a target. The residuals'
  variance beyond the posterior's, ``tau^2 = mean(r^2 - sd^2)``, is added to each target's ``sd^2``,
  and the band is ``point +- q sqrt(sd^2 + tau^2)`` with ``q`` the split-conformal ``1 - alpha``
  quantile of the sources' ``|r| / sqrt(sd^2 + tau^2)`` (of the ``calibration_neighbours`` sources
  predicted nearest the target, when set). It holds for targets exchangeable with the sources
  (interpolation); for a target above every source (extrapolation) the sources cannot show the error.
* ``band="analytic"``: the posterior spread alone, its first term by the delta method, ``g' Cov g``
  with ``g`` the gradient of the unseen items' summed posterior-predictive probability (MacKay's
  probit approximation) in the abilities, the second as ``sum p (1 - p)`` of the predictive
  probabilities (which adds each item's own ``Var_theta p_i``: a little wider); a normal interval.
  One pass over the ``k x N`` logits.
* ``band="sampled"``: the posterior spread alone from ``n_samples`` ability draws, each item's
  probability worked out per draw and the unseen mean drawn from its normal approximation (``mean
  p``, ``sum p (1 - p) / m^2``); the interval is the draws' quantiles. ``n_samples`` times the work
  of the analytic band.

:class:`~assessors.estimation.benchmark.aipw.AIPW` with the same posterior as its proxy
(``estimator=aipw_latent``) keeps a design-based interval whatever the model's error, which is why
it, not this estimate, is the default.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from scipy.stats import norm

from assessors.core.posterior import logit_moments, probit_scale
from assessors.errors import ConfigError
from assessors.estimation.benchmark.base import BenchmarkEstimator, Estimate
from assessors.estimation.benchmark.latent_proxy import LatentProxy
from assessors.irt_math import sigmoid


def observed(Y: np.ndarray, core_index: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """The unseen-item mask (k, n_items) of core answers ``Y`` (k, n_core) on ``core_index`` (1 off
    the core and on missing core cells) and each row's sum of observed answers (k,)."""
    seen = ~np.isnan(Y)
    unseen = np.ones((Y.shape[0], n_items))
    unseen[:, core_index] = ~seen
    return unseen, np.where(seen, Y, 0.0).sum(1)


def predictive_accuracy(proxy: LatentProxy, Y: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Predicted accuracy and the delta-method sd of the realised one (both (k,)) of targets with
    core answers ``Y`` (k, n_core), from a fitted ``proxy``'s posterior (the analytic band's moments)."""
    theta, cov = proxy.posterior(Y)
    unseen, seen_sum = observed(Y, proxy.core_index_, n_items)
    A, b = proxy.discrimination_, proxy.difficulty_
    mean, var = logit_moments(theta, cov, A, b)  # (k, N) each
    scale = probit_scale(var)
    p = sigmoid(mean / scale) * unseen  # MacKay's predictive probability, 0 on seen items
    slope = p * (1 - p)  # the Bernoulli variance of each unseen item, and over ``scale`` dp/dlogit
    g = (slope / scale) @ A  # (k, D): gradient of the unseen items' summed probability in theta
    var_sum = np.einsum("kd,kde,ke->k", g, cov, g) + slope.sum(1)
    return (seen_sum + p.sum(1)) / n_items, np.sqrt(var_sum) / n_items


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """Split-conformal ``1 - alpha`` quantile of calibration ``scores``: the ``ceil((n + 1)(1 - alpha))``-th
    smallest, so a new exchangeable score falls at or below it with probability ``>= 1 - alpha``;
    ``inf`` when there are too few scores for that rank."""
    n = scores.size
    rank = int(np.ceil((n + 1) * (1 - alpha)))
    return float(np.sort(scores)[rank - 1]) if rank <= n else np.inf


#: The ways the band is worked out (see the module docstring).
BANDS = ("calibrated", "analytic", "sampled")


class LatentModel(BenchmarkEstimator):
    """Benchmark accuracy predicted by the latent model from the target's core answers.

    Parameters
    ----------
    proxy : LatentProxy, optional
        The latent model (default ``LatentProxy()``).
    band : {"calibrated", "analytic", "sampled"}
        How the band is worked out (see the module docstring).
    n_samples : int
        Ability draws per target for the sampled band.
    calibration_folds : int
        Folds of source LLMs whose cross-fitted errors calibrate the ``calibrated`` band.
    calibration_neighbours : int, optional
        Calibrate each target on the sources whose cross-fitted prediction is nearest its own
        (None: on all sources).

    Attributes
    ----------
    proxy_ : LatentProxy
        Fitted on the source LLMs.
    source_point_, source_score_ : ndarray of shape (n_source_llms,)
        ``calibrated`` band only: each source's cross-fitted predicted accuracy and its error over
        its predicted spread, ``|r| / sqrt(sd^2 + tau^2)`` (NaN for a source with no core answer).
    misfit_var_ : float
        ``calibrated`` band only: the model's error variance ``tau^2`` beyond the posterior's.
    """

    has_ci = True

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, proxy: LatentProxy | None = None,
                 n_samples: int = 400, band: str = "calibrated", calibration_folds: int = 5,
                 calibration_neighbours: int | None = None):
        super().__init__(core_size, seed, alpha)
        self.proxy = proxy
        self.n_samples = n_samples
        self.band = band
        self.calibration_folds = calibration_folds
        self.calibration_neighbours = calibration_neighbours

    def _fit(self, S, filled, features, rng):
        if self.band not in BANDS:
            raise ConfigError(f"LatentModel: band must be one of {BANDS}, got {self.band!r}")
        # the raw matrix: the item fit leaves missing cells out of the likelihood
        self.proxy_ = clone(self.proxy if self.proxy is not None else LatentProxy()).fit(S, features, self.core_index_)
        if self.band == "calibrated":
            fewest = int(np.ceil((1 - self.alpha) / self.alpha))  # fewer scores bound no 1 - alpha quantile
            if self.calibration_neighbours is not None and int(self.calibration_neighbours) < fewest:
                raise ConfigError(f"LatentModel: calibration_neighbours={self.calibration_neighbours} cannot "
                                  f"give a finite {1 - self.alpha:.0%} band; use {fewest} or more (or null)")
            self._cross_fit(S, features)

    def _estimate(self, Y):
        if self.band == "sampled":
            theta, cov = self.proxy_.posterior(Y)
            return self._sampled(theta, cov, *observed(Y, self.core_index_, self.n_items_))
        point, sd = predictive_accuracy(self.proxy_, Y, self.n_items_)
        if self.band == "analytic":
            half = norm.ppf(1 - self.alpha / 2) * sd
        else:  # 0 when every item is seen
            half = np.where(sd > 0, self._calibrated_scale(point) * np.sqrt(sd ** 2 + self.misfit_var_), 0.0)
        return Estimate(point, point - half, point + half)

    def _cross_fit(self, S, features) -> None:
        """Each source LLM's accuracy predicted from its core answers by the latent model refitted
        without its fold of sources (``source_point_``), the misfit variance ``tau^2 = mean(r^2 - sd^2)``
        of the residuals ``r`` = realised - predicted beyond the posterior's ``sd`` (``misfit_var_``,
        at least 0), and each source's score ``|r| / sqrt(sd^2 + tau^2)`` (``source_score_``; NaN for
        a source with no core answer). The folds depend on the source split only (seeded by the
        proxy's seed), so the refits are cached across trials and sizes."""
        n, N = S.shape[0], self.n_items_
        folds = min(int(self.calibration_folds), n)
        if folds < 2 or n - -(-n // folds) < 2:
            raise ConfigError(f"LatentModel: calibration_folds={self.calibration_folds} needs 2+ folds that "
                              f"each leave 2+ of the {n} source LLMs for the refit")
        fold = np.random.default_rng(self.proxy_.seed).permutation(n) % folds
        Y = S[:, self.core_index_]
        point, sd = np.full(n, np.nan), np.full(n, np.nan)
        for f in range(folds):
            held = (fold == f) & ~np.isnan(Y).all(1)
            proxy = clone(self.proxy_).fit(S[fold != f], features, self.core_index_)
            point[held], sd[held] = predictive_accuracy(proxy, Y[held], N)
        resid = np.nanmean(S, axis=1) - point
        # the model's own error: the spread of the residuals beyond what the posterior explains
        self.misfit_var_ = max(0.0, float(np.nanmean(resid ** 2 - sd ** 2)))
        scale = np.sqrt(sd ** 2 + self.misfit_var_)
        self.source_point_ = point
        self.source_score_ = np.where(resid != 0, np.abs(resid) / np.maximum(scale, 1e-12), 0.0)

    def _calibrated_scale(self, point: np.ndarray) -> np.ndarray:
        """Each target's multiple of its ``sqrt(sd^2 + tau^2)``: the conformal ``1 - alpha`` quantile of the
        scores of all sources, or of the ``calibration_neighbours`` sources whose cross-fitted
        prediction is nearest the target's ``point`` (k,)."""
        ok = ~np.isnan(self.source_score_)
        src, score = self.source_point_[ok], self.source_score_[ok]
        m = score.size if self.calibration_neighbours is None else min(int(self.calibration_neighbours), score.size)
        if m == score.size:
            return np.full(point.shape, conformal_quantile(score, self.alpha))
        near = np.argsort(np.abs(point[:, None] - src[None, :]), axis=1, kind="stable")[:, :m]
        return np.array([conformal_quantile(score[i], self.alpha) for i in near])

    def _sampled(self, theta, cov, unseen, seen_sum) -> Estimate:
        """Point and band from ``n_samples`` ability draws (arguments as :func:`observed` returns, after the posterior)."""
        A, b = self.proxy_.discrimination_, self.proxy_.difficulty_
        N, s = self.n_items_, int(self.n_samples)
        rng = np.random.default_rng(self.seed)
        k = unseen.shape[0]
        m = unseen.sum(1)  # (k,)
        # abilities drawn from each posterior, predicted in blocks of targets that bound the (k, s, N) array
        th = theta[:, None, :] + np.einsum("kde,kse->ksd", np.linalg.cholesky(cov),
                                           rng.standard_normal((k, s, theta.shape[1])))
        mean, sd = np.empty((k, s)), np.empty((k, s))
        step = max(1, int(2e7 // (s * N)))
        # float32: the (block, s, N) probabilities dominate the cost, and their sums need no more
        th32, A32, b32, unseen32 = (x.astype(np.float32) for x in (th, A, b, unseen))
        for r in range(0, k, step):
            sl = slice(r, r + step)
            z = th32[sl] @ A32.T  # (block, s, N) logits, worked in place
            z -= b32
            p = sigmoid(z, out=z) * unseen32[sl, None, :]  # 0 on seen items
            mean[sl] = p.sum(-1)
            q = 1 - p
            q *= p
            sd[sl] = np.sqrt(q.sum(-1))
        m_ = np.maximum(m, 1)[:, None]
        mean, sd = mean / m_, sd / m_
        acc = (seen_sum[:, None] + m[:, None] * np.clip(mean + sd * rng.standard_normal(mean.shape), 0, 1)) / N
        point = (seen_sum + m * mean.mean(1)) / N
        lo, hi = np.quantile(acc, [self.alpha / 2, 1 - self.alpha / 2], axis=1)
        return Estimate(point, lo, hi)

