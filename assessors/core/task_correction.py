"""Corrections of a new task's item parameters, as a function of the prompt.

A latent model's item network predicts a new task's item parameters ``beta(x) = [a(x), b(x)]`` from
the prompt alone; calibration answers of known LLMs on some of the task's prompts correct them
(:class:`~assessors.task_calibration.calibration.TaskCalibration`). Each of the ``D + 1`` coordinates of the
correction ``delta(x) = beta(x) - beta_net(x)`` has a Gaussian-process prior

    delta(x) = c + g(x) + e(x),   c ~ N(0, s_c^2),  g ~ GP(0, s_g^2 exp((cos(x, x') - 1) / l)),
    e(x) ~ N(0, s_e^2) independently per prompt,

a task-level shift ``c`` shared by every prompt of the task, a smooth part ``g`` over the prompts'
features (look-alike prompts get alike corrections) and a per-prompt part ``e``. A coordinate's prior mean
need not be the network's: with a share ``r`` it is pulled towards the coordinate's mean over the task's
prompts, ``(1 - r) beta_net(x) + r mean_task(beta_net)`` (``r = 1``: the task's prompts share one
discrimination until their own answers say otherwise). Each calibrated
prompt contributes a Gaussian pseudo-observation of its correction (its answers' Laplace
likelihood); the posterior at any prompt is then closed-form. A prompt gets the correction only when
it belongs to the task: when a task prompt is at least as similar to it as any training prompt, so
training prompts (the reference set among them) keep the network's parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assessors.core.item_profiles import SELF_SIMILARITY
from assessors.features.base import unit_rows


def covariance(U, V, scales, length) -> np.ndarray:
    """Prior covariance (m, n) of one correction coordinate: ``s_c^2 + s_g^2 k(u, v) + s_e^2 [u == v]``."""
    s_c, s_g, s_e = scales
    sim = np.clip(U @ V.T, -1.0, 1.0)
    return s_c ** 2 + s_g ** 2 * np.exp((sim - 1.0) / float(length)) + s_e ** 2 * (sim >= SELF_SIMILARITY)


@dataclass
class CoordinateFit:
    """The posterior of one correction coordinate of one ensemble member.

    Attributes
    ----------
    scales : tuple of float
        ``(s_c, s_g, s_e)``.
    length : float
    space : {"prompt", "network"}
        The features the kernel compares: the prompts' own, or the item network's last hidden layer.
    alpha : ndarray of shape (n_cal,)
        ``K^-1 y`` over the calibrated prompts' pseudo-observations ``y``.
    chol : ndarray of shape (n_cal, n_cal)
        Cholesky factor of ``K`` (prior covariance plus pseudo-observation noise).
    log_ml : float
        Log marginal likelihood of the pseudo-observations.
    pool : float
        Share ``r`` of the pull of the prior mean towards ``task_mean`` (0: the network's own).
    task_mean : float
        The coordinate's mean network value over the task's prompts.
    """

    scales: tuple
    length: float
    alpha: np.ndarray
    chol: np.ndarray
    log_ml: float
    space: str = "prompt"
    pool: float = 0.0
    task_mean: float = 0.0


def fit_coordinate(U, y, noise, scales, length, space: str = "prompt", pool: float = 0.0,
                   offset=None, task_mean: float = 0.0) -> CoordinateFit:
    """Posterior of one coordinate from pseudo-observations ``y`` (n_cal,) of the correction to the network
    with variances ``noise`` (n_cal,) at unit features ``U`` (n_cal, d) of the kernel space ``space``.

    ``pool``, ``offset`` (n_cal,), ``task_mean``: the prior mean pulled by ``pool`` towards ``task_mean``;
    ``offset`` is the calibrated prompts' network value minus ``task_mean``, so the Gaussian process
    corrects ``y + pool * offset``, what is left of the correction from the pulled prior mean."""
    if pool:
        y = y + float(pool) * np.asarray(offset)
    K = covariance(U, U, scales, length) + np.diag(noise)
    L = np.linalg.cholesky(K + 1e-9 * np.eye(len(K)))
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    log_ml = -0.5 * y @ alpha - np.log(np.diag(L)).sum() - 0.5 * len(y) * np.log(2 * np.pi)
    return CoordinateFit(tuple(float(s) for s in scales), float(length), alpha, L, float(log_ml), space,
                         float(pool), float(task_mean))


def hidden_units(weights: dict, inputs: np.ndarray) -> np.ndarray:
    """Unit-norm activations (m, h) of a member's item network's last hidden layer for its ``inputs``
    (m, n_inputs): the features its output layer is linear in (see :func:`~assessors.core.latent_net.item_parameters`)."""
    h = (np.asarray(inputs, dtype=np.float32) - weights["mean"]) / weights["std"]
    for W, c in weights["layers"][:-1]:
        h = np.maximum(h @ W.T + c, 0.0)
    return unit_rows(h)


class NetworkSpace:
    """The item network's last hidden layer as a kernel space: a smooth correction there is a
    Bayesian fine-tune of the output layer on the task's prompts, anchored at the trained weights.

    Parameters
    ----------
    inputs : callable
        Prompt features (m, d) -> the network's inputs (m, n_inputs) (the adapted model's profiles).
    weights : list of dict
        Each member's item-network weights.
    """

    def __init__(self, inputs, weights):
        self.inputs, self.weights = inputs, weights

    def __call__(self, X: np.ndarray, member: int) -> np.ndarray:
        return hidden_units(self.weights[member], self.inputs(X))


@dataclass
class TaskCorrection:
    """The fitted correction of a new task's item parameters, applied by a latent model to its own.

    Attributes
    ----------
    calibrated : ndarray of shape (n_cal, d), float32
        Unit features of the calibrated prompts (the pseudo-observations' inputs).
    task : ndarray of shape (n_task, d), float16
        Unit features of every prompt of the task (calibrated or not): what "belongs to the task" means.
    training : ndarray of shape (n_train, d), float16
        Unit features of the training prompts the task prompts are compared with.
    fits : list of list of CoordinateFit
        Per ensemble member, one per coordinate ``[a_1 .. a_D, b]``; empty lists with no calibrated prompt.
    network : NetworkSpace or None
        The ``"network"`` kernel space (None: only the prompts' own features).
    calibrated_network : list of ndarray of shape (n_cal, h), optional
        Per member, the calibrated prompts in that space.
    """

    calibrated: np.ndarray
    task: np.ndarray
    training: np.ndarray
    fits: list
    network: object = None
    calibrated_network: list = None

    def space(self, X: np.ndarray, member: int, space: str) -> tuple[np.ndarray, np.ndarray]:
        """Unit features of prompts ``X`` (m, d) and of the calibrated prompts in one member's kernel ``space``."""
        if space == "network":
            return self.network(X, member), self.calibrated_network[member]
        return unit_rows(X), self.calibrated

    def membership(self, X: np.ndarray) -> np.ndarray:
        """True (m,) where a task prompt is at least as similar to the prompt as any training prompt."""
        Q = unit_rows(X)
        near_task = (Q @ self.task.astype(np.float32).T).max(1)
        near_train = (Q @ self.training.astype(np.float32).T).max(1) if len(self.training) else -np.inf
        return near_task >= near_train - 1e-4

    def moments(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of the correction at prompts ``X`` (m, d): shapes
        (n_members, m, D + 1) each, zero outside the task."""
        inside = self.membership(X)
        n_members, D1 = len(self.fits), len(self.fits[0]) if self.fits and self.fits[0] else 0
        mean, var = np.zeros((n_members, len(X), max(D1, 1))), np.zeros((n_members, len(X), max(D1, 1)))
        if not D1 or not inside.any():
            return mean[..., :D1], var[..., :D1]
        X = np.asarray(X, dtype=np.float32)[inside]
        for m, coords in enumerate(self.fits):
            spaces = {f.space: self.space(X, m, f.space) for f in coords}
            for p, f in enumerate(coords):
                kq = covariance(*spaces[f.space], f.scales, f.length)  # (q, n_cal)
                mean[m, inside, p] = kq @ f.alpha
                v = np.linalg.solve(f.chol, kq.T)
                var[m, inside, p] = np.maximum(sum(s ** 2 for s in f.scales) - (v ** 2).sum(0), 0.0)
        return mean, var

    def __call__(self, X: np.ndarray, params: list) -> list:
        """Each member's item parameters ``[(a (m, D), b (m,))]`` at prompts ``X`` (m, d), corrected."""
        if not self.fits or not self.fits[0]:
            return params
        X = np.asarray(X, dtype=np.float32)
        mean, _ = self.moments(X)
        pooled = any(getattr(f, "pool", 0.0) for coords in self.fits for f in coords)  # absent on older pickles
        inside = self.membership(X)[:, None] if pooled else False
        out = []
        for m, (a, b) in enumerate(params):
            beta = np.hstack([a, b[:, None]])
            pool = np.array([getattr(f, "pool", 0.0) for f in self.fits[m]])
            centre = np.array([getattr(f, "task_mean", 0.0) for f in self.fits[m]])
            beta = beta + mean[m] - np.where(inside, pool * (beta - centre), 0.0)
            out.append((beta[:, :-1], beta[:, -1]))
        return out
