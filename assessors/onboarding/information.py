"""The information a candidate prompt's answer adds about a new LLM's abilities.

Arrays follow the ensemble: ``a`` of shape (n_members, n, D) and ``b`` (n_members, n) are item
parameters, ``th`` (n_members, D) and ``cov`` (n_members, D, D) one LLM's Laplace posterior per
member. The criteria are described in :mod:`assessors.onboarding.adaptive`.
"""
from __future__ import annotations

import numpy as np

from assessors.irt_math import sigmoid


def accuracy_gradient(a_target: np.ndarray, b_target: np.ndarray, th: np.ndarray) -> np.ndarray:
    """``d mean_t p_t / d theta`` per member at abilities ``th``: shape (n_members, D)."""
    p = sigmoid(np.einsum("mtd,md->mt", a_target, th) - b_target)
    return np.einsum("mt,mtd->md", p * (1 - p), a_target) / a_target.shape[1]


def target_second_moment(a_target: np.ndarray, b_target: np.ndarray, th: np.ndarray) -> np.ndarray:
    """``G = mean_t (p_t (1 - p_t))^2 a_t a_t^T`` per member at abilities ``th``: shape (n_members, D, D)."""
    p = sigmoid(np.einsum("mtd,md->mt", a_target, th) - b_target)
    w = (p * (1 - p)) ** 2
    return np.einsum("mt,mtd,mte->mde", w, a_target, a_target) / a_target.shape[1]


def information_gains(criterion: str, a_pool: np.ndarray, b_pool: np.ndarray, th: np.ndarray, cov: np.ndarray,
                      g: np.ndarray | None = None, G: np.ndarray | None = None) -> np.ndarray:
    """Gain of each pool prompt under ``criterion``, summed over members: shape (n_pool,).

    ``g`` (n_members, D) is :func:`accuracy_gradient` (``accuracy`` and ``mixed``), ``G``
    (n_members, D, D) :func:`target_second_moment` (``target``). ``mixed`` scales ``d_optimal`` and
    ``accuracy`` by their best candidate each before adding them.
    """
    p = sigmoid(np.einsum("mnd,md->mn", a_pool, th) - b_pool)
    w = p * (1 - p)
    Sa = np.einsum("mde,mne->mnd", cov, a_pool)  # Sigma a_j
    q = np.einsum("mnd,mnd->mn", a_pool, Sa)  # a_j^T Sigma a_j
    out = np.zeros(a_pool.shape[1])
    if criterion in ("d_optimal", "mixed"):
        d = np.log1p(w * q).sum(0)
        out += d / max(d.max(), 1e-300) if criterion == "mixed" else d
    if criterion == "target":
        out += (w * np.einsum("mnd,mde,mne->mn", Sa, G, Sa) / (1 + w * q)).sum(0)
    if criterion in ("accuracy", "mixed"):
        c = (w * np.einsum("md,mnd->mn", g, Sa) ** 2 / (1 + w * q)).sum(0)
        out += c / max(c.max(), 1e-300) if criterion == "mixed" else c
    return out


def answer_update(cov: np.ndarray, a: np.ndarray, b: np.ndarray, th: np.ndarray) -> np.ndarray:
    """The covariance after one more answer on an item (``a`` (n_members, D), ``b`` (n_members,)) at its
    current success probability (Sherman-Morrison), shape (n_members, D, D): how a batch is picked
    before its answers arrive."""
    p = sigmoid(np.einsum("md,md->m", a, th) - b)
    w = p * (1 - p)
    Sa = np.einsum("mde,me->md", cov, a)
    return cov - (w / (1 + w * np.einsum("md,md->m", a, Sa)))[:, None, None] * Sa[:, :, None] * Sa[:, None, :]
