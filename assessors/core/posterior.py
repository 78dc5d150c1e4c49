"""Gaussian posterior over an LLM's latent abilities, from any graded items.

The MAP and Laplace covariance themselves are :func:`assessors.irt_math.laplace_posterior` (the one
2PL ability posterior, shared with selection's IRT); this module adds what the latent assessor
builds on it: answer checks, evidence labels, predictive moments and the fitted Gaussian prior.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assessors.errors import DataError
from assessors.irt_math import check_answers, laplace_posterior, sigmoid, weighted_gram  # noqa: F401 (re-exported)

#: Evidence labels. ``prior_only``: no answers; ``one_class``: all answers equal, so the ability is
#: bounded on one side only and the prediction leans on the prior; ``ok``: both outcomes seen.
EVIDENCE = ("prior_only", "one_class", "ok")


def evidence_labels(Y: np.ndarray) -> np.ndarray:
    """One label of :data:`EVIDENCE` per row of ``Y`` (k, n)."""
    obs = np.isfinite(Y)
    n = obs.sum(1)
    pos = np.where(obs, Y, 0).sum(1)
    return np.where(n == 0, "prior_only", np.where((pos == 0) | (pos == n), "one_class", "ok"))


def logit_moments(theta, cov, A, b):
    """Mean (k, m) and variance (k, m) of the logit ``theta . a - b`` under ``N(theta, cov)``."""
    mean = theta @ A.T - b
    L = np.linalg.cholesky(cov)  # (k, D, D)
    var = np.square(A[None] @ L).sum(-1)
    return mean, var


def probit_scale(var):
    """MacKay's ``sqrt(1 + pi var / 8)``: ``E[sigmoid(z)] ~ sigmoid(mean / scale)`` for ``z ~ N(mean, var)``,
    and so the derivative of that probability in ``mean`` is ``p (1 - p) / scale``."""
    return np.sqrt(1.0 + np.pi * var / 8.0)


def probit_mean(mean, var):
    """``E[sigmoid(z)]`` for ``z ~ N(mean, var)`` by MacKay's probit approximation (the mean of
    :func:`probit_predictive` alone), computed in place of one temporary."""
    z = mean / probit_scale(var)
    return sigmoid(z, out=z)


def probit_predictive(mean, var):
    """``E[sigmoid(z)]`` for ``z ~ N(mean, var)`` (MacKay's probit approximation) and its std.

    The std is the delta-method spread ``p (1 - p) sqrt(var)``, capped at the Bernoulli bound
    ``sqrt(p (1 - p))``.
    """
    p = probit_mean(mean, var)
    std = np.minimum(p * (1 - p) * np.sqrt(var), np.sqrt(p * (1 - p)))
    return p, std


@dataclass
class GaussianPrior:
    """``theta ~ N(mean, cov)`` fitted on the training LLMs' abilities (Ledoit-Wolf shrunk covariance)."""

    mean: np.ndarray
    cov: np.ndarray

    @classmethod
    def fit(cls, thetas: np.ndarray, inflate: float = 1.0) -> "GaussianPrior":
        from sklearn.covariance import LedoitWolf

        thetas = np.asarray(thetas, dtype=np.float64)
        if len(thetas) < 2:
            raise DataError(f"a prior over abilities needs at least 2 training LLMs, got {len(thetas)}")
        lw = LedoitWolf().fit(thetas)
        cov = lw.covariance_ * float(inflate) + 1e-6 * np.eye(thetas.shape[1])
        return cls(thetas.mean(0), cov)

    @property
    def precision(self) -> np.ndarray:
        return np.linalg.inv(self.cov)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` abilities drawn from the prior, shape (n, D)."""
        return rng.multivariate_normal(self.mean, self.cov, size=int(n))
