"""A new LLM's ability posterior under a fitted latent model, and its posterior-predictive P(success).

Pure functions of the fitted pieces (each ensemble member's item parameters and ability prior,
the residual's prompt projection, the recalibration), so :class:`~assessors.core.latent.LatentAssessor`
keeps its fitting and its public API while the arithmetic of one prediction lives here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assessors.core.latent_calibration import apply_calibration
from assessors.core.posterior import (GaussianPrior, evidence_labels, laplace_posterior, logit_moments,
                                      probit_predictive, sigmoid)
from assessors.core.residual import Residual
from assessors.irt_math import logit


@dataclass
class LatentPosterior:
    """Posterior over the abilities of ``k`` LLMs, one Gaussian per ensemble member.

    Attributes
    ----------
    theta : ndarray of shape (n_members, k, D)
        MAP abilities.
    cov : ndarray of shape (n_members, k, D, D)
        Laplace covariances.
    evidence : ndarray of str, shape (k,)
        ``prior_only`` (no answers), ``one_class`` (all answers equal) or ``ok``.
    n_answered : ndarray of shape (k,)
    accuracy : ndarray of shape (k,)
        Mean of the answers (NaN without answers).
    residual : Residual or None
        Per-LLM residual over prompt features (None when switched off).
    """

    theta: np.ndarray
    cov: np.ndarray
    evidence: np.ndarray
    n_answered: np.ndarray
    accuracy: np.ndarray
    residual: Residual | None = None

    def __len__(self) -> int:
        return self.theta.shape[1]

    @classmethod
    def concat(cls, posts) -> "LatentPosterior":
        """One posterior of the LLMs of ``posts`` (a sequence of LatentPosterior of one model), in order,
        so they are predicted in one call; an LLM without a residual gets a zero one (the same predictions)."""
        posts = list(posts)
        residual = None
        if any(p.residual is not None for p in posts):
            K = next(p.residual.w.shape[1] for p in posts if p.residual is not None)
            parts = [p.residual if p.residual is not None else Residual.zero(len(p), K) for p in posts]
            residual = Residual(*(np.concatenate([getattr(r, f) for r in parts]) for f in
                                  ("w", "cov", "tau", "log_evidence_gain")))
        return cls(np.concatenate([p.theta for p in posts], 1), np.concatenate([p.cov for p in posts], 1),
                   *(np.concatenate([getattr(p, f) for p in posts]) for f in ("evidence", "n_answered", "accuracy")),
                   residual=residual)

    def take(self, rows) -> "LatentPosterior":
        """The posterior of the LLMs at positions ``rows`` (a sequence of ints), in that order."""
        rows = np.asarray(rows, dtype=int)
        return LatentPosterior(self.theta[:, rows], self.cov[:, rows], self.evidence[rows], self.n_answered[rows],
                               self.accuracy[rows], None if self.residual is None else self.residual.take(rows))


def ability_posterior(priors: list[GaussianPrior], params, Y: np.ndarray) -> LatentPosterior:
    """Laplace posterior of ``k`` LLMs' abilities under each member's prior, without a residual.

    Parameters
    ----------
    priors : list of GaussianPrior
        One per ensemble member.
    params : list of (a (n, D), b (n,)) or None
        Each member's item parameters of the answered items; None when no item was given (the
        posterior is then the prior).
    Y : ndarray of shape (k, n)
        0/1 answers, NaN = not answered (already checked).
    """
    k = Y.shape[0]
    thetas, covs = [], []
    for m, prior in enumerate(priors):
        if params is None:
            thetas.append(np.tile(prior.mean, (k, 1)))
            covs.append(np.tile(prior.cov, (k, 1, 1)))
            continue
        th, cov = laplace_posterior(params[m][0], params[m][1], Y, prior.mean, prior.precision)
        thetas.append(th)
        covs.append(cov)
    n = np.isfinite(Y).sum(1)
    with np.errstate(invalid="ignore"):
        acc = np.where(n > 0, np.nansum(Y, 1) / np.maximum(n, 1), np.nan)
    return LatentPosterior(np.stack(thetas), np.stack(covs), evidence_labels(Y), n, acc)


def latent_predictive(post: LatentPosterior, params) -> tuple[np.ndarray, np.ndarray]:
    """Posterior-predictive mean and spread of the latent part alone, shapes (k, m): each member's
    probit approximation, mixed over the members (mean of the means, spread of the mixture)."""
    ps, vs = [], []
    for m, (a, b) in enumerate(params):
        p, s = probit_predictive(*logit_moments(post.theta[m], post.cov[m], a, b))
        ps.append(p)
        vs.append(s ** 2 + p ** 2)
    p = np.mean(ps, 0)
    std = np.sqrt(np.maximum(np.mean(vs, 0) - p ** 2, 0.0))
    return np.clip(p, 1e-9, 1 - 1e-9), std


def posterior_predictive(post: LatentPosterior, params, phi, calibration) -> tuple[np.ndarray, np.ndarray]:
    """P(success) and its spread, shapes (k, m): the latent part, the LLM's residual when it is on
    (``phi``: the prompts' residual projection (m, c), or a thunk that computes it only then), and
    the recalibration; the spread never exceeds a Bernoulli's."""
    p, std = latent_predictive(post, params)
    if post.residual is not None and post.residual.tau.any():
        rm, rv = post.residual.logit_moments(phi() if callable(phi) else phi)
        z = logit(p) + rm
        q = sigmoid(z / np.sqrt(1.0 + np.pi * rv / 8.0))
        scale = q * (1 - q) / (p * (1 - p))  # d q / d p at fixed residual
        std = np.sqrt((std * scale) ** 2 + (q * (1 - q)) ** 2 * rv)
        p = q
    p, std = apply_calibration(p, std, calibration)
    return p, np.minimum(std, np.sqrt(p * (1 - p)))
