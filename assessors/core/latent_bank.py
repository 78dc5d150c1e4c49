"""An item bank from a fitted latent-ability assessor: what the semi-synthetic generator samples from."""
from __future__ import annotations

import numpy as np

from assessors.core.posterior import GaussianPrior, check_answers, laplace_posterior
from assessors.data.semisynthetic import ItemBank
from assessors.irt_math import map_ability


def item_bank(model, X: np.ndarray, instance_ids, S: np.ndarray | None = None, member: int = 0,
              offset_sd: float = 1.0, n_rounds: int = 3) -> ItemBank:
    """Item parameters of prompts ``X`` (n, d) and the ability prior of one ensemble member.

    The item network predicts difficulty from the prompt's features, which explain only part of
    how hard a real prompt is. Given the training LLMs' real answers ``S``, each prompt's
    difficulty gets a MAP offset under a ``N(0, offset_sd^2)`` prior, so generated LLMs keep the
    real prompts' difficulty spread, including the part no prompt feature predicts (as real data
    has it). The real LLMs' abilities are re-estimated on all these prompts (Laplace MAP under the
    model's prior, alternating with the offsets ``n_rounds`` times) and the prior is refitted on
    them: the network's own training abilities are early-stopped and shrunk towards 0, which would
    make the generated LLMs too alike.

    Parameters
    ----------
    model : LatentAssessor
        Fitted on real data.
    X : ndarray of shape (n, d)
        Features of the prompts the generated LLMs will answer.
    instance_ids : sequence of str, length n
    S : ndarray of shape (k, n), optional
        Real LLMs' 0/1 answers (NaN = missing) on these prompts; without it, the model's item
        parameters and prior as they are.
    member : int
        Ensemble member whose item network and prior are used (members have their own ability
        coordinates, so they cannot be mixed).
    offset_sd : float
        Prior scale of the difficulty offsets (logits).
    """
    a, b = model.item_parameters(X)
    a, b = a[member], b[member].copy()
    prior = model.priors_[member]
    if S is not None:
        S = check_answers(S, "real answers")
        if S.shape[1] != len(X):
            raise ValueError(f"S has {S.shape[1]} prompts (columns) but X has {len(X)} rows")
        offset = np.zeros(len(X))
        for _ in range(n_rounds):
            # abilities re-estimated on all of these prompts (the network's are early-stopped and
            # shrunk, which narrows the prior), then difficulties given those abilities
            theta, _ = laplace_posterior(a, b - offset, S, prior.mean, prior.precision)
            prior = GaussianPrior.fit(theta)
            offset = difficulty_offsets(theta @ a.T - b, S, offset_sd)
        b -= offset
    return ItemBank(np.asarray(instance_ids, dtype=str), a, b, np.asarray(prior.mean, float),
                    np.asarray(prior.cov, float))


def difficulty_offsets(logit: np.ndarray, S: np.ndarray, sd: float, n_iter: int = 25) -> np.ndarray:
    """Per-item MAP offsets ``c`` (n,) of ``P = sigmoid(logit + c)`` given answers ``S`` (k, n).

    Each item's offset is a one-dimensional 2PL ability posterior (:func:`assessors.irt_math.map_ability`)
    over the LLMs' answers: discrimination 1, difficulty ``-logit``; all items at once.
    """
    k = S.shape[0]
    c = map_ability(np.ones((k, 1)), -np.asarray(logit, dtype=np.float64).T, np.asarray(S, dtype=np.float64).T,
                    np.zeros(1), np.eye(1) / sd ** 2, n_iter=n_iter, tol=1e-6, max_step=2.0)
    return c[:, 0]
