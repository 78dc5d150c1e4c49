"""Gaussian posterior over an LLM's latent abilities, from any graded items.

Model: ``P(success | theta, item) = sigmoid(theta . a - b)`` with item parameters ``a`` (D,) and
``b`` known, and a Gaussian prior ``theta ~ N(mu, Sigma)``. The log posterior is strictly concave,
so a few Newton steps with the closed-form Hessian reach the MAP; the Laplace approximation
``N(theta_map, H^-1)`` is the posterior. Everything is batched over LLMs: ``Y`` holds one row per
LLM over a shared item list, NaN where an LLM has no answer (missing answers are simply absent
from the likelihood).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assessors.errors import DataError

#: Evidence labels. ``prior_only``: no answers; ``one_class``: all answers equal, so the ability is
#: bounded on one side only and the prediction leans on the prior; ``ok``: both outcomes seen.
EVIDENCE = ("prior_only", "one_class", "ok")


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def check_answers(Y, what: str = "answers") -> np.ndarray:
    """``Y`` as float64 (k, n) with values in {0, 1, NaN}; anything else is a :class:`DataError`."""
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    bad = np.isfinite(Y) & (Y != 0) & (Y != 1) | np.isinf(Y)
    if bad.any():
        k, j = map(int, np.argwhere(bad)[0])
        raise DataError(f"{what}: graded answers must be 0, 1 or missing (NaN); row {k}, item {j} is {float(Y[k, j])!r}. "
                        "Threshold graded scores (e.g. success = score >= 0.5) before passing them")
    return Y


def evidence_labels(Y: np.ndarray) -> np.ndarray:
    """One label of :data:`EVIDENCE` per row of ``Y`` (k, n)."""
    obs = np.isfinite(Y)
    n = obs.sum(1)
    pos = np.where(obs, Y, 0).sum(1)
    return np.where(n == 0, "prior_only", np.where((pos == 0) | (pos == n), "one_class", "ok"))


def weighted_gram(A, w):
    """``sum_n w[k, n] A[n] A[n]^T`` for every row of ``w`` (k, n) -> (k, D, D), as one batched matmul."""
    return (A.T[None, :, :] * w[:, None, :]) @ A


def laplace_posterior(A, b, Y, mu, prec, n_iter: int = 30, tol: float = 1e-8, max_step: float = 5.0):
    """MAP abilities and Laplace covariances of ``k`` LLMs.

    Parameters
    ----------
    A : ndarray of shape (n, D)
        Item discriminations.
    b : ndarray of shape (n,)
        Item difficulties.
    Y : ndarray of shape (k, n)
        0/1 answers, NaN = not answered.
    mu : ndarray of shape (D,)
        Prior mean.
    prec : ndarray of shape (D, D)
        Prior precision (inverse covariance).
    n_iter, tol, max_step : Newton iterations, stopping tolerance on the step, and a cap on the
        step norm (guards the first steps when an LLM answered everything one way).

    Returns
    -------
    theta : ndarray of shape (k, D)
    cov : ndarray of shape (k, D, D)
        Inverse negative Hessian of the log posterior at ``theta``.
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    obs = np.isfinite(Y).astype(np.float64)
    y = np.nan_to_num(Y)
    k, D = Y.shape[0], A.shape[1]
    th = np.tile(np.asarray(mu, dtype=np.float64), (k, 1))
    for _ in range(n_iter):
        p = sigmoid(th @ A.T - b)  # (k, n)
        grad = ((y - p) * obs) @ A - (th - mu) @ prec
        w = p * (1 - p) * obs
        H = weighted_gram(A, w) + prec
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        step = step * np.minimum(1.0, max_step / np.maximum(norm, 1e-300))
        th = th + step
        if np.abs(step).max() < tol:
            break
    p = sigmoid(th @ A.T - b)
    H = weighted_gram(A, p * (1 - p) * obs) + prec
    return th, np.linalg.inv(H)


def logit_moments(theta, cov, A, b):
    """Mean (k, m) and variance (k, m) of the logit ``theta . a - b`` under ``N(theta, cov)``."""
    mean = theta @ A.T - b
    L = np.linalg.cholesky(cov)  # (k, D, D)
    var = np.square(A[None] @ L).sum(-1)
    return mean, var


def probit_predictive(mean, var):
    """``E[sigmoid(z)]`` for ``z ~ N(mean, var)`` (MacKay's probit approximation) and its std.

    The std is the delta-method spread ``p (1 - p) sqrt(var)``, capped at the Bernoulli bound
    ``sqrt(p (1 - p))``.
    """
    p = sigmoid(mean / np.sqrt(1.0 + np.pi * var / 8.0))
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
