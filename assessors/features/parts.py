"""Featurize several instance splits at once: fit on one, transform all in one call, slice back."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def featurize_parts(featurizer, results, parts: Mapping[str, Sequence[str]], fit_part: str,
                    train_llms: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Fit ``featurizer`` on the ``fit_part`` instances and return the features of every part.

    Parameters
    ----------
    featurizer : Featurizer
        Unfitted; it builds its own inputs (:meth:`~assessors.features.base.Featurizer.inputs`):
        prompt texts, or the results of ``train_llms`` for one that reads results.
    results : Results
    parts : mapping of str to list of str
        Instance ids per part (e.g. ``train``/``val``/``test``).
    fit_part : str
        The part the featurizer learns from.
    train_llms : list of str, optional
        The training LLMs (read by a featurizer that reads results).

    Returns
    -------
    dict of str to ndarray of shape (len(parts[k]), d)
    """
    featurizer.fit(featurizer.inputs(results, parts[fit_part], train_llms))
    # one call over all instances: the embedding cache and length-sorted batching see everything at once
    full = featurizer.transform(featurizer.inputs(results, [i for ids in parts.values() for i in ids], train_llms))
    out, start = {}, 0
    for k, ids in parts.items():
        out[k] = full[start:start + len(ids)]
        start += len(ids)
    return out
