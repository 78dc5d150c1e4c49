"""An item bank from a fitted latent-ability assessor: what the semi-synthetic generator samples from."""
from __future__ import annotations

import numpy as np

from assessors.data.semisynthetic import ItemBank


def item_bank(model, X: np.ndarray, instance_ids, member: int = 0) -> ItemBank:
    """Item parameters of prompts ``X`` (n, d) and the ability prior of one ensemble member.

    Parameters
    ----------
    model : LatentAssessor
        Fitted on real data.
    X : ndarray of shape (n, d)
        Features of the prompts the generated LLMs will answer.
    instance_ids : sequence of str, length n
    member : int
        Ensemble member whose item network and prior are used (members have their own ability
        coordinates, so they cannot be mixed).
    """
    a, b = model.item_parameters(X)
    prior = model.priors_[member]
    return ItemBank(np.asarray(instance_ids, dtype=str), a[member], b[member], np.asarray(prior.mean, float),
                    np.asarray(prior.cov, float))
