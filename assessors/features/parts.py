"""Featurize several instance splits at once: fit on one, transform all in one call, slice back."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from assessors.tags import capability


def featurize_parts(featurizer, results, parts: Mapping[str, Sequence[str]], fit_part: str,
                    train_llms: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Fit ``featurizer`` on the ``fit_part`` instances and return the features of every part.

    Parameters
    ----------
    featurizer : Featurizer
        Unfitted; a featurizer with ``uses_results`` describes instances by the results of
        ``train_llms`` (success patterns), any other by its prompt text.
    results : Results
    parts : mapping of str to list of str
        Instance ids per part (e.g. ``train``/``val``/``test``).
    fit_part : str
        The part the featurizer learns from.
    train_llms : list of str, optional
        The LLMs whose results a ``uses_results`` featurizer reads.

    Returns
    -------
    dict of str to ndarray of shape (len(parts[k]), d)
    """
    if capability(featurizer, "uses_results"):
        S_train = results.matrix(list(train_llms or []), None)
        featurizer.fit(S_train[:, results.instance_index(parts[fit_part])])
        full = featurizer.transform(S_train)
        return {k: full[results.instance_index(ids)] for k, ids in parts.items()}
    results.require_prompts()
    featurizer.fit(results.prompts(parts[fit_part]))
    # one call over all prompts: the embedding cache and length-sorted batching see everything at once
    full = featurizer.transform(results.prompts([i for ids in parts.values() for i in ids]))
    out, start = {}, 0
    for k, ids in parts.items():
        out[k] = full[start:start + len(ids)]
        start += len(ids)
    return out
