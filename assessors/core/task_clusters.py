"""Cluster-level difficulty offsets of a new task: one shift per k-means cluster of the task's own prompts.

A new task's difficulty often moves by group (its subtasks), and the groups need not be smooth in
cosine similarity, so the Gaussian-process correction of :mod:`assessors.core.task_correction` can miss
them. Here the task's prompts (all of them, no labels) are clustered; each cluster's difficulty
offset has a Gaussian prior ``N(0, prior_var)`` and the calibrated prompts of the cluster as
observations (their per-prompt difficulty corrections with their noise plus a per-prompt scatter), so a
cluster with few calibrated prompts is shrunk towards 0. The number of clusters (1: none beyond the
task-level shift the correction already has) is chosen by cross-validation over the calibrated
prompts: the held-out prompts' answers from the known LLMs, predicted with the network's parameters
and their cluster's offset; clusters must beat none by more than the standard error of the gain.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans

from assessors.features.base import unit_rows
from assessors.irt_math import sigmoid


def nearest(X: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index (m,) of the nearest of ``centers`` (K, d) to each unit row of ``X`` (m, d)."""
    Q = unit_rows(np.asarray(X, dtype=np.float32))
    return np.argmax(2.0 * Q @ centers.T - (centers ** 2).sum(1)[None, :], axis=1)


def offset_posterior(obs, noise, labels, n_clusters: int, prior_var: float, item_var: float):
    """Posterior mean and variance (K,) each of the cluster offsets from per-prompt observations
    ``obs`` (n,) with variances ``noise`` (n,) in clusters ``labels`` (n,)."""
    w = 1.0 / (np.asarray(noise) + item_var)
    prec = 1.0 / prior_var + np.bincount(labels, w, n_clusters)
    return np.bincount(labels, w * obs, n_clusters) / prec, 1.0 / prec


def _loglik(Y, theta, a, b):
    """Bernoulli log-likelihood of the answers ``Y`` (k, n; NaN: not asked) at abilities ``theta`` (k, D)
    and item parameters ``a`` (n, D), ``b`` (n,)."""
    p = np.clip(sigmoid(theta @ a.T - b[None, :]), 1e-6, 1 - 1e-6)
    ll = np.where(Y == 1, np.log(p), np.log1p(-p))
    return float(ll[np.isfinite(Y)].sum())


@dataclass
class ClusterOffsets:
    """Fitted cluster offsets of the task's difficulties.

    Attributes
    ----------
    centers : ndarray of shape (K, d)
        k-means centers of the task's unit prompt features.
    mean, var : ndarray of shape (n_members, K)
        Posterior mean and variance of each member's offset per cluster.
    cv : dict
        Cross-validated log-likelihood of the held-out calibrated prompts' answers per number of clusters.
    """

    centers: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    cv: dict

    def moments(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Offset mean and variance at prompts ``X`` (m, d) of the task: (n_members, m) each."""
        lab = nearest(X, self.centers)
        return self.mean[:, lab], self.var[:, lab]


def fit_offsets(task_X, cal, obs, noise, beta, Y, theta, prior_var, grid, n_folds: int = 5):
    """Choose the number of clusters and fit their offsets.

    Parameters
    ----------
    task_X : ndarray of shape (n, d)
        Every prompt of the task.
    cal : ndarray of int, shape (n_cal,)
        The calibrated prompts' rows in ``task_X``.
    obs, noise : ndarray of shape (n_members, n_cal)
        Each member's per-prompt difficulty correction (pseudo-observation) and its variance.
    beta : list of ndarray of shape (n_cal, D + 1)
        Each member's network parameters ``[a, b]`` of the calibrated prompts.
    Y : ndarray of shape (k, n_cal)
        The known LLMs' answers on the calibrated prompts.
    theta : ndarray of shape (n_members, k, D)
    prior_var : ndarray of shape (n_members,)
        Prior variance of an offset and of a prompt's scatter around its cluster's offset.
    grid : sequence of int
        Candidate numbers of clusters (1: none).

    Returns
    -------
    ClusterOffsets or None
        None when one cluster (none) is chosen.
    """
    U = unit_rows(np.asarray(task_X, dtype=np.float32))
    folds = np.random.default_rng(0).permutation(len(cal)) % n_folds
    cv, fitted, per_fold = {}, {}, {}
    for K in sorted({1} | set(int(k) for k in grid if 1 <= k <= len(cal))):
        km = KMeans(K, n_init=5, random_state=0).fit(U) if K > 1 else None
        lab = km.labels_[cal] if km is not None else np.zeros(len(cal), int)
        per_fold[K] = _fold_loglik(obs, noise, beta, Y, theta, prior_var, lab, K, folds)
        cv[K] = round(float(per_fold[K].sum()), 2)
        fitted[K] = (km, lab)
    # clusters only when they beat none by more than the folds' standard error of the gain: with a few
    # dozen calibrated prompts the best of several cluster counts otherwise wins by chance
    gain = {K: per_fold[K] - per_fold[1] for K in per_fold if K > 1}
    clear = [K for K, g in gain.items() if g.sum() > np.sqrt(n_folds) * g.std(ddof=1)]
    best = max(clear, key=lambda k: cv[k]) if clear else 1
    if best == 1:
        return None
    km, lab = fitted[best]
    post = [offset_posterior(obs[m], noise[m], lab, best, prior_var[m], prior_var[m]) for m in range(len(obs))]
    return ClusterOffsets(km.cluster_centers_.astype(np.float32), np.array([p[0] for p in post]),
                          np.array([p[1] for p in post]), cv)


def _fold_loglik(obs, noise, beta, Y, theta, prior_var, lab, K, folds) -> np.ndarray:
    """Held-out log-likelihood per fold (n_folds,) of the answers ``Y`` with ``K`` clusters' offsets
    (labels ``lab`` of the calibrated prompts) fitted on the other folds, summed over members."""
    n_folds = int(folds.max()) + 1
    out = np.zeros(n_folds)
    for f in range(n_folds):
        tr, te = folds != f, folds == f
        for m in range(len(obs)):
            mu, _ = offset_posterior(obs[m, tr], noise[m, tr], lab[tr], K, prior_var[m], prior_var[m])
            a, b = beta[m][te, :-1], beta[m][te, -1] + mu[lab[te]]
            out[f] += _loglik(Y[:, te], theta[m], a, b)
    return out


@dataclass
class ClusteredCorrection:
    """A task correction plus its cluster offsets on the difficulties, applied by a latent model."""

    correction: object
    offsets: ClusterOffsets

    def membership(self, X: np.ndarray) -> np.ndarray:
        return self.correction.membership(X)

    def __call__(self, X: np.ndarray, params: list) -> list:
        """Each member's item parameters ``[(a (m, D), b (m,))]`` at prompts ``X`` (m, d), corrected."""
        params = self.correction(X, params)
        inside = self.membership(X)
        mean, _ = self.offsets.moments(X)
        return [(a, b + np.where(inside, mean[m], 0.0)) for m, (a, b) in enumerate(params)]
