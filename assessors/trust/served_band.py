"""The bands of what an LLM is served: the latent posterior's, or a fallback's from held-out subtasks.

A trust report's ``auc_band`` and ``accuracy_band`` are about the latent assessor. When the report
switches the LLM to a fallback because its target prompts are unlike the training prompts, the user is
served the fallback's predictions instead; ``train.py`` measured that fallback on held-out subtasks of
its training prompts, and the report then gives those bands: the AUC band reaching down to chance
(``fallback.auc_band``), and the fallback's mean prediction on the target prompts shifted by its
accuracy errors there (``fallback.expected_accuracy``, ``fallback.accuracy_band``).
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


def served_accuracy_band(expected, band, flags, predictor: str, ood_fallback: str,
                         ood_accuracy_bands: Mapping | None, mean_prediction: float, answered=None,
                         level: float = 0.9):
    """``(expected accuracy, band, source)`` of the predictions an LLM is served.

    - Prompts out of distribution, served by the fallback that has an accuracy-error band from held-out
      subtasks (``ood_accuracy_bands``: realised minus predicted accuracy there): the fallback's
      ``mean_prediction`` on the target prompts, and that plus the error band, widened to hold the
      posterior ``band`` too (``held-out subtasks``). The held-out subtasks lie nearer their training
      folds than flagged prompts lie to the training prompts, and on such prompts nothing tells whether
      the fallback's level or the latent one transfers, so the band spans both.
    - Any other fallback, given ``answered = (successes, n, mean prediction on the answered prompts)``:
      the fallback's level is the LLM's answered one, so the band is the Wilson ``level`` interval of
      ``successes / n``, spanning it both where it is and moved by how much easier or harder the
      fallback finds the target prompts than the answered ones (``answered level``). A fallback is
      applied when the latent model is in doubt, and the re-levelled one keeps its difficulties, so
      the band does not rest on that move alone.
    - The latent assessor: the report's posterior ``expected`` and ``band`` (``posterior``).

    Bands are clipped to [0, 1]; a fallback without either gets its mean prediction and no band.
    """
    m = float(mean_prediction)
    if "prompts_out_of_distribution" in flags and predictor == ood_fallback and predictor in (ood_accuracy_bands or {}):
        lo, hi = ood_accuracy_bands[predictor]
        return m, _clipped(min(m + lo, band[0]), max(m + hi, band[1])), "held-out subtasks"
    if predictor == "latent":
        return expected, list(band), "posterior"
    if answered is not None and int(answered[1]) > 0:
        from statsmodels.stats.proportion import proportion_confint

        k, n, m_answered = answered
        lo, hi = proportion_confint(int(k), int(n), alpha=1.0 - float(level), method="wilson")
        shift = m - float(m_answered)
        return m, _clipped(lo + min(shift, 0.0), hi + max(shift, 0.0)), "answered level"
    return m, None, None


def _clipped(lo: float, hi: float) -> list[float]:
    return [float(np.clip(lo, 0.0, 1.0)), float(np.clip(hi, 0.0, 1.0))]


def check_bands(bands, names, what: str = "ood_auc_bands", lowest: float = 0.0) -> dict | None:
    """``bands`` checked: ``{fallback: [low, high]}`` with fallbacks from ``names`` and
    ``lowest <= low <= high <= 1`` (``lowest=-1`` for accuracy errors); None or empty: None."""
    if not bands:
        return None
    out = {}
    for k, v in dict(bands).items():
        lo, hi = (float(x) for x in v)
        if k not in names or not lowest <= lo <= hi <= 1.0:
            raise ConfigError(f"{what}: expected {{fallback: [low, high]}} with fallbacks from {list(names)} "
                              f"and {lowest:g} <= low <= high <= 1; got {k!r}: {v!r}")
        out[str(k)] = [lo, hi]
    return out
