"""Purely model-based benchmark accuracy from the latent posterior, with a posterior-predictive band.

The target's observed core answers count as they are; every other item (outside the core, or
missing in it) contributes its posterior-predictive success probability. The band is the central
``1 - alpha`` interval of the realised accuracy when abilities follow the target's Laplace posterior
and the unseen items' outcomes the resulting probabilities. Its variance over the ``m`` unseen
items is ``Var_theta(sum p_i(theta)) + E_theta[sum p_i (1 - p_i)]``:

* ``band="analytic"`` (default): the first term by the delta method, ``g' Cov g`` with ``g`` the
  gradient of the unseen items' summed posterior-predictive probability (MacKay's probit
  approximation) in the abilities, the second as ``sum p (1 - p)`` of the predictive
  probabilities (which adds each item's own ``Var_theta p_i``: a little wider); a normal interval.
  One pass over the ``k x N`` logits.
* ``band="sampled"``: ``n_samples`` ability draws, each item's probability worked out per draw
  and the unseen mean drawn from its normal approximation (``mean p``, ``sum p (1 - p) / m^2``);
  the interval is the draws' quantiles. ``n_samples`` times the work of the analytic band.

It is only as good as the model: item parameters fitted on the source LLMs are taken as known,
so the band leaves out their error and any misfit of the model for the target (e.g. an LLM above
every source, as in extrapolation). :class:`~assessors.estimation.benchmark.aipw.AIPW` with the
same posterior as its proxy (``estimator=aipw_latent``) keeps a design-based interval whatever the
model's error, which is why it, not this estimate, is the default.
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


class LatentModel(BenchmarkEstimator):
    """Benchmark accuracy predicted by the latent model from the target's core answers.

    Parameters
    ----------
    proxy : LatentProxy, optional
        The latent model (default ``LatentProxy()``).
    band : {"analytic", "sampled"}
        How the band is worked out (see the module docstring).
    n_samples : int
        Ability draws per target for the sampled band.

    Attributes
    ----------
    proxy_ : LatentProxy
        Fitted on the source LLMs.
    """

    has_ci = True

    def __init__(self, core_size: int = 50, seed: int = 0, alpha: float = 0.05, proxy: LatentProxy | None = None,
                 n_samples: int = 400, band: str = "analytic"):
        super().__init__(core_size, seed, alpha)
        self.proxy = proxy
        self.n_samples = n_samples
        self.band = band

    def _fit(self, S, filled, features, rng):
        if self.band not in ("analytic", "sampled"):
            raise ConfigError(f"LatentModel: band must be 'analytic' or 'sampled', got {self.band!r}")
        # the raw matrix: the item fit leaves missing cells out of the likelihood
        self.proxy_ = clone(self.proxy if self.proxy is not None else LatentProxy()).fit(S, features, self.core_index_)

    def _estimate(self, Y):
        theta, cov = self.proxy_.posterior(Y)
        k, N = Y.shape[0], self.n_items_
        seen = ~np.isnan(Y)
        unseen = np.ones((k, N))
        unseen[:, self.core_index_] = ~seen
        seen_sum = np.where(seen, Y, 0.0).sum(1)
        if self.band == "analytic":
            return self._analytic(theta, cov, unseen, seen_sum)
        return self._sampled(theta, cov, unseen, seen_sum)

    def _analytic(self, theta, cov, unseen, seen_sum) -> Estimate:
        """Point and delta-method normal band from the posterior ``theta`` (k, D), ``cov`` (k, D, D),
        the unseen-item mask ``unseen`` (k, N) and the summed observed answers ``seen_sum`` (k,)."""
        A, b = self.proxy_.discrimination_, self.proxy_.difficulty_
        mean, var = logit_moments(theta, cov, A, b)  # (k, N) each
        scale = probit_scale(var)
        p = sigmoid(mean / scale) * unseen  # MacKay's predictive probability, 0 on seen items
        slope = p * (1 - p)  # the Bernoulli variance of each unseen item, and over ``scale`` dp/dlogit
        g = (slope / scale) @ A  # (k, D): gradient of the unseen items' summed probability in theta
        var_sum = np.einsum("kd,kde,ke->k", g, cov, g) + slope.sum(1)
        point = (seen_sum + p.sum(1)) / self.n_items_
        half = norm.ppf(1 - self.alpha / 2) * np.sqrt(var_sum) / self.n_items_
        return Estimate(point, point - half, point + half)

    def _sampled(self, theta, cov, unseen, seen_sum) -> Estimate:
        """Point and band from ``n_samples`` ability draws (arguments as :meth:`_analytic`)."""
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

