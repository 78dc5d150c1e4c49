"""Reject before you run: abstain when no LLM is likely enough to succeed."""
from __future__ import annotations

from assessors.routing.threshold import ThresholdRouter


class AbstainRouter(ThresholdRouter):
    """Cheapest LLM with P(success) >= ``threshold``; no LLM (abstain) when none reaches it.

    An abstained prompt costs nothing and is returned to the caller undecided (``llm: null``).
    Calibrating to a target accuracy sets the lowest threshold whose accuracy on the
    answered prompts reaches the target, i.e. the highest coverage.

    Parameters
    ----------
    threshold : float in [0, 1]
    """

    abstain_when_none = True
