"""The AUC band of what an LLM is served: the latent posterior's, or a fallback's from held-out subtasks.

A trust report's ``auc_band`` is about the latent assessor's ranking. When the report switches the LLM
to a fallback because its target prompts are unlike the training prompts, the user is served the
fallback's ranking instead; ``train.py`` measured that fallback on held-out subtasks of its training
prompts, and that band, reaching down to chance, is the one the report then gives (``fallback.auc_band``).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
from assessors.errors import ConfigError
from assessors.trust.relevel import RELEVEL_NAME


def served_auc_band(auc_band, flags, predictor: str, ood_fallback: str, ood_auc_bands: Mapping | None,
                    chance_low: float | None = None):
    """``(band, source)``: the AUC band of the predictions an LLM is served, and where it comes from.

    The latent assessor, and the re-levelled fallback (the same ranking), get the report's posterior
    band (``auc_band``, reaching chance when the verdict is ``out of population``), unless the prompts are
    out of distribution and the applied fallback has a band from held-out subtasks (``ood_auc_bands``):
    that one, about the fallback itself on prompts of tasks it never saw, its low end lowered to
    ``chance_low`` (the report's rule for an ``out of population`` verdict: the flag says these prompts
    lie farther from the training prompts than any held-out subtask did). Any other fallback: ``(None,
    None)`` (no band is known for it).
    """
    ood = "prompts_out_of_distribution" in flags
    if ood and predictor == ood_fallback and predictor in (ood_auc_bands or {}):
        lo, hi = ood_auc_bands[predictor]
        if chance_low is not None and np.isfinite(chance_low):
            lo = min(lo, float(chance_low))
        return [lo, hi], "held-out subtasks"
    if predictor in ("latent", RELEVEL_NAME):
        return list(auc_band), "posterior"
    return None, None


def check_bands(bands, names) -> dict | None:
    """``ood_auc_bands`` checked: ``{fallback: [low, high]}`` with fallbacks from ``names`` and
    ``0 <= low <= high <= 1``; None or empty: None."""
    if not bands:
        return None
    out = {}
    for k, v in dict(bands).items():
        lo, hi = (float(x) for x in v)
        if k not in names or not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"ood_auc_bands: expected {{fallback: [low, high]}} with fallbacks from {list(names)} "
                              f"and 0 <= low <= high <= 1; got {k!r}: {v!r}")
        out[str(k)] = [lo, hi]
    return out
