"""The logistic link and its inverse, the graded-answer check and the 2PL ability posterior, once for every layer.

Model: ``P(success | theta, item) = sigmoid(theta . a - b)`` with item parameters ``a`` (D,) and
``b`` known, and a Gaussian prior ``theta ~ N(mu, Sigma)``. The log posterior is strictly concave,
so a few Newton steps with the closed-form Hessian reach the MAP; the Laplace approximation
``N(theta_map, H^-1)`` is the posterior. Everything is batched over LLMs: ``Y`` holds one row per
LLM over a shared item list, NaN where an LLM has no answer (missing answers are simply absent
from the likelihood).

Selection's IRT (:meth:`assessors.selection.irt.MultidimIRT.ability_for`, which estimation's IRT
estimators call), the latent assessor's posterior (:mod:`assessors.core.posterior`) and its
per-LLM residual all solve this problem, so they call :func:`map_ability` /
:func:`laplace_posterior` here. The module sits in the foundation layer (numpy only) so that
data simulators can use :func:`sigmoid` too.
"""
from __future__ import annotations

import numpy as np

from assessors.errors import DataError

#: Logits are clipped to this magnitude before ``exp``: no overflow, and ``p (1 - p)`` stays
#: positive (about 1e-13), which keeps Newton's Hessian weights and log-likelihoods finite.
LOGIT_CLIP = 30.0


def sigmoid(z, out=None):
    """The logistic function ``1 / (1 + exp(-z))`` of an array of any shape, logits clipped to
    ``[-LOGIT_CLIP, LOGIT_CLIP]`` (results in ``[9e-14, 1 - 9e-14]``). ``out``: an array of ``z``'s shape
    and dtype (``z`` itself allowed) to work in, the same numbers without temporaries (large blocks are
    memory-bound: a third of the time)."""
    if out is None:
        return 1.0 / (1.0 + np.exp(-np.clip(z, -LOGIT_CLIP, LOGIT_CLIP)))
    np.clip(z, -LOGIT_CLIP, LOGIT_CLIP, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.add(1.0, out, out=out)
    return np.divide(1.0, out, out=out)


#: Probabilities are kept this far from 0 and 1 before their logit is taken (``|logit| <= 20.8``).
P_CLIP = 1e-9


def logit(p):
    """The inverse of :func:`sigmoid`, ``log(p / (1 - p))``, of an array of any shape, ``p`` clipped to
    ``[P_CLIP, 1 - P_CLIP]`` (finite results; float32 input is computed in float64, where the clip holds)."""
    p = np.clip(np.asarray(p, dtype=np.result_type(p, np.float64)), P_CLIP, 1 - P_CLIP)
    return np.log(p) - np.log1p(-p)


def check_answers(Y, what: str = "answers") -> np.ndarray:
    """``Y`` as float64 (k, n) with values in {0, 1, NaN}; anything else is a :class:`DataError`.

    The one check of graded answers before a 2PL fit or posterior (a 1-D ``Y`` is one row).
    """
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    bad = np.isfinite(Y) & (Y != 0) & (Y != 1) | np.isinf(Y)
    if bad.any():
        k, j = map(int, np.argwhere(bad)[0])
        raise DataError(f"{what}: graded answers must be 0, 1 or missing (NaN); row {k}, item {j} is {float(Y[k, j])!r}. "
                        "Threshold graded scores (e.g. success = score >= 0.5) before passing them")
    return Y


def weighted_gram(A, w):
    """``sum_n w[k, n] A[n] A[n]^T`` for every row of ``w`` (k, n) -> (k, D, D), as one batched matmul."""
    return (A.T[None, :, :] * w[:, None, :]) @ A


def _newton(A, b, Y, mu, prec, n_iter: int, tol: float, max_step: float):
    """MAP abilities (k, D) and the observed-cell indicator (k, n); see :func:`map_ability`."""
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    mu = np.asarray(mu, dtype=np.float64)
    obs = np.isfinite(Y).astype(np.float64)
    y = np.nan_to_num(Y)
    k = Y.shape[0]
    th = np.array(np.broadcast_to(mu, (k, A.shape[1])))
    for _ in range(n_iter):
        p = sigmoid(th @ A.T - b)  # (k, n)
        grad = ((y - p) * obs) @ A - (th - mu) @ prec
        H = weighted_gram(A, p * (1 - p) * obs) + prec  # negative Hessian
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        # the cap guards the first steps of an LLM that answered everything one way, where the
        # likelihood is flat on one side and the quadratic model overshoots
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        step = step * np.minimum(1.0, max_step / np.maximum(norm, 1e-300))
        th = th + step
        if np.abs(step).max() < tol:
            break
    return th, A, b, obs


def map_ability(A, b, Y, mu, prec, n_iter: int = 30, tol: float = 1e-8, max_step: float = 5.0) -> np.ndarray:
    """MAP abilities of ``k`` LLMs under the 2PL model and a Gaussian prior (capped Newton steps).

    Parameters
    ----------
    A : ndarray of shape (n, D)
        Item discriminations.
    b : ndarray of shape (n,) or (k, n)
        Item difficulties (per LLM when 2-D: an offset such as another model's logit, negated).
    Y : ndarray of shape (k, n)
        0/1 answers, NaN = not answered.
    mu : ndarray of shape (D,) or (k, D)
        Prior mean.
    prec : ndarray of shape (D, D)
        Prior precision (inverse covariance).
    n_iter : int
        Newton iterations at most (the objective is strictly concave thanks to the prior).
    tol : float
        Stop when no coordinate of a step exceeds it.
    max_step : float
        Cap on the Euclidean norm of one step.

    Returns
    -------
    ndarray of shape (k, D)
    """
    return _newton(A, b, Y, mu, prec, n_iter, tol, max_step)[0]


def laplace_posterior(A, b, Y, mu, prec, n_iter: int = 30, tol: float = 1e-8, max_step: float = 5.0):
    """MAP abilities and Laplace covariances of ``k`` LLMs (parameters as :func:`map_ability`).

    Returns
    -------
    theta : ndarray of shape (k, D)
    cov : ndarray of shape (k, D, D)
        Inverse negative Hessian of the log posterior at ``theta``.
    """
    th, A, b, obs = _newton(A, b, Y, mu, prec, n_iter, tol, max_step)
    p = sigmoid(th @ A.T - b)
    return th, np.linalg.inv(weighted_gram(A, p * (1 - p) * obs) + prec)
