"""Calibration and accuracy bands of the latent assessor (:class:`~assessors.core.latent.LatentAssessor`).

* :func:`fit_platt` and :func:`excess_accuracy_error`: on validation LLMs x validation prompts
  (never test data), a Platt recalibration of the predicted logit and the item model's own
  accuracy error;
* :func:`apply_calibration`: that recalibration applied to a posterior-predictive mean and spread;
* :func:`accuracy_band`: the posterior-predictive band of each LLM's realised accuracy.
"""
from __future__ import annotations

import numpy as np

from assessors.irt_math import logit, sigmoid

#: No recalibration: ``(slope, intercept)`` of the identity on the logit scale.
IDENTITY = (1.0, 0.0)


def fit_platt(p: np.ndarray, S_val: np.ndarray) -> tuple[float, float]:
    """Platt recalibration ``(slope, intercept)`` of predictions ``p`` against outcomes ``S_val``.

    A logistic regression of the outcome on the predicted logit, over the observed cells of
    ``S_val`` (k, m) (``p`` of the same shape); kept only when increasing in the logit, so no
    LLM's ranking changes (else :data:`IDENTITY`).
    """
    from sklearn.linear_model import LogisticRegression

    obs = np.isfinite(S_val)
    z = logit(p[obs])
    y = S_val[obs]
    if len(np.unique(y)) == 2:
        lr = LogisticRegression(C=1e4).fit(z[:, None].astype(np.float64), y)
        slope = float(lr.coef_[0, 0])
        if slope > 0:
            return slope, float(lr.intercept_[0])
    return IDENTITY


def excess_accuracy_error(band: dict[str, np.ndarray], S_val: np.ndarray) -> float | None:
    """The item model's own accuracy error: the spread of (realised - predicted) accuracy of the
    validation LLMs beyond what their posterior explains, which the ability posterior cannot see.

    Parameters
    ----------
    band : dict
        :func:`accuracy_band` of the validation LLMs on the validation prompts, without error.
    S_val : ndarray of shape (k, m)
        Their outcomes (NaN = not evaluated).

    Returns
    -------
    float, or None with fewer than two validation LLMs with outcomes.
    """
    real = np.nanmean(np.where(np.isfinite(S_val), S_val, np.nan), axis=1)
    ok = np.isfinite(real)
    if ok.sum() < 2:
        return None
    # band["sd"]: posterior + sampling spread already in the band
    excess = np.mean((real[ok] - band["mean"][ok]) ** 2) - np.mean(band["sd"][ok] ** 2)
    return float(np.sqrt(max(excess, 0.0)))


def apply_calibration(p: np.ndarray, std: np.ndarray, calibration: tuple[float, float]):
    """Recalibrated mean and spread, arrays of the shape of ``p`` (k, m).

    The spread is carried through by the derivative of the recalibration at ``p``.
    """
    slope, intercept = calibration
    if (slope, intercept) == IDENTITY:
        return p, std
    q = sigmoid(slope * logit(p) + intercept)
    std = std * slope * q * (1 - q) / (p * (1 - p))  # d q / d p
    return np.clip(q, 1e-9, 1 - 1e-9), std


def accuracy_band(params, post, residual_logits=None, calibration: tuple[float, float] = IDENTITY,
                  error_sd: float = 0.0, level: float = 0.9, n_samples: int = 400,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """Posterior-predictive band of each LLM's realised accuracy on a set of prompts.

    Abilities are sampled from each member's posterior (the same number per member), item
    outcomes from the resulting probabilities, plus the item model's own accuracy error
    ``error_sd``; the band is the central ``level`` interval of the sampled accuracies.

    Parameters
    ----------
    params : list over members of (a (m, D), b (m,))
        Item parameters of the prompts.
    post : LatentPosterior
        Posterior over the abilities of ``k`` LLMs.
    residual_logits : ndarray of shape (k, m), optional
        The residual at its posterior mean, added to every logit.
    calibration : tuple (slope, intercept)
    error_sd : float
    level : float
    n_samples : int
        Ability draws per LLM, spread evenly over members.
    seed : int

    Returns
    -------
    dict with ``mean``, ``low``, ``high``, ``sd``: ndarrays of shape (k,)
    """
    rng = np.random.default_rng(seed)
    per = max(1, n_samples // len(params))
    k = len(post)
    acc = np.empty((k, per * len(params)))
    slope, intercept = calibration
    for m, (a, b) in enumerate(params):
        L = np.linalg.cholesky(post.cov[m])
        z = rng.standard_normal((k, per, a.shape[1]))
        th = post.theta[m][:, None, :] + np.einsum("kde,kse->ksd", L, z)
        eta = th @ a.T - b  # (k, per, n)
        if residual_logits is not None:
            eta = eta + residual_logits[:, None, :]
        eta = slope * eta + intercept
        outcomes = rng.random(eta.shape) < sigmoid(eta)
        acc[:, m * per:(m + 1) * per] = outcomes.mean(-1)
    if error_sd > 0:
        acc = np.clip(acc + rng.normal(0.0, error_sd, acc.shape), 0.0, 1.0)
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return {"mean": acc.mean(1), "low": np.quantile(acc, lo, axis=1), "high": np.quantile(acc, hi, axis=1),
            "sd": acc.std(1)}
