"""Which prompts of a new task, and which known LLMs, to ask for calibration answers.

A budget of ``k`` prompts x ``m`` known LLMs buys calibration answers for
:class:`~assessors.task_calibration.calibration.TaskCalibration`. Two choices, each by the information it
adds about the task's item parameters:

* **prompts**: the correction of the item parameters is a Gaussian process over the prompts'
  features (:mod:`assessors.core.task_correction`); prompts are picked greedily to shrink its total
  posterior variance over *every* prompt of the task (each pick conditions the others on it), so
  the calibrated prompts spread over what the task looks like instead of piling up in one corner;
* **LLMs**: an item's Fisher information from LLM ``m`` is ``p (1 - p) z z^T`` with ``z = [theta_m, -1]``
  under the network's item parameters; LLMs are picked greedily to maximise the summed log
  determinant of the chosen prompts' information (D-optimal): LLMs whose abilities straddle the
  prompts' difficulties, not all strong or all weak.
"""
from __future__ import annotations

import numpy as np

from assessors.core.task_correction import covariance
from assessors.errors import DataError
from assessors.features.base import unit_rows
from assessors.irt_math import sigmoid


def choose_prompts(X: np.ndarray, k: int, length: float = 0.1, item_share: float = 0.5, noise: float = 1.0,
                   seed: int = 0) -> np.ndarray:
    """``k`` prompts of a task (features ``X`` (n, d)) that most reduce the correction's total variance.

    The correction's prior has unit task-level and smooth scales and ``item_share`` per-prompt scale
    (the scales cancel in the choice but for ``noise``, a calibrated prompt's pseudo-observation
    variance relative to them). Returns positions (k,), in the order chosen.
    """
    n = len(X)
    if not 0 < int(k) <= n:
        raise DataError(f"choose {k} prompts of a task of {n}: need 0 < k <= {n}")
    U = unit_rows(X)
    # a random subset as the targets keeps the cost at O(n x targets) per pick on large tasks
    rng = np.random.default_rng(seed)
    targets = U if n <= 1000 else U[rng.choice(n, 1000, replace=False)]
    scales = (1.0, 1.0, float(item_share))
    C = covariance(U, targets, scales, length)  # (n, t): prior covariance of candidates with targets
    var = np.full(n, sum(s ** 2 for s in scales))  # prior variance of each candidate
    chosen: list[int] = []
    for _ in range(int(k)):
        gain = (C ** 2).sum(1) / (var + noise)  # drop in the targets' summed variance
        gain[chosen] = -np.inf
        j = int(np.argmax(gain))
        chosen.append(j)
        cj = covariance(U, U[j:j + 1], scales, length)[:, 0] - _explained(U, j, chosen[:-1], scales, length, noise)
        factor = cj / (var[j] + noise)
        C = C - factor[:, None] * C[j][None, :]
        var = var - factor * cj
    return np.asarray(chosen)


def _explained(U, j, chosen, scales, length, noise):
    """Covariance of every candidate with candidate ``j`` already explained by the ``chosen`` ones."""
    if not chosen:
        return 0.0
    Kc = covariance(U[chosen], U[chosen], scales, length) + noise * np.eye(len(chosen))
    kx = covariance(U, U[chosen], scales, length)
    kj = covariance(U[chosen], U[j:j + 1], scales, length)[:, 0]
    return kx @ np.linalg.solve(Kc, kj)


def choose_llms(theta: np.ndarray, a: np.ndarray, b: np.ndarray, m: int, ridge: float = 0.1) -> np.ndarray:
    """``m`` known LLMs (abilities ``theta`` (n_llms, D)) most informative about items with parameters
    ``a`` (n, D), ``b`` (n,) (the chosen prompts, by the network): greedy D-optimal. Returns positions (m,)."""
    n_llms, D = theta.shape
    if not 0 < int(m) <= n_llms:
        raise DataError(f"choose {m} LLMs of {n_llms} known ones: need 0 < m <= {n_llms}")
    Z = np.hstack([theta, -np.ones((n_llms, 1))])  # (L, D + 1)
    W = (lambda p: p * (1 - p))(sigmoid(theta @ a.T - b))  # (L, n)
    info = np.tile(ridge * np.eye(D + 1), (len(b), 1, 1))  # (n, D + 1, D + 1)
    chosen: list[int] = []
    for _ in range(int(m)):
        inv = np.linalg.inv(info)
        q = np.einsum("ld,nde,le->ln", Z, inv, Z)  # z^T I_j^-1 z per LLM and item
        gain = np.log1p(W * q).sum(1)  # log det increase, summed over items
        gain[chosen] = -np.inf
        best = int(np.argmax(gain))
        chosen.append(best)
        info = info + W[best][:, None, None] * np.outer(Z[best], Z[best])[None]
    return np.asarray(chosen)
