"""A per-LLM residual over prompt features, fitted on the LLM's own answers.

Item parameters learned from a population carry no ranking information for an LLM unlike any in
it (e.g. every training LLM fails almost everything and the new one is strong). The residual lets
the new LLM's own answers rank prompts where the population cannot:

    logit P(success) = latent logit (offset) + phi(x) . w,     w ~ N(0, tau^2 I)

``phi`` is a whitened low-dimensional projection of the prompt features (fitted on training
prompts). ``tau`` is chosen per LLM by the Laplace approximation of the marginal likelihood
(evidence) over a grid that includes 0, so the residual is switched off unless the LLM's answers
support it: with few answers, or when the latent model already explains them, ``tau = 0``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assessors.irt_math import laplace_posterior


class FeatureProjection:
    """Whitened PCA of prompt features: ``phi(x) = (x - mean) @ components.T / scale`` -> (m, K)."""

    def __init__(self, X: np.ndarray, n_components: int, seed: int = 0):
        from sklearn.decomposition import PCA

        X = np.asarray(X, dtype=np.float64)
        k = int(min(n_components, X.shape[1], max(X.shape[0] - 1, 1)))
        pca = PCA(n_components=k, whiten=True, random_state=seed).fit(X)
        self.mean = pca.mean_.astype(np.float32)
        self.components = (pca.components_ / np.sqrt(pca.explained_variance_)[:, None]).astype(np.float32)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=np.float32) - self.mean) @ self.components.T


@dataclass
class Residual:
    """Fitted residual weights of ``k`` LLMs.

    Attributes
    ----------
    w : ndarray of shape (k, K)
        Posterior mean of the weights (zero where ``tau == 0``).
    cov : ndarray of shape (k, K, K)
        Laplace covariance of the weights (zero where ``tau == 0``).
    tau : ndarray of shape (k,)
        Prior scale chosen by the evidence.
    log_evidence_gain : ndarray of shape (k,)
        Log marginal likelihood of the chosen ``tau`` minus that of ``tau = 0`` (>= 0).
    """

    w: np.ndarray
    cov: np.ndarray
    tau: np.ndarray
    log_evidence_gain: np.ndarray

    @classmethod
    def zero(cls, k: int, K: int) -> "Residual":
        """The residual of ``k`` LLMs for which it is off, over ``K`` components."""
        return cls(np.zeros((k, K)), np.zeros((k, K, K)), np.zeros(k), np.zeros(k))

    def take(self, rows) -> "Residual":
        """The residual of the LLMs at positions ``rows`` (a sequence of ints), in that order."""
        rows = np.asarray(rows, dtype=int)
        return Residual(self.w[rows], self.cov[rows], self.tau[rows], self.log_evidence_gain[rows])

    def logit_moments(self, Phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance (k, m) of the residual logit on items with projections ``Phi`` (m, K)."""
        mean = self.w @ Phi.T
        var = ((Phi[None] @ self.cov) * Phi[None]).sum(-1)
        return mean, np.maximum(var, 0.0)


def _loglik(y, obs, z):
    # sum of y log sigmoid(z) + (1 - y) log sigmoid(-z), stable
    return (obs * (y * z - np.logaddexp(0.0, z))).sum(1)


def fit_residual(Phi, Y, offset, taus=(0.05, 0.1, 0.2, 0.4), n_iter: int = 25, allowed=None,
                 min_gain: float = 1.0) -> Residual:
    """Fit the residual of ``k`` LLMs on their answers, ``tau`` by Laplace evidence.

    Parameters
    ----------
    Phi : ndarray of shape (n, K)
        Projected features of the answered items.
    Y : ndarray of shape (k, n)
        0/1 answers, NaN = not answered.
    offset : ndarray of shape (k, n)
        The latent model's logit for each LLM and item.
    taus : sequence of float
        Candidate prior scales (``0`` is always a candidate).
    allowed : ndarray of bool, shape (k,), optional
        LLMs that may get a residual (others keep ``tau = 0``).
    min_gain : float
        Log Bayes factor a ``tau > 0`` needs over ``tau = 0`` (1.0: "positive" evidence), so noise
        in ~100 answers does not switch the residual on.
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    obs = np.isfinite(Y).astype(np.float64)
    y = np.nan_to_num(Y)
    off = np.asarray(offset, dtype=np.float64)
    k, K = Y.shape[0], Phi.shape[1]
    base = _loglik(y, obs, off)
    best_ev = base + float(min_gain)
    W, C, T = np.zeros((k, K)), np.zeros((k, K, K)), np.zeros(k)
    zero = np.zeros(K)
    for tau in taus:
        # the weights' posterior is the 2PL ability posterior with the latent logit as a per-LLM offset
        w, cov = laplace_posterior(Phi, -off, Y, zero, np.eye(K) / tau ** 2, n_iter=n_iter, tol=1e-7)
        _, logdet_cov = np.linalg.slogdet(cov)
        # log det(H tau^2) = K log tau^2 - log det(H^-1)
        log_prior = -0.5 * (w ** 2).sum(1) / tau ** 2 - 0.5 * (K * np.log(tau ** 2) - logdet_cov)
        ev = _loglik(y, obs, off + w @ Phi.T) + log_prior
        better = ev > best_ev
        if allowed is not None:
            better &= np.asarray(allowed, dtype=bool)
        if better.any():
            best_ev = np.where(better, ev, best_ev)
            W[better], T[better] = w[better], tau
            C[better] = cov[better]
    return Residual(W, C, T, np.where(T > 0, best_ev - base, 0.0))
